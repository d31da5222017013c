// Package backend opens a compute backend by name for the app and the CLI:
// "cpu" (always built), "cuda" (built with -tags cuda), or "auto" — CUDA
// when it is built in and a device answers, otherwise the CPU backend, with
// a note saying which was chosen and why.
package backend

import (
	"fmt"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
)

// Auto picks the fastest backend that works on this machine.
const Auto = "auto"

// Options are the choices a caller may make when opening a backend.
type Options struct {
	// GenericGPU makes the CUDA backend use its generic plan (the kernels
	// every NVIDIA GPU from Ampere on runs) even on a Hopper device, so that
	// the portable path is tested and measured on the machine at hand.
	GenericGPU bool
}

// The GPU plans a user may ask for (--gpu-plan, the app's GPU plan
// setting).
const (
	// PlanAuto is the plan the device's compute capability allows: the
	// Hopper kernels on sm_90, the generic ones elsewhere.
	PlanAuto = "auto"
	// PlanGeneric is the kernels every NVIDIA GPU from Ampere on runs,
	// even on a Hopper.
	PlanGeneric = "generic"
)

// PlanOptions are the Options a GPU plan name asks for ("" is PlanAuto);
// an unknown name is an error naming the ones there are.
func PlanOptions(plan string) (Options, error) {
	switch plan {
	case PlanAuto, "":
		return Options{}, nil
	case PlanGeneric:
		return Options{GenericGPU: true}, nil
	}
	return Options{}, fmt.Errorf("GPU plan %q: want %s or %s", plan, PlanAuto, PlanGeneric)
}

// constructors maps a name to its constructor; cuda.go adds "cuda".
var constructors = map[string]func(Options) (compute.Backend, error){
	"cpu": func(Options) (compute.Backend, error) { return cpu.New(0), nil },
}

// Names lists the backends built into this binary, plus "auto".
func Names() []string {
	names := []string{Auto}
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

// Built reports whether a backend is compiled in.
func Built(name string) bool { _, ok := constructors[name]; return ok }

// Open creates the named backend with default options. For "auto" the note
// says what was chosen (and why CUDA was not, when it is built in but failed).
func Open(name string) (b compute.Backend, note string, err error) {
	return OpenWith(name, Options{})
}

// OpenWith is Open with options.
func OpenWith(name string, o Options) (b compute.Backend, note string, err error) {
	if name == Auto || name == "" {
		if mk, ok := constructors["cuda"]; ok {
			b, err := mk(o)
			if err == nil {
				return b, "using the CUDA backend on " + b.Device(), nil
			}
			cb, _ := constructors["cpu"](o)
			return cb, fmt.Sprintf("CUDA unavailable (%v); using the CPU backend", err), nil
		}
		b, err := constructors["cpu"](o)
		return b, "", err
	}
	mk, ok := constructors[name]
	if !ok {
		if name == "cuda" {
			return nil, "", fmt.Errorf("this build has no CUDA backend: rebuild with 'make build-cuda' (go build -tags cuda)")
		}
		return nil, "", fmt.Errorf("unknown backend %q (available: %s)", name, strings.Join(Names(), ", "))
	}
	b, err = mk(o)
	return b, "", err
}
