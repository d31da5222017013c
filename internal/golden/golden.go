// Package golden locates and opens the reference packs made by the original
// PyTorch code (../shared/golden, or $ZONOS_GOLDEN_DIR). Tests use it through
// Dir and Open; a missing directory skips the test with the reason.
package golden

import (
	"os"
	"path/filepath"
	"testing"

	"zonostream/engine/weights"
	"zonostream/internal/check"
)

// Dir returns the golden directory, or "" when none is found.
func Dir() string {
	if d := os.Getenv("ZONOS_GOLDEN_DIR"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			g := filepath.Join(d, "..", "shared", "golden")
			if _, err := os.Stat(g); err == nil {
				return g
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Pack returns the path of a pack, skipping the test when it is absent.
func Pack(t testing.TB, name string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Skip("golden packs not found: set ZONOS_GOLDEN_DIR or check out ../shared/golden")
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("golden pack %s not found in %s", name, d)
	}
	return p
}

// Open opens a safetensors file of a pack and closes it when the test ends.
func Open(t testing.TB, pack, file string) *weights.File {
	t.Helper()
	f, err := weights.Open(filepath.Join(Pack(t, pack), file))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Report fails the test on every failed conformance result and logs the
// others, one line each as `zonos conformance` prints them.
func Report(t testing.TB, rs []check.Result) {
	t.Helper()
	for _, r := range rs {
		if r.Status == check.Fail {
			t.Error(r.Line())
		} else {
			t.Log(r.Line())
		}
	}
}
