package main

import (
	"fmt"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/cpu"
)

// backends maps a --backend name to its constructor. The CUDA backend adds
// itself from a file built only with -tags cuda.
var backends = map[string]func() (compute.Backend, error){
	"cpu": func() (compute.Backend, error) { return cpu.New(0), nil },
}

func openBackend(name string) (compute.Backend, error) {
	mk, ok := backends[name]
	if !ok {
		if name == "cuda" {
			return nil, fmt.Errorf("this zonos was built without the CUDA backend: rebuild with 'make build-cuda' (go build -tags cuda)")
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
