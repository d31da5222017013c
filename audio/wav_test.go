package audio

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-audio/wav"
)

// testSignal is a deterministic test waveform with values across (and, for
// the clamp, slightly beyond) the [−1, 1] range.
func testSignal(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 99))
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(0.6*math.Sin(float64(i)*0.05) + 0.3*rng.NormFloat64())
	}
	if n > 3 {
		s[0], s[1], s[2] = 1.5, -1.5, float32(math.NaN())
	}
	return s
}

// writeChunks writes s in random-size chunks, as committed PCM arrives.
func writeChunks(t *testing.T, w *WAVWriter, s []float32) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	for len(s) > 0 {
		k := min(len(s), 1+rng.IntN(2000))
		if err := w.Write(s[:k]); err != nil {
			t.Fatal(err)
		}
		s = s[k:]
	}
}

// decodeWAV reads a file with go-audio/wav and returns its samples as
// float32: format-3 files bit for bit, PCM16 as the integer values.
func decodeWAV(t *testing.T, path string) (samples []float32, d *wav.Decoder) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d = wav.NewDecoder(f)
	if !d.IsValidFile() {
		t.Fatalf("go-audio/wav: %s is not a valid WAV file (%v)", path, d.Err())
	}
	buf, err := d.FullPCMBuffer()
	if err != nil {
		t.Fatalf("go-audio/wav: %s: %v", path, err)
	}
	samples = make([]float32, len(buf.Data))
	for i, v := range buf.Data {
		if d.WavAudioFormat == 3 {
			samples[i] = math.Float32frombits(uint32(int32(v)))
		} else {
			samples[i] = float32(v)
		}
	}
	return samples, d
}

// soxi runs `soxi -<flag> path` and returns its trimmed output; it skips the
// test when sox is not installed (make test installs it).
func soxi(t *testing.T, flag, path string) string {
	t.Helper()
	if _, err := exec.LookPath("soxi"); err != nil {
		t.Skip("soxi not installed: apt-get install sox")
	}
	out, err := exec.Command("soxi", "-"+flag, path).CombinedOutput()
	if err != nil {
		t.Fatalf("soxi -%s %s: %v: %s", flag, path, err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkWithSox validates the header with soxi: rate, channels, encoding and
// sample count.
func checkWithSox(t *testing.T, path string, format WAVFormat, samples int) {
	t.Helper()
	if got := soxi(t, "s", path); got != strconv.Itoa(samples) {
		t.Errorf("soxi -s %s = %s, want %d", path, got, samples)
	}
	if got := soxi(t, "r", path); got != "44100" {
		t.Errorf("soxi -r = %s, want 44100", got)
	}
	if got := soxi(t, "c", path); got != "1" {
		t.Errorf("soxi -c = %s, want 1", got)
	}
	wantEnc, wantBits := "Signed Integer PCM", "16"
	if format == WAVFloat32 {
		wantEnc, wantBits = "Floating Point PCM", "32"
	}
	if got := soxi(t, "e", path); got != wantEnc {
		t.Errorf("soxi -e = %q, want %q", got, wantEnc)
	}
	if got := soxi(t, "b", path); got != wantBits {
		t.Errorf("soxi -b = %s, want %s", got, wantBits)
	}
}

func TestWAVFloatRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.wav")
	sig := testSignal(30011, 1)
	w, err := CreateWAV(path, SampleRate, WAVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	writeChunks(t, w, sig)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, d := decodeWAV(t, path)
	if d.WavAudioFormat != 3 || d.BitDepth != 32 || d.SampleRate != SampleRate || d.NumChans != 1 {
		t.Fatalf("header: format %d, %d bits, %d Hz, %d channels", d.WavAudioFormat, d.BitDepth, d.SampleRate, d.NumChans)
	}
	if len(got) != len(sig) {
		t.Fatalf("%d samples back, wrote %d", len(got), len(sig))
	}
	for i := range sig {
		if math.Float32bits(got[i]) != math.Float32bits(sig[i]) {
			t.Fatalf("sample %d: %v back, wrote %v", i, got[i], sig[i])
		}
	}
	checkWithSox(t, path, WAVFloat32, len(sig))
	if matches, _ := filepath.Glob(path + ".*.part"); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

func TestWAVPCM16RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.wav")
	sig := testSignal(20000, 2)
	w, err := CreateWAV(path, SampleRate, WAVPCM16)
	if err != nil {
		t.Fatal(err)
	}
	writeChunks(t, w, sig)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, d := decodeWAV(t, path)
	if d.WavAudioFormat != 1 || d.BitDepth != 16 {
		t.Fatalf("header: format %d, %d bits; want PCM 16", d.WavAudioFormat, d.BitDepth)
	}
	if len(got) != len(sig) {
		t.Fatalf("%d samples back, wrote %d", len(got), len(sig))
	}
	for i := range sig {
		if got[i] != float32(PCM16(sig[i])) {
			t.Fatalf("sample %d: %v back, want %d", i, got[i], PCM16(sig[i]))
		}
		if s := float64(sig[i]); s > -1 && s < 1 && math.Abs(float64(got[i])/32767-s) > 0.5/32767+1e-9 {
			t.Fatalf("sample %d: %v is not %v rounded", i, got[i], s*32767)
		}
	}
	if got[0] != 32767 || got[1] != -32767 || got[2] != 0 {
		t.Errorf("clamping: 1.5 → %v, −1.5 → %v, NaN → %v; want 32767, −32767, 0", got[0], got[1], got[2])
	}
	checkWithSox(t, path, WAVPCM16, len(sig))
}

// TestWAVValidMidStream copies the .part file between writes, as if the
// process had been killed there: it must be a valid file with the samples
// written so far.
func TestWAVValidMidStream(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.wav")
		w, err := CreateWAV(path, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(5000, 3)
		for i, n := range []int{0, 1, 777, 4222} {
			if err := w.Write(sig[:n]); err != nil {
				t.Fatal(err)
			}
			sig = sig[n:]
			snap := filepath.Join(dir, "snap"+strconv.Itoa(i)+".wav")
			copyFile(t, w.tmp, snap)
			total := int(w.Samples())
			if got := soxi(t, "s", snap); got != strconv.Itoa(total) {
				t.Errorf("%v after %d samples: soxi -s = %s", format, total, got)
			}
			if total > 0 {
				if got, _ := decodeWAV(t, snap); len(got) != total {
					t.Errorf("%v after %d samples: go-audio reads %d", format, total, len(got))
				}
			}
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("final path exists before Close: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		checkWithSox(t, path, format, 5000)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// failingFile lets budget bytes through, then fails mid-write (like a full
// disk), tearing a sample in half.
type failingFile struct {
	*os.File
	budget int
}

var errDiskFull = errors.New("simulated: no space left on device")

func (f *failingFile) Write(p []byte) (int, error) {
	if len(p) <= f.budget {
		f.budget -= len(p)
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.budget])
	f.budget = 0
	return n, errDiskFull
}

func TestWAVErrorMidStream(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		path := filepath.Join(t.TempDir(), "out.wav")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		ff := &failingFile{File: f, budget: fileHeaderLen(format) + 1001} // 1001 bytes of samples: a torn one at the end
		w, err := NewWAVWriter(ff, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(2000, 4)
		var werr error
		for i := 0; i < len(sig) && werr == nil; i += 300 {
			werr = w.Write(sig[i:min(i+300, len(sig))])
		}
		if !errors.Is(werr, errDiskFull) {
			t.Fatalf("%v: write error %v, want the simulated one", format, werr)
		}
		if err := w.Write(sig[:10]); !errors.Is(err, errDiskFull) {
			t.Fatalf("%v: Write after a failure: %v, want the same error", format, err)
		}
		if err := w.Close(); !errors.Is(err, errDiskFull) {
			t.Fatalf("%v: Close after a failure: %v, want the write error", format, err)
		}
		f.Close()
		want := 1001 / format.bytesPerSample()
		if w.Samples() != int64(want) {
			t.Fatalf("%v: Samples() = %d, want %d", format, w.Samples(), want)
		}
		got, _ := decodeWAV(t, path)
		if len(got) != want {
			t.Fatalf("%v: go-audio reads %d samples, want the %d complete ones", format, len(got), want)
		}
		checkWithSox(t, path, format, want)
	}
}

func TestWAVTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.wav")
	w, err := CreateWAV(path, SampleRate, WAVFloat32)
	if err != nil {
		t.Fatal(err)
	}
	sig := testSignal(1000, 5)
	w.Write(sig)
	if err := w.Truncate(600); err != nil {
		t.Fatal(err)
	}
	if err := w.Truncate(601); err == nil {
		t.Fatal("Truncate beyond the end: no error")
	}
	w.Write(sig[:100])
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := decodeWAV(t, path)
	if len(got) != 700 || got[599] != sig[599] || got[600] != sig[0] {
		t.Fatalf("after Truncate(600) and 100 more: %d samples", len(got))
	}
	checkWithSox(t, path, WAVFloat32, 700)
}

// TestWAVKeepsOldFileUntilClose: the previous file at the path survives
// until Close replaces it, and Abort leaves it alone.
func TestWAVKeepsOldFileUntilClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.wav")
	os.WriteFile(path, []byte("old"), 0o644)
	w, err := CreateWAV(path, SampleRate, WAVPCM16)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(testSignal(100, 6))
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatal("old file changed before Close")
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatal("Abort changed the old file")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.part")); len(m) != 0 {
		t.Fatalf("Abort left %v", m)
	}
	w, _ = CreateWAV(path, SampleRate, WAVPCM16)
	w.Write(testSignal(100, 6))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkWithSox(t, path, WAVPCM16, 100)
	if err := w.Write([]float32{0}); err == nil {
		t.Fatal("Write after Close: no error")
	}
}

// TestWAVStream writes to a pipe-like writer (no WriterAt): sizes say
// "unknown" and sox still reads every sample.
func TestWAVStream(t *testing.T) {
	if _, err := exec.LookPath("sox"); err != nil {
		t.Skip("sox not installed: apt-get install sox")
	}
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		var buf bytes.Buffer
		w, err := NewWAVWriter(struct{ io.Writer }{&buf}, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, w, testSignal(12345, 7))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Truncate(10); err == nil {
			t.Error("Truncate on a stream: no error")
		}
		out := filepath.Join(t.TempDir(), "fixed.wav")
		cmd := exec.Command("sox", "-V1", "-t", "wav", "-", out)
		cmd.Stdin = &buf
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: sox reading the stream: %v: %s", format, err, b)
		}
		checkWithSox(t, out, format, 12345)
	}
}

func TestWAVBadArgs(t *testing.T) {
	if _, err := CreateWAV(filepath.Join(t.TempDir(), "no", "such", "dir.wav"), SampleRate, WAVPCM16); err == nil || !strings.Contains(err.Error(), "dir.wav") {
		t.Errorf("missing directory: %v, want an error naming the file", err)
	}
	if _, err := CreateWAV(t.TempDir(), SampleRate, WAVPCM16); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory as path: %v", err)
	}
	if _, err := NewWAVWriter(io.Discard, 0, WAVPCM16); err == nil {
		t.Error("rate 0: no error")
	}
	if _, err := NewWAVWriter(io.Discard, SampleRate, WAVFormat(7)); err == nil {
		t.Error("format 7: no error")
	}
	for s, want := range map[string]WAVFormat{"pcm16": WAVPCM16, "float32": WAVFloat32, "f32": WAVFloat32} {
		if got, err := ParseWAVFormat(s); err != nil || got != want {
			t.Errorf("ParseWAVFormat(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseWAVFormat("mp3"); err == nil || !strings.Contains(err.Error(), "pcm16 or float32") {
		t.Errorf("ParseWAVFormat(mp3): %v", err)
	}
}

func BenchmarkWAVWrite(b *testing.B) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		b.Run(format.String(), func(b *testing.B) {
			w, err := CreateWAV(filepath.Join(b.TempDir(), "b.wav"), SampleRate, format)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			chunk := testSignal(4096, 8) // ~93 ms: a steady DAC chunk of 8 frames
			b.SetBytes(int64(len(chunk) * 4))
			for b.Loop() {
				if err := w.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
