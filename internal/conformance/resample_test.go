package conformance

import (
	"path/filepath"
	"testing"

	"zonostream/internal/check"
	"zonostream/internal/golden"
)

// resampleTol is the bar for the resampler against torchaudio (issue 3 asks
// 1e-4; the port reaches ~2e-7, so hold it to 1e-5).
const resampleTol = 1e-5

func TestResampleGolden(t *testing.T) {
	cases, err := loadResampleCases(golden.Pack(t, "resample"))
	if err != nil {
		t.Fatal(err)
	}
	var worstOut, worstKernel float64
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			out, kernel, err := resampleAgainst(c)
			if err != nil {
				t.Fatal(err)
			}
			kd, _ := check.MaxAbsDiff(kernel, c.Kernel)
			od, _ := check.MaxAbsDiff(out, c.Out)
			worstOut, worstKernel = max(worstOut, od), max(worstKernel, kd)
			if !(kd <= resampleTol) || !(od <= resampleTol) {
				t.Errorf("kernel max|Δ| %.3g, output max|Δ| %.3g; want both ≤ %g", kd, od, resampleTol)
			}
		})
	}
	t.Logf("%d pairs: output max|Δ| %.3g, kernel max|Δ| %.3g (tolerance %g)", len(cases), worstOut, worstKernel, resampleTol)
}

func TestResample(t *testing.T) {
	dir := golden.Pack(t, "resample")
	for _, root := range []string{filepath.Dir(dir), dir} {
		rs := Resample(root)
		if len(rs) != 16 {
			t.Errorf("Resample(%s): %d results, want 16 (8 pairs + 8 kernels)", root, len(rs))
		}
		for _, r := range rs {
			if r.Status != check.Pass {
				t.Error(r.Line())
			}
		}
	}
	rs := Resample(t.TempDir())
	if len(rs) != 1 || rs[0].Status != check.Skip {
		t.Errorf("missing pack: %v, want one SKIP", rs)
	}
}
