package compute

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
