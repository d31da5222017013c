package app

import (
	"fmt"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/cpu"
)

// backends maps a --backend name to its constructor; the CUDA backend adds
// itself from backend_cuda.go (build tag cuda).
var backends = map[string]func() (compute.Backend, error){
	"cpu": func() (compute.Backend, error) { return cpu.New(0), nil },
}

// DefaultBackend is the fastest backend built in: cuda when present.
func DefaultBackend() string {
	if _, ok := backends["cuda"]; ok {
		return "cuda"
	}
	return "cpu"
}

// OpenBackend creates the named backend.
func OpenBackend(name string) (compute.Backend, error) {
	mk, ok := backends[name]
	if !ok {
		if name == "cuda" {
			return nil, fmt.Errorf("this zonos-stream was built without the CUDA backend: rebuild with -tags cuda")
		}
		var names []string
		for n := range backends {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown backend %q (available: %s)", name, strings.Join(names, ", "))
	}
	return mk()
}
