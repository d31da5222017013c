//go:build cuda

package app

import (
	"zonostream/engine/compute"
	"zonostream/gpu"
)

func init() {
	backends["cuda"] = func() (compute.Backend, error) { return gpu.New(0) }
}
