package backend

import (
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	b, _, err := Open("cpu")
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("cpu: %v %v", b, err)
	}
	b, note, err := Open(Auto)
	if err != nil || b == nil {
		t.Fatalf("auto: %v", err)
	}
	if !Built("cuda") && (b.Name() != "cpu" || note != "") {
		t.Errorf("auto without CUDA: %s %q", b.Name(), note)
	}
	if _, _, err := Open("tpu"); err == nil || !strings.Contains(err.Error(), "available") {
		t.Errorf("unknown: %v", err)
	}
	if !Built("cuda") {
		if _, _, err := Open("cuda"); err == nil || !strings.Contains(err.Error(), "build-cuda") {
			t.Errorf("cuda not built: %v", err)
		}
	}
}

func TestPlanOptions(t *testing.T) {
	for plan, generic := range map[string]bool{"": false, PlanAuto: false, PlanGeneric: true} {
		o, err := PlanOptions(plan)
		if err != nil || o.GenericGPU != generic {
			t.Errorf("PlanOptions(%q) = %+v, %v; want GenericGPU %v", plan, o, err, generic)
		}
	}
	if _, err := PlanOptions("fastest"); err == nil {
		t.Error("an unknown plan was accepted")
	}
}
