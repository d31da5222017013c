package app

import (
	"reflect"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/weights"
)

// TestBackendMetersShowPlan: the meters name the backend, its device and
// the plan it chose when it opened (compute.PlanOf), each from its own
// field of BackendInfo.
func TestBackendMetersShowPlan(t *testing.T) {
	b := cpu.New(0)
	info := DescribeBackend(b)
	if info.Name != b.Name() || info.Device != b.Device() || !reflect.DeepEqual(info.Plan, compute.PlanOf(b)) || len(info.Plan.Choices) == 0 {
		t.Fatalf("DescribeBackend = %+v", info)
	}
	c := weights.Cache{Dir: t.TempDir(), From: "test"}
	ui := New(test.NewTempApp(t), Config{Models: &HubModels{B: b, Cache: c}, Cache: &c})
	row, err := ui.meters.backendRow.Get()
	if err != nil {
		t.Fatal(err)
	}
	detail, err := ui.meters.backendDetail.Get()
	if err != nil {
		t.Fatal(err)
	}
	if row != b.Name() {
		t.Errorf("Backend row %q, want %q", row, b.Name())
	}
	for _, want := range []string{b.Device(), "plan: " + info.Plan.Choices[0]} {
		if !strings.Contains(detail, want) {
			t.Errorf("Backend detail %q lacks %q", detail, want)
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

// TestBackendRowFitsOneLine: the meters' form shows the backend and the
// plan's name on one line, and the device and the plan's choices below the
// form (a wrapped label inside a form row drew over the Output row).
func TestBackendRowFitsOneLine(t *testing.T) {
	hopper := compute.Plan{Name: "hopper", Choices: []string{"sm_90 modules", "persistent Mamba2 runs"}}
	for _, c := range []struct {
		b           BackendInfo
		row, detail string
	}{
		{BackendInfo{"cuda", "NVIDIA H200 (139.8 GiB, sm_90)", hopper},
			"cuda · hopper plan", "NVIDIA H200 (139.8 GiB, sm_90); hopper plan: sm_90 modules; persistent Mamba2 runs"},
		{BackendInfo{"cpu", "CPU (2 threads)", compute.Plan{Choices: []string{"pure-Go reference ops on 2 threads"}}},
			"cpu", "CPU (2 threads); plan: pure-Go reference ops on 2 threads"},
		{BackendInfo{Name: "cpu", Device: "test"}, "cpu", "test"},
		{BackendInfo{}, "", ""},
	} {
		if row, detail := backendRow(c.b), backendDetail(c.b); row != c.row || detail != c.detail {
			t.Errorf("%+v: row %q, detail %q; want %q, %q", c.b, row, detail, c.row, c.detail)
		}
	}
}
