//go:build cuda

package backend

import (
	"zonostream/engine/compute"
	"zonostream/gpu"
)

func init() {
	constructors["cuda"] = func() (compute.Backend, error) {
		b, err := gpu.New(0)
		if err != nil {
			return nil, err // never a typed nil inside the interface
		}
		return b, nil
	}
}
