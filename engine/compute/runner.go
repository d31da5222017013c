package compute

// Runner is an optional interface of backends whose ops are dispatched
// from one owner thread (the CUDA backend: each op otherwise hands a
// closure to that thread and waits, two cross-thread wake-ups per op).
// Run(f) calls f so that every op of this backend that f calls runs
// directly on the owner, in one hand-off for the whole batch (a decode
// step's few hundred ops). Results are identical to calling f directly;
// other goroutines' ops wait until f returns, so f must not block on
// another goroutine that uses the same backend. A panic in f reaches the
// caller of Run. Backends without the hand-off (engine/cpu) simply do not
// implement it; callers fall back to calling f.
type Runner interface {
	Run(f func())
}
