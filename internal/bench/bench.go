// Package bench measures the engine the way `zonos bench` reports it:
// randomly initialised models of the real shapes (Zonos hybrid or
// transformer, DAC 44 kHz) built in memory on a backend, then decode-step
// time against the weight-read floor, prefill, time to first audio with a
// fixed-length rollout, steady per-frame latency, generation and vocoder
// real-time factors and memory, each with p50 and p90 over repeated runs.
// Times come from the backend's own clock (compute.Timer: CUDA events on
// the GPU, the wall clock on the CPU).
package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/sample"
	"zonostream/engine/zonos"
	"zonostream/internal/randmodel"
)

// Options choose what to measure and how often.
type Options struct {
	Variant     zonos.Variant
	Runs        int // repetitions of prefill, TTFA and vocoder measurements
	DecodeSteps int // decode steps timed one by one
	PrefixLen   int // prompt positions for the prefill measurement (80)
	Frames      int // frames in each fixed-length rollout
	FirstChunk  int // vocoder chunk sizes of the rollout
	Chunk       int
	BandwidthMB int // buffer for the bandwidth measurements
	Seed        uint64
	// Batches are the batch sizes (utterances decoded at once, zonos.Batch)
	// whose decode step is timed; none skips the measurement.
	Batches []int
	// Layers, when > 0, keeps only the first Layers layers of the real
	// backbone (widths, heads and the attention pattern unchanged), so that
	// a slow machine finishes: the per-layer costs are the real model's, the
	// totals are not.
	Layers int
	// LongFormSeconds of audio are streamed as one reading of parts of
	// LongFormPartFrames frames each (the long-form section); 0 skips it.
	LongFormSeconds    float64
	LongFormPartFrames int
	// Model and DAC override the real shapes (tests use tiny ones).
	Model *zonos.Config
	DAC   *dac.Config
}

// QuickOptions measure in about a minute on a 2-core CPU: the real widths
// with 2 of the backbone's layers (one attention and one Mamba2 for the
// hybrid), one repetition of short rollouts, no batches. What they report
// is each figure for that reduced backbone, not the full model's.
func QuickOptions() Options {
	o := DefaultOptions()
	o.Layers, o.Runs, o.DecodeSteps, o.Frames, o.BandwidthMB, o.Batches = 2, 1, 3, 9, 256, nil
	o.LongFormSeconds = 0
	return o
}

// DefaultOptions suit a GPU; CPUs want fewer runs and frames.
func DefaultOptions() Options {
	return Options{Variant: zonos.Hybrid, Runs: 10, DecodeSteps: 200, PrefixLen: 80, Frames: 172,
		FirstChunk: dac.DefaultStreamConfig.FirstChunk, Chunk: dac.DefaultStreamConfig.Chunk, BandwidthMB: 2048, Seed: 1,
		Batches: []int{1, 4, 16}, LongFormSeconds: 600, LongFormPartFrames: 516}
}

// Report holds every figure of one run.
type Report struct {
	Date          string      `json:"date"`
	Backend       string      `json:"backend"`
	Device        string      `json:"device"`
	Variant       string      `json:"variant"`
	Plan          string      `json:"plan,omitempty"` // the backend's plan in one line (compute.Plan.String)
	Layers        int         `json:"layers"`         // backbone layers built
	ModelLayers   int         `json:"model_layers"`   // the layers of the model measured (Layers < ModelLayers: a reduced backbone)
	GoVersion     string      `json:"go"`
	StepGB        float64     `json:"weights_read_per_step_gb"`
	CopyGBs       float64     `json:"copy_bandwidth_gbs"`
	ReadGBs       float64     `json:"read_bandwidth_gbs"`
	FloorMs       float64     `json:"weight_read_floor_ms"`
	DecodeStep    Stat        `json:"decode_step"`            // one step at a time, launched and its tokens read back (a replayed graph where the backend records one)
	QueuedStep    Stat        `json:"decode_step_queued"`     // as the generate loop runs it: each next step queued on the device before the host reads the tokens (host clock)
	EagerStep     Stat        `json:"decode_step_eager"`      // the same step op by op (GenerateOptions.EagerSteps)
	FirstStepMs   float64     `json:"first_step_ms"`          // the first step of the first utterance (records the graph)
	ReplayStepMs  float64     `json:"replay_step_ms"`         // the step graph alone, replayed back to back with device-side token feedback (0: no graph)
	FloorPercent  float64     `json:"floor_fraction_percent"` // floor / p50 step
	Prefill       Stat        `json:"prefill"`
	PrefixLen     int         `json:"prefill_positions"`
	TTFA          Stat        `json:"ttfa"`
	TTFAPrefill   Stat        `json:"ttfa_prefill_done"`       // in the rollouts: request → prefill logits ready (text front end and conditioning included)
	TTFAFrame     Stat        `json:"ttfa_first_frame"`        // request → first complete 9-code frame
	TTFACompute   Stat        `json:"ttfa_prefill_compute"`    // the rollouts' prefill itself (part of TTFAPrefill)
	TTFAStarted   Stat        `json:"ttfa_started"`            // request → the utterance began on the engine (text front end done)
	TTFACond      Stat        `json:"ttfa_conditioned"`        // request → prefix conditioning on the device
	TTFAVocode    Stat        `json:"ttfa_first_vocode"`       // the vocoder's first emission (its frames taken → first PCM on the host)
	FirstTTFAMs   float64     `json:"first_utterance_ttfa_ms"` // the engine's first utterance, everything cold (what engine.Warmup pays beforehand)
	FrameLatency  Stat        `json:"steady_frame_latency"`    // p50 of the runs' p50s, p90 of their p90s
	BudgetMs      float64     `json:"frame_budget_ms"`
	GenRTF        Ratio       `json:"generation_rtf"`
	VocoderRTF    Ratio       `json:"vocoder_rtf"`
	Frames        int         `json:"rollout_frames"`
	Chunk         int         `json:"vocoder_chunk"`
	Batches       []BatchStep `json:"batched_decode_step,omitempty"`
	MemoryGB      float64     `json:"device_memory_gb"`       // after the single-utterance measurements
	MemoryBatchGB float64     `json:"device_memory_batch_gb"` // after the batches too (their states stay cached)
	LoadSeconds   float64     `json:"load_seconds"`
	LongForm      *LongForm   `json:"long_form,omitempty"`
	Serve         *Serve      `json:"serve,omitempty"`
}

// BatchStep is the decode step of n utterances decoded at once.
type BatchStep struct {
	N    int  `json:"utterances"`
	Step Stat `json:"step"` // the whole batch's step, ms
	// PerUtteranceMs is Step.P50 / N; RTF is the real time the batch
	// generates per second: N × 11.61 ms of audio per step.
	PerUtteranceMs float64 `json:"per_utterance_ms"`
	RTF            float64 `json:"aggregate_rtf"`
	FirstStepMs    float64 `json:"first_step_ms"`
}

// Run builds the models on b and measures. progress reports each phase.
func Run(ctx context.Context, b compute.Backend, o Options, progress func(string)) (*Report, error) {
	if progress == nil {
		progress = func(string) {}
	}
	timer, ok := b.(compute.Timer)
	if !ok {
		return nil, fmt.Errorf("the %s backend cannot time its work, so it cannot be benchmarked", b.Name())
	}
	if o.Runs < 1 || o.DecodeSteps < 1 || o.Frames < 9 || o.PrefixLen < 12 ||
		o.Runs > 1000 || o.DecodeSteps > zonos.MaxFrames || o.Frames > zonos.MaxFrames || o.PrefixLen > 4096 {
		return nil, fmt.Errorf("bench: runs %d (1–1000), steps %d (1–%d), frames %d (9–%d), prefix %d (12–4096) out of range",
			o.Runs, o.DecodeSteps, zonos.MaxFrames, o.Frames, zonos.MaxFrames, o.PrefixLen)
	}
	for _, n := range o.Batches {
		if n < 1 || n > zonos.MaxBatch {
			return nil, fmt.Errorf("bench: batch of %d utterances; 1 to %d", n, zonos.MaxBatch)
		}
	}
	if o.LongFormSeconds < 0 || o.LongFormSeconds > 24*3600 || o.LongFormSeconds > 0 && (o.LongFormPartFrames < 9 || o.LongFormPartFrames > zonos.MaxFrames) {
		return nil, fmt.Errorf("bench: long-form reading of %g s (0 to 24 h) in parts of %d frames (9–%d) out of range", o.LongFormSeconds, o.LongFormPartFrames, zonos.MaxFrames)
	}
	if o.FirstChunk < 1 || o.Chunk < 1 || o.FirstChunk > 512 || o.Chunk > 512 {
		return nil, fmt.Errorf("bench: vocoder chunk sizes %d/%d frames must be in [1, 512]", o.FirstChunk, o.Chunk)
	}
	sh, err := shapesOf(o)
	if err != nil {
		return nil, err
	}
	cfg := sh.zonos
	r := &Report{Date: time.Now().Format("2006-01-02"), Backend: b.Name(), Device: b.Device(), Plan: compute.PlanOf(b).String(), Variant: string(o.Variant),
		GoVersion: runtime.Version(), PrefixLen: o.PrefixLen, Frames: o.Frames, Chunk: o.Chunk, BudgetMs: float64(engine.FrameBudget) / 1e6,
		Layers: sh.layers, ModelLayers: sh.modelLayers}

	progress(fmt.Sprintf("building a random %s model %s on %s", o.Variant, sh.what, b.Device()))
	t0 := time.Now()
	zf, err := randmodel.Zonos(cfg, o.Seed)
	if err != nil {
		return nil, err
	}
	r.StepGB = float64(zonos.StepBytes(zf)) / 1e9
	m, err := zonos.New(b, cfg, zf)
	if err != nil {
		return nil, err
	}
	zf = nil
	dcfg := sh.dac
	df, err := randmodel.DAC(dcfg, o.Seed)
	if err != nil {
		return nil, err
	}
	codec, err := dac.New(dcfg, df, compute.LaneOf(b)) // as engine.Load puts it

	if err != nil {
		return nil, err
	}
	df = nil
	runtime.GC()
	r.LoadSeconds = time.Since(t0).Seconds()

	progress("measuring memory bandwidth")
	n := o.BandwidthMB << 20
	r.CopyGBs = timer.CopyBandwidth(n) / 1e9
	r.ReadGBs = timer.ReadBandwidth(n) / 1e9
	r.FloorMs = r.StepGB / r.ReadGBs * 1e3

	e := engine.New(b, m, codec)
	if err := measureFirstUtterance(ctx, e, o, r, progress); err != nil {
		return nil, err
	}
	m.FreeStates() // the decode-step measurements' first step records afresh
	if err := measureModel(ctx, timer, m, o, r, progress); err != nil {
		return nil, err
	}
	if err := measureStreaming(ctx, timer, e, codec, o, r, progress); err != nil {
		return nil, err
	}
	if err := measureServe(ctx, e, o, r, progress); err != nil {
		return nil, err
	}
	r.MemoryGB = float64(timer.MemoryInUse()) / 1e9
	if err := measureBatches(ctx, timer, m, o, r, progress); err != nil {
		return nil, err
	}
	if len(o.Batches) > 0 {
		r.MemoryBatchGB = float64(timer.MemoryInUse()) / 1e9
	}
	if o.LongFormSeconds > 0 {
		if err := measureLongForm(ctx, timer, e, o, r, progress); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// benchPhonemes is a fixed prompt of n phoneme ids (BOS … EOS).
func benchPhonemes(n int) []int32 {
	ids := make([]int32, n)
	ids[0], ids[n-1] = 2, 3
	for i := 1; i < n-1; i++ {
		ids[i] = int32(4 + (i*37)%180)
	}
	return ids
}

var maskColumn = [zonos.NumCodebooks]int32{zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK}

// benchPrefix is the conditioning prefix of o.PrefixLen − 1 positions (the
// MASK column makes the last one).
func benchPrefix(m *zonos.Model, o Options) (compute.Tensor, error) {
	// The conditioner adds one position per non-phoneme conditioner (10 in
	// the real config) to the phonemes.
	extra := len(m.Config.PrefixConditioner.Conditioners) - 1
	in := zonos.Inputs{PhonemeIDs: benchPhonemes(o.PrefixLen - extra - 1), Values: map[string][]float32{"language_id": {24}}}
	prefix, _, err := m.Prefix(in)
	return prefix, err
}

func measureModel(ctx context.Context, timer compute.Timer, m *zonos.Model, o Options, r *Report, progress func(string)) error {
	prefix, err := benchPrefix(m, o)
	if err != nil {
		return err
	}
	progress(fmt.Sprintf("prefill of %d positions × %d", prefix.Shape()[1]+1, o.Runs))
	var pre []time.Duration
	var st *zonos.State
	for i := 0; i < o.Runs; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		st = m.NewState(prefix.Shape()[1] + 1 + o.DecodeSteps + 1)
		var perr error
		pre = append(pre, timer.Time(func() {
			_, perr = m.Prefill(st, prefix, [][zonos.NumCodebooks]int32{maskColumn}, 2, nil)
		}))
		if perr != nil {
			return perr
		}
	}
	r.Prefill = stat(pre)
	progress(fmt.Sprintf("%d decode steps as generation runs them (and op by op where the backend records graphs)", o.DecodeSteps))
	first, steps, replay, err := measureSteps(ctx, timer, m, prefix, o, false)
	if err != nil {
		return err
	}
	r.ReplayStepMs = float64(replay) / 1e6
	r.FirstStepMs = float64(first) / 1e6
	r.DecodeStep = stat(steps)
	if r.DecodeStep.P50 > 0 {
		r.FloorPercent = 100 * r.FloorMs / r.DecodeStep.P50
	}
	if r.QueuedStep, err = measureQueuedSteps(ctx, m, prefix, o); err != nil {
		return err
	}
	if _, ok := m.Backend().(compute.GraphOps); ok { // else there is no other way to run the step
		if _, steps, _, err = measureSteps(ctx, timer, m, prefix, o, true); err != nil {
			return err
		}
		r.EagerStep = stat(steps)
	}
	return nil
}

// measureBatches times the batched decode step at each of o.Batches.
func measureBatches(ctx context.Context, timer compute.Timer, m *zonos.Model, o Options, r *Report, progress func(string)) error {
	prefix, err := benchPrefix(m, o)
	if err != nil {
		return err
	}
	for _, n := range o.Batches {
		progress(fmt.Sprintf("%d decode steps of a batch of %d utterances", o.DecodeSteps, n))
		bs, err := measureBatch(ctx, timer, m, prefix, o, n)
		if err != nil {
			return err
		}
		r.Batches = append(r.Batches, bs)
	}
	return nil
}

// measureBatch times o.DecodeSteps steps of n utterances decoded at once
// (zonos.Batch: n copies of the bench prompt, each with its own seed and
// tokens), sampling included, after untimed joins; the first step
// (which records the batch's step graph) apart.
func measureBatch(ctx context.Context, timer compute.Timer, m *zonos.Model, prefix compute.Tensor, o Options, n int) (BatchStep, error) {
	gopt := zonos.GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), ForbidEOS: true}
	b, err := m.NewBatch(n, prefix.Shape()[1]+1+o.DecodeSteps+2)
	if err != nil {
		return BatchStep{}, err
	}
	defer b.Close()
	tok := make([][]int32, n)
	for u := range tok {
		gopt.Seed = o.Seed + uint64(u)
		if tok[u], err = b.Join(u, prefix, [][zonos.NumCodebooks]int32{maskColumn}, gopt); err != nil {
			return BatchStep{}, err
		}
	}
	w := gopt.Sampling.RepetitionWindow
	hist := make([][][]int32, n)
	for u := range hist {
		hist[u] = make([][]int32, zonos.NumCodebooks)
	}
	var first time.Duration
	var steps []time.Duration
	for i := 0; i <= o.DecodeSteps; i++ {
		if err := ctx.Err(); err != nil {
			return BatchStep{}, err
		}
		cols := make([][zonos.NumCodebooks]int32, n)
		for u := range cols {
			for k := range cols[u] {
				cols[u][k] = min(tok[u][k], zonos.CodebookSize-1)
				h := append(hist[u][k], cols[u][k])
				if w > 0 && len(h) > w {
					h = h[len(h)-w:]
				}
				hist[u][k] = h
			}
		}
		var serr error
		d := timer.Time(func() { tok, serr = b.Step(cols, hist) })
		if serr != nil {
			return BatchStep{}, serr
		}
		if i == 0 {
			first = d
		} else {
			steps = append(steps, d)
		}
	}
	s := stat(steps)
	bs := BatchStep{N: n, Step: s, FirstStepMs: float64(first) / 1e6}
	if s.P50 > 0 {
		bs.PerUtteranceMs = s.P50 / float64(n)
		bs.RTF = float64(n) * float64(engine.FrameBudget) / 1e6 / s.P50
	}
	return bs, nil
}

// measureSteps times o.DecodeSteps decode steps through zonos.Decoder —
// guidance, sampling (Zonos' defaults, repetition window included) and the
// nine tokens back on the host, each step fed the previous step's tokens —
// after an untimed prefill. The first step is returned apart: on a fresh
// state it records the step graph.
func measureSteps(ctx context.Context, timer compute.Timer, m *zonos.Model, prefix compute.Tensor, o Options, eager bool) (time.Duration, []time.Duration, time.Duration, error) {
	gopt := zonos.GenerateOptions{MaxNewTokens: o.DecodeSteps + 1, CFGScale: 2, Sampling: sample.Defaults(), Seed: o.Seed,
		ForbidEOS: true, EagerSteps: eager}
	// Room for the timed steps and, after them, as many device-fed replays.
	dec := m.NewDecoder(prefix, prefix.Shape()[1]+1+2*o.DecodeSteps+2, gopt)
	defer dec.Close()
	tok, err := dec.Prefill([][zonos.NumCodebooks]int32{maskColumn})
	if err != nil {
		return 0, nil, 0, err
	}
	w := gopt.Sampling.RepetitionWindow
	history := make([][]int32, zonos.NumCodebooks)
	var first time.Duration
	var steps []time.Duration
	for i := 0; i <= o.DecodeSteps; i++ {
		if err := ctx.Err(); err != nil {
			return 0, nil, 0, err
		}
		var col [zonos.NumCodebooks]int32
		copy(col[:], tok)
		for k := range history {
			history[k] = append(history[k], col[k])
			if w > 0 && len(history[k]) > w {
				history[k] = history[k][len(history[k])-w:]
			}
		}
		var serr error
		d := timer.Time(func() { tok, serr = dec.Step(col, history) })
		if serr != nil {
			return 0, nil, 0, serr
		}
		if i == 0 {
			first = d
		} else {
			steps = append(steps, d)
		}
	}
	// Last: the step graph alone, back to back, each replay fed by the one
	// before on the device.
	var col [zonos.NumCodebooks]int32
	copy(col[:], tok)
	replay, _, err := dec.ReplayTime(timer, col, history, max(o.DecodeSteps, 1))
	if err != nil {
		return 0, nil, 0, err
	}
	return first, steps, replay, nil
}

// measureQueuedSteps times o.DecodeSteps decode steps as the generate loop
// runs them: a fixed-length rollout from the bench prompt, where each step
// is queued on the device behind the one before (device-side token
// feedback) before the host reads that one's tokens. Each step's time is
// the host's wall time from one step's tokens to the next's; the first
// step (which may record the step graph) is left out.
func measureQueuedSteps(ctx context.Context, m *zonos.Model, prefix compute.Tensor, o Options) (Stat, error) {
	// n frames take n + 8 steps (the codebook delay's tail included).
	frames := max(1, o.DecodeSteps+1-(zonos.NumCodebooks-1))
	gopt := zonos.GenerateOptions{MaxNewTokens: frames, CFGScale: 2, Sampling: sample.Defaults(), Seed: o.Seed, ForbidEOS: true}
	dec := m.NewDecoder(prefix, prefix.Shape()[1]+frames+zonos.NumCodebooks+1, gopt)
	defer dec.Close()
	res, err := dec.Rollout(ctx, gopt)
	if err != nil {
		return Stat{}, err
	}
	if len(res.StepTimes) < o.DecodeSteps+1 {
		return Stat{}, fmt.Errorf("bench: the rollout made %d decode steps, not %d", len(res.StepTimes), o.DecodeSteps+1)
	}
	return stat(res.StepTimes[1 : o.DecodeSteps+1]), nil
}

// rolloutRequest is the streaming measurements' request i.
func rolloutRequest(o Options, i int) engine.Request {
	req := engine.Request{Text: "The quick brown fox jumps over the lazy dog.", Language: "en-us", Knobs: engine.DefaultKnobs(),
		Seed: o.Seed + uint64(i), FixedFrames: o.Frames, FirstChunk: o.FirstChunk, Chunk: o.Chunk}
	req.Knobs.Sampling = sample.Defaults()
	return req
}

// measureFirstUtterance times the first utterance of the freshly built
// engine to its first audio, before anything else has run on it: the text
// front end's first call, recording the decode step, the allocator's first
// growth for its state and the vocoder's first emission all fall in it.
// Against the steady TTFA that is what engine.Warmup takes off an app's
// first utterance. The utterance is stopped at its first audio.
func measureFirstUtterance(ctx context.Context, e *engine.Engine, o Options, r *Report, progress func(string)) error {
	progress("the engine's first utterance, cold, to its first audio")
	m, err := e.SpeakToFirstAudio(ctx, rolloutRequest(o, 0))
	if err != nil {
		return err
	}
	if m.TTFA <= 0 {
		return fmt.Errorf("bench: the first utterance ended without audio")
	}
	r.FirstTTFAMs = float64(m.TTFA) / 1e6
	return nil
}

func measureStreaming(ctx context.Context, timer compute.Timer, e *engine.Engine, codec *dac.Model, o Options, r *Report, progress func(string)) error {
	progress(fmt.Sprintf("%d fixed-length rollouts of %d frames (TTFA, steady frame latency, RTF)", o.Runs, o.Frames))
	// What engine.Warmup does for an app beyond the first utterance: the
	// vocoder's first push recorded where the backend records graphs.
	if err := codec.RecordFirstPush(dac.StreamConfig{FirstChunk: o.FirstChunk, Chunk: o.Chunk}); err != nil {
		return fmt.Errorf("bench: recording the vocoder's first push: %w", err)
	}
	var ttfa, pre, comp, frame, started, cond, firstVoc, p50s, p90s []time.Duration
	var gen []float64
	var lastCodes [][zonos.NumCodebooks]int32
	for i := 0; i < o.Runs; i++ {
		s, err := e.Synthesize(ctx, rolloutRequest(o, i))
		if err != nil {
			return err
		}
		var final engine.Event
		for ev := range s.Events() {
			if ev.Kind == engine.Done || ev.Kind == engine.Failed {
				final = ev
			}
		}
		if final.Kind == engine.Failed {
			return final.Err
		}
		m := final.Metrics
		ttfa = append(ttfa, m.TTFA)
		pre, comp, frame = append(pre, m.Prefill), append(comp, m.PrefillCompute), append(frame, m.FirstFrame)
		started, cond, firstVoc = append(started, m.Started), append(cond, m.Conditioned), append(firstVoc, m.FirstVocode)
		p50s = append(p50s, m.FrameLatencyP50)
		p90s = append(p90s, m.FrameLatencyP90)
		gen = append(gen, m.RTF)
		lastCodes = s.Codes()
	}
	r.TTFA = stat(ttfa)
	r.TTFAPrefill, r.TTFACompute, r.TTFAFrame = stat(pre), stat(comp), stat(frame)
	r.TTFAStarted, r.TTFACond, r.TTFAVocode = stat(started), stat(cond), stat(firstVoc)
	a, b := stat(p50s), stat(p90s)
	r.FrameLatency = Stat{P50: a.P50, P90: b.P90, Min: a.Min, N: a.N}
	r.GenRTF = ratio(gen)

	// On a backend with a side lane the vocoder runs there, and the timer's
	// events (on the idle main stream) bracket its whole run: device time
	// from the first launch to the last read-back.
	progress("vocoder alone, streamed in the rollout's chunks")
	cb := make([][]int32, zonos.NumCodebooks)
	for _, f := range lastCodes {
		for k := range cb {
			cb[k] = append(cb[k], f[k])
		}
	}
	audioSec := float64(len(lastCodes)*512) / engine.SampleRate
	var voc []float64
	for i := 0; i < o.Runs; i++ {
		st, err := codec.NewStreamer(dac.StreamConfig{FirstChunk: o.FirstChunk, Chunk: o.Chunk})
		if err != nil {
			return err
		}
		var verr error
		d := timer.Time(func() {
			for _, f := range lastCodes {
				if _, verr = st.Push(f); verr != nil {
					return
				}
			}
			_, verr = st.Flush()
		})
		if verr != nil {
			return verr
		}
		voc = append(voc, audioSec/d.Seconds())
	}
	r.VocoderRTF = ratio(voc)
	return nil
}
