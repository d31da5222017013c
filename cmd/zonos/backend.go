package main

import (
	"flag"
	"fmt"
	"os"

	"zonostream/engine/compute"
	"zonostream/internal/backend"
)

// GPU plans --gpu-plan takes.
const (
	planAuto    = "auto"    // what the device's compute capability picks (Hopper kernels on sm_90)
	planGeneric = "generic" // the kernels every NVIDIA GPU from Ampere on runs
)

// backendFlags are --backend and --gpu-plan, the same on every command that
// computes.
type backendFlags struct {
	name string // auto, cpu or cuda
	plan string // planAuto or planGeneric
}

// addBackendFlags adds --backend (default def) and --gpu-plan to fs. An
// unknown plan is refused when the flags are parsed.
func addBackendFlags(fs *flag.FlagSet, def string) *backendFlags {
	bf := &backendFlags{plan: planAuto}
	usage := "compute backend: auto (CUDA when built in and present, else CPU), cpu or cuda"
	if def != backend.Auto {
		usage = "compute backend: cpu or cuda"
	}
	fs.StringVar(&bf.name, "backend", def, usage)
	fs.Func("gpu-plan", "the CUDA backend's `plan`: auto (chosen from the GPU: the Hopper kernels on sm_90, the generic ones elsewhere) or generic (the kernels every GPU from Ampere on runs) (default auto)",
		func(s string) error {
			if s != planAuto && s != planGeneric {
				return fmt.Errorf("want auto or generic, not %q", s)
			}
			bf.plan = s
			return nil
		})
	return bf
}

// openBackend opens --backend with --gpu-plan and says on stderr what was
// chosen when auto picked it.
func openBackend(bf backendFlags) (compute.Backend, error) {
	b, note, err := backend.OpenWith(bf.name, backend.Options{GenericGPU: bf.plan == planGeneric})
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "zonos:", note)
	}
	if bf.plan == planGeneric && b.Name() != "cuda" {
		fmt.Fprintf(os.Stderr, "zonos: --gpu-plan generic has no effect on the %s backend\n", b.Name())
	}
	return b, nil
}
