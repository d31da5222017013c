package compute

import "strings"

// Planner is a backend that chose how it runs each op when it opened (the
// CUDA backend picks its kernels from the device's compute capability).
// Plan says what it chose, for `zonos bench`, `zonos doctor` and the app's
// backend meter.
type Planner interface {
	Plan() Plan
}

// Plan is what a backend chose when it opened, kept as separate values so
// each front end lays it out its own way: the command line prints String,
// the app shows the name beside the backend and the choices below it.
type Plan struct {
	// Name tells the plan from the backend's other plans ("hopper",
	// "generic"); "" when the backend has only one.
	Name string
	// Choices are how it runs its ops, a phrase each ("sm_90 modules",
	// "persistent Mamba2 runs").
	Choices []string
}

// String is the plan in one line: "hopper: sm_90 modules; persistent
// Mamba2 runs; …", the choices alone when the plan has no name, "" for
// the zero Plan.
func (p Plan) String() string {
	s := strings.Join(p.Choices, "; ")
	if p.Name != "" {
		s = p.Name + ": " + s
	}
	return s
}

// PlanOf returns b's plan, or the zero Plan when b has none to report.
func PlanOf(b Backend) Plan {
	if p, ok := b.(Planner); ok {
		return p.Plan()
	}
	return Plan{}
}
