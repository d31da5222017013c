package compute

// NormedLinear is implemented by backends that can fold a block's
// add-and-LayerNorm into the projection that reads it: an attention layer's
// first norm and in_proj, its second norm and the MLP's gated
// up-projection, the backbone's last norm and the heads. On a GPU the norm
// is otherwise a kernel of its own on the decode step's dependent path,
// between two projections, twice an attention layer.
type NormedLinear interface {
	// AddLayerNormLinear returns y = Linear(n, w, nil) — SwiGLU of it when
	// glu is set (w [2F, K], y [.., F]) — and the stream s, for
	// (n, s) = AddLayerNorm(x, residual, normW, normB, eps): each element
	// as those ops compute it, the norm's float64 statistics summed in
	// another order (the same to float64 rounding). residual may be nil,
	// as for AddLayerNorm. ok is false, and nothing is done, where the
	// backend has no such path for these shapes; the caller then runs the
	// ops.
	AddLayerNormLinear(x, residual, normW, normB Tensor, eps float32, w Tensor, glu bool) (y, stream Tensor, ok bool)
}
