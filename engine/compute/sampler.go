package compute

import "math"

// SamplerOps keep the end of a decode step on the device: classifier-free
// guidance over the heads' logits and Zonos' sampler, so only nine tokens
// cross to the host. Backends without them (the CPU backend) hand the
// logits to engine/sample on the host, which is the reference these ops
// are tested against.
type SamplerOps interface {
	// Guide combines the heads' output [2, R, W] (row 0 conditional, row 1
	// unconditional) into uncond + (cond − uncond)·scale of shape [R, W],
	// sets every column ≥ padFrom to −inf, and when eosBias is set also
	// column eos of every row r with r mod 9 ≠ 0: R holds the 9 codebook
	// rows of R/9 utterances, and only codebook 0 may end an utterance.
	Guide(heads Tensor, scale float32, padFrom, eos int, eosBias bool) Tensor

	// Sample draws one token per row of logits [R, W] (modified freely):
	// the repetition penalty from history [R, H] (I32; nil skips it; the
	// last s.Window columns are used, entries < 0 ignored, tokens clamped
	// to W−1, factors multiplying per occurrence), then temperature,
	// softmax, unified, top-p, top-k, min-p, and the draw argmax(p/q) with
	// q ~ Exp(1). When q is given ([R, W] float32) it is the noise (the
	// golden sampling pack stores the reference's); otherwise the noise is
	// Philox4x32-10 with key {uint32(seed), uint32(seed>>32)}: element i of
	// the row-major [R, W] grid takes lane i%4 of block counter + i/4
	// (counter split into the first two words, low first), and
	// q = −log((u>>8 + 1)/2²⁴), exactly as engine/sample.Philox.Exp.
	// Temperature 0 is argmax (first maximum) of the penalised logits and
	// draws no noise. Returns I32 [R].
	Sample(logits, history, q Tensor, s SampleSpec, seed, counter uint64) Tensor
}

// SampleSpec are engine/sample.Params in the backend's terms.
type SampleSpec struct {
	Temperature, TopP, MinP float32
	TopK                    int
	Linear, Conf, Quad      float32
	Penalty                 float32 // 1: off
	Window                  int     // 0: the whole history
}

// RowSamplerOps are SamplerOps for a batch of utterances that each keep
// their own guidance scale, sampler knobs and noise stream (a server's
// streams sharing decode steps): params is I32 [n, RowParamWords], one
// row per utterance as PutRowParams lays it out, read at run time, so a
// recorded step serves any mix of knobs and each utterance draws exactly
// the tokens SamplerOps would draw for it alone.
type RowSamplerOps interface {
	// GuideRows is Guide over heads [2, 9n, W] where the 9 rows of
	// utterance u take its scale and padFrom from params row u; eosBias
	// (column eos of every row r with r mod 9 ≠ 0) applies to all.
	GuideRows(heads, params Tensor, eos int, eosBias bool) Tensor
	// SampleRows is Sample over logits [9n, W] where row r takes the
	// knobs and the noise of utterance u = r/9: element (r mod 9)·W + v
	// of u's [9, W] grid takes lane i%4 of Philox block counter_u + i/4
	// (i that element index) under key seed_u, exactly the noise Sample
	// draws for u's nine rows alone with u's seed and counter. history is
	// [9n, H] (nil: no penalty for any) with entries < 0 ignored; a row
	// whose penalty is 1 skips it; a positive window uses the last window
	// columns. A row of an utterance whose RowActive word is 0 draws
	// nothing and returns 0. Returns I32 [9n].
	SampleRows(logits, history, params Tensor) Tensor
}

// Words of one utterance's row of RowSamplerOps params (I32; float knobs
// as their IEEE-754 bits).
const (
	RowSeed        = iota // seed, low word then high word
	_                     //
	RowCounter            // Philox block counter, low word then high word
	_                     //
	RowTemperature        // float32
	RowTopP               // float32
	RowTopK               // int
	RowMinP               // float32
	RowLinear             // float32
	RowConf               // float32
	RowQuad               // float32
	RowPenalty            // float32, 1: off
	RowWindow             // int, 0: all of the history given
	RowScale              // float32, guidance scale
	RowPadFrom            // int, first logit column set to −inf
	RowActive             // 1: the row's utterance draws; 0: an empty slot
	RowParamWords         // words per utterance
)

// RowParams are one utterance's RowSamplerOps knobs.
type RowParams struct {
	Spec          SampleSpec
	Seed, Counter uint64
	Scale         float32
	PadFrom       int
	Active        bool
}

// PutRowParams writes p into dst[:RowParamWords].
func PutRowParams(dst []int32, p RowParams) {
	f := func(v float32) int32 { return int32(math.Float32bits(v)) }
	dst[RowSeed], dst[RowSeed+1] = int32(uint32(p.Seed)), int32(uint32(p.Seed>>32))
	dst[RowCounter], dst[RowCounter+1] = int32(uint32(p.Counter)), int32(uint32(p.Counter>>32))
	s := p.Spec
	dst[RowTemperature], dst[RowTopP], dst[RowTopK], dst[RowMinP] = f(s.Temperature), f(s.TopP), int32(s.TopK), f(s.MinP)
	dst[RowLinear], dst[RowConf], dst[RowQuad] = f(s.Linear), f(s.Conf), f(s.Quad)
	dst[RowPenalty], dst[RowWindow] = f(s.Penalty), int32(s.Window)
	dst[RowScale], dst[RowPadFrom] = f(p.Scale), int32(p.PadFrom)
	dst[RowActive] = 0
	if p.Active {
		dst[RowActive] = 1
	}
}
