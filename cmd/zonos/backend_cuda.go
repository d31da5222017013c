//go:build cuda

package main

import (
	"fmt"
	"os"

	"zonostream/engine/compute"
	"zonostream/gpu"
)

func init() {
	backends["cuda"] = func() (compute.Backend, error) {
		b, err := gpu.New(0)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "zonos: backend cuda on %s\n", b.Device())
		return b, nil
	}
}
