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
		free, _ := b.MemInfo()
		fmt.Fprintf(os.Stderr, "zonos: backend cuda on %s, %.1f GiB free\n", b.Device(), float64(free)/(1<<30))
		return b, nil
	}
}
