// Package gpu is the CUDA compute.Backend (build tag cuda): every weight and
// every state tensor lives in device memory; kernels (gpu/kernels, PTX
// embedded) compute each op of engine/compute with bf16/f16/f32 weights,
// fp32 activations and state, and fp32 (or wider) accumulation. engine/cpu
// is the reference every kernel is tested against.
//
// One goroutine owns the CUDA context (runtime.LockOSThread) and executes
// every driver call, so the Backend is safe to call from any goroutine.
// Device memory comes from a caching allocator: freed blocks (explicit Free,
// or the cleanup of an unreachable tensor) return to per-size free lists and
// are reused in stream order, so steady-state decoding allocates nothing
// from the driver.
//
// Without the cuda tag the package holds only this documentation; the
// default build needs no CUDA.
package gpu
