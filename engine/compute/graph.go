package compute

// GraphOps let a model record one decode step as a device graph and replay
// it for every later step: a few hundred kernels then launch in one call
// instead of one host hand-off each (the CUDA backend's launch and tensor
// bookkeeping cost more than most of its kernels). Whatever changes from
// step to step must therefore live on the device: the fed column, the
// position and the sampler's counter are written into tensors made before
// the capture, and the ops below (and SequenceOps.Attention with
// Positions.Dev) read them at run time. Backends without graphs (the CPU
// backend) run the step op by op.
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
	// SampleAt is SamplerOps.Sample with Philox noise whose seed and
	// counter are read at run time from rng, I32 [4]: seed low and high
	// words, counter low and high words.
	SampleAt(logits, history Tensor, s SampleSpec, rng Tensor) Tensor
	// FeedAt is device-side token feedback, recorded at the end of a
	// decode step: from the sampled tokens tok (I32 [9n], utterance-major)
	// it writes the next step's input into in (laid out as f says) the way
	// the generate loop would, so the next step can be launched before
	// the host has read this one's tokens. It returns I32 [n, FeedOut]:
	// per utterance the raw tokens, the column written and the loop state
	// (LoopWords words) after it.
	FeedAt(tok, in Tensor, f StepFeed) Tensor
	// ReadI32Async enqueues a copy of t to the host behind the device work
	// queued so far and returns the function that waits for it and
	// returns the values; more work (the next decode step) may be queued
	// before calling it. One such read at a time per backend: collect it
	// before reading anything else.
	ReadI32Async(t Tensor) func() []int32
}

// F32Writer is what a recorded graph fed with host activations needs
// besides GraphOps: WriteI32 for floats (the DAC streamer's recorded first
// push takes its codebook entries this way).
type F32Writer interface {
	// WriteF32 copies host values into an existing F32 tensor of the same
	// element count, in order with the device work (not inside Capture).
	WriteF32(dst Tensor, data []float32)
}

// StepFeed is the layout of a decode step's I32 input tensor for FeedAt:
// the fed columns at [0, 9n) codebook-major, the position at Pos, the
// sampler's seed and counter (low word first) at RNG … RNG+4, the
// repetition windows [n·9, Window] at Hist, and per utterance the loop
// state at State: LoopWords words, remaining steps, stopping (0 or 1) and
// masked, the number of trailing cells of the column the step writes that
// stay MASK (the codebook delay's first columns; one fewer each step). The
// counter advances by Inc per step; EOS and MASK are the codes of the EOS
// rule.
type StepFeed struct {
	N, Pos, RNG, Hist, Window, State int
	Inc                              uint32
	EOS, MASK                        int32
}

// LoopWords is the words of loop state per utterance in a step's input;
// FeedOut the words per utterance FeedAt returns (9 tokens, the 9-cell
// column written, the loop state after the step).
const (
	LoopWords = 3
	FeedOut   = 2*9 + LoopWords
)

// Graph is a recorded sequence of device work.
type Graph interface {
	// Launch replays the graph asynchronously; reading one of its output
	// tensors waits for it.
	Launch() error
	// Destroy frees the graph and the storage it pinned.
	Destroy()
}
