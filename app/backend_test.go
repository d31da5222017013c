package app

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/weights"
)

// TestBackendLineShowsPlan: the meters' Backend line names the backend,
// its device and the plan it chose when it opened (compute.PlanOf).
func TestBackendLineShowsPlan(t *testing.T) {
	b := cpu.New(0)
	plan := compute.PlanOf(b)
	if plan == "" {
		t.Fatal("the CPU backend reports no plan")
	}
	c := weights.Cache{Dir: t.TempDir(), From: "test"}
	ui := New(test.NewTempApp(t), Config{Models: &HubModels{B: b, Cache: c}, Cache: &c})
	got, err := ui.meters.backend.Get()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{b.Name(), b.Device(), "plan: " + plan} {
		if !strings.Contains(got, want) {
			t.Errorf("Backend line %q lacks %q", got, want)
		}
	}
}

// TestGPUPlanSetting: with the CUDA backend built in, the Compose tab
// offers the GPU plan (auto by default); the choice is remembered, survives
// Reset to defaults, and opens the backend with the generic plan next time.
// Without the CUDA backend there is nothing to choose and no picker.
func TestGPUPlanSetting(t *testing.T) {
	a := test.NewTempApp(t)
	if ui := New(a, Config{Models: noModels{}}); ui.compose.gpuPlan != nil {
		t.Fatal("GPU plan offered without the CUDA backend")
	}
	ui := New(a, Config{Models: noModels{}, GPUPlans: true})
	if ui.compose.gpuPlan == nil || ui.compose.gpuPlan.Selected != GPUPlanAuto || BackendOptions(ui.settings).GenericGPU {
		t.Fatalf("fresh GPU plan picker %v, settings %q", ui.compose.gpuPlan, ui.settings.GPUPlan)
	}
	ui.compose.gpuPlan.SetSelected(GPUPlanGeneric)
	ui.ResetKnobs()
	s := LoadSettings(a.Preferences())
	if s.GPUPlan != GPUPlanGeneric || !BackendOptions(s).GenericGPU {
		t.Fatalf("remembered GPU plan %q, options %+v", s.GPUPlan, BackendOptions(s))
	}
	if !strings.Contains(ui.status.Text, "next starts") {
		t.Errorf("status %q does not say when the plan applies", ui.status.Text)
	}
	if ui2 := New(a, Config{Models: noModels{}, GPUPlans: true}); ui2.compose.gpuPlan.Selected != GPUPlanGeneric {
		t.Fatalf("reopened window shows plan %q", ui2.compose.gpuPlan.Selected)
	}
	if _, _, err := OpenBackend("cpu", s); err != nil {
		t.Fatal(err)
	}

	p := mapPrefs{settingsKey: `{"gpu_plan":"fastest"}`}
	if got := LoadSettings(p).GPUPlan; got != GPUPlanAuto {
		t.Fatalf("unknown GPU plan read as %q, want auto", got)
	}
}

// TestBackendRowFitsOneLine: the meters' form shows the backend, device and
// plan name on one line and the plan's choices below the form (a wrapped
// label inside a form row drew over the Output row).
func TestBackendRowFitsOneLine(t *testing.T) {
	for _, c := range []struct{ line, row, details string }{
		{"cuda — NVIDIA H200 (139.8 GiB, sm_90) · plan: hopper: sm_90 modules; persistent Mamba2 runs",
			"cuda · hopper plan", "NVIDIA H200 (139.8 GiB, sm_90); hopper plan: sm_90 modules; persistent Mamba2 runs"},
		{"cpu — CPU (2 threads) · plan: pure-Go reference ops on 2 threads", "cpu", "CPU (2 threads); plan: pure-Go reference ops on 2 threads"},
		{"cpu — test", "cpu", "test"},
		{"loading", "loading", ""},
	} {
		if row, details := splitBackendLine(c.line); row != c.row || details != c.details {
			t.Errorf("splitBackendLine(%q) = %q, %q; want %q, %q", c.line, row, details, c.row, c.details)
		}
	}
}
