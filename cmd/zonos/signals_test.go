package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"zonostream/internal/golden"
)

// TestSaySIGTERMFinalizesWAV: SIGTERM (what timeout, systemd and
// Kubernetes send) to `zonos say --out x.wav` mid-utterance ends it as
// Ctrl-C does: x.wav is a valid WAV of what was generated, no .part file is
// left, and the exit status is 143, the shell's code for SIGTERM. Before,
// the process died on the signal, leaving only x.wav.NNN.part.
func TestSaySIGTERMFinalizesWAV(t *testing.T) {
	if out := os.Getenv("ZONOS_SIGTERM_OUT"); out != "" {
		os.Exit(runSay(append(tinyArgs(t), "--play", "false", "--out", out, "--format", "float32", "--seed", "1", "--max-seconds", "20",
			"A long sentence that will not finish. And another one after it, to be sure. And a third.")))
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "x.wav")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSaySIGTERMFinalizesWAV$")
	cmd.Env = append(os.Environ(), "ZONOS_SIGTERM_OUT="+out, "ZONOS_GOLDEN_DIR="+golden.Dir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Signal once the first audio reached the file being written.
	for signalled := false; !signalled; {
		select {
		case err := <-exited:
			t.Fatalf("say ended (%v) before any audio reached %s; stderr:\n%s", err, dir, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		parts, _ := filepath.Glob(filepath.Join(dir, "x.wav.*.part"))
		for _, p := range parts {
			if st, err := os.Stat(p); err == nil && st.Size() > 4096 {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				signalled = true
			}
		}
	}
	err := <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("say after SIGTERM: %v, want exit status 143; stderr:\n%s", err, stderr.String())
	}
	got := floatWAV(t, out) // checks the header's sizes against the file
	if len(got) == 0 || len(got) >= 60*44100 {
		t.Fatalf("%d samples after SIGTERM: want what was generated before it", len(got))
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "*.part")); len(parts) > 0 {
		t.Errorf("left behind: %v", parts)
	}
	t.Logf("SIGTERM mid-utterance: exit 143, %s holds %d samples (%.2f s)", filepath.Base(out), len(got), float64(len(got))/44100)
}
