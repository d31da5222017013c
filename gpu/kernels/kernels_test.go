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

// TestKernelsUsedExist: every kernel the backend launches by name
// (b.k["name"] in ../*.go) is an entry of some module, so a kernel added
// to Go but missing from the PTX fails here instead of on the GPU.
func TestKernelsUsedExist(t *testing.T) {
	have := map[string]bool{}
	for _, m := range Modules() {
		for _, e := range Entries(m) {
			have[e] = true
		}
	}
	if !have["layernorm"] || !have["attn"] {
		t.Fatalf("Entries found %d kernels, not the known ones", len(have))
	}
	files, _ := filepath.Glob("../*.go")
	used := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(src), `b.k["`)[1:] {
			name := part[:strings.IndexByte(part, '"')]
			used++
			if !have[name] {
				t.Errorf("%s launches kernel %q, which no module defines (run make kernels?)", filepath.Base(f), name)
			}
		}
	}
	if used < 20 {
		t.Fatalf("found only %d kernel uses in ../*.go", used)
	}
}
