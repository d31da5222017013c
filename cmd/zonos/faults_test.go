package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/internal/golden"
)

// captureStderr runs fn with os.Stderr sent to a file and returns what was
// written there.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = f
	defer func() { os.Stderr = old }()
	fn()
	os.Stderr = old
	b, _ := os.ReadFile(f.Name())
	f.Close()
	return string(b)
}

// referenceWAV is the float32 WAV `zonos say --no-play` writes for the
// fault tests' request: what every fault must still deliver.
func referenceWAV(t *testing.T) []float32 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ref.wav")
	if code := runSay(append(faultArgs(t, out), "--play", "false", "--quiet")); code != 0 {
		t.Fatalf("reference run: exit %d", code)
	}
	return floatWAV(t, out)
}

func faultArgs(t *testing.T, out string) []string {
	return append(tinyArgs(t)[:4], "--out", out, "--format", "float32", "--seed", "21", "--max-seconds", "0.6", "--text", "Faults must not lose audio.")
}

func sameSamples(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%s: %d samples, the reference has %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: sample %d is %g, reference %g", what, i, got[i], want[i])
		}
	}
}

// TestFaultSayDeviceFailsToStart: an output device that cannot be opened
// does not stop `zonos say --out`: the user is told and the WAV is
// complete. Without --out there is nowhere for the audio to go: exit 1.
func TestFaultSayDeviceFailsToStart(t *testing.T) {
	want := referenceWAV(t)
	out := filepath.Join(t.TempDir(), "a.wav")
	var code int
	msg := captureStderr(t, func() {
		code = runSay(append(faultArgs(t, out), "--play", "true", "--null-audio", "--device", "no such device 7f3a"))
	})
	if code != 0 || !strings.Contains(msg, "playback unavailable") || !strings.Contains(msg, "no such device 7f3a") {
		t.Fatalf("exit %d, stderr:\n%s", code, msg)
	}
	sameSamples(t, "WAV with a failed device", floatWAV(t, out), want)
	t.Logf("device failed to start: exit 0, WAV of %d samples equal to the reference; told %q", len(want), lineWith(msg, "playback"))
	msg = captureStderr(t, func() {
		code = runSay(append(tinyArgs(t)[:4], "--play", "true", "--null-audio", "--device", "no such device 7f3a", "Hi."))
	})
	if code != 1 || !strings.Contains(msg, "no such device 7f3a") {
		t.Fatalf("without --out: exit %d, stderr:\n%s", code, msg)
	}
}

// lostPlayer is a real null-device player whose device is lost after a
// few writes: from then on WriteAll fails with audio.ErrDeviceLost, as
// audio.Player does after the device stops on its own (pinned by audio's
// TestFaultDeviceLostWithRoomInRing).
type lostPlayer struct {
	*audio.Player
	writes, lostAfter int
}

func (p *lostPlayer) WriteAll(ctx context.Context, s []float32) error {
	if p.writes++; p.writes > p.lostAfter {
		p.Player.Close()
		return fmt.Errorf("%w: %q", audio.ErrDeviceLost, "test device")
	}
	return p.Player.WriteAll(ctx, s)
}

// TestFaultSayDeviceVanishes: the device goes away mid-utterance;
// generation continues, the WAV holds the whole utterance and the user is
// told playback stopped.
func TestFaultSayDeviceVanishes(t *testing.T) {
	want := referenceWAV(t)
	orig := openPlayer
	defer func() { openPlayer = orig }()
	opened := 0
	openPlayer = func(cfg audio.PlayerConfig) (outputDevice, error) {
		p, err := audio.NewPlayer(cfg)
		if err != nil {
			return nil, err
		}
		opened++
		return &lostPlayer{Player: p, lostAfter: 2}, nil
	}
	out := filepath.Join(t.TempDir(), "b.wav")
	var code int
	msg := captureStderr(t, func() { code = runSay(append(faultArgs(t, out), "--play", "true", "--null-audio")) })
	if code != 0 || opened != 1 || !strings.Contains(msg, "playback stopped") || !strings.Contains(msg, "generation continues") {
		t.Fatalf("exit %d, players %d, stderr:\n%s", code, opened, msg)
	}
	sameSamples(t, "WAV after the device vanished", floatWAV(t, out), want)
	t.Logf("device lost after 2 writes: exit 0, WAV of %d samples equal to the reference; told %q", len(want), lineWith(msg, "playback"))
}

// TestFaultSayDiskFull: the file system refuses more bytes mid-utterance
// (RLIMIT_FSIZE in a child process: EFBIG, the same path as ENOSPC). The
// user gets the error, the exit code is 1, and the file is a valid WAV of
// every complete sample that fit, equal to the start of the full output.
func TestFaultSayDiskFull(t *testing.T) {
	if os.Getenv("ZONOS_DISKFULL_CHILD") != "" {
		limit, _ := strconv.ParseUint(os.Getenv("ZONOS_DISKFULL_LIMIT"), 10, 64)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(99)
		}
		os.Exit(runSay(append(faultArgs(t, os.Getenv("ZONOS_DISKFULL_OUT")), "--play", "false")))
	}
	want := referenceWAV(t)
	// A float32 file's header is 94 bytes: RIFF, JUNK (room for RF64's
	// ds64), fmt, fact, data. The first limit tears a sample, the second ends on a whole one.
	const hdr = 94
	for _, limit := range []int{hdr + 4*1000 + 3, hdr + 4*10000} {
		out := filepath.Join(t.TempDir(), "full.wav")
		cmd := exec.Command(os.Args[0], "-test.run=^TestFaultSayDiskFull$")
		cmd.Env = append(os.Environ(), "ZONOS_DISKFULL_CHILD=1", "ZONOS_DISKFULL_OUT="+out, "ZONOS_DISKFULL_LIMIT="+strconv.Itoa(limit),
			"ZONOS_GOLDEN_DIR="+golden.Dir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("limit %d: child %v, want exit 1; stderr:\n%s", limit, err, stderr.String())
		}
		msg := stderr.String()
		if !strings.Contains(msg, "file too large") || !strings.Contains(msg, out) {
			t.Errorf("limit %d: the error does not name the file and the cause:\n%s", limit, msg)
		}
		got := floatWAV(t, out) // checks the header's sizes against the file
		if n := (limit - hdr) / 4; len(got) != n {
			t.Fatalf("limit %d: %d samples kept, want the %d complete ones that fit", limit, len(got), n)
		}
		sameSamples(t, "WAV cut by a full disk", got, want[:len(got)])
		t.Logf("limit %d bytes: exit 1, %d samples kept; %s", limit, len(got), strings.TrimSpace(lastLine(msg)))
	}
}

// lineWith is the first line of s containing sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestMalformedFlags: every flag of say, bench, embed, voice, conformance, pull and doctor
// given malformed or out-of-range input exits non-zero with a message and
// never panics (a panic fails the whole test binary). Values that are in
// range after clamping are accepted with a notice.
func TestMalformedFlags(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HF_HUB_CACHE", filepath.Join(dir, "hub"))
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clip := filepath.Join(dir, "voice.wav")
	writeTone(t, clip, 16000, 16000)
	garbage := file("garbage.wav", []byte("RIFF\x10\x00\x00\x00WAVEjunkjunk"))
	empty := file("empty.wav", nil)
	badNpy := file("bad.npy", []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}"))
	bigNpy := file("big.npy", append([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}"), make([]byte, 100<<10)...))
	badST := file("bad.safetensors", []byte("\xff\xff\xff\xff\xff\xff\xff\x7f{}"))
	bigText := file("big.txt", bytes.Repeat([]byte("word "), engine.MaxTextBytes/5+1))
	speakerDir := golden.Pack(t, "speaker-tiny")
	out := filepath.Join(dir, "o.wav")
	nowhere := filepath.Join(dir, "no", "such", "dir", "x.wav")
	say := append(tinyArgs(t), "--play", "false", "--out", out)
	w := func(args ...string) []string { return append(append([]string(nil), say...), args...) }
	loud := func(args ...string) []string { // notices are shown
		return append(append(tinyArgs(t)[:4:4], "--play", "false", "--out", out), args...)
	}
	const nonzero = -1
	cases := []struct {
		cmd  string
		args []string
		want int    // exit code; nonzero: any but 0
		msg  string // stderr must contain this
	}{
		// say: every flag
		{"say", w("--text", "a", "b"), 2, "one way"},
		{"say", w("--text", strings.Repeat("a ", engine.MaxTextBytes/2+1)), 2, "limit"},
		{"say", w("--text", strings.Repeat("a", 70000)), 2, "add spaces"},
		{"say", w("--file", filepath.Join(dir, "absent.txt")), 2, "absent.txt"},
		{"say", w("--file", dir), 2, "directory"},
		{"say", w("--file", bigText), 2, "longest text"},
		{"say", w("..."), 2, "nothing to pronounce"},
		{"say", w("--lang", "xx-yy", "hi"), 2, "xx-yy"},
		{"say", w("--lang", "ja", "hi"), 2, "Japanese"},
		{"say", append(tinyArgs(t), "--no-play", "--out", nowhere, "hi"), 1, "directory"},
		{"say", append(tinyArgs(t), "--no-play", "--out", dir, "hi"), 1, "directory"},
		{"say", append(tinyArgs(t), "--no-play", "hi"), 2, "nowhere"},
		{"say", append(tinyArgs(t), "--out", "-", "--json", "hi"), 2, "standard output"},
		{"say", w("--format", "mp3", "hi"), 2, "mp3"},
		{"say", w("--play", "maybe", "hi"), 2, "maybe"},
		{"say", w("--json=maybe", "hi"), 2, "maybe"},
		{"say", append(tinyArgs(t), "--play", "true", "--null-audio", "--device", "nope nope", "hi"), 1, "nope nope"},
		{"say", append(tinyArgs(t), "--play", "true", "--null-audio", "--pre-roll", "1h", "hi"), 1, "pre-roll"},
		{"say", w("--pre-roll", "soon", "hi"), 2, "soon"},
		{"say", w("--seed", "1e99", "hi"), 2, "1e99"},
		{"say", w("--seed", "twelve", "hi"), 2, "twelve"},
		{"say", w("--max-seconds", "nan", "hi"), 2, "max seconds"},
		{"say", w("--max-seconds", "inf", "hi"), 2, "max seconds"},
		{"say", w("--max-seconds", "-1", "hi"), 2, "max seconds"},
		{"say", w("--max-seconds", "61", "hi"), 2, "max seconds"},
		{"say", w("--first-chunk", "-1", "hi"), 2, "chunk"},
		{"say", w("--chunk", "513", "hi"), 2, "chunk"},
		{"say", w("--chunk", "9999999999999999999", "hi"), 2, "chunk"},
		{"say", w("--quiet=2", "hi"), 2, "quiet"},
		{"say", w("--speaker", filepath.Join(dir, "absent.wav"), "hi"), 1, "absent.wav"},
		{"say", w("--speaker", garbage, "hi"), 1, "garbage.wav"},
		{"say", w("--speaker", empty, "hi"), 1, "empty"},
		{"say", w("--speaker", badNpy, "hi"), 1, "float32"},
		{"say", w("--speaker", bigNpy, "hi"), 1, "64 KiB"},
		{"say", w("--speaker", badST, "hi"), 1, "bad.safetensors"},
		{"say", w("--speaker", clip, "--speaker-dir", filepath.Join(dir, "absent"), "hi"), 1, "absent"},
		{"say", w("--speaker", clip, "--speaker-dir", dir, "hi"), 1, ".pt"},
		{"say", w("--prefix", filepath.Join(dir, "absent.wav"), "hi"), 1, "absent.wav"},
		{"say", w("--prefix", garbage, "hi"), 1, "garbage.wav"},
		{"say", []string{"--model", "tiny", "--play", "false", "--out", out, "hi"}, nonzero, "tiny"},
		{"say", []string{"--zonos-dir", dir, "--play", "false", "--out", out, "hi"}, nonzero, "together"},
		{"say", []string{"--zonos-dir", dir, "--dac-dir", dir, "--play", "false", "--out", out, "hi"}, nonzero, "config.json"},
		{"say", []string{"--model-dir", speakerDir, "--dac-dir", speakerDir, "--play", "false", "--out", out, "hi"}, nonzero, "config"},
		{"say", w("--backend", "tpu", "hi"), nonzero, "tpu"},
		{"say", w("--emotion", "1,2", "hi"), 2, "8"},
		{"say", w("--emotion", "a,b,c,d,e,f,g,h", "hi"), 2, "number"},
		{"say", w("--emotion", "-1,1,1,1,1,1,1,1", "hi"), 2, "≥ 0"},
		{"say", w("--emotion", "0,0,0,0,0,0,0,0", "--uncond", "", "hi"), 2, "sum"},
		{"say", w("--emotion", "nan,1,1,1,1,1,1,1", "hi"), 2, "emotion"},
		{"say", w("--emotion", "inf,1,1,1,1,1,1,1", "hi"), 2, "finite"},
		{"say", w("--uncond", "emotoin", "hi"), 2, "emotoin"},
		{"say", w("--fmax", "lots", "hi"), 2, "lots"},
		{"say", w("--fmax", "nan", "hi"), 2, "NaN"},
		{"say", loud("--fmax", "1e30", "--max-seconds", "0.1", "hi"), 0, "clamped"},
		{"say", loud("--pitch-std", "-5", "--max-seconds", "0.1", "hi"), 0, "clamped"},
		{"say", w("--rate", "nan", "hi"), 2, "NaN"},
		{"say", w("--rate", "1e400", "hi"), 2, "1e400"},
		{"say", w("--vq", "nan", "hi"), 2, "NaN"},
		{"say", w("--dnsmos", "nan", "hi"), 2, "NaN"},
		{"say", w("--denoise=sometimes", "hi"), 2, "sometimes"},
		{"say", w("--cfg", "1", "hi"), 1, "cfg"},
		{"say", w("--cfg", "1e9", "hi"), 1, "cfg"},
		{"say", w("--cfg", "nan", "hi"), 2, "NaN"},
		{"say", w("--temperature", "-1", "hi"), 2, "temperature"},
		{"say", w("--temperature", "inf", "hi"), 2, "temperature"},
		{"say", w("--top-p", "2", "hi"), 2, "top_p"},
		{"say", w("--top-p", "nan", "hi"), 2, "top_p"},
		{"say", w("--top-k", "-1", "hi"), 2, "top_k"},
		{"say", w("--top-k", "0x", "hi"), 2, "0x"},
		{"say", w("--min-p", "nan", "hi"), 2, "min_p"},
		{"say", w("--linear", "2", "hi"), 2, "linear"},
		{"say", w("--conf", "9", "hi"), 2, "conf"},
		{"say", w("--quad", "nan", "hi"), 2, "quad"},
		{"say", w("--repetition-penalty", "0", "hi"), 2, "repetition_penalty"},
		{"say", w("--repetition-penalty", "nan", "hi"), 2, "repetition_penalty"},
		{"say", w("--repetition-window", "-1", "hi"), 2, "window"},
		{"say", w("--no-such-flag", "hi"), 2, "no-such-flag"},
		{"say", w("--gpu-plan", "fast", "hi"), 2, "want auto or generic"},
		{"say", w("--voice", "../x", "hi"), 1, "path separator"},
		{"say", w("--voice", "nobody", "hi"), 1, "empty"},
		{"say", w("--voice", "a", "--speaker", clip, "hi"), 2, "give one"},
		// voice: every subcommand and flag
		{"voice", nil, 2, "usage"},
		{"voice", []string{"rename", "a", "b"}, 2, "rename"},
		{"voice", []string{"add"}, 2, "usage"},
		{"voice", []string{"add", "a"}, 2, "usage"},
		{"voice", []string{"add", "a", clip, clip}, 2, "usage"},
		{"voice", []string{"add", "a/b", clip}, 2, "path separator"},
		{"voice", []string{"add", "..", clip}, 2, "not allowed"},
		{"voice", []string{"add", "a", clip, "--replace=maybe"}, 2, "replace"},
		{"voice", []string{"add", "a", filepath.Join(dir, "absent.wav")}, 1, "absent.wav"},
		{"voice", []string{"add", "a", garbage}, 1, "garbage.wav"},
		{"voice", []string{"add", "a", badNpy}, 1, "float32"},
		{"voice", []string{"add", "a", clip}, 1, "speaker model"}, // none in the (empty) cache
		{"voice", []string{"add", "a", clip, "--speaker-dir", dir}, 1, ".pt"},
		{"voice", []string{"add", "a", clip, "--speaker-dir", speakerDir, "--backend", "tpu"}, 2, "tpu"},
		{"voice", []string{"add", "a", clip, "--speaker-dir", speakerDir, "--gpu-plan", "x"}, 2, "want auto or generic"},
		{"voice", []string{"list", "stray"}, 2, "usage"},
		{"voice", []string{"list", "--json=maybe"}, 2, "json"},
		{"voice", []string{"rm"}, 2, "usage"},
		{"voice", []string{"rm", "a", "b"}, 2, "usage"},
		{"voice", []string{"rm", ".hidden"}, 2, "dot"},
		{"voice", []string{"rm", "nobody"}, 1, "nobody"},
		// bench: every flag (each refused before a real-size model is built)
		{"bench", []string{"--model", "tiny"}, 2, "tiny"},
		{"bench", []string{"--backend", "tpu"}, 2, "tpu"},
		{"bench", []string{"--runs", "-1"}, 1, "runs"},
		{"bench", []string{"--runs", "1e9"}, 2, "1e9"},
		{"bench", []string{"--runs", "1000000000"}, 1, "runs"},
		{"bench", []string{"--steps", "-5"}, 1, "steps"},
		{"bench", []string{"--steps", "99999999"}, 1, "steps"},
		{"bench", []string{"--frames", "3"}, 1, "frames"},
		{"bench", []string{"--frames", "99999999"}, 1, "frames"},
		{"bench", []string{"--prefix", "5"}, 1, "prefix"},
		{"bench", []string{"--prefix", "2000000000"}, 1, "prefix"},
		{"bench", []string{"--first-chunk", "0"}, 1, "chunk"},
		{"bench", []string{"--chunk", "-3"}, 1, "chunk"},
		{"bench", []string{"--chunk", "100000"}, 1, "chunk"},
		{"bench", []string{"--json=2"}, 2, "json"},
		{"bench", []string{"--write"}, 2, "write"},
		{"bench", []string{"--gpu-plan", "hopper"}, 2, "want auto or generic"},
		{"bench", []string{"--quick=often"}, 2, "quick"},
		{"bench", []string{"stray"}, 2, "stray"},
		{"bench", []string{"--layers", "-1"}, 1, "layers"},
		{"bench", []string{"--seed", "-1"}, 2, "seed"},
		{"bench", []string{"--save-model", clip}, 1, "not a directory"},
		{"bench", []string{"--save-model", filepath.Join(dir, "m"), "--write", dir}, 2, "not --write"},
		// embed: every flag
		{"embed", nil, 2, "usage"},
		{"embed", []string{clip, clip}, 2, "usage"},
		{"embed", []string{"--max-seconds", "0", clip}, 2, "max-seconds"},
		{"embed", []string{"--max-seconds", "nan", clip}, 2, "max-seconds"},
		{"embed", []string{"--max-seconds", "inf", clip}, 2, "max-seconds"},
		{"embed", []string{"-o", filepath.Join(dir, "v.mp3"), clip}, 2, ".npy"},
		{"embed", []string{filepath.Join(dir, "absent.wav")}, 1, "absent.wav"},
		{"embed", []string{garbage}, 1, "garbage.wav"},
		{"embed", []string{empty}, 1, "empty"},
		{"embed", []string{"--weights", filepath.Join(dir, "absent.pt"), clip}, 1, "absent.pt"},
		{"embed", []string{"--weights", garbage, "--lda", garbage, clip}, 1, "garbage.wav"},
		{"embed", []string{"--weights", filepath.Join(speakerDir, "ResNet293_SimAM_ASP_base.pt"), "--lda", badST, clip}, 1, "bad.safetensors"},
		{"embed", []string{clip}, 1, "speaker"}, // no speaker model in the (empty) cache
		{"embed", []string{"--weights", filepath.Join(speakerDir, "ResNet293_SimAM_ASP_base.pt"), "--backend", "tpu", clip}, 2, "tpu"},
		{"embed", []string{"--weights", filepath.Join(speakerDir, "ResNet293_SimAM_ASP_base.pt"), "--no-cache", "-o", nowhere + ".npy", clip}, 1, "no such"},
		{"embed", []string{"--print=yes", clip}, 2, "print"},
		{"embed", []string{"--gpu-plan", "", clip}, 2, "want auto or generic"},
		// conformance: every flag
		{"conformance", []string{"--golden", filepath.Join(dir, "absent")}, 2, "absent"},
		{"conformance", []string{"--golden", clip}, 2, "voice.wav"},
		{"conformance", []string{"--golden", filepath.Join(dir, "cache")}, 2, "no recognised packs"},
		{"conformance", []string{"--golden", golden.Dir(), "--only", "nomatch"}, 2, "no recognised packs"},
		{"conformance", []string{"--golden", golden.Dir(), "--backend", "tpu"}, 2, "tpu"},
		{"conformance", []string{"--bogus"}, 2, "bogus"},
		{"conformance", []string{"--gpu-plan", "Generic"}, 2, "want auto or generic"},
		// doctor: every flag
		{"doctor", []string{"--gpu-plan", "sm90"}, 2, "want auto or generic"},
		{"doctor", []string{"--json=maybe"}, 2, "json"},
		{"doctor", []string{"--verify=often"}, 2, "verify"},
		{"doctor", []string{"now"}, 2, "usage"},
		{"doctor", []string{"--backend", "tpu"}, 2, "tpu"},
		// pull (offline, empty cache: nothing is fetched)
		{"pull", []string{"tiny"}, 2, "tiny"},
		{"pull", []string{"hybrid", "transformer"}, 2, "usage"},
		{"pull", []string{"--plain=maybe"}, 2, "plain"},
		{"pull", []string{"--cache", clip}, nonzero, "voice.wav"},
		{"pull", []string{"--cache", filepath.Join(dir, "hub2"), "hybrid"}, 1, "offline"},
	}
	os.MkdirAll(filepath.Join(dir, "cache"), 0o755)
	runs := map[string]func([]string) int{"say": runSay, "voice": runVoice, "bench": runBench, "embed": runEmbed, "conformance": runConformance, "pull": runPull, "doctor": runDoctor}
	for _, c := range cases {
		var code int
		msg := captureStderr(t, func() { code = runs[c.cmd](c.args) })
		bad := (c.want == nonzero && code == 0) || (c.want != nonzero && code != c.want)
		if bad || !strings.Contains(strings.ToLower(msg), strings.ToLower(c.msg)) {
			t.Errorf("zonos %s %q: exit %d (want %d), stderr %q should mention %q", c.cmd, c.args[max(0, len(c.args)-4):], code, c.want, firstLines(msg), c.msg)
		}
		os.Remove(out)
	}
	t.Logf("%d malformed-flag cases", len(cases))
}

func firstLines(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
