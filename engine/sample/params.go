// Package sample is Zonos' token sampler (zonos/sampling.py), stage by stage
// in the reference order: repetition penalty → temperature → softmax →
// unified → top-p → top-k → min-p → draw argmax(p/q) with q ~ Exp(1).
// Temperature 0 is argmax of the penalised logits. Logits for one step are
// C codebooks × V entries, row-major; the noise source is injectable so a
// seed reproduces a run and the golden noise reproduces the reference.
package sample

import (
	"fmt"
	"math"
)

// Params are the sampler knobs, named as in sample_from_logits.
type Params struct {
	Temperature       float32 // 0: greedy
	TopP              float32 // 0: off
	TopK              int     // 0: off
	MinP              float32 // 0: off
	Linear, Conf      float32 // unified sampler; active when Linear > 0
	Quad              float32
	RepetitionPenalty float32 // 1: off
	RepetitionWindow  int     // last W generated columns
}

// Reference returns sample_from_logits' own defaults (temperature 1, penalty
// 3.0 over a window of 2, every filter off).
func Reference() Params {
	return Params{Temperature: 1, RepetitionPenalty: 3, RepetitionWindow: 2}
}

// Defaults are what Zonos' generate() uses when not told otherwise: the
// reference defaults with min_p 0.1.
func Defaults() Params {
	p := Reference()
	p.MinP = 0.1
	return p
}

// Validate rejects knobs outside the ranges the sampler is defined for.
func (p Params) Validate() error {
	for _, f := range []struct {
		name string
		v    float32
	}{{"temperature", p.Temperature}, {"top_p", p.TopP}, {"min_p", p.MinP}, {"repetition_penalty", p.RepetitionPenalty},
		{"unified linear", p.Linear}, {"unified conf", p.Conf}, {"unified quad", p.Quad}} {
		if f.v != f.v || math.IsInf(float64(f.v), 0) {
			return fmt.Errorf("sampling: %s is %g; give a finite number", f.name, f.v)
		}
	}
	switch {
	case p.Temperature < 0 || p.Temperature != p.Temperature:
		return fmt.Errorf("sampling: temperature %g must be ≥ 0", p.Temperature)
	case p.TopP < 0 || p.TopP > 1:
		return fmt.Errorf("sampling: top_p %g must be in [0, 1]", p.TopP)
	case p.TopK < 0:
		return fmt.Errorf("sampling: top_k %d must be ≥ 0", p.TopK)
	case p.MinP < 0 || p.MinP > 1:
		return fmt.Errorf("sampling: min_p %g must be in [0, 1]", p.MinP)
	case p.RepetitionPenalty <= 0:
		return fmt.Errorf("sampling: repetition_penalty %g must be > 0 (1 disables it)", p.RepetitionPenalty)
	case p.RepetitionWindow < 0:
		return fmt.Errorf("sampling: repetition_penalty_window %d must be ≥ 0", p.RepetitionWindow)
	case p.Linear < 0 || p.Linear > 1:
		return fmt.Errorf("sampling: unified linear %g must be in [0, 1]", p.Linear)
	case p.Conf < -4 || p.Conf > 4 || p.Quad < -2 || p.Quad > 2:
		return fmt.Errorf("sampling: unified conf %g / quad %g out of range (conf ±4, quad ±2)", p.Conf, p.Quad)
	}
	return nil
}
