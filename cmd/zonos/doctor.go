package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"zonostream/audio"
	"zonostream/engine/compute"
	"zonostream/engine/speaker"
	"zonostream/engine/text"
	"zonostream/engine/weights"
	"zonostream/internal/backend"
)

func init() {
	register("doctor", "say what this machine can do: backend and plan, GPU, memory, espeak-ng, audio, models", runDoctor)
}

// doctorCheck is one line of `zonos doctor`.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // statusOK or statusMissing
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

const (
	statusOK      = "ok"
	statusMissing = "missing"
)

// doctorReport is what `zonos doctor --json` prints.
type doctorReport struct {
	Checks []doctorCheck `json:"checks"`
	// Essentials are what `zonos say` needs: a backend, espeak-ng and at
	// least one complete model; OK is all three.
	Essentials map[string]bool `json:"essentials"`
	OK         bool            `json:"ok"`
}

// Seams for the tests: the machine's sound system, espeak-ng, and the root
// /proc and /sys are read under.
var (
	listAudioDevices = audio.ListDevices
	espeakVersion    = text.EspeakVersion
	sysRoot          = "/"
)

func runDoctor(args []string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: zonos doctor [flags]

Says what this machine can do, one line each: the compute backend and its
plan, the GPU, its driver and memory, host memory, espeak-ng, audio output,
the model cache and which models are installed and verified. Each line is
"ok" or "missing", with the fix when something is missing. The exit status
is 0 when the essentials are there (a backend, espeak-ng and at least one
complete model), 1 otherwise.

flags:`)
		fs.PrintDefaults()
	}
	bf := addBackendFlags(fs, backend.Auto)
	asJSON := fs.Bool("json", false, "print the checks as JSON")
	cacheDir := fs.String("cache", "", "hub cache directory (default: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub)")
	verify := fs.Bool("verify", false, "hash the model files against the hub's hashes first (as 'zonos models --verify'; reads every file)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if known := append(backend.Names(), "cuda"); !slices.Contains(known, bf.name) {
		fmt.Fprintf(os.Stderr, "zonos doctor: unknown backend %q (want %s)\n", bf.name, strings.Join(slices.Compact(slices.Sorted(slices.Values(known))), ", "))
		return 2
	}
	r := diagnose(*bf, *cacheDir, *verify)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		printDoctor(os.Stdout, r)
	}
	if !r.OK {
		var miss []string
		for _, e := range []struct{ key, what string }{{"backend", "a compute backend"}, {"espeak-ng", "espeak-ng"}, {"model", "a complete model"}} {
			if !r.Essentials[e.key] {
				miss = append(miss, e.what)
			}
		}
		fmt.Fprintf(os.Stderr, "zonos doctor: essentials missing: %s (the fixes are above)\n", strings.Join(miss, ", "))
		return 1
	}
	return 0
}

// diagnose runs every check.
func diagnose(bf backendFlags, cacheDir string, verify bool) *doctorReport {
	r := &doctorReport{Essentials: map[string]bool{"backend": false, "espeak-ng": false, "model": false}}
	add := func(c doctorCheck) { r.Checks = append(r.Checks, c) }

	b, note, err := bf.open()
	if err != nil {
		add(doctorCheck{Name: "backend", Status: statusMissing, Detail: err.Error(), Fix: "use --backend auto or cpu"})
	} else {
		defer b.Close()
		r.Essentials["backend"] = true
		add(doctorCheck{Name: "backend", Status: statusOK, Detail: b.Name() + ": " + b.Device()})
		plan := compute.PlanOf(b).String()
		if plan == "" {
			plan = "one plan (the " + b.Name() + " backend has no choice to make)"
		}
		add(doctorCheck{Name: "plan", Status: statusOK, Detail: plan})
	}
	for _, c := range gpuChecks(b, note) {
		add(c)
	}
	add(hostMemory())
	if v, dir, err := espeakVersion(); err != nil {
		add(doctorCheck{Name: "espeak-ng", Status: statusMissing, Detail: err.Error(),
			Fix: "install espeak-ng's data (Debian and Ubuntu: apt-get install espeak-ng-data libespeak-ng1)"})
	} else {
		r.Essentials["espeak-ng"] = true
		d := v + " (" + dir + ")"
		if !strings.HasPrefix(v, "1.51") {
			d += "; the reference phonemes are exact for 1.51 (Debian 12), other versions may phonemize some words differently"
		}
		add(doctorCheck{Name: "espeak-ng", Status: statusOK, Detail: d})
	}
	add(audioCheck())
	models, cacheLine := modelChecks(cacheDir, verify)
	add(cacheLine)
	if sc, err := speaker.DefaultCache(); err == nil {
		add(doctorCheck{Name: "voice cache", Status: statusOK, Detail: sc.Dir + " (embedded speaker clips)"})
	} else {
		add(doctorCheck{Name: "voice cache", Status: statusMissing, Detail: err.Error(), Fix: "set XDG_CACHE_HOME or HOME; voices are embedded without a cache meanwhile"})
	}
	for _, c := range models {
		add(c)
		if c.Status == statusOK {
			r.Essentials["model"] = true
		}
	}
	r.OK = r.Essentials["backend"] && r.Essentials["espeak-ng"] && r.Essentials["model"]
	return r
}

// memInfo is a backend that reports its device memory (the CUDA backend).
type memInfo interface {
	MemInfo() (free, total int64)
}

// gpuChecks are the CUDA, GPU, driver and device-memory lines. b is the
// backend opened (nil if none), note what auto said when it chose.
func gpuChecks(b compute.Backend, note string) []doctorCheck {
	var out []doctorCheck
	gpus := nvidiaGPUs()
	driver := nvidiaDriver()
	onGPU := b != nil && b.Name() == "cuda"
	switch {
	case onGPU:
		out = append(out, doctorCheck{Name: "cuda", Status: statusOK, Detail: "built in, running on " + b.Device()})
	case !backend.Built("cuda"):
		d := "not built into this binary"
		if len(gpus) > 0 {
			d += ", though this machine has " + strings.Join(gpus, ", ")
		}
		out = append(out, doctorCheck{Name: "cuda", Status: statusMissing, Detail: d,
			Fix: "build with 'make build-cuda' (needs the CUDA toolkit) to run on an NVIDIA GPU; the CPU backend works without it"})
	case note != "" || b == nil:
		if note == "" {
			note = "built in, but the CUDA backend did not open (see the backend line)"
		}
		out = append(out, doctorCheck{Name: "cuda", Status: statusMissing, Detail: note,
			Fix: "check that the NVIDIA driver sees the GPU (nvidia-smi) and that the GPU is Ampere (sm_80) or newer"})
	default:
		out = append(out, doctorCheck{Name: "cuda", Status: statusOK, Detail: "built in; not used (--backend " + b.Name() + ")"})
	}
	switch {
	case len(gpus) > 0:
		out = append(out, doctorCheck{Name: "gpu", Status: statusOK, Detail: strings.Join(gpus, ", ")})
	case onGPU:
		out = append(out, doctorCheck{Name: "gpu", Status: statusOK, Detail: b.Device()})
	case nvidiaPCI() > 0:
		out = append(out, doctorCheck{Name: "gpu", Status: statusMissing, Detail: fmt.Sprintf("%d NVIDIA display device(s) on the PCI bus, but no driver has them", nvidiaPCI())})
	default:
		out = append(out, doctorCheck{Name: "gpu", Status: statusMissing, Detail: "no NVIDIA GPU found",
			Fix: "real-time speech needs an NVIDIA GPU, Ampere (sm_80) or newer; without one the CPU backend runs, slower than real time"})
	}
	switch {
	case driver != "":
		out = append(out, doctorCheck{Name: "driver", Status: statusOK, Detail: "NVIDIA " + driver})
	case len(gpus) > 0 || onGPU || nvidiaPCI() > 0:
		out = append(out, doctorCheck{Name: "driver", Status: statusMissing, Detail: "no NVIDIA kernel driver loaded (no /proc/driver/nvidia/version)",
			Fix: "install the NVIDIA driver (Debian: nvidia-driver; or the CUDA repository's cuda-drivers) and reboot"})
	default:
		out = append(out, doctorCheck{Name: "driver", Status: statusMissing, Detail: "no NVIDIA driver (needed only with an NVIDIA GPU)"})
	}
	if m, ok := b.(memInfo); ok {
		free, total := m.MemInfo()
		out = append(out, doctorCheck{Name: "gpu memory", Status: statusOK, Detail: fmt.Sprintf("%s free of %s", gib(free), gib(total))})
	}
	return out
}

// nvidiaGPUs are the models the NVIDIA driver lists in
// /proc/driver/nvidia/gpus/*/information ("NVIDIA H200").
func nvidiaGPUs() []string {
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "proc", "driver", "nvidia", "gpus", "*", "information"))
	var out []string
	for _, p := range dirs {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "Model" {
				out = append(out, strings.TrimSpace(v))
			}
		}
		f.Close()
	}
	return out
}

// nvidiaDriver is the loaded NVIDIA kernel module's version ("550.54.15"),
// from /proc/driver/nvidia/version, or "".
func nvidiaDriver() string {
	b, err := os.ReadFile(filepath.Join(sysRoot, "proc", "driver", "nvidia", "version"))
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
	if _, after, ok := strings.Cut(line, "Kernel Module"); ok {
		if f := strings.Fields(after); len(f) > 0 {
			return f[0]
		}
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "NVRM version:"))
}

// nvidiaPCI counts NVIDIA display controllers on the PCI bus, driver or not.
func nvidiaPCI() int {
	devs, _ := filepath.Glob(filepath.Join(sysRoot, "sys", "bus", "pci", "devices", "*"))
	n := 0
	for _, d := range devs {
		vendor, _ := os.ReadFile(filepath.Join(d, "vendor"))
		class, _ := os.ReadFile(filepath.Join(d, "class"))
		if strings.TrimSpace(string(vendor)) == "0x10de" && strings.HasPrefix(strings.TrimSpace(string(class)), "0x03") {
			n++
		}
	}
	return n
}

// hostMemory reads MemTotal and MemAvailable from /proc/meminfo.
func hostMemory() doctorCheck {
	c := doctorCheck{Name: "host memory", Status: statusOK}
	f, err := os.Open(filepath.Join(sysRoot, "proc", "meminfo"))
	if err != nil {
		c.Detail = "not known on " + runtime.GOOS
		return c
	}
	defer f.Close()
	kb := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if fs := strings.Fields(v); len(fs) > 0 {
			n, _ := strconv.ParseInt(fs[0], 10, 64)
			kb[k] = n
		}
	}
	c.Detail = fmt.Sprintf("%s available of %s", gib(kb["MemAvailable"]<<10), gib(kb["MemTotal"]<<10))
	return c
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

// audioCheck lists the output devices. ALSA's "null" device, which
// discards what it is given, is not a sound card.
func audioCheck() doctorCheck {
	devs, err := listAudioDevices(false)
	if err != nil {
		return doctorCheck{Name: "audio", Status: statusMissing, Detail: "no sound system found (" + err.Error() + ")",
			Fix: "install PulseAudio or PipeWire, or ALSA's libasound2 (Debian and Ubuntu: apt-get install libasound2); meanwhile 'zonos say --out file.wav' writes the audio to a file"}
	}
	var real []audio.Device
	for _, d := range devs {
		if d.ID != "6e756c6c" && !strings.HasPrefix(d.Name, "Discard all samples") { // "null" in hex: ALSA's null PCM
			real = append(real, d)
		}
	}
	if len(real) == 0 {
		return doctorCheck{Name: "audio", Status: statusMissing, Detail: "no sound card: the sound system's only output is ALSA's null device, which discards the audio",
			Fix: "servers, containers and VMs often have none: 'zonos say --out file.wav' writes the audio to a file, and --null-audio plays into a silent device to measure; on a desktop, check that PulseAudio or PipeWire is running (with libasound2 installed)"}
	}
	d := fmt.Sprintf("%d output device(s)", len(real))
	for _, x := range real {
		if x.Default {
			d += "; default " + strconv.Quote(x.Name)
		}
	}
	return doctorCheck{Name: "audio", Status: statusOK, Detail: d}
}

// modelChecks are one line per model variant and the cache line.
func modelChecks(dir string, verify bool) ([]doctorCheck, doctorCheck) {
	cache, err := openCache(dir)
	if err != nil {
		return nil, doctorCheck{Name: "model cache", Status: statusMissing, Detail: err.Error(), Fix: "set HF_HOME or HF_HUB_CACHE to a writable directory"}
	}
	cl := doctorCheck{Name: "model cache", Status: statusOK, Detail: fmt.Sprintf("%s (from %s)", cache.Dir, cache.From)}
	if weights.OfflineFromEnv() {
		cl.Detail += "; HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set, so 'zonos pull' does not download"
	}
	if st, err := os.Stat(cache.Dir); err != nil || !st.IsDir() {
		cl.Status = statusMissing
		cl.Detail = fmt.Sprintf("%s (from %s) does not exist yet", cache.Dir, cache.From)
		cl.Fix = "'zonos pull' creates it; set HF_HOME or HF_HUB_CACHE to keep the models elsewhere"
	}
	files := weights.AllFiles()
	if verify {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := verifyFiles(ctx, cache, files); err != nil {
			return []doctorCheck{{Name: "models", Status: statusMissing, Detail: "verifying: " + err.Error(), Fix: "check the permissions of " + cache.Dir}}, cl
		}
	}
	st, err := cache.Status(files)
	if err != nil {
		return []doctorCheck{{Name: "models", Status: statusMissing, Detail: err.Error(), Fix: "check the permissions of " + cache.Dir}}, cl
	}
	var out []doctorCheck
	for _, v := range weights.Variants() {
		s := summarizeBundle(v, st)
		c := doctorCheck{Name: "model " + string(v), Status: statusOK, Detail: s.detail}
		switch {
		case !s.complete:
			c.Status, c.Fix = statusMissing, s.fix+" (or point 'zonos say' at model folders with --zonos-dir and --dac-dir)"
		case s.unverified > 0 && !verify:
			c.Detail += " ('zonos doctor --verify' hashes them)"
		}
		out = append(out, c)
	}
	return out, cl
}

// printDoctor writes the checks as aligned lines, each fix under its line.
func printDoctor(w io.Writer, r *doctorReport) {
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-8s %-18s %s\n", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "%-8s %-18s fix: %s\n", "", "", c.Fix)
		}
	}
	state := func(e string) string {
		if r.Essentials[e] {
			return statusOK
		}
		return statusMissing
	}
	fmt.Fprintf(w, "\nessentials: backend %s, espeak-ng %s, a complete model %s\n", state("backend"), state("espeak-ng"), state("model"))
}
