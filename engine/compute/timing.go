package compute

import "time"

// Timer is implemented by backends that can time their own work and report
// their memory: the CUDA backend with device events, the CPU backend with
// the wall clock. `zonos bench` states every figure through it, so GPU
// times come from the GPU.
type Timer interface {
	// Time runs fn and returns how long the device spent on the work fn
	// queued (the backend synchronises before and after).
	Time(fn func()) time.Duration
	// CopyBandwidth measures device-memory copy bandwidth with a buffer of
	// n bytes, in bytes per second read plus written.
	CopyBandwidth(n int) float64
	// ReadBandwidth measures streaming read bandwidth over n bytes (the
	// ceiling of a weight-read-bound decode step), in bytes per second.
	ReadBandwidth(n int) float64
	// MemoryInUse is the device memory the backend holds, in bytes.
	MemoryInUse() int64
}
