package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXUpToDate fails when a .cu (or common.cuh) changed without
// regenerating its PTX: run `make kernels`.
func TestPTXUpToDate(t *testing.T) {
	common, err := os.ReadFile("common.cuh")
	if err != nil {
		t.Fatal(err)
	}
	srcs, _ := filepath.Glob("*.cu")
	if len(srcs) == 0 {
		t.Fatal("no .cu sources")
	}
	for _, cu := range srcs {
		mod := strings.TrimSuffix(cu, ".cu")
		src, err := os.ReadFile(cu)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		h.Write(src)
		h.Write(common)
		want := hex.EncodeToString(h.Sum(nil))
		got := ""
		for _, line := range Header(mod) {
			if rest, ok := strings.CutPrefix(line, "// source-sha256: "); ok {
				got, _, _ = strings.Cut(rest, " ")
			}
		}
		if got != want {
			t.Errorf("%s.ptx was generated from other sources (header sha256 %q, sources %s): run `make kernels`", mod, got, want)
		}
	}
	if n, m := len(Modules()), len(srcs); n != m {
		t.Errorf("%d PTX modules embedded for %d .cu sources", n, m)
	}
}
