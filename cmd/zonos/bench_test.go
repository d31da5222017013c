package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/engine/dac"
	"zonostream/engine/zonos"
	"zonostream/internal/bench"
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
	old := os.Stdout
	os.Stdout = f
	defer func() { os.Stdout = old }()
	fn()
	os.Stdout = old
	b, _ := os.ReadFile(f.Name())
	f.Close()
	return string(b)
}

// TestBenchHelp: `zonos bench --help` says what bench measures and what
// --quick is, not only the flags.
func TestBenchHelp(t *testing.T) {
	msg := captureStderr(t, func() { runBench([]string{"--help"}) })
	for _, want := range []string{"usage: zonos bench", "Measures the engine's speed", "randomly initialised model", "--quick", "reduced backbone", "-gpu-plan"} {
		if !strings.Contains(msg, want) {
			t.Errorf("bench --help lacks %q:\n%s", want, msg)
		}
	}
}

// TestBenchQuick: on the CPU, `zonos bench` defaults to the quick mode and
// its report says plainly that the backbone was reduced, with the plan.
// -short builds the tiny golden models instead of the real widths; the
// full test is the real quick mode (about a minute on 2 cores).
func TestBenchQuick(t *testing.T) {
	layers := "2 of its 46 layers"
	if testing.Short() {
		zc, err := zonos.LoadConfig(filepath.Join(golden.Pack(t, "zonos-hybrid-tiny"), "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		dc, err := dac.LoadConfig(filepath.Join(golden.Pack(t, "dac-tiny"), "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		testShapes = func(o *bench.Options) { o.Model, o.DAC, o.BandwidthMB = zc, &dc, 8 }
		defer func() { testShapes = nil }()
		layers = "2 of its 5 layers"
	}
	var code int
	var out string
	msg := captureStderr(t, func() {
		out = captureStdout(t, func() { code = runBench([]string{"--backend", "cpu", "--gpu-plan", "generic"}) })
	})
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, msg)
	}
	for _, want := range []string{"reduced to " + layers, "not the model's speed", "no PyTorch ratio", "Plan: ", "decode step", "vocoder real-time factor"} {
		if !strings.Contains(out, want) {
			t.Errorf("the quick report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(msg, "--gpu-plan generic has no effect on the cpu backend") || !strings.Contains(msg, layers) {
		t.Errorf("stderr lacks the plan note or the reduced build:\n%s", msg)
	}
}
