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
	for _, want := range []string{"usage: zonos bench", "Measures the engine's speed", "randomly initialised model", "--quick", "reduced backbone", "-gpu-plan", "--save-model", "zonos serve --zonos-dir"} {
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

// TestBenchSaveModel: `zonos bench --save-model DIR` writes the four files
// of a bundle (the tiny shapes here, 2 of their 5 layers), without
// measuring, and says how to serve it; `zonos say` speaks from it. A
// measuring flag beside it, or a DIR that holds a model, is refused.
func TestBenchSaveModel(t *testing.T) {
	zc, err := zonos.LoadConfig(filepath.Join(golden.Pack(t, "zonos-hybrid-tiny"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dac.LoadConfig(filepath.Join(golden.Pack(t, "dac-tiny"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	testShapes = func(o *bench.Options) { o.Model, o.DAC = zc, &dc }
	defer func() { testShapes = nil }()
	dir := filepath.Join(t.TempDir(), "random")
	var code int
	var out string
	msg := captureStderr(t, func() {
		out = captureStdout(t, func() { code = runBench([]string{"--save-model", dir, "--seed", "5", "--layers", "2"}) })
	})
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, msg)
	}
	if out != "" {
		t.Errorf("--save-model printed a report:\n%s", out)
	}
	for _, f := range []string{"zonos/config.json", "zonos/model.safetensors", "dac/config.json", "dac/model.safetensors"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, want := range []string{"2 of its 5 layers", "seed 5", "zonos serve --zonos-dir " + filepath.Join(dir, "zonos") + " --dac-dir " + filepath.Join(dir, "dac")} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if c, err := zonos.LoadConfig(filepath.Join(dir, "zonos", "config.json")); err != nil || c.Backbone.NLayer != 2 {
		t.Errorf("saved config: %v", err)
	}

	wav := filepath.Join(t.TempDir(), "a.wav")
	say := []string{"--zonos-dir", filepath.Join(dir, "zonos"), "--dac-dir", filepath.Join(dir, "dac"), "--backend", "cpu", "--quiet",
		"--no-play", "--out", wav, "--seed", "3", "--max-seconds", "0.3", "Hello there."}
	if code := runSay(say); code != 0 {
		t.Fatalf("zonos say from the saved model: exit %d", code)
	}
	if st, err := os.Stat(wav); err != nil || st.Size() <= 44 {
		t.Errorf("zonos say wrote no audio: %v", err)
	}

	msg = captureStderr(t, func() { code = runBench([]string{"--save-model", dir}) })
	if code != 1 || !strings.Contains(msg, "already holds a model") {
		t.Errorf("saving over a model: exit %d, %s", code, msg)
	}
	msg = captureStderr(t, func() { code = runBench([]string{"--save-model", t.TempDir(), "--runs", "3", "--json"}) })
	if code != 2 || !strings.Contains(msg, "not --json, --runs") {
		t.Errorf("a measuring flag with --save-model: exit %d, %s", code, msg)
	}
}
