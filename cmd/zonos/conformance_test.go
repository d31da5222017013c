package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/internal/golden"
)

// captureStdout runs fn with os.Stdout sent to a file and returns what was
// written there.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdout
	os.Stdout = f
	defer func() { os.Stdout = old }()
	fn()
	os.Stdout = old
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConformanceFollowsSymlinkedPacks: packs that are symbolic links to
// directories count as packs, both where the command picks the stages to
// run (text) and where a stage lists its own packs (dac-*).
func TestConformanceFollowsSymlinkedPacks(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"text", "dac-tiny"} {
		if err := os.Symlink(golden.Pack(t, p), filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	var code int
	var stderr string
	out := captureStdout(t, func() {
		stderr = captureStderr(t, func() { code = runConformance([]string{"--golden", dir, "--only", "text,dac-"}) })
	})
	if code != 0 {
		t.Fatalf("zonos conformance over symlinked packs: exit %d, stderr %q, stdout %q", code, stderr, firstLines(out))
	}
	for _, want := range []string{"PASS text/ids", "PASS dac-tiny/latent"} {
		if !strings.Contains(out, want) {
			t.Errorf("zonos conformance over symlinked packs: no %q line in\n%s", want, out)
		}
	}
}
