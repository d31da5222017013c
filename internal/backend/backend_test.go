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
