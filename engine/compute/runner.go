package compute

// Runner is an optional interface of backends whose ops are dispatched
// from one owner thread (the CUDA backend: each op otherwise hands a
// closure to that thread and waits, two cross-thread wake-ups per op).
// Run(f) calls f so that every op of this backend that f calls runs
// directly on the owner, in one hand-off for the whole batch (a decode
// step's few hundred ops). Results are identical to calling f directly;
// other goroutines' ops wait until f returns, so f must not block on
// another goroutine that uses the same backend. A panic in f reaches the
// caller of Run. Backends without the hand-off (engine/compute/cpu) simply do not
// implement it; callers fall back to calling f.
type Runner interface {
	Run(f func())
}

// Laned is an optional interface of backends that can run a second stream
// of work beside the first on the same device (the CUDA backend: a second
// CUDA stream of lower priority). The engine puts the DAC vocoder on the
// lane, so a vocoder window runs on the GPU while decode steps go on
// instead of between them. Lane returns a Backend sharing the device and
// its weights-loading rules; results are identical to the backend's own.
// Tensors made on one lane may be used on the other only once the work that
// made them is done (read back, or uploaded weights). Closing the lane
// does nothing; closing the backend releases it. Backends whose ops run
// where they are called (engine/compute/cpu: each goroutine computes for itself)
// do not implement it; callers use the backend itself.
type Laned interface {
	Lane() Backend
}

// LaneOf is b's side lane when it has one, else b.
func LaneOf(b Backend) Backend {
	if l, ok := b.(Laned); ok {
		return l.Lane()
	}
	return b
}

// Run calls f through b's Runner when it has one, else calls f.
func Run(b Backend, f func()) {
	if r, ok := b.(Runner); ok {
		r.Run(f)
		return
	}
	f()
}
