package compute

// Planner is a backend that chose how it runs each op when it opened (the
// CUDA backend picks its kernels from the device's compute capability).
// Plan says what it chose, in one line, for `zonos bench`, `zonos doctor`
// and the app's backend line.
type Planner interface {
	Plan() string
}

// PlanOf returns b's plan, or "" when b has none to report.
func PlanOf(b Backend) string {
	if p, ok := b.(Planner); ok {
		return p.Plan()
	}
	return ""
}
