package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
	"zonostream/engine/weights"
	"zonostream/internal/check"
)

// samplingCase is one entry of sampling.json → cases.
type samplingCase struct {
	Name    string         `json:"name"`
	Prefix  string         `json:"prefix"`
	Params  map[string]any `json:"params"`
	Width   int            `json:"width"`
	History bool           `json:"history"`
}

// SamplingParams overlays reference-named knobs (temperature, top_p, …),
// as the sampling pack stores them, on sample_from_logits' defaults.
func SamplingParams(m map[string]any) (sample.Params, error) {
	p := sample.Reference()
	for k, v := range m {
		f, ok := v.(float64)
		if !ok {
			return p, fmt.Errorf("sampling param %s: %v is not a number", k, v)
		}
		switch k {
		case "temperature":
			p.Temperature = float32(f)
		case "top_p":
			p.TopP = float32(f)
		case "top_k":
			p.TopK = int(f)
		case "min_p":
			p.MinP = float32(f)
		case "linear":
			p.Linear = float32(f)
		case "conf":
			p.Conf = float32(f)
		case "quad":
			p.Quad = float32(f)
		case "repetition_penalty":
			p.RepetitionPenalty = float32(f)
		case "repetition_penalty_window":
			p.RepetitionWindow = int(f)
		default:
			return p, fmt.Errorf("unknown sampling param %q", k)
		}
	}
	return p, nil
}

// Sampling runs the `sampling` pack's single-step cases (caseNN) through
// engine/sample: tokens drawn with the stored noise must equal the
// reference's, and the final distributions must agree within the fp32 bar.
// The loop cases exercise the generate loop and are checked by Loops.
func Sampling(packDir string) []check.Result {
	pack := filepath.Base(packDir)
	fail := func(name string, err error) []check.Result { return []check.Result{check.Failure(pack, name, err)} }
	raw, err := os.ReadFile(filepath.Join(packDir, "sampling.json"))
	if err != nil {
		return fail("load", err)
	}
	var meta struct {
		Cases []samplingCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fail("load", fmt.Errorf("sampling.json: %w", err))
	}
	f, err := weights.Open(filepath.Join(packDir, "sampling.safetensors"))
	if err != nil {
		return fail("load", err)
	}
	defer f.Close()
	var out []check.Result
	for _, c := range meta.Cases {
		name := c.Prefix + c.Name
		got, probs, refProbs, ref, err := samplingCaseRun(f, c)
		if err != nil {
			out = append(out, check.Failure(pack, name, err))
			continue
		}
		match := 0
		for i := range ref {
			if int64(got[i]) == ref[i] {
				match++
			}
		}
		out = append(out, check.Count(pack, name+".tokens", match, len(ref)))
		if refProbs != nil {
			d, m := check.MaxAbsDiff(probs, refProbs)
			out = append(out, check.Compare(pack, name+".probs", d, check.RelTol(m)))
		}
	}
	return out
}

func readFloats(f *weights.File, name string) ([]float32, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return nil, err
	}
	return t.Float32s()
}

func readInts(f *weights.File, name string) ([]int64, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return nil, err
	}
	return t.Int64s()
}

// DeviceSampling runs the single-step cases through a backend's own
// sampler (compute.SamplerOps) fed the reference's stored noise: tokens must
// be identical. Backends without device sampling get one SKIP line.
func DeviceSampling(packDir string, b compute.Backend) []check.Result {
	pack := filepath.Base(packDir)
	ops, ok := b.(compute.SamplerOps)
	if !ok {
		return []check.Result{{Pack: pack, Check: "device", Status: check.Skip, Measured: "-", Tol: "-",
			Detail: b.Name() + " samples on the host (the checks above)"}}
	}
	raw, err := os.ReadFile(filepath.Join(packDir, "sampling.json"))
	if err != nil {
		return []check.Result{check.Failure(pack, "device", err)}
	}
	var meta struct {
		Cases []samplingCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return []check.Result{check.Failure(pack, "device", err)}
	}
	f, err := weights.Open(filepath.Join(packDir, "sampling.safetensors"))
	if err != nil {
		return []check.Result{check.Failure(pack, "device", err)}
	}
	defer f.Close()
	var out []check.Result
	for _, c := range meta.Cases {
		name := c.Prefix + c.Name + ".device"
		p, err := SamplingParams(c.Params)
		if err != nil {
			out = append(out, check.Failure(pack, name, err))
			continue
		}
		logits, err := readFloats(f, c.Prefix+"logits")
		if err != nil {
			out = append(out, check.Failure(pack, name, err))
			continue
		}
		ref, err := readInts(f, c.Prefix+"tokens")
		if err != nil {
			out = append(out, check.Failure(pack, name, err))
			continue
		}
		V := c.Width
		C := len(logits) / V
		var hist, q compute.Tensor
		if c.History && p.RepetitionPenalty != 1 {
			h, err := readInts(f, c.Prefix+"history")
			if err != nil {
				out = append(out, check.Failure(pack, name, err))
				continue
			}
			hv := make([]int32, len(h))
			for i, v := range h {
				hv[i] = int32(v)
			}
			hist = b.FromI32(hv, C, len(h)/C)
		}
		if p.Temperature > 0 {
			qv, err := readFloats(f, c.Prefix+"q")
			if err != nil {
				out = append(out, check.Failure(pack, name, err))
				continue
			}
			q = b.FromF32(qv, C, V)
		}
		spec := compute.SampleSpec{Temperature: p.Temperature, TopP: p.TopP, MinP: p.MinP, TopK: p.TopK, Linear: p.Linear,
			Conf: p.Conf, Quad: p.Quad, Penalty: p.RepetitionPenalty, Window: p.RepetitionWindow}
		got := b.ReadI32(ops.Sample(b.FromF32(logits, C, V), hist, q, spec, 0, 0))
		match := 0
		for i := range ref {
			if i < len(got) && int64(got[i]) == ref[i] {
				match++
			}
		}
		out = append(out, check.Count(pack, name, match, len(ref)))
	}
	return out
}

// samplingCaseRun samples one golden case and returns our tokens and final
// probabilities beside the reference's.
func samplingCaseRun(f *weights.File, c samplingCase) (got []int32, probs, refProbs []float32, ref []int64, err error) {
	p, err := SamplingParams(c.Params)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	logits, err := readFloats(f, c.Prefix+"logits")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ref, err = readInts(f, c.Prefix+"tokens")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	V := c.Width
	C := len(logits) / V
	var history [][]int32
	if c.History {
		h, err := readInts(f, c.Prefix+"history")
		if err != nil {
			return nil, nil, nil, nil, err
		}
		n := len(h) / C
		history = make([][]int32, C)
		for cb := range history {
			for _, v := range h[cb*n : (cb+1)*n] {
				history[cb] = append(history[cb], int32(v))
			}
		}
	}
	var noise sample.Noise
	if p.Temperature > 0 {
		q, err := readFloats(f, c.Prefix+"q")
		if err != nil {
			return nil, nil, nil, nil, err
		}
		noise = &sample.Fixed{Q: q}
		if refProbs, err = readFloats(f, c.Prefix+"probs"); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	s := sample.New(p, noise)
	got = s.Sample(logits, V, history)
	if p.Temperature > 0 {
		probs = append([]float32(nil), s.Probs()...)
	}
	return got, probs, refProbs, ref, nil
}
