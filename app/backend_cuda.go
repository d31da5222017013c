//go:build cuda

package app

import (
	"zonostream/engine/compute"
	"zonostream/gpu"
)

func init() {
	backends["cuda"] = func() (compute.Backend, error) {
		b, err := gpu.New(0)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return b, nil
	}
}
