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

// BackendLine describes b for the meters: name, device and plan.
func BackendLine(b compute.Backend) string {
	s := b.Name() + " — " + b.Device()
	if p := compute.PlanOf(b); p != "" {
		s += " · plan: " + p
	}
	return s
}
