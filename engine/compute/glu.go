package compute

// SwiGLULinear is implemented by backends that can project and gate in one
// pass: a gated MLP's up-projection followed by SwiGLU. On a GPU a decode
// step's MLP otherwise writes the [rows, 2F] projection, then launches a
// kernel of its own to gate it, once per attention layer.
type SwiGLULinear interface {
	// LinearSwiGLU returns SwiGLU(Linear(x, w, bias)) for w [2F, K] (bias
	// [2F] or nil), bit for bit, as [.., F]. ok is false, and nothing is
	// done, where the backend has no such path for these shapes; the caller
	// then runs Linear and SwiGLU.
	LinearSwiGLU(x, w, bias Tensor) (y Tensor, ok bool)
}
