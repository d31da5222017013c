package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-audio/wav"

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
	if st, err := os.Stat(out); err != nil || st.Size() <= 44 {
		t.Fatalf("wav: %v %v", st, err)
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
