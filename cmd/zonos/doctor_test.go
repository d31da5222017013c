package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/audio"
	"zonostream/engine/weights"
	"zonostream/internal/backend"
)

// fakeBundle puts variant v's six files into a hub cache as huggingface_hub
// lays them out: blobs named by the content's sha256 (so 'verify' can
// check them), snapshot symlinks, refs/main.
func fakeBundle(t *testing.T, cache string, v weights.Variant) {
	t.Helper()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	c := weights.Cache{Dir: cache}
	for i, f := range weights.BundleFiles(v) {
		repo := c.RepoDir(f.Repo)
		data := []byte(strings.Repeat(string(rune('a'+i)), 1000+i) + f.String())
		sum := sha256.Sum256(data)
		blob := filepath.Join(repo, "blobs", hex.EncodeToString(sum[:]))
		snap := filepath.Join(repo, "snapshots", commit, f.Name)
		for _, d := range []string{filepath.Dir(blob), filepath.Dir(snap), filepath.Join(repo, "refs")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(blob, data, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(snap)
		if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), snap); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// doctorEnv points the doctor at a temporary cache and a machine with no
// sound card (ALSA's null device only) and no GPU.
func doctorEnv(t *testing.T) string {
	dir := t.TempDir()
	cache := filepath.Join(dir, "hub")
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	origAudio, origRoot := listAudioDevices, sysRoot
	t.Cleanup(func() { listAudioDevices, sysRoot = origAudio, origRoot })
	listAudioDevices = func(bool) ([]audio.Device, error) {
		return []audio.Device{{Name: "Discard all samples (playback) or generate zero samples (capture)", ID: "6e756c6c", Default: true}}, nil
	}
	sysRoot = filepath.Join(dir, "root") // no /proc/driver/nvidia, no PCI devices, no meminfo
	return cache
}

func runDoctorJSON(t *testing.T, args ...string) (int, doctorReport, string) {
	t.Helper()
	var code int
	var out string
	msg := captureStderr(t, func() { out = captureStdout(t, func() { code = runDoctor(append([]string{"--json"}, args...)) }) })
	var r doctorReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json printed %q: %v", out, err)
	}
	return code, r, msg
}

func lineOf(t *testing.T, r doctorReport, name string) doctorCheck {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q line in %+v", name, r.Checks)
	return doctorCheck{}
}

// TestDoctorWithAModel: one complete, verified model, espeak-ng and the
// CPU backend are the essentials: exit 0. The other variant, the sound
// card and (on a CPU build) CUDA are missing, each with its fix.
func TestDoctorWithAModel(t *testing.T) {
	cache := doctorEnv(t)
	fakeBundle(t, cache, weights.Hybrid)
	code, r, msg := runDoctorJSON(t, "--verify")
	if code != 0 || !r.OK || !r.Essentials["backend"] || !r.Essentials["espeak-ng"] || !r.Essentials["model"] {
		t.Fatalf("exit %d, report %+v; stderr:\n%s", code, r, msg)
	}
	if c := lineOf(t, r, "model hybrid"); c.Status != statusOK || !strings.Contains(c.Detail, "all verified") {
		t.Errorf("hybrid: %+v", c)
	}
	if c := lineOf(t, r, "model transformer"); c.Status != statusMissing || !strings.Contains(c.Fix, "zonos pull transformer") {
		t.Errorf("transformer: %+v", c)
	}
	if c := lineOf(t, r, "model cache"); c.Status != statusOK || !strings.Contains(c.Detail, cache) || !strings.Contains(c.Detail, "HF_HUB_CACHE") {
		t.Errorf("cache: %+v", c)
	}
	if c := lineOf(t, r, "audio"); c.Status != statusMissing || !strings.Contains(c.Detail, "no sound card") || !strings.Contains(c.Fix, "--out") {
		t.Errorf("audio: %+v", c)
	}
	if c := lineOf(t, r, "backend"); c.Status != statusOK || !strings.HasPrefix(c.Detail, "cpu") && !strings.HasPrefix(c.Detail, "cuda") {
		t.Errorf("backend: %+v", c)
	}
	if c := lineOf(t, r, "plan"); c.Status != statusOK || c.Detail == "" {
		t.Errorf("plan: %+v", c)
	}
	if c := lineOf(t, r, "espeak-ng"); c.Status != statusOK || !strings.Contains(c.Detail, "1.51") {
		t.Errorf("espeak-ng: %+v", c)
	}
	if !backend.Built("cuda") {
		if c := lineOf(t, r, "cuda"); c.Status != statusMissing || !strings.Contains(c.Fix, "make build-cuda") {
			t.Errorf("cuda: %+v", c)
		}
		if c := lineOf(t, r, "gpu"); c.Status != statusMissing || c.Fix == "" {
			t.Errorf("gpu: %+v", c)
		}
	}
	for _, c := range r.Checks {
		if c.Status != statusOK && c.Status != statusMissing {
			t.Errorf("%s: status %q", c.Name, c.Status)
		}
	}
	// The text form: one line per check, each fix under its line.
	out := captureStdout(t, func() { code = runDoctor(nil) })
	if code != 0 || !strings.Contains(out, "ok       model hybrid") || !strings.Contains(out, "fix: run 'zonos pull transformer'") ||
		!strings.Contains(out, "essentials: backend ok, espeak-ng ok, a complete model ok") {
		t.Errorf("exit %d, text:\n%s", code, out)
	}
}

// TestDoctorMissingEssentials: no model and no espeak-ng: exit 1, and the
// message names what is missing.
func TestDoctorMissingEssentials(t *testing.T) {
	doctorEnv(t)
	orig := espeakVersion
	defer func() { espeakVersion = orig }()
	espeakVersion = func() (string, string, error) {
		return "", "", errors.New("text: espeak-ng: espeak_Initialize failed (-1): is espeak-ng-data installed?")
	}
	code, r, msg := runDoctorJSON(t)
	if code != 1 || r.OK || r.Essentials["model"] || r.Essentials["espeak-ng"] || !r.Essentials["backend"] {
		t.Fatalf("exit %d, essentials %v", code, r.Essentials)
	}
	if !strings.Contains(msg, "espeak-ng") || !strings.Contains(msg, "a complete model") || strings.Contains(msg, "compute backend") {
		t.Errorf("stderr %q should name espeak-ng and the model, not the backend", msg)
	}
	if c := lineOf(t, r, "espeak-ng"); c.Status != statusMissing || !strings.Contains(c.Fix, "apt-get install espeak-ng-data") {
		t.Errorf("espeak-ng: %+v", c)
	}
	if c := lineOf(t, r, "model hybrid"); c.Status != statusMissing || !strings.Contains(c.Fix, "zonos pull hybrid") {
		t.Errorf("hybrid: %+v", c)
	}
	if c := lineOf(t, r, "model cache"); c.Status != statusMissing || !strings.Contains(c.Fix, "zonos pull") {
		t.Errorf("cache that does not exist yet: %+v", c)
	}
}

// TestDoctorReadsTheGPU: the GPU, its driver and an NVIDIA card without a
// driver are read from /proc and /sys, whether or not CUDA is built in.
func TestDoctorReadsTheGPU(t *testing.T) {
	doctorEnv(t)
	write := func(p, s string) {
		p = filepath.Join(sysRoot, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/bus/pci/devices/0000:19:00.0/vendor", "0x10de\n")
	write("sys/bus/pci/devices/0000:19:00.0/class", "0x030200\n")
	_, r, _ := runDoctorJSON(t)
	if c := lineOf(t, r, "gpu"); c.Status != statusMissing || !strings.Contains(c.Detail, "no driver") {
		t.Errorf("card without a driver: %+v", c)
	}
	if c := lineOf(t, r, "driver"); c.Status != statusMissing || !strings.Contains(c.Fix, "install the NVIDIA driver") {
		t.Errorf("card without a driver: %+v", c)
	}
	write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n")
	write("proc/driver/nvidia/gpus/0000:19:00.0/information", "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\n")
	write("proc/meminfo", "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   65536000 kB\n")
	_, r, _ = runDoctorJSON(t)
	if c := lineOf(t, r, "gpu"); c.Status != statusOK || c.Detail != "NVIDIA H200" {
		t.Errorf("gpu: %+v", c)
	}
	if c := lineOf(t, r, "driver"); c.Status != statusOK || c.Detail != "NVIDIA 550.54.15" {
		t.Errorf("driver: %+v", c)
	}
	if c := lineOf(t, r, "host memory"); c.Detail != "62.5 GiB available of 125.0 GiB" {
		t.Errorf("host memory: %+v", c)
	}
	if !backend.Built("cuda") {
		if c := lineOf(t, r, "cuda"); !strings.Contains(c.Detail, "though this machine has NVIDIA H200") {
			t.Errorf("cuda: %+v", c)
		}
	}
}

// TestDoctorNoBackendOpened: when the backend did not open (a CUDA build on
// a machine whose GPU fails), the GPU lines say so instead of using the
// missing backend.
func TestDoctorNoBackendOpened(t *testing.T) {
	cs := gpuChecks(nil, "")
	if len(cs) == 0 || cs[0].Name != "cuda" || cs[0].Status != statusMissing {
		t.Fatalf("checks without a backend: %+v", cs)
	}
}
