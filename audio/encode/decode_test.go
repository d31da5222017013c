package encode

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// decoded is a stream as an independent decoder reads it.
type decoded struct {
	pcm      []int16
	rate     int
	channels int
}

// decode reads a stream of format f with tools that share no code with the
// encoders: sox (libsndfile's WAV reader, libFLAC, libmad) for WAV, PCM,
// FLAC and MP3, opusdec (libopus, libogg) for Opus, decoding at 48 kHz.
// pcmRate is the rate a raw PCM stream is at. A test skips when the tool
// is not installed (make deps installs both).
func decode(t testing.TB, f Format, data []byte, pcmRate int) decoded {
	t.Helper()
	dir := t.TempDir()
	ext := map[Format]string{WAV: "wav", PCM: "raw", FLAC: "flac", Opus: "opus", MP3: "mp3"}[f]
	in := filepath.Join(dir, "in."+ext)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var opts []string
	switch f {
	case PCM:
		opts = []string{"-t", "raw", "-r", strconv.Itoa(pcmRate), "-e", "signed-integer", "-b", "16", "-c", "1", "-L"}
	case Opus:
		need(t, "opusdec", "opus-tools")
		wav := filepath.Join(dir, "opus.wav")
		if out, err := exec.Command("opusdec", "--quiet", "--rate", "48000", in, wav).CombinedOutput(); err != nil {
			t.Fatalf("opusdec: %v\n%s", err, out)
		}
		in = wav
	}
	need(t, "sox", "sox libsox-fmt-mp3")
	info := func(flag string) int {
		if f == PCM { // raw samples: what sox is told
			return map[string]int{"-r": pcmRate, "-c": 1}[flag]
		}
		out, err := exec.Command("sox", "--i", flag, in).Output()
		if err != nil {
			t.Fatalf("sox --i %s: %v", flag, err)
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("sox --i %s: %q", flag, out)
		}
		return v
	}
	d := decoded{rate: info("-r"), channels: info("-c")}
	var stderr bytes.Buffer
	cmd := exec.Command("sox", append(append([]string{"-V1"}, opts...), in, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", "-")...)
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("sox decoding %s: %v\n%s", f, err, stderr.Bytes())
	}
	d.pcm = make([]int16, len(raw)/2)
	for i := range d.pcm {
		d.pcm[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return d
}

// need skips the test when a decoder is not installed.
func need(t testing.TB, tool, pkgs string) {
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed (apt-get install %s)", tool, pkgs)
	}
}
