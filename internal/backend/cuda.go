//go:build cuda

package backend

import (
	"zonostream/engine/compute"
	"zonostream/gpu"
)

func init() {
	constructors["cuda"] = func(o Options) (compute.Backend, error) {
		b, err := gpu.NewWith(0, gpu.Options{Generic: o.GenericGPU})
		if err != nil {
			return nil, err // never a typed nil inside the interface
		}
		return b, nil
	}
}
