package compute_test

import (
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
)

// TestPlanString: the one line the command line prints names the plan
// first when it has a name, is the choices alone when it has none, and is
// empty for a backend with no plan to report.
func TestPlanString(t *testing.T) {
	for _, c := range []struct {
		p    compute.Plan
		want string
	}{
		{compute.Plan{Name: "hopper", Choices: []string{"sm_90 modules", "persistent Mamba2 runs"}}, "hopper: sm_90 modules; persistent Mamba2 runs"},
		{compute.Plan{Choices: []string{"pure-Go reference ops on 2 threads"}}, "pure-Go reference ops on 2 threads"},
		{compute.Plan{}, ""},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestPlanOf: a Planner's plan comes back as its parts; a backend that is
// no Planner reports the zero Plan.
func TestPlanOf(t *testing.T) {
	b := cpu.New(3)
	p := compute.PlanOf(b)
	if p.Name != "" || !slices.Equal(p.Choices, []string{"pure-Go reference ops on 3 threads"}) {
		t.Errorf("CPU plan %#v", p)
	}
	plain := struct{ compute.Backend }{b} // the methods of Backend alone: no Plan
	if p := compute.PlanOf(plain); p.Name != "" || p.Choices != nil {
		t.Errorf("a backend without a plan reports %#v", p)
	}
}
