package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/internal/golden"
)

// captureStdout runs fn with os.Stdout sent through a pipe and returns
// what came out of it.
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
