package weights

import (
	"os"
	"path/filepath"
	"testing"
)

func speakerTinyDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared", "golden", "speaker-tiny")
	if g := os.Getenv("ZONOS_GOLDEN_DIR"); g != "" {
		d = filepath.Join(g, "speaker-tiny")
	}
	if _, err := os.Stat(d); err != nil {
		t.Skipf("golden pack speaker-tiny not found (%v): set ZONOS_GOLDEN_DIR", err)
	}
	return d
}

func TestOpenTorchSpeakerTiny(t *testing.T) {
	d := speakerTinyDir(t)
	f, err := OpenTorch(filepath.Join(d, "ResNet293_SimAM_ASP_base.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 119 {
		t.Errorf("%d tensors, want 119", f.Len())
	}
	for _, n := range f.Names()[:5] {
		tt, _ := f.Tensor(n)
		t.Logf("%s %s %v %d", n, tt.DType, tt.Shape, len(tt.Data))
	}
}
