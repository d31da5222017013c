package compute

// GraphOps let a model record one decode step as a device graph and replay
// it for every later step: a few hundred kernels then launch in one call
// instead of one host hand-off each (the CUDA backend's launch and tensor
// bookkeeping cost more than most of its kernels). Whatever changes from
// step to step must therefore live on the device: the fed column, the
// position and the sampler's counter are written into tensors made before
// the capture, and the ops below read them at run time. Backends without
// graphs (the CPU backend) run the step op by op.
type GraphOps interface {
	// Capture records the device work f enqueues (backend ops only: no
	// uploads, reads or Free of tensors made before it) into a Graph.
	// Tensors allocated inside f keep their storage until Destroy, so the
	// ones f returns hold each replay's results.
	Capture(f func()) (Graph, error)
	// WriteI32 copies host values into an existing I32 tensor of the same
	// element count, in order with the device work (not inside Capture).
	WriteI32(dst Tensor, data []int32)
	// Clear sets every element of t to zero in place.
	Clear(t Tensor)
	// AttentionAt is SequenceOps.Attention with the first position read at
	// run time from pos, an I32 [1] tensor (the caller checks its range).
	AttentionAt(q, k, v, kCache, vCache, pos Tensor, a AttentionSpec) Tensor
	// SampleAt is SamplerOps.Sample with Philox noise whose seed and
	// counter are read at run time from rng, I32 [4]: seed low and high
	// words, counter low and high words.
	SampleAt(logits, history Tensor, s SampleSpec, rng Tensor) Tensor
}

// Graph is a recorded sequence of device work.
type Graph interface {
	// Launch replays the graph asynchronously; reading one of its output
	// tensors waits for it.
	Launch() error
	// Destroy frees the graph and the storage it pinned.
	Destroy()
}
