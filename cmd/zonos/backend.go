package main

import (
	"fmt"
	"os"

	"zonostream/engine/backend"
	"zonostream/engine/compute"
)

// openBackend opens --backend (default auto: CUDA when built in and a
// device answers, else the CPU) and says on stderr what was chosen.
func openBackend(name string) (compute.Backend, error) {
	b, note, err := backend.Open(name)
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "zonos:", note)
	}
	return b, nil
}
