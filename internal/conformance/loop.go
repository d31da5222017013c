package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"zonostream/engine/weights"
	"zonostream/engine/zonos"
	"zonostream/internal/check"
)

// recorded is a zonos.LogitSource that replays stored CFG logits (prefill
// first, then one per decode step) and records the columns the loop fed,
// so generate()'s control flow (delay pattern, EOS forcing, audio prefix,
// trimming) is checked without a model.
type recorded struct {
	logits [][]float32
	next   int
	fed    [][zonos.NumCodebooks]int32
}

func (r *recorded) take() ([]float32, error) {
	if r.next >= len(r.logits) {
		return nil, fmt.Errorf("loop ran more steps (%d) than the reference", r.next+1)
	}
	l := append([]float32(nil), r.logits[r.next]...)
	r.next++
	return l, nil
}

func (r *recorded) Prefill(cols [][zonos.NumCodebooks]int32) ([]float32, error) {
	r.fed = append(r.fed, cols...)
	return r.take()
}

func (r *recorded) Step(col [zonos.NumCodebooks]int32) ([]float32, error) {
	r.fed = append(r.fed, col)
	return r.take()
}

// Loops runs the sampling pack's loop cases (synthetic logits through
// engine/zonos' generate loop, zonos.GenerateFrom): fed columns, decode
// steps run, the final delayed grid and the returned codes must be
// identical.
func Loops(packDir string) []check.Result {
	pack := filepath.Base(packDir)
	raw, err := os.ReadFile(filepath.Join(packDir, "sampling.json"))
	if err != nil {
		return []check.Result{check.Failure(pack, "loop", err)}
	}
	var meta struct {
		Loops []struct {
			Prefix         string         `json:"prefix"`
			MaxNewTokens   int            `json:"max_new_tokens"`
			DecodeStepsRun int            `json:"decode_steps_run"`
			CFGScale       float32        `json:"cfg_scale"`
			Sampling       map[string]any `json:"sampling_params"`
		} `json:"loop_cases"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return []check.Result{check.Failure(pack, "loop", err)}
	}
	f, err := weights.Open(filepath.Join(packDir, "sampling.safetensors"))
	if err != nil {
		return []check.Result{check.Failure(pack, "loop", err)}
	}
	defer f.Close()
	ints := func(name string) ([]int64, []int) {
		t, err := f.Tensor(name)
		if err != nil {
			return nil, nil
		}
		v, _ := t.Int64s()
		return v, t.Shape
	}
	var out []check.Result
	for _, lc := range meta.Loops {
		name := lc.Prefix
		lt, err := f.Tensor(name + "logits")
		if err != nil {
			out = append(out, check.Failure(pack, name+"logits", err))
			continue
		}
		lv, err := lt.Float32s()
		if err != nil {
			out = append(out, check.Failure(pack, name+"logits", err))
			continue
		}
		n := zonos.NumCodebooks * zonos.LogitWidth
		rec := &recorded{}
		for i := 0; i+n <= len(lv); i += n {
			rec.logits = append(rec.logits, lv[i:i+n])
		}
		p, err := SamplingParams(lc.Sampling)
		if err != nil {
			out = append(out, check.Failure(pack, name+"params", err))
			continue
		}
		o := zonos.GenerateOptions{MaxNewTokens: lc.MaxNewTokens, CFGScale: lc.CFGScale, Sampling: p}
		if ap, shape := ints(name + "audio_prefix_codes"); ap != nil {
			o.AudioPrefix = columns(ap, shape[2])
		}
		var frames []zonos.Frame
		res, err := zonos.GenerateFrom(context.Background(), rec, o, func(fr zonos.Frame) error { frames = append(frames, fr); return nil })
		if err != nil {
			out = append(out, check.Failure(pack, name+"run", err))
			continue
		}
		out = append(out, check.Count(pack, name+"decode_steps", boolInt(len(res.StepTimes) == lc.DecodeStepsRun), 1))
		if ref, shape := ints(name + "prefill.input_ids"); ref != nil {
			out = append(out, codeCount(pack, name+"prefill.input_ids", rec.fed[:shape[2]], ref, shape[2]))
		}
		if ref, shape := ints(name + "decode.input_ids"); ref != nil {
			P := len(o.AudioPrefix) + 1
			got := rec.fed[P:]
			match := 0
			for s := 0; s < shape[0]; s++ {
				for k := 0; k < zonos.NumCodebooks; k++ {
					if s < len(got) && int64(got[s][k]) == ref[s*zonos.NumCodebooks+k] {
						match++
					}
				}
			}
			out = append(out, check.Count(pack, name+"decode.input_ids", match, len(ref)))
		}
		if ref, shape := ints(name + "delayed"); ref != nil {
			out = append(out, codeCount(pack, name+"delayed", res.Delayed, ref, shape[2]))
		}
		if ref, shape := ints(name + "codes"); ref != nil {
			out = append(out, codeCount(pack, name+"codes", res.Codes, ref, shape[2]))
			// Streaming must hand out exactly the returned codes, in order.
			same := len(frames) == len(res.Codes)
			for i := 0; same && i < len(frames); i++ {
				same = frames[i].Index == i && frames[i].Codes == res.Codes[i]
			}
			out = append(out, check.Count(pack, name+"streamed_frames", boolInt(same), 1))
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
