package main

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-audio/wav"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

func tinyArgs(t *testing.T) []string {
	return []string{"--model-dir", golden.Pack(t, "zonos-hybrid-tiny"), "--dac-dir", golden.Pack(t, "dac-tiny"), "--quiet"}
}

// TestSayWritesWAV: `zonos say --no-play --out` writes a valid WAV whose
// length is a whole number of DAC frames.
func TestSayWritesWAV(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a.wav")
	args := append(tinyArgs(t), "--no-play", "--out", out, "--seed", "3", "--max-seconds", "0.3", "Hello there.")
	if code := runSay(args); code != 0 {
		t.Fatalf("exit %d", code)
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	d := wav.NewDecoder(fh)
	buf, err := d.FullPCMBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if d.SampleRate != 44100 || d.NumChans != 1 || d.BitDepth != 16 {
		t.Fatalf("format %d Hz %d ch %d bit", d.SampleRate, d.NumChans, d.BitDepth)
	}
	if n := len(buf.Data); n == 0 || n%512 != 0 {
		t.Fatalf("%d samples: not a whole number of 512-sample frames", n)
	}
}

// TestSayNullDevice: playback into miniaudio's null device while writing.
func TestSayNullDevice(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.wav")
	args := append(tinyArgs(t), "--null-audio", "--out", out, "--format", "float32", "--seed", "3", "--max-seconds", "0.2", "Hi.")
	if code := runSay(args); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := floatWAV(t, out); len(got) == 0 {
		t.Fatal("wav: no samples")
	}
}

func TestSayRejectsBadInput(t *testing.T) {
	base := tinyArgs(t)
	cases := [][]string{
		{"--no-play"},          // no text, no out
		{"--text", "a", "b"},   // two text sources
		{"--no-play", "hello"}, // nowhere to put audio
		{"--emotion", "1,2", "--no-play", "--out", "x"}, // 2 emotions
		{"--format", "mp3", "--out", "x", "hi"},         // bad format
		{"--fmax", "lots", "hi"},                        // not a number
		{"--backend", "tpu", "--no-play", "--out", filepath.Join(t.TempDir(), "c.wav"), "hi"},
		{"--lang", "xx", "--no-play", "--out", filepath.Join(t.TempDir(), "d.wav"), "hi"},
	}
	for _, c := range cases {
		if code := runSay(append(append([]string(nil), base...), c...)); code == 0 {
			t.Errorf("%v: exit 0", c)
		}
	}
}

// floatWAV reads a 32-bit float WAV's samples by walking its RIFF chunks,
// checking the data chunk's size against the file.
func floatWAV(t *testing.T, path string) []float32 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		t.Fatalf("%s: not a WAV file", path)
	}
	for off := 12; off+8 <= len(data); {
		id, n := string(data[off:off+4]), int(binary.LittleEndian.Uint32(data[off+4:]))
		if id == "fmt " && binary.LittleEndian.Uint16(data[off+8:]) != 3 {
			t.Fatalf("%s: format %d, want 3 (float)", path, binary.LittleEndian.Uint16(data[off+8:]))
		}
		if id == "data" {
			if n != len(data)-off-8 || n%4 != 0 {
				t.Fatalf("%s: data chunk of %d bytes, %d follow", path, n, len(data)-off-8)
			}
			out := make([]float32, n/4)
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+8+4*i:]))
			}
			return out
		}
		off += 8 + n + n%2
	}
	t.Fatalf("%s: no data chunk", path)
	return nil
}

// TestSayWAVEqualsStream: the WAV holds exactly the PCM the engine streams
// for the same request and seed, and the same seed gives the same file.
func TestSayWAVEqualsStream(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.wav"), filepath.Join(dir, "b.wav")
	for _, out := range []string{a, b} {
		args := append(tinyArgs(t), "--play", "false", "--out", out, "--format", "float32", "--seed", "11", "--max-seconds", "0.4", "Same seed.")
		if code := runSay(args); code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
	wa, wb := floatWAV(t, a), floatWAV(t, b)
	e, err := engine.Load(cpu.New(0), engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	req := engine.Request{Text: "Same seed.", Language: "en-us", Knobs: engine.DefaultKnobs(), Seed: 11, MaxSeconds: 0.4}
	s, err := e.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	for ev := range s.Events() {
		if ev.Kind == engine.Audio {
			pcm = append(pcm, ev.PCM...)
		}
	}
	if len(wa) != len(pcm) || len(wb) != len(pcm) || len(pcm) == 0 {
		t.Fatalf("wav %d and %d samples, stream %d", len(wa), len(wb), len(pcm))
	}
	for i := range pcm {
		if wa[i] != pcm[i] || wb[i] != pcm[i] {
			t.Fatalf("sample %d: wav %g / %g, stream %g", i, wa[i], wb[i], pcm[i])
		}
	}
}

// TestSayCancelLeavesValidWAV: cancelling mid-stream keeps a valid WAV of
// what was streamed so far.
func TestSayCancelLeavesValidWAV(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.wav")
	e, err := engine.Load(cpu.New(0), engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancel once the first audio reached the file
		for ctx.Err() == nil {
			matches, _ := filepath.Glob(out + "*")
			for _, m := range matches {
				if st, err := os.Stat(m); err == nil && st.Size() > 4096 {
					cancel()
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	req := engine.Request{Text: "A long sentence that will not finish.", Language: "en-us", Knobs: engine.DefaultKnobs(), Seed: 1, MaxSeconds: 20}
	f := sayFlags{out: out, noPlay: true, quiet: true}
	if code := speak(ctx, e, req, f, audio.WAVFloat32); code != 130 {
		t.Fatalf("exit %d, want 130 (cancelled)", code)
	}
	got := floatWAV(t, out)
	if len(got) == 0 || len(got) >= 20*44100 {
		t.Fatalf("%d samples after cancel", len(got))
	}
}

// TestSayNoWeights: no bundle in the cache is exit code 2 with a hint.
func TestSayNoWeights(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	if code := runSay([]string{"--quiet", "--play", "false", "--out", filepath.Join(t.TempDir(), "x.wav"), "hello"}); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}

// TestSaySpeakerAndPrefix: a speaker clip (embedded by the tiny speaker
// model) and an audio prefix (encoded by the tiny DAC) condition the
// utterance; the prefix frames come first in the output.
func TestSaySpeakerAndPrefix(t *testing.T) {
	dir := t.TempDir()
	voice, pre, out := filepath.Join(dir, "voice.wav"), filepath.Join(dir, "pre.wav"), filepath.Join(dir, "o.wav")
	writeTone(t, voice, 24000, 48000)
	writeTone(t, pre, 44100, 512*5)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	args := append(tinyArgs(t), "--speaker", voice, "--speaker-dir", golden.Pack(t, "speaker-tiny"), "--prefix", pre,
		"--play", "false", "--out", out, "--format", "float32", "--seed", "5", "--max-seconds", "0.2", "Hi.")
	if code := runSay(args); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := len(floatWAV(t, out)); n < 5*512 || n%512 != 0 {
		t.Fatalf("%d samples: want the 5 prefix frames and more, whole frames", n)
	}
	bad := append(tinyArgs(t), "--speaker", filepath.Join(dir, "absent.wav"), "--play", "false", "--out", out, "Hi.")
	if code := runSay(bad); code == 0 {
		t.Fatal("missing speaker clip accepted")
	}
}

// writeTone writes n samples of a 140 Hz float32 mono WAV at rate.
func writeTone(t *testing.T, path string, rate, n int) {
	w, err := audio.CreateWAV(path, rate, audio.WAVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = 0.4 * float32(math.Sin(2*math.Pi*140*float64(i)/float64(rate)))
	}
	if err := w.Write(s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSayChecksInputsBeforeLoading: a bad speaker path, an unreadable
// speaker or prefix clip, a missing speaker model, an unsupported language
// and text with nothing to say are reported before the model loads (which
// takes minutes for the full model). The model folders here hold no model:
// loading would fail with "config.json", so an input error in its place
// shows that nothing was loaded first.
func TestSayChecksInputsBeforeLoading(t *testing.T) {
	dir, clip := emptyCacheWithClip(t)
	garbage := filepath.Join(dir, "garbage.wav")
	if err := os.WriteFile(garbage, []byte("RIFF\x10\x00\x00\x00WAVEjunkjunk"), 0o644); err != nil {
		t.Fatal(err)
	}
	noModel := t.TempDir()
	base := []string{"--zonos-dir", noModel, "--dac-dir", noModel, "--play", "false", "--out", filepath.Join(dir, "o.wav")}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--speaker", filepath.Join(dir, "absent.wav"), "Hi."}, "absent.wav"},
		{[]string{"--speaker", garbage, "Hi."}, "garbage.wav"},
		{[]string{"--speaker", clip, "Hi."}, "speaker model"}, // the cache has no speaker model
		{[]string{"--speaker", clip, "--speaker-dir", dir, "Hi."}, "ResNet293_SimAM_ASP_base.pt"},
		{[]string{"--speaker", filepath.Join(dir, "absent.npy"), "Hi."}, "absent.npy"},
		{[]string{"--prefix", garbage, "Hi."}, "garbage.wav"},
		{[]string{"--lang", "xx", "Hi."}, "xx"},
		{[]string{"   "}, "empty"},
		{[]string{"?!"}, "nothing to pronounce"},
	}
	for _, c := range cases {
		var code int
		msg := captureStderr(t, func() { code = runSay(append(append([]string(nil), base...), c.args...)) })
		if code == 0 || !strings.Contains(msg, c.want) || strings.Contains(msg, "config.json") || strings.Contains(msg, "loading ") {
			t.Errorf("say %q: exit %d, stderr %q; want the input error (%q) before any model is loaded", c.args, code, msg, c.want)
		}
	}
}

// TestSaySpeakerModelMissing: `zonos say --speaker clip.wav` with no
// speaker model in the cache says what say itself takes (zonos pull, or
// --speaker-dir), not embed's --weights and --lda.
func TestSaySpeakerModelMissing(t *testing.T) {
	dir, clip := emptyCacheWithClip(t)
	var code int
	msg := captureStderr(t, func() {
		code = runSay(append(tinyArgs(t), "--speaker", clip, "--play", "false", "--out", filepath.Join(dir, "o.wav"), "Hi."))
	})
	if code != 1 || !strings.Contains(msg, "zonos pull") || !strings.Contains(msg, "--speaker-dir") || strings.Contains(msg, "--weights") || strings.Contains(msg, "--lda") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 'zonos pull' and --speaker-dir, flags say has", code, msg)
	}
	t.Logf("told: %s", strings.TrimSpace(msg))
}

// emptyCacheWithClip points the hub cache at an empty folder (offline) and
// writes a one-second tone clip beside it.
func emptyCacheWithClip(t *testing.T) (dir, clip string) {
	t.Helper()
	dir = t.TempDir()
	t.Setenv("HF_HUB_CACHE", filepath.Join(dir, "hub"))
	t.Setenv("HF_HUB_OFFLINE", "1")
	clip = filepath.Join(dir, "voice.wav")
	writeTone(t, clip, 16000, 16000)
	return dir, clip
}

// TestSayChecksLimitsBeforeLoading: --max-seconds and the vocoder chunk
// sizes out of range are reported before the model loads, like the text.
func TestSayChecksLimitsBeforeLoading(t *testing.T) {
	dir, _ := emptyCacheWithClip(t)
	noModel := t.TempDir()
	base := []string{"--zonos-dir", noModel, "--dac-dir", noModel, "--play", "false", "--out", filepath.Join(dir, "o.wav")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-seconds", "90", "Hi."}, "max seconds"},
		{[]string{"--first-chunk", "900", "Hi."}, "chunk sizes"},
	} {
		var code int
		msg := captureStderr(t, func() { code = runSay(append(append([]string(nil), base...), c.args...)) })
		if code == 0 || !strings.Contains(msg, c.want) || strings.Contains(msg, "config.json") {
			t.Errorf("say %q: exit %d, stderr %q; want %q before any model is loaded", c.args, code, msg, c.want)
		}
	}
}
