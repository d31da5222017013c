package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/sample"
)

// LongForm is the long-form section: one reading of many parts streamed
// to a simulated real-time player, as `zonos say` plays a book.
type LongForm struct {
	AudioSeconds   float64 `json:"audio_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	RTF            float64 `json:"generation_rtf"`
	Parts          int     `json:"parts"`
	PartFrames     int     `json:"part_frames"`
	ContextFrames  int     `json:"context_frames"` // of the last part: what each part continues from
	TTFAMs         float64 `json:"ttfa_ms"`
	// BoundaryP50/MaxMs: a part's last frame → the next part's first
	// (engine.Metrics: its conditioning, prefill and the codebook delay's
	// steps).
	BoundaryP50Ms float64 `json:"boundary_p50_ms"`
	BoundaryMaxMs float64 `json:"boundary_max_ms"`
	// Underruns: times the simulated player, started PreRollMs after the
	// first audio and playing at 44.1 kHz, reached a sample not yet
	// committed (it then waits, as a real device would, and plays on).
	Underruns int     `json:"underruns"`
	PreRollMs float64 `json:"pre_roll_ms"`
	// MinLeadMs is the least time any audio was committed ahead of its
	// play time: how close the reading came to an underrun.
	MinLeadMs float64 `json:"min_lead_ms"`
	// Go heap after GC and device memory in use, at the first audio and at
	// the end, and the largest seen (sampled about every 10 s of wall
	// time).
	HeapStartMB float64 `json:"heap_start_mb"`
	HeapEndMB   float64 `json:"heap_end_mb"`
	HeapMaxMB   float64 `json:"heap_max_mb"`
	DevStartGB  float64 `json:"device_memory_start_gb"`
	DevEndGB    float64 `json:"device_memory_end_gb"`
	DevMaxGB    float64 `json:"device_memory_max_gb"`
	// HeapMB and DevGB are the same at the start of every tenth of the
	// parts: the shape of memory over the reading, not only its ends.
	HeapMB []float64 `json:"heap_by_tenth_mb"`
	DevGB  []float64 `json:"device_memory_by_tenth_gb"`
}

// longFormPreRoll is the simulated player's pre-roll, the default of
// audio.PlayerConfig.
const longFormPreRoll = 50 * time.Millisecond

// longFormText is a text of n sentences, each one part under the default
// phoneme budget (two of them overflow it, so none are packed together).
func longFormText(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "This is sentence number %d of the reading, and it runs on for long enough to make a part of its own. ", i+1)
	}
	return b.String()
}

// measureLongForm streams o.LongFormSeconds of audio as one reading of
// parts of o.LongFormPartFrames frames each (fixed length: random weights
// have no sense of where a sentence ends), each part continuing from the
// audio before it as any long text does.
func measureLongForm(ctx context.Context, timer compute.Timer, e *engine.Engine, o Options, r *Report, progress func(string)) error {
	parts := int(o.LongFormSeconds*engine.SampleRate/512+float64(o.LongFormPartFrames)-1) / o.LongFormPartFrames
	lf := &LongForm{PartFrames: o.LongFormPartFrames, PreRollMs: float64(longFormPreRoll) / 1e6, MinLeadMs: -1}
	progress(fmt.Sprintf("long-form: a reading of %d parts of %d frames (%.0f s of audio) to a simulated real-time player",
		parts, o.LongFormPartFrames, float64(parts*o.LongFormPartFrames*512)/engine.SampleRate))
	req := engine.Request{Text: longFormText(parts), Language: "en-us", Knobs: engine.DefaultKnobs(), Seed: o.Seed,
		FixedFrames: o.LongFormPartFrames, FirstChunk: o.FirstChunk, Chunk: o.Chunk, DiscardCodes: true}
	req.Knobs.Sampling = sample.Defaults()
	s, err := e.Synthesize(ctx, req)
	if err != nil {
		return err
	}
	var (
		final    engine.Event
		played   time.Time // when the simulated player plays sample 0
		samples  int64
		lastMem  time.Time
		ctxFrame int
	)
	sampleMem := func(first bool) {
		h, d := heapMB(), float64(timer.MemoryInUse())/1e9
		if first {
			lf.HeapStartMB, lf.DevStartGB = h, d
		}
		lf.HeapEndMB, lf.DevEndGB = h, d
		lf.HeapMaxMB, lf.DevMaxGB = max(lf.HeapMaxMB, h), max(lf.DevMaxGB, d)
		lastMem = time.Now()
	}
	for ev := range s.Events() {
		switch ev.Kind {
		case engine.PartStart:
			ctxFrame = ev.Part.ContextFrames
			if tenth := max(1, parts/10); ev.Part.Index%tenth == 0 && ev.Part.Index > 0 {
				lf.HeapMB = append(lf.HeapMB, heapMB())
				lf.DevGB = append(lf.DevGB, float64(timer.MemoryInUse())/1e9)
			}
		case engine.Audio:
			now := time.Now()
			if samples == 0 {
				played = now.Add(longFormPreRoll)
				sampleMem(true)
			}
			due := played.Add(time.Duration(samples) * time.Second / engine.SampleRate)
			if lead := due.Sub(now); lead < 0 {
				lf.Underruns++
				played = played.Add(-lead) // the player waited for it
			} else if lf.MinLeadMs < 0 || float64(lead)/1e6 < lf.MinLeadMs {
				lf.MinLeadMs = float64(lead) / 1e6
			}
			samples += int64(len(ev.PCM))
			if now.Sub(lastMem) > 10*time.Second {
				sampleMem(false)
			}
		case engine.Done, engine.Failed:
			final = ev
		}
	}
	if final.Kind == engine.Failed {
		return fmt.Errorf("bench: long-form reading: %w", final.Err)
	}
	sampleMem(false)
	m := final.Metrics
	lf.AudioSeconds, lf.ElapsedSeconds, lf.RTF, lf.Parts = m.AudioSeconds, m.Elapsed.Seconds(), m.RTF, m.Parts
	lf.ContextFrames, lf.TTFAMs = ctxFrame, float64(m.TTFA)/1e6
	lf.BoundaryP50Ms, lf.BoundaryMaxMs = float64(m.BoundaryP50)/1e6, float64(m.BoundaryMax)/1e6
	r.LongForm = lf
	return nil
}

// heapMB is the live Go heap after a collection, in MB.
func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / 1e6
}
