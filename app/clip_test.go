package app

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeWAVFormats(t *testing.T) {
	if _, err := exec.LookPath("sox"); err != nil {
		t.Skip("sox not installed (make deps installs it)")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, args string
		lsb        float32 // one quantisation step of the format
	}{
		{"s16.wav", "-b 16 -e signed-integer", 1.0 / 32768},
		{"s24.wav", "-b 24 -e signed-integer", 1.0 / 8388608},
		{"u8.wav", "-b 8 -e unsigned-integer", 1.0 / 128},
		{"f32.wav", "-b 32 -e floating-point", 0},
	} {
		path := filepath.Join(dir, tc.name)
		// -D: no dither, so the written samples (and this test) are the
		// same on every run; sox's default TPDF dither at 8 bits moved the
		// resampled peak by up to two steps at random.
		args := append([]string{"-D", "-n", "-r", "16000", "-c", "2"}, strings.Fields(tc.args)...)
		args = append(args, path, "synth", "0.5", "sine", "440", "vol", "0.5")
		if out, err := exec.Command("sox", args...).CombinedOutput(); err != nil {
			t.Fatalf("sox: %v %s", err, out)
		}
		c, err := LoadClip(path)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var peak float32
		for _, v := range c.Samples {
			peak = max(peak, v)
		}
		// Loaded clips come at the engine's 44.1 kHz, mixed to mono. The
		// 0.5 sine's peak survives up to the resampler's small overshoot
		// and one quantisation step of the file's format.
		if c.Rate != 44100 || len(c.Samples) != 22050 || peak < 0.45 || peak > 0.51+tc.lsb {
			t.Fatalf("%s: rate %d, %d samples, peak %g", tc.name, c.Rate, len(c.Samples), peak)
		}
	}
}

func TestDecodeWAVBadInput(t *testing.T) {
	for name, b := range map[string][]byte{
		"flac":      []byte("fLaC\x00\x00\x00\x22"),
		"mp3":       []byte("ID3\x03\x00\x00\x00"),
		"text":      []byte("hello, this is not audio"),
		"truncated": []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00"),
		"nodata":    []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00\x88\x58\x01\x00\x02\x00\x10\x00"),
	} {
		if _, err := DecodeWAV(b); err == nil {
			t.Errorf("%s: accepted", name)
		} else if (name == "flac" || name == "mp3") && !errors.Is(err, ErrUnsupportedClip) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := LoadClip(filepath.Join(t.TempDir(), "missing.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzDecodeWAV(f *testing.F) {
	f.Add([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00\x88\x58\x01\x00\x02\x00\x10\x00data\x04\x00\x00\x00\x01\x00\x02\x00"))
	f.Add([]byte("RIFF\xff\xff\xff\xffWAVEdata\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeWAV(b)
		if err == nil && (len(c.Samples) == 0 || c.Rate <= 0) {
			t.Fatalf("accepted an empty clip: %+v", c)
		}
	})
}
