package compute

// FusedProjections is an optional Backend extension for the decode step:
// the norm that feeds a projection and the projection as one op, so a GPU
// computes the rows in the projection's prologue instead of a kernel of
// their own (a decode step of the hybrid has 93 of them). Each op is exactly the composition it names, up to the
// order of floating-point sums; a backend may run the composition itself
// where fusing does not pay (many rows).
type FusedProjections interface {
	// AddLayerNormLinear is AddLayerNorm(x, residual, normW, normB, eps)
	// followed by Linear(out, w, bias): it returns the projection and the
	// residual sum.
	AddLayerNormLinear(x, residual, normW, normB Tensor, eps float32, w, bias Tensor) (y, sum Tensor)
	// Mamba2Linear is Linear(Mamba2(zxbcdt, mw, convState, ssmState, s), w,
	// nil): the mixer with its gated norm folded into out_proj.
	Mamba2Linear(zxbcdt Tensor, mw Mamba2Weights, convState, ssmState Tensor, s Mamba2Spec, w Tensor) Tensor
}

// AddLayerNormLinear runs b's fused op when it has one, else the
// composition.
func AddLayerNormLinear(b Backend, x, residual, normW, normB Tensor, eps float32, w, bias Tensor) (y, sum Tensor) {
	if f, ok := b.(FusedProjections); ok {
		return f.AddLayerNormLinear(x, residual, normW, normB, eps, w, bias)
	}
	out, sum := b.AddLayerNorm(x, residual, normW, normB, eps)
	return b.Linear(out, w, bias), sum
}

// Mamba2Linear runs b's fused op when it has one, else the composition.
func Mamba2Linear(b Backend, zxbcdt Tensor, mw Mamba2Weights, convState, ssmState Tensor, s Mamba2Spec, w Tensor) Tensor {
	if f, ok := b.(FusedProjections); ok {
		return f.Mamba2Linear(zxbcdt, mw, convState, ssmState, s, w)
	}
	return b.Linear(b.Mamba2(zxbcdt, mw, convState, ssmState, s), w, nil)
}
