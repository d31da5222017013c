package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
	"zonostream/engine/weights"
	"zonostream/engine/zonos"
	"zonostream/internal/check"
)

// Zonos runs a zonos-* golden pack through engine/zonos on backend b: the
// prefix, every layer's stream at prefill and at the first decode step,
// prefill and teacher-forced decode logits, the sampled tokens, and greedy
// generate() codes, for case A and the secondary cases (nospk., apfx.) as
// far as the pack stores them. Tolerance: max |Δ| ≤ 1e-4·max(1, max|ref|);
// tokens and codes identical. The cg.* tensors (a CUDA-graph warm-up quirk
// of the reference) are deliberately not matched (ZONOS.md).
func Zonos(packDir string, b compute.Backend) []check.Result {
	pack := filepath.Base(packDir)
	m, err := zonos.Load(b, filepath.Join(packDir, "config.json"), filepath.Join(packDir, "model.safetensors"))
	if err != nil {
		return []check.Result{check.Failure(pack, "load", err)}
	}
	io, err := weights.Open(filepath.Join(packDir, "io.safetensors"))
	if err != nil {
		return []check.Result{check.Failure(pack, "load", err)}
	}
	defer io.Close()
	g := &zonosRun{pack: pack, m: m, io: io}
	for _, c := range []string{"", "nospk.", "apfx."} {
		g.runCase(c)
	}
	return g.results
}

// zonosRun is one zonos-* pack's checks as they are made.
type zonosRun struct {
	pack    string
	m       *zonos.Model
	io      *weights.File
	results []check.Result
}

func (g *zonosRun) add(r check.Result) { g.results = append(g.results, r) }

func (g *zonosRun) floats(name string) []float32 {
	t, err := g.io.Tensor(name)
	if err != nil {
		return nil
	}
	v, _ := t.Float32s()
	return v
}

func (g *zonosRun) ints(name string) ([]int64, []int) {
	t, err := g.io.Tensor(name)
	if err != nil {
		return nil, nil
	}
	v, _ := t.Int64s()
	return v, t.Shape
}

// compare records a float comparison against a golden tensor, if present.
func (g *zonosRun) compare(name string, got []float32) {
	ref := g.floats(name)
	if ref == nil {
		return
	}
	d, mx := check.MaxAbsDiff(got, ref)
	g.add(check.Compare(g.pack, name, d, check.RelTol(mx)))
}

// zonosInputs reads the cond.* tensors of a pack into zonos.Inputs
// (speaker omitted for the nospk. case).
func zonosInputs(io *weights.File, withSpeaker bool) (zonos.Inputs, error) {
	in := zonos.Inputs{Values: map[string][]float32{}}
	ids, err := io.Tensor("cond.espeak_ids")
	if err != nil {
		return in, err
	}
	iv, _ := ids.Int64s()
	for _, v := range iv {
		in.PhonemeIDs = append(in.PhonemeIDs, int32(v))
	}
	for _, name := range io.Names() {
		key, ok := strings.CutPrefix(name, "cond.")
		if !ok || key == "espeak_ids" || (key == "speaker" && !withSpeaker) {
			continue
		}
		t, _ := io.Tensor(name)
		var vals []float32
		if t.DType == weights.I64 || t.DType == weights.I32 {
			iv, _ := t.Int64s()
			for _, v := range iv {
				vals = append(vals, float32(v))
			}
		} else if vals, err = t.Float32s(); err != nil {
			return in, err
		}
		in.Values[key] = vals
	}
	return in, nil
}

// columns converts a golden [1, 9, T] (or [S, 1, 9, 1]) id tensor to columns.
func columns(v []int64, T int) [][zonos.NumCodebooks]int32 {
	cols := make([][zonos.NumCodebooks]int32, T)
	for k := 0; k < zonos.NumCodebooks; k++ {
		for t := 0; t < T; t++ {
			cols[t][k] = int32(v[k*T+t])
		}
	}
	return cols
}

func (g *zonosRun) runCase(c string) {
	in, err := zonosInputs(g.io, c != "nospk.")
	if err != nil {
		g.add(check.Failure(g.pack, c+"inputs", err))
		return
	}
	prefix, _, err := g.m.Prefix(in)
	if err != nil {
		g.add(check.Failure(g.pack, c+"prefix", err))
		return
	}
	be := g.m.Backend()
	g.compare(c+"prefix", be.ReadF32(prefix))

	pin, pshape := g.ints(c + "prefill.input_ids")
	if pin == nil {
		M := int64(zonos.MASK)
		pin, pshape = []int64{M, M, M, M, M, M, M, M, M}, []int{1, 9, 1}
	}
	dec, dshape := g.ints(c + "decode.input_ids")
	steps := 0
	if dec != nil {
		steps = dshape[0]
	}
	st := g.m.NewState(prefix.Shape()[1] + pshape[2] + steps + 1)
	var layerOut []float32
	hook := zonos.LayerHook(nil)
	if c == "" {
		hook = func(_ int, s compute.Tensor) { layerOut = append(layerOut, be.ReadF32(s)...) }
	}
	logits, err := g.m.Prefill(st, prefix, columns(pin, pshape[2]), 2, hook)
	if err != nil {
		g.add(check.Failure(g.pack, c+"prefill", err))
		return
	}
	if hook != nil {
		g.compare(c+"prefill.layer_out", layerOut)
	}
	g.compare(c+"prefill.logits", trimWidth(logits))
	if ref, _ := g.ints(c + "prefill.sampled"); ref != nil {
		s := sample.New(sample.Params{Temperature: 0, RepetitionPenalty: 3, RepetitionWindow: 2}, nil)
		got := s.Sample(append([]float32(nil), logits...), zonos.LogitWidth, nil)
		g.add(tokenCount(g.pack, c+"prefill.sampled", got, ref))
	}

	// Teacher-forced decode: feed the reference's inputs, compare logits.
	refLogits := g.floats(c + "decode.logits")
	nLogits := len(refLogits) / (zonos.NumCodebooks * (zonos.LogitWidth - 1))
	var got []float32
	var sampled []int32
	history := make([][]int32, zonos.NumCodebooks)
	var delayed [][zonos.NumCodebooks]int32
	if ref, shape := g.ints(c + "generate.delayed"); ref != nil {
		delayed = columns(ref, shape[2])
	}
	for s := 0; s < steps; s++ {
		col := [zonos.NumCodebooks]int32{}
		for k := range col {
			col[k] = int32(dec[s*zonos.NumCodebooks+k])
		}
		layerOut = nil
		h := zonos.LayerHook(nil)
		if s == 0 && c == "" {
			h = hook
		}
		lg, err := g.m.Step(st, col, 2, h)
		if err != nil {
			g.add(check.Failure(g.pack, c+"decode", err))
			return
		}
		if s == 0 && c == "" {
			g.compare(c+"decode0.layer_out", layerOut)
		}
		if s < nLogits {
			got = append(got, trimWidth(lg)...)
		}
		// decode.sampled: logit bias (no EOS beyond codebook 0), penalty 3.0
		// over the last 2 delayed columns, argmax.
		if delayed != nil {
			off := pshape[2] + s + 1
			for k := range history {
				history[k] = history[k][:0]
				for t := 0; t < off; t++ {
					history[k] = append(history[k], delayed[t][k])
				}
			}
			zonos.BiasEOS(lg)
			sm := sample.New(sample.Params{Temperature: 0, RepetitionPenalty: 3, RepetitionWindow: 2}, nil)
			sampled = append(sampled, sm.Sample(lg, zonos.LogitWidth, history)...)
		}
	}
	if refLogits != nil {
		name := c + "decode.logits"
		d, mx := check.MaxAbsDiff(got, refLogits)
		r := check.Compare(g.pack, name, d, check.RelTol(mx))
		r.Detail = fmt.Sprintf("%d steps", nLogits)
		g.add(r)
	}
	if ref, _ := g.ints(c + "decode.sampled"); ref != nil && sampled != nil {
		g.add(tokenCount(g.pack, c+"decode.sampled", sampled, ref))
	}
	g.generate(c, in)
}

// generate runs the real generate loop greedily and compares codes and the
// final delayed grid.
func (g *zonosRun) generate(c string, in zonos.Inputs) {
	ref, shape := g.ints(c + "generate.codes")
	if ref == nil {
		return
	}
	var prefixCodes [][zonos.NumCodebooks]int32
	if ap, ashape := g.ints(c + "audio_prefix_codes"); ap != nil {
		prefixCodes = columns(ap, ashape[2])
	}
	maxNew := shape[2] - len(prefixCodes)
	var frames []zonos.Frame
	res, err := g.m.Generate(context.Background(), in, zonos.GenerateOptions{
		MaxNewTokens: maxNew, CFGScale: 2, AudioPrefix: prefixCodes,
		Sampling: sample.Params{Temperature: 0, RepetitionPenalty: 3, RepetitionWindow: 2},
	}, func(f zonos.Frame) error { frames = append(frames, f); return nil })
	if err != nil {
		g.add(check.Failure(g.pack, c+"generate", err))
		return
	}
	same := len(frames) == len(res.Codes)
	for i := 0; same && i < len(frames); i++ {
		same = frames[i].Index == i && frames[i].Codes == res.Codes[i]
	}
	g.add(check.Count(g.pack, c+"generate.streamed_frames", boolInt(same), 1))
	g.add(codeCount(g.pack, c+"generate.codes", res.Codes, ref, shape[2]))
	if dref, dshape := g.ints(c + "generate.delayed"); dref != nil {
		g.add(codeCount(g.pack, c+"generate.delayed", res.Delayed, dref, dshape[2]))
	}
}

// trimWidth drops each codebook's padding logit (the golden stores
// zonos.LogitWidth−1 per codebook).
func trimWidth(logits []float32) []float32 {
	out := make([]float32, 0, zonos.NumCodebooks*(zonos.LogitWidth-1))
	for k := 0; k < zonos.NumCodebooks; k++ {
		out = append(out, logits[k*zonos.LogitWidth:k*zonos.LogitWidth+zonos.LogitWidth-1]...)
	}
	return out
}

func tokenCount(pack, name string, got []int32, ref []int64) check.Result {
	match := 0
	for i := range ref {
		if i < len(got) && int64(got[i]) == ref[i] {
			match++
		}
	}
	if len(got) != len(ref) {
		match = min(match, len(ref)-1)
	}
	return check.Count(pack, name, match, len(ref))
}

// codeCount compares columns against a golden [1, 9, T] grid.
func codeCount(pack, name string, got [][zonos.NumCodebooks]int32, ref []int64, T int) check.Result {
	match := 0
	for k := 0; k < zonos.NumCodebooks; k++ {
		for t := 0; t < T; t++ {
			if t < len(got) && int64(got[t][k]) == ref[k*T+t] {
				match++
			}
		}
	}
	r := check.Count(pack, name, match, len(ref))
	if len(got) != T {
		r.Status = check.Fail
		r.Detail = fmt.Sprintf("%d frames, want %d", len(got), T)
	}
	return r
}
