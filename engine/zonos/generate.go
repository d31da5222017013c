package zonos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
)

// GenerateOptions are the knobs of one generate() call.
type GenerateOptions struct {
	MaxNewTokens int     // frames to generate at most (86 ≈ 1 s)
	CFGScale     float32 // classifier-free guidance; Zonos' default 2.0
	Sampling     sample.Params
	Seed         uint64       // seeds the default noise source
	Noise        sample.Noise // overrides Seed when set
	// AudioPrefix holds frames of codes that continue into the new audio
	// (a DAC-encoded clip); they are fed at prefill and returned first.
	AudioPrefix [][NumCodebooks]int32
	// ForbidEOS suppresses EOS on codebook 0 too, so exactly MaxNewTokens
	// frames come out: fixed-length rollouts for benchmarks.
	ForbidEOS bool
	// EagerSteps runs every decode step op by op even where the backend
	// could replay a recorded step (compute.GraphOps): benchmarks' baseline.
	EagerSteps bool
	// OnPrefill and OnStep, when set, are told the wall time of the prefill
	// and of each decode step (tokens included) as they finish; an error
	// ends generation like one from onFrame.
	OnPrefill func(d time.Duration) error
	OnStep    func(step int, d time.Duration) error
	// OnConditioned, when set, is called once the prefix conditioning is
	// on the device and before the utterance's state is set up, so a
	// caller can see where the time before the prefill goes.
	OnConditioned func()
	// HoldAfterFrames and Hold, when both set, pause generation once: as
	// soon as the frames given to onFrame (prefix frames included) number
	// HoldAfterFrames, Hold is called before anything else happens, and
	// the step that delivered the last of them queued no step behind it
	// on the device (aheadSource), so nothing of the decoder runs while
	// Hold waits. The prefill delivers the prefix frames at once, each
	// step after it at most one frame (Frame.Index HoldAfterFrames−1 is
	// the last before Hold unless the prefix is longer). The engine uses
	// it to let the vocoder's first emission run alone (stream.go).
	// Hold's error ends generation like one from onFrame; an utterance
	// that delivers fewer frames never calls it.
	HoldAfterFrames int
	Hold            func() error
	// TailTrim, when set, is asked once, as codebook 0 emits EOS, how many
	// of the last generated frames to drop (0…MaxTailTrim): they are never
	// given to onFrame nor returned. A part of a long text that another
	// part continues from ends this way (engine/longform.go): the frames
	// just before EOS are where generated speech fades into an ending, and
	// the next part's audio prefix must be exactly the audio kept. Asking
	// at EOS, not before, lets the caller learn meanwhile whether more text
	// follows. Prefix frames are never dropped.
	TailTrim func() int
}

// MaxTailTrim bounds GenerateOptions.TailTrim: EOS on codebook 0 is known
// eight steps before the frame it ends is complete, so up to seven frames
// before it can still be held back without delaying any frame.
const MaxTailTrim = NumCodebooks - 2

// Frame is one complete 9-code frame, released the moment the delay pattern
// lets go of it (its codebook 8 is written). Codes ≥ 1024 are already 0.
type Frame struct {
	Index  int // position in the utterance's frames (prefix frames first)
	Codes  [NumCodebooks]int32
	Prefix bool // a frame of the audio prefix, not generated
	Step   int  // decode step that completed it (0 = prefill)
}

// Result is what a finished (or cancelled) generation produced.
type Result struct {
	Codes       [][NumCodebooks]int32 // generate()'s return value, frame-major
	Delayed     [][NumCodebooks]int32 // the final delayed grid (Unknown where never written)
	EOS         bool                  // codebook 0 emitted EOS
	PrefillTime time.Duration
	StepTimes   []time.Duration // wall time of each decode step (backend + sampling)
	Notes       []string        // conditioning values clamped into range
}

// LogitSource yields the guided host logits (NumCodebooks rows of
// LogitWidth) the generate loop samples: for the prefill's columns, then
// for one delayed column at a time. The model's own decode state is one
// (Generate on a backend that samples on the host); stored logits, such as
// the reference's, are another, which is how GenerateFrom checks the
// loop's control flow without a model.
type LogitSource interface {
	Prefill(cols [][NumCodebooks]int32) ([]float32, error)
	Step(col [NumCodebooks]int32) ([]float32, error)
}

// tokenSource is what the generate loop needs: the prefill's tokens
// (sampled without penalty or EOS bias), then each step's tokens given the
// repetition window. A host sampler over a LogitSource or a backend with
// compute.SamplerOps provides it.
type tokenSource interface {
	prefillTokens(cols [][NumCodebooks]int32) ([]int32, error)
	stepTokens(col [NumCodebooks]int32, history [][]int32) ([]int32, error)
}

// aheadSource is a tokenSource that can queue the next decode step before
// it returns this one's tokens (device-side token feedback): loop is the
// generate loop's state before the step, and ahead says that the next
// step will run, fed the column this step writes, made of this step's
// tokens under the EOS rule, with its last loop.masked cells MASK (see
// feedable).
type aheadSource interface {
	stepTokensAhead(col [NumCodebooks]int32, history [][]int32, loop loopState, ahead bool) ([]int32, error)
}

// loopState is the generate loop's EOS bookkeeping before a step, and how
// many trailing cells of the column the step writes stay MASK (masked).
type loopState struct {
	remaining int
	stopping  bool
	masked    int
}

// flat is the state as the step's input holds it (compute.LoopWords).
func (l loopState) flat() [compute.LoopWords]int32 {
	s := int32(0)
	if l.stopping {
		s = 1
	}
	return [compute.LoopWords]int32{int32(l.remaining), s, int32(l.masked)}
}

// feedable returns how many trailing cells of column c are MASK (masked,
// the loop state's third word: column t of the delayed grid has
// max(9 − t, 0) of them whatever else it holds, one fewer each step, as
// FeedAt counts them down) and whether device-side token feedback
// (compute.GraphOps FeedAt) writes c as the loop's write does (ok): its
// unknown cells come first and every known cell after them is MASK — a
// column of the codebook delay's ramp, or one of unknown cells only. The
// i-th unknown cell takes the i-th token, so the tokens land in the
// leading cells in order and the MASK cells stay.
func feedable(c [NumCodebooks]int32) (masked int, ok bool) {
	for k := NumCodebooks - 1; k >= 0 && c[k] == MASK; k-- {
		masked++
	}
	for k := 0; k < NumCodebooks-masked; k++ {
		if c[k] != Unknown {
			return masked, false
		}
	}
	return masked, masked < NumCodebooks
}

// hostTokens samples a LogitSource's logits on the host.
type hostTokens struct {
	src       LogitSource
	sampler   *sample.Sampler
	forbidEOS bool
}

func newHostTokens(src LogitSource, o GenerateOptions) *hostTokens {
	noise := o.Noise
	if noise == nil {
		noise = sample.NewPhilox(o.Seed)
	}
	return &hostTokens{src: src, sampler: sample.New(o.Sampling, noise), forbidEOS: o.ForbidEOS}
}

func (h *hostTokens) prefillTokens(cols [][NumCodebooks]int32) ([]int32, error) {
	logits, err := h.src.Prefill(cols)
	if err != nil {
		return nil, err
	}
	return h.sampler.Sample(logits, LogitWidth, nil), nil
}

func (h *hostTokens) stepTokens(col [NumCodebooks]int32, history [][]int32) ([]int32, error) {
	logits, err := h.src.Step(col)
	if err != nil {
		return nil, err
	}
	BiasEOS(logits)
	if h.forbidEOS {
		logits[EOS] = float32(negInf())
	}
	return h.sampler.Sample(logits, LogitWidth, history), nil
}

type modelStepper struct {
	m      *Model
	st     *State
	prefix compute.Tensor
	cfg    float32
}

func (s *modelStepper) Prefill(cols [][NumCodebooks]int32) ([]float32, error) {
	return s.m.Prefill(s.st, s.prefix, cols, s.cfg, nil)
}

func (s *modelStepper) Step(col [NumCodebooks]int32) ([]float32, error) {
	return s.m.Step(s.st, col, s.cfg, nil)
}

// deviceTokens keeps guidance and sampling on a backend with
// compute.SamplerOps: only nine tokens per step reach the host. Its noise
// continues the same Philox stream the host sampler would draw.
type deviceTokens struct {
	m       *Model
	ops     compute.SamplerOps
	st      *State
	prefix  compute.Tensor
	cfg     float32
	spec    compute.SampleSpec
	seed    uint64
	counter uint64
	forbid  bool
	eager   bool // GenerateOptions.EagerSteps
}

func (d *deviceTokens) draw(heads compute.Tensor, history [][]int32, eosBias bool) ([]int32, error) {
	var hs [][][]int32
	if history != nil {
		hs = [][][]int32{history}
	}
	return drawOnDevice(d.m.b, d.ops, heads, d.cfg, padFrom(d.forbid, eosBias), eosBias, d.spec, hs, d.seed, &d.counter)
}

// padFrom is the first logit column masked to −inf: the pad column, and
// EOS too in a decode step (not the prefill) of a fixed-length rollout.
func padFrom(forbidEOS, step bool) int {
	if forbidEOS && step {
		return EOS
	}
	return MASK
}

// drawOnDevice guides heads [2, 9n, W] and samples every row on the device
// (compute.SamplerOps) for n utterances: histories[u] is utterance u's
// repetition window, rows of one length across the batch (histories nil,
// or a nil entry: no penalty in this draw). It advances *counter past the
// Philox blocks the draw used.
func drawOnDevice(b compute.Backend, ops compute.SamplerOps, heads compute.Tensor, cfg float32, pad int, eosBias bool,
	spec compute.SampleSpec, histories [][][]int32, seed uint64, counter *uint64) ([]int32, error) {
	rows := heads.Shape()[1]
	logits := ops.Guide(heads, cfg, pad, EOS, eosBias)
	var hist compute.Tensor
	if len(histories) == 0 || histories[0] == nil {
		spec.Penalty = 1
	} else if spec.Penalty != 1 {
		w := len(histories[0][0])
		flat := make([]int32, 0, rows*w)
		for u, h := range histories {
			for k := range h {
				if len(h[k]) != w {
					return nil, fmt.Errorf("repetition windows differ in length (utterance %d codebook %d: %d, not %d)", u, k, len(h[k]), w)
				}
				flat = append(flat, h[k]...)
			}
		}
		hist = b.FromI32(flat, rows, w)
	}
	tok := b.ReadI32(ops.Sample(logits, hist, nil, spec, seed, *counter))
	if spec.Temperature > 0 {
		*counter += uint64((rows*LogitWidth + 3) / 4)
	}
	return tok, nil
}

func (d *deviceTokens) prefillTokens(cols [][NumCodebooks]int32) ([]int32, error) {
	emb, err := d.m.embedColumns(cols)
	if err != nil {
		return nil, err
	}
	heads, err := d.m.forwardHeads(d.st, d.m.b.Concat(1, d.prefix, emb), nil)
	if err != nil {
		return nil, err
	}
	return d.draw(heads, nil, false)
}

func (d *deviceTokens) stepTokens(col [NumCodebooks]int32, history [][]int32) ([]int32, error) {
	if sg := d.stepGraph(); sg != nil {
		tok, err := sg.replay(d.m, d.st, col, history, d.seed, d.counter)
		if err == nil && d.spec.Temperature > 0 {
			d.counter += uint64((NumCodebooks*LogitWidth + 3) / 4)
		}
		return tok, err
	}
	emb, err := d.m.embedColumns([][NumCodebooks]int32{col})
	if err != nil {
		return nil, err
	}
	heads, err := d.m.forwardHeads(d.st, emb, nil)
	if err != nil {
		return nil, err
	}
	return d.draw(heads, history, true)
}

func (d *deviceTokens) stepTokensAhead(col [NumCodebooks]int32, history [][]int32, loop loopState, ahead bool) ([]int32, error) {
	sg := d.stepGraph()
	if sg == nil || sg.out == nil {
		return d.stepTokens(col, history)
	}
	tok, err := sg.step(d.m, d.st, col, history, d.seed, d.counter, loop, ahead)
	if err == nil && d.spec.Temperature > 0 {
		d.counter += uint64((NumCodebooks*LogitWidth + 3) / 4)
	}
	return tok, err
}

// stepGraph returns the state's recorded decode step for this
// utterance's knobs, recording it (again) when the state has none or one
// for other knobs; nil when the backend, the knobs or a failed recording
// rule graphs out.
func (d *deviceTokens) stepGraph() *stepGraph {
	if _, ok := d.m.b.(compute.GraphOps); !ok || d.eager || !graphable(d.spec) {
		return nil
	}
	k := stepKey{cfg: d.cfg, spec: d.spec, padFrom: padFrom(d.forbid, true)}
	if d.st.graph != nil && d.st.graph.key == k {
		return d.st.graph
	}
	if d.st.graph != nil {
		d.st.graph.destroy(d.m.b)
		d.st.graph = nil
	}
	sg, err := d.m.recordStep(d.st, d.ops, k)
	if err != nil {
		// The graph is only a faster way to run the same step: go on op by
		// op. A device that is really failing fails those ops too, with
		// their own errors.
		d.eager = true
		return nil
	}
	d.st.graph = sg
	return sg
}

func specOf(p sample.Params) compute.SampleSpec {
	return compute.SampleSpec{Temperature: p.Temperature, TopP: p.TopP, MinP: p.MinP, TopK: p.TopK,
		Linear: p.Linear, Conf: p.Conf, Quad: p.Quad, Penalty: p.RepetitionPenalty, Window: p.RepetitionWindow}
}

// MaxFrames bounds one utterance (Zonos' default is 30 s = 86·30 frames;
// twice that keeps memory and time bounded for long inputs).
const MaxFrames = 86 * 60

// Validate checks options before any work is done.
func (o *GenerateOptions) Validate() error {
	if o.MaxNewTokens <= 0 || o.MaxNewTokens > MaxFrames {
		return fmt.Errorf("max new frames %d must be in [1, %d]", o.MaxNewTokens, MaxFrames)
	}
	if o.CFGScale == 1 || o.CFGScale != o.CFGScale || o.CFGScale < 0 || o.CFGScale > 20 {
		return fmt.Errorf("cfg scale %g must be in [0, 20] and not 1 (Zonos requires guidance)", o.CFGScale)
	}
	if len(o.AudioPrefix) > MaxFrames {
		return fmt.Errorf("audio prefix of %d frames exceeds %d", len(o.AudioPrefix), MaxFrames)
	}
	for t, f := range o.AudioPrefix {
		for k, c := range f {
			if c < 0 || c >= CodebookSize {
				return fmt.Errorf("audio prefix frame %d codebook %d: code %d outside [0, 1023]", t, k, c)
			}
		}
	}
	return o.Sampling.Validate()
}

// Generate runs Zonos' generate loop for one utterance: conditioning prefix,
// prefill, then one decode step per delayed column, calling onFrame with
// each complete frame as soon as it exists. It stops at EOS (plus the
// steps that close the other codebooks), after MaxNewTokens, when ctx is
// done (returning ctx's error with the partial result) or when onFrame
// returns an error.
func (m *Model) Generate(ctx context.Context, in Inputs, o GenerateOptions, onFrame func(Frame) error) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	prefix, notes, err := m.Prefix(in)
	if err != nil {
		return nil, err
	}
	if o.OnConditioned != nil {
		o.OnConditioned()
	}
	dec := m.NewDecoder(prefix, prefix.Shape()[1]+len(o.AudioPrefix)+o.MaxNewTokens+NumCodebooks+1, o)
	defer dec.Close()
	res, err := runTokens(ctx, dec.ts, o, onFrame)
	if res != nil {
		res.Notes = notes
	}
	return res, err
}

// Decoder is one utterance's token source as Generate drives it: guidance
// and sampling on the device where the backend has compute.SamplerOps, the
// decode step replayed as a recorded graph where it has compute.GraphOps,
// else logits sampled on the host. Benchmarks time its steps.
type Decoder struct {
	m  *Model
	st *State
	ts tokenSource
}

// NewDecoder prepares decoding after the [2, L, d] prefix for up to maxLen
// positions in all (prefix, fed columns and steps). o's sampler knobs,
// seed, guidance scale and ForbidEOS apply. Close it when done.
func (m *Model) NewDecoder(prefix compute.Tensor, maxLen int, o GenerateOptions) *Decoder {
	st := m.acquireState(maxLen)
	d := &Decoder{m: m, st: st, ts: newHostTokens(&modelStepper{m: m, st: st, prefix: prefix, cfg: o.CFGScale}, o)}
	if ops, ok := m.b.(compute.SamplerOps); ok && o.Noise == nil {
		d.ts = &deviceTokens{m: m, ops: ops, st: st, prefix: prefix, cfg: o.CFGScale, spec: specOf(o.Sampling),
			seed: o.Seed, forbid: o.ForbidEOS, eager: o.EagerSteps}
	}
	return d
}

// Rollout runs the generate loop on the decoder — the prefill, then every
// step, each next step queued on the device before this one's tokens are
// read where the backend allows it — as Generate does after the
// conditioning, and returns what it produced (benchmarks read its
// StepTimes). o's sampler knobs must be the ones the decoder was made
// with; its length, EOS and audio prefix options apply.
func (d *Decoder) Rollout(ctx context.Context, o GenerateOptions) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return runTokens(ctx, d.ts, o, nil)
}

// Prefill feeds the prefix and the first delayed columns and returns the
// nine sampled tokens (no repetition penalty, no EOS bias).
func (d *Decoder) Prefill(cols [][NumCodebooks]int32) ([]int32, error) {
	return d.ts.prefillTokens(cols)
}

// Step feeds one delayed column and returns the next nine tokens, with
// history the last columns of each codebook for the repetition penalty.
func (d *Decoder) Step(col [NumCodebooks]int32, history [][]int32) ([]int32, error) {
	return d.ts.stepTokens(col, history)
}

// Queued reports whether a decode step is queued on the device that the
// next Step must collect (device-side token feedback, queued ahead).
func (d *Decoder) Queued() bool {
	return d.st != nil && d.st.graph != nil && d.st.graph.pending
}

// Close gives the decoder's state back to the model's pool.
func (d *Decoder) Close() {
	if d.st != nil {
		d.m.releaseState(d.st)
		d.st = nil
	}
}

// GenerateFrom runs Generate's loop after the conditioning — the codebook
// delay, the EOS rule, the audio prefix, the final trimming, each frame to
// onFrame as soon as it is complete — over the logits of src, sampled on
// the host with o's knobs (BiasEOS and the repetition window as Generate
// applies them). o.CFGScale is src's business: its logits come guided.
func GenerateFrom(ctx context.Context, src LogitSource, o GenerateOptions, onFrame func(Frame) error) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return runTokens(ctx, newHostTokens(src, o), o, onFrame)
}

// EOSRule is the generate loop's end-of-speech rule for one decode step:
// tok are the step's sampled tokens, remaining and stopping the loop's
// state before it. The first EOS on codebook 0 caps the remaining steps at
// nine (one per codebook to close); from then on each column is MASK up to
// the codebook being closed, which gets EOS. It returns the tokens to write,
// the state after the step (remaining counts this step) and whether tok
// opened with EOS. Device-side token feedback (compute.GraphOps FeedAt)
// applies the same rule on the device.
func EOSRule(tok []int32, remaining int, stopping bool) (col [NumCodebooks]int32, rem int, stop, eos bool) {
	copy(col[:], tok)
	if tok[0] == EOS {
		remaining = min(remaining, NumCodebooks)
		stopping, eos = true, true
	}
	if stopping {
		idx := min(NumCodebooks-remaining, NumCodebooks-1)
		for k := 0; k < idx; k++ {
			col[k] = MASK
		}
		col[idx] = EOS
	}
	return col, remaining - 1, stopping, eos
}

// runTokens is generate()'s control flow (zonos/model.py), backend-agnostic.
func runTokens(ctx context.Context, s tokenSource, o GenerateOptions, onFrame func(Frame) error) (*Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	P := len(o.AudioPrefix)
	audioLen := P + o.MaxNewTokens
	codes := make([][NumCodebooks]int32, audioLen)
	for t := range codes {
		for k := range codes[t] {
			codes[t][k] = Unknown
		}
	}
	copy(codes, o.AudioPrefix)
	grid := ApplyDelay(codes)
	W := len(grid)
	res := &Result{Delayed: grid}
	// cut bounds the frames delivered and returned (GenerateOptions.
	// TailTrim); done is finish with it applied.
	cut := audioLen
	done := func(offset int) *Result {
		r := finish(res, offset)
		r.Codes = r.Codes[:min(len(r.Codes), cut)]
		return r
	}

	// delivered is how many frames have gone to onFrame once column col is
	// written: frame j is released once its codebook-8 cell (column j+9)
	// is, except the frame that generate() trims: when the loop is about
	// to end (last == true) the frame completed by this very column is
	// the EOS frame and never part of the output. Prefix frames are known
	// from the start.
	delivered := func(col int, last bool) int {
		upto := col - NumCodebooks
		if last {
			upto--
		}
		return min(max(P, upto+1), audioLen, cut)
	}
	emitted := 0
	emit := func(col, step int, last bool) error {
		for n := delivered(col, last); emitted < n; emitted++ {
			if onFrame == nil {
				continue
			}
			if err := onFrame(Frame{Index: emitted, Codes: frameAt(grid, emitted), Prefix: emitted < P, Step: step}); err != nil {
				return err
			}
		}
		return nil
	}
	// write fills a column's unknown cells the way generate()'s
	// masked_scatter_ does: the i-th unknown cell takes the i-th sampled
	// token, so where leading codebooks are already MASK (the last columns)
	// the tokens shift down a codebook. The golden codes depend on it.
	write := func(col int, tok []int32) {
		if col >= W {
			return
		}
		i := 0
		for k := range grid[col] {
			if grid[col][k] == Unknown {
				grid[col][k] = tok[i]
				i++
			}
		}
	}

	// hold calls o.Hold once HoldAfterFrames frames are out (held: it
	// was called, or there is none).
	held := o.Hold == nil || o.HoldAfterFrames <= 0
	hold := func() error {
		if held || emitted < o.HoldAfterFrames {
			return nil
		}
		held = true
		return o.Hold()
	}

	t0 := time.Now()
	// Prefill is sampled without repetition penalty and without EOS bias.
	tok, err := s.prefillTokens(grid[:P+1])
	if err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	offset := P + 1
	write(offset, tok)
	res.PrefillTime = time.Since(t0)
	if o.OnPrefill != nil {
		if err := o.OnPrefill(res.PrefillTime); err != nil {
			return done(offset), err
		}
	}
	if err := emit(offset, 0, false); err != nil {
		return done(offset), err
	}
	if err := hold(); err != nil {
		return done(offset), err
	}

	remaining := W - offset
	stopping := false
	history := make([][]int32, NumCodebooks)
	for step := 1; remaining > 0; step++ {
		if err := ctx.Err(); err != nil {
			return done(offset), err
		}
		ts := time.Now()
		offset++
		w := o.Sampling.RepetitionWindow
		lo := 0
		if w > 0 {
			lo = max(0, offset-w)
		}
		for k := range history {
			history[k] = history[k][:0]
			for t := lo; t < offset; t++ {
				history[k] = append(history[k], grid[t][k])
			}
		}
		if as, ok := s.(aheadSource); ok {
			// masked is counted for every column, so that a step queued by
			// the one before agrees with the loop even where this step's
			// own column is not feedable (a short utterance's ramp and tail
			// overlap).
			var masked int
			ahead := false
			if offset < W {
				masked, ahead = feedable(grid[offset])
				ahead = ahead && remaining >= 2
			}
			// The step that delivers the frames Hold waits for queues no
			// step behind it. Which step that is is known now: it writes
			// column offset and emits with last = remaining == 1 (EOSRule
			// leaves min(remaining, 9)−1 steps, none only from 1). For
			// HoldAfterFrames = N > P it is step N − P + 7, writing
			// column N + 8, frame N−1's codebook-8 cell (unless it is
			// the last step, whose frame is the trimmed EOS frame).
			if !held && delivered(offset, remaining == 1) >= o.HoldAfterFrames {
				ahead = false
			}
			tok, err = as.stepTokensAhead(grid[offset-1], history, loopState{remaining, stopping, masked}, ahead)
		} else {
			tok, err = s.stepTokens(grid[offset-1], history)
		}
		if err != nil {
			return done(offset - 1), fmt.Errorf("decode step %d: %w", step, err)
		}
		var col [NumCodebooks]int32
		var eos bool
		col, remaining, stopping, eos = EOSRule(tok, remaining, stopping)
		if eos && !res.EOS && o.TailTrim != nil {
			// Column offset holds codebook 0's EOS: frame offset−1 is the
			// EOS frame, the frames before it the speech.
			t := min(max(o.TailTrim(), 0), MaxTailTrim)
			cut = max(P, min(cut, offset-1-t))
		}
		res.EOS = res.EOS || eos
		write(offset, col[:])
		res.StepTimes = append(res.StepTimes, time.Since(ts))
		if o.OnStep != nil {
			if err := o.OnStep(step, res.StepTimes[len(res.StepTimes)-1]); err != nil {
				return done(offset), err
			}
		}
		if err := emit(offset, step, remaining == 0); err != nil {
			return done(offset), err
		}
		if err := hold(); err != nil {
			return done(offset), err
		}
	}
	return done(offset), nil
}

// BiasEOS applies generate()'s logit_bias to one decode step's logits
// (NumCodebooks rows of LogitWidth, as Step returns them): only codebook 0
// may predict EOS. The generate loop applies it before sampling each step
// (not the prefill); a caller sampling Step's logits itself applies it to
// draw what generate() would.
func BiasEOS(logits []float32) {
	for k := 1; k < NumCodebooks; k++ {
		logits[k*LogitWidth+EOS] = float32(negInf())
	}
}

// finish reverts the delay, maps EOS/MASK to 0 and trims to offset−9 frames.
func finish(res *Result, offset int) *Result {
	out := RevertDelay(res.Delayed)
	n := min(max(offset-NumCodebooks, 0), len(out))
	out = out[:n]
	for t := range out {
		for k := range out[t] {
			if out[t][k] >= CodebookSize {
				out[t][k] = 0
			}
		}
	}
	res.Codes = out
	return res
}

// ErrStopped may be returned by onFrame to end generation early without
// reporting a failure.
var ErrStopped = errors.New("generation stopped")
