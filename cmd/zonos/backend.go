package main

import (
	"flag"
	"fmt"
	"os"

	"zonostream/engine/compute"
	"zonostream/internal/backend"
)

// backendFlags are --backend and --gpu-plan, the same on every command that
// computes.
type backendFlags struct {
	name string // auto, cpu or cuda
	plan string // backend.PlanAuto or backend.PlanGeneric
}

// addBackendFlags adds --backend (default def) and --gpu-plan to fs. An
// unknown plan is refused when the flags are parsed.
func addBackendFlags(fs *flag.FlagSet, def string) *backendFlags {
	bf := &backendFlags{plan: backend.PlanAuto}
	usage := "compute backend: auto (CUDA when built in and present, else CPU), cpu or cuda"
	if def != backend.Auto {
		usage = "compute backend: cpu or cuda"
	}
	fs.StringVar(&bf.name, "backend", def, usage)
	fs.Func("gpu-plan", "the CUDA backend's `plan`: auto (chosen from the GPU: the Hopper kernels on sm_90, the generic ones elsewhere) or generic (the kernels every GPU from Ampere on runs) (default auto)",
		func(s string) error {
			if s != backend.PlanAuto && s != backend.PlanGeneric {
				return fmt.Errorf("want %s or %s, not %q", backend.PlanAuto, backend.PlanGeneric, s)
			}
			bf.plan = s
			return nil
		})
	return bf
}

// openBackend opens --backend with --gpu-plan and says on stderr what was
// chosen when auto picked it.
func openBackend(bf backendFlags) (compute.Backend, error) {
	b, note, err := bf.open()
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "zonos:", note)
	}
	if bf.plan == backend.PlanGeneric && b.Name() != "cuda" {
		fmt.Fprintf(os.Stderr, "zonos: --gpu-plan generic has no effect on the %s backend\n", b.Name())
	}
	return b, nil
}

// open opens the backend the flags name, saying nothing.
func (bf backendFlags) open() (compute.Backend, string, error) {
	o, err := backend.PlanOptions(bf.plan)
	if err != nil {
		return nil, "", err
	}
	return backend.OpenWith(bf.name, o)
}
