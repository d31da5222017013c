package app

import (
	"zonostream/engine/compute"
	"zonostream/internal/backend"
)

// DefaultBackend lets the engine choose: CUDA when built in and a device
// answers, else the CPU backend.
func DefaultBackend() string { return backend.Auto }

// CUDABuilt reports whether this build has the CUDA backend, the only one
// with a GPU plan to choose.
func CUDABuilt() bool { return backend.Built("cuda") }

// BackendOptions are the backend choices the settings make: GPUPlanGeneric
// forces the CUDA backend's generic plan on any GPU.
func BackendOptions(s Settings) backend.Options {
	o, _ := backend.PlanOptions(s.GPUPlan) // LoadSettings keeps only known plans
	return o
}

// OpenBackend creates the named backend with the settings' options; the
// note (possibly empty) says what "auto" chose and why.
func OpenBackend(name string, s Settings) (compute.Backend, string, error) {
	return backend.OpenWith(name, BackendOptions(s))
}

// BackendInfo is what the meters say of the backend: its name, its device
// and the plan it chose, as separate values for the window to lay out.
type BackendInfo struct {
	Name   string       // "cuda", "cpu"
	Device string       // "NVIDIA H200 (139.8 GiB, sm_90)"
	Plan   compute.Plan // the zero Plan when the backend reports none
}

// DescribeBackend is b's BackendInfo.
func DescribeBackend(b compute.Backend) BackendInfo {
	return BackendInfo{Name: b.Name(), Device: b.Device(), Plan: compute.PlanOf(b)}
}
