package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"
)

// Soak slack: what "flat" allows between the start and the end of the soak.
// The heap after GC may differ by scheduler and allocator state (sync.Pool
// contents, timer buckets, the runtime's own bookkeeping); 2 MiB is far
// below one utterance's working set on the tiny model (tens of MiB) and far
// below what 200 leaked utterances would keep (each keeps ≥ its 0.1–0.3 s of
// PCM plus a streamer and a generate state). Goroutines and open files must
// come back exactly.
const (
	soakUtterances = 200
	soakHeapSlack  = 2 << 20
)

// heapAfterGC is the live heap after two full collections.
func heapAfterGC() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// randomKnobs draws every knob inside its documented range.
func randomKnobs(rng *rand.Rand) Knobs {
	k := DefaultKnobs()
	for i := range k.Emotion {
		k.Emotion[i] = rng.Float32()
	}
	k.Emotion[rng.IntN(8)] += 0.1 // never all zero
	k.Fmax = []float32{22050, 24000, rng.Float32() * 24000}[rng.IntN(3)]
	k.PitchStd = rng.Float32() * 400
	k.SpeakingRate = rng.Float32() * 40
	k.VQScore = 0.5 + 0.3*rng.Float32()
	k.DNSMOS = 1 + 4*rng.Float32()
	k.CTCLoss = rng.Float32()
	k.SpeakerNoised = rng.IntN(2) == 0
	k.CFGScale = []float32{1.5, 2, 3, 0}[rng.IntN(4)]
	s := &k.Sampling
	s.Temperature = []float32{0, 0.5, 1, 1.5}[rng.IntN(4)]
	s.TopP = []float32{0, 0.9, 0.95}[rng.IntN(3)]
	s.TopK = []int{0, 1, 50, 1025}[rng.IntN(4)]
	s.MinP = []float32{0, 0.05, 0.1, 0.3}[rng.IntN(4)]
	if rng.IntN(3) == 0 {
		s.Linear, s.Conf, s.Quad = 0.5, rng.Float32()*2-1, rng.Float32()*0.5
	}
	s.RepetitionPenalty = 1 + 2*rng.Float32()
	s.RepetitionWindow = rng.IntN(5)
	k.Unconditional = [][]string{{"vqscore_8", "dnsmos_ovrl"}, nil, {"emotion", "speaker"}, {"pitch_std", "fmax"}}[rng.IntN(4)]
	return k
}

// TestSoak runs 200 consecutive utterances on the tiny CPU model with
// random knobs, seeds, texts, languages, chunk sizes and speakers, cancelling
// about a third at a random point, and checks that the live heap after GC,
// the goroutine count and the open files are the same at the end as after
// the warm-up. It is skipped with -short (the -race run).
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: 200 utterances; runs without -short")
	}
	e := tinyEngine(t, "hybrid")
	texts := []string{"Hi.", "Hello there, how are you?", "It costs $3.50 on the 2nd of May.", "No! Yes? Maybe...", "Zonos streams audio."}
	langs := []string{"en-us", "en-us", "de", "fr-fr", "es"}
	rng := rand.New(rand.NewPCG(2026, 11))
	one := func(i int) (cancelled bool, frames, samples int) {
		r := Request{Text: texts[rng.IntN(len(texts))], Language: langs[rng.IntN(len(langs))], Knobs: randomKnobs(rng),
			Seed: rng.Uint64(), MaxSeconds: 0.1 + 0.2*rng.Float64(), FirstChunk: 1 + rng.IntN(6), Chunk: 1 + rng.IntN(24)}
		if rng.IntN(3) == 0 {
			r.Speaker = make([]float32, 128)
			for j := range r.Speaker {
				r.Speaker[j] = float32(rng.NormFloat64())
			}
		}
		cancelAt := -1
		if rng.IntN(3) == 0 {
			cancelAt = rng.IntN(20)
		}
		s, err := e.Synthesize(context.Background(), r)
		if err != nil {
			t.Fatalf("utterance %d: %v", i, err)
		}
		n := 0
		var final Event
		var pcm int
		for ev := range s.Events() {
			if n == cancelAt {
				s.Cancel()
			}
			n++
			switch ev.Kind {
			case Audio:
				pcm += len(ev.PCM)
			case Done, Failed:
				final = ev
			}
		}
		werr := s.Wait()
		codes := len(s.Codes())
		switch {
		case final.Kind == Done && werr == nil:
			if pcm != 512*codes {
				t.Fatalf("utterance %d: %d samples for %d frames", i, pcm, codes)
			}
		case final.Kind == Failed && errors.Is(final.Err, context.Canceled) && errors.Is(werr, context.Canceled) && cancelAt >= 0:
			cancelled = true
		default:
			t.Fatalf("utterance %d: final %v err %v, Wait %v (cancel at %d)", i, final.Kind, final.Err, werr, cancelAt)
		}
		return cancelled, codes, pcm
	}
	for i := 0; i < 5; i++ { // warm-up: pools, espeak's tables, lazily built state
		one(-1 - i)
	}
	h0, g0, fd0 := heapAfterGC(), settleGoroutines(0), openFDs(t)
	var cancels, frames, samples int
	var peak uint64
	for i := 0; i < soakUtterances; i++ {
		c, f, s := one(i)
		if c {
			cancels++
		}
		frames += f
		samples += s
		if (i+1)%50 == 0 {
			h := heapAfterGC()
			peak = max(peak, h)
			t.Logf("after %3d: heap %.2f MiB, goroutines %d, open files %d", i+1, float64(h)/(1<<20), runtime.NumGoroutine(), openFDs(t))
		}
	}
	h1, g1, fd1 := heapAfterGC(), settleGoroutines(g0), openFDs(t)
	runtime.KeepAlive(e) // the engine's weights belong in both heap figures
	t.Logf("%d utterances (%d cancelled, %d frames, %.1f s audio): heap %.2f → %.2f MiB (Δ %+d B, slack %d), goroutines %d → %d, open files %d → %d",
		soakUtterances, cancels, frames, float64(samples)/SampleRate, float64(h0)/(1<<20), float64(h1)/(1<<20), int64(h1)-int64(h0), soakHeapSlack, g0, g1, fd0, fd1)
	if h1 > h0+soakHeapSlack {
		t.Errorf("heap grew %d bytes over %d utterances (slack %d)", h1-h0, soakUtterances, soakHeapSlack)
	}
	if g1 > g0 {
		t.Errorf("goroutines %d → %d", g0, g1)
	}
	if fd1 > fd0 {
		t.Errorf("open files %d → %d", fd0, fd1)
	}
	if cancels == 0 || cancels == soakUtterances {
		t.Errorf("%d of %d cancelled: the mix is broken", cancels, soakUtterances)
	}
}
