package app

import (
	"zonostream/engine/backend"
	"zonostream/engine/compute"
)

// DefaultBackend lets the engine choose: CUDA when built in and a device
// answers, else the CPU backend.
func DefaultBackend() string { return backend.Auto }

// OpenBackend creates the named backend; the note (possibly empty) says
// what "auto" chose and why.
func OpenBackend(name string) (compute.Backend, string, error) { return backend.Open(name) }
