package audio

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// soxClip makes a test clip with sox (skipping without it): args go between
// the output options and the file name's synth effect.
func soxClip(t testing.TB, name string, opts []string, synth ...string) string {
	t.Helper()
	if _, err := exec.LookPath("sox"); err != nil {
		t.Skip("sox not installed (apt-get install sox libsox-fmt-mp3)")
	}
	p := filepath.Join(t.TempDir(), name)
	args := append([]string{"-n"}, opts...)
	args = append(args, p, "synth")
	args = append(args, synth...)
	if out, err := exec.Command("sox", args...).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "no handler") || strings.Contains(string(out), "not supported") {
			t.Skipf("sox cannot write %s: %s", name, out)
		}
		t.Fatalf("sox %v: %v\n%s", args, err, out)
	}
	return p
}

// soxRaw decodes a file with sox to interleaved float32 at its own rate.
func soxRaw(t testing.TB, path string) []float32 {
	t.Helper()
	out, err := exec.Command("sox", path, "-t", "f32", "-e", "floating-point", "-").Output()
	if err != nil {
		t.Fatalf("sox decode %s: %v", path, err)
	}
	v := make([]float32, len(out)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	return v
}

func monoMix(inter []float32, ch int) []float32 {
	out := make([]float32, len(inter)/ch)
	for i := range out {
		var s float64
		for c := 0; c < ch; c++ {
			s += float64(inter[i*ch+c])
		}
		out[i] = float32(s / float64(ch))
	}
	return out
}

// TestDecodeClipLosslessExact decodes WAV (every sample format) and FLAC at
// their own rate and compares them with sox's decode, mixed to mono.
func TestDecodeClipLosslessExact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []string
		rate   int
		ch     int
		format string
	}{
		{"u8.wav", []string{"-r", "8000", "-c", "1", "-b", "8", "-e", "unsigned-integer"}, 8000, 1, "WAV"},
		{"s16.wav", []string{"-r", "16000", "-c", "1", "-b", "16"}, 16000, 1, "WAV"},
		{"s16-stereo.wav", []string{"-r", "44100", "-c", "2", "-b", "16"}, 44100, 2, "WAV"},
		{"s24.wav", []string{"-r", "48000", "-c", "2", "-b", "24"}, 48000, 2, "WAV"},
		{"s32.wav", []string{"-r", "22050", "-c", "1", "-b", "32"}, 22050, 1, "WAV"},
		{"f32.wav", []string{"-r", "24000", "-c", "1", "-b", "32", "-e", "floating-point"}, 24000, 1, "WAV"},
		{"f32-6ch.wav", []string{"-r", "32000", "-c", "6", "-b", "32", "-e", "floating-point"}, 32000, 6, "WAV"},
		{"s16-3ch.wav", []string{"-r", "11025", "-c", "3", "-b", "16"}, 11025, 3, "WAV"},
		{"s16.flac", []string{"-r", "44100", "-c", "2", "-b", "16"}, 44100, 2, "FLAC"},
		{"s24.flac", []string{"-r", "96000", "-c", "1", "-b", "24"}, 96000, 1, "FLAC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := soxClip(t, tc.name, tc.opts, "0.7", "sine", "440", "sine", "660", "gain", "-3")
			c, err := LoadClip(p, ClipOptions{Rate: tc.rate})
			if err != nil {
				t.Fatal(err)
			}
			if c.Format != tc.format || c.SourceRate != tc.rate || c.Channels != tc.ch || c.Trimmed {
				t.Fatalf("got %s %d Hz %d ch trimmed=%v", c.Format, c.SourceRate, c.Channels, c.Trimmed)
			}
			ref := monoMix(soxRaw(t, p), tc.ch)
			if len(c.Samples) != len(ref) {
				t.Fatalf("%d samples, sox %d", len(c.Samples), len(ref))
			}
			var d float64
			for i := range ref {
				d = max(d, math.Abs(float64(c.Samples[i]-ref[i])))
			}
			if d > 1e-6 {
				t.Errorf("max |Δ| vs sox %.3g > 1e-6", d)
			}
		})
	}
}

// toneCheck verifies a decoded 440 Hz tone: level and zero-crossing rate.
func toneCheck(t *testing.T, s []float32, rate int) {
	t.Helper()
	var ss float64
	cross := 0
	for i, v := range s {
		ss += float64(v) * float64(v)
		if i > 0 && (s[i-1] < 0) != (v < 0) {
			cross++
		}
	}
	rms := math.Sqrt(ss / float64(len(s)))
	freq := float64(cross) / 2 / (float64(len(s)) / float64(rate))
	if math.Abs(rms-0.5/math.Sqrt2) > 0.05 || math.Abs(freq-440) > 10 {
		t.Errorf("rms %.3f (want %.3f), %.1f Hz (want 440)", rms, 0.5/math.Sqrt2, freq)
	}
}

// TestDecodeClipLossy decodes MP3 and Ogg Vorbis made by sox, resampled to
// 16 kHz, and checks the tone survived.
func TestDecodeClipLossy(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		opts         []string
		ch           int
	}{
		{"tone.mp3", "MP3", []string{"-r", "44100", "-c", "2"}, 2},
		{"tone-mono.mp3", "MP3", []string{"-r", "44100", "-c", "1"}, 2},
		{"tone-32k.mp3", "MP3", []string{"-r", "32000", "-c", "2"}, 2},
		{"tone.ogg", "Ogg Vorbis", []string{"-r", "48000", "-c", "2"}, 2},
		{"tone-mono.ogg", "Ogg Vorbis", []string{"-r", "16000", "-c", "1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := soxClip(t, tc.name, tc.opts, "1.0", "sine", "440", "gain", "-6.02")
			c, err := LoadClip(p, ClipOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Format != tc.format || c.Rate != 16000 || c.Channels != tc.ch {
				t.Fatalf("got %s %d Hz → %d Hz, %d ch", c.Format, c.SourceRate, c.Rate, c.Channels)
			}
			if sec := c.Seconds(); sec < 0.95 || sec > 1.1 {
				t.Errorf("%.3f s decoded, want ~1 s", sec)
			}
			n := len(c.Samples)
			toneCheck(t, c.Samples[n/10:n*9/10], 16000)
		})
	}
}

func TestDecodeClipResamplesLikeResampler(t *testing.T) {
	p := soxClip(t, "r24k.wav", []string{"-r", "24000", "-c", "1", "-b", "32", "-e", "floating-point"}, "0.5", "sine", "300")
	c, err := LoadClip(p, ClipOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Resample(soxRaw(t, p), 24000, 16000)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) != len(want) || len(want) != 8000 {
		t.Fatalf("%d samples, want %d (8000)", len(c.Samples), len(want))
	}
	for i := range want {
		if c.Samples[i] != want[i] {
			t.Fatalf("sample %d: %g, want %g", i, c.Samples[i], want[i])
		}
	}
}

func TestDecodeClipTrims(t *testing.T) {
	for _, name := range []string{"long.wav", "long.flac", "long.mp3", "long.ogg"} {
		t.Run(name, func(t *testing.T) {
			p := soxClip(t, name, []string{"-r", "16000", "-c", "1"}, "3", "sine", "440")
			c, err := LoadClip(p, ClipOptions{MaxSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !c.Trimmed || c.Notice == "" {
				t.Errorf("trimmed=%v notice=%q", c.Trimmed, c.Notice)
			}
			if len(c.Samples) != 16000 {
				t.Errorf("%d samples, want 16000", len(c.Samples))
			}
			t.Log(c.Notice)
			c, err = LoadClip(p, ClipOptions{MaxSeconds: 5})
			if err != nil || c.Trimmed || c.Notice != "" {
				t.Errorf("5 s limit: trimmed=%v notice=%q err=%v", c != nil && c.Trimmed, c.Notice, err)
			}
		})
	}
}

func TestDecodeClipRejects(t *testing.T) {
	aiff := soxClip(t, "x.aiff", []string{"-r", "16000", "-c", "1"}, "0.1", "sine", "440")
	data, _ := os.ReadFile(aiff)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"aiff", data, "unsupported format 'aiff'; use WAV"},
		{"text", []byte("hello, this is not audio at all"), "unsupported format 'unknown'"},
		{"wav-rate-1", wavBytes(1, 1, 16, 1, make([]byte, 200)), "sample rate 1 Hz"},
		{"wav-0ch", wavBytes(16000, 0, 16, 1, make([]byte, 200)), "channels"},
		{"wav-alaw", wavBytes(8000, 1, 8, 6, make([]byte, 200)), "0x0006 is not supported"},
		{"wav-no-data", wavBytes(16000, 1, 16, 1, nil), "no audio"},
		{"wav-truncated", wavBytes(16000, 1, 16, 1, make([]byte, 400))[:30], ""},
		{"opus", append([]byte("OggS"), []byte(strings.Repeat("\x00", 24)+"OpusHead")...), "unsupported format 'Ogg Opus'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeClip(bytes.NewReader(tc.data), tc.name, ClipOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestDecodeClipHugeHeaderBounded: a WAV header claiming 4 GB of data with
// a tiny body decodes what is there without allocating for the claim.
func TestDecodeClipHugeHeaderBounded(t *testing.T) {
	body := make([]byte, 3200)
	for i := 0; i < len(body); i += 2 {
		binary.LittleEndian.PutUint16(body[i:], uint16(int16(8000*math.Sin(float64(i)/10))))
	}
	b := wavBytes(16000, 1, 16, 1, body)
	binary.LittleEndian.PutUint32(b[40:], 0xfffffff0)
	c, err := DecodeClip(bytes.NewReader(b), "huge.wav", ClipOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) != 1600 {
		t.Errorf("%d samples, want 1600", len(c.Samples))
	}
}

// wavBytes builds a canonical 44-byte-header WAV.
func wavBytes(rate, ch, bits, tag int, data []byte) []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(tag))
	le(uint16(ch))
	le(uint32(rate))
	le(uint32(rate * ch * bits / 8))
	le(uint16(ch * bits / 8))
	le(uint16(bits))
	b.WriteString("data")
	le(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

func fuzzClip(f *testing.F, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeClip(bytes.NewReader(data), "fuzz", ClipOptions{MaxSeconds: 2})
		if err == nil && (len(c.Samples) == 0 || len(c.Samples) > 2*16000+16) {
			t.Fatalf("%d samples from a 2 s limit", len(c.Samples))
		}
	})
}

// soxSeed returns a small file of the given name made by sox, or nil.
func soxSeed(f *testing.F, name string, opts ...string) []byte {
	if _, err := exec.LookPath("sox"); err != nil {
		return nil
	}
	p := filepath.Join(f.TempDir(), name)
	args := append(append([]string{"-n"}, opts...), p, "synth", "0.05", "sine", "440")
	if exec.Command("sox", args...).Run() != nil {
		return nil
	}
	b, _ := os.ReadFile(p)
	return b
}

func FuzzDecodeClipWAV(f *testing.F) {
	fuzzClip(f, wavBytes(16000, 1, 16, 1, make([]byte, 64)), wavBytes(8000, 2, 8, 1, make([]byte, 64)),
		wavBytes(8000, 1, 32, 3, make([]byte, 64)), soxSeed(f, "a.wav", "-r", "8000", "-c", "3", "-b", "24"))
}

func FuzzDecodeClipFLAC(f *testing.F) {
	fuzzClip(f, soxSeed(f, "a.flac", "-r", "8000", "-c", "2"), []byte("fLaC\x00\x00\x00\x22"))
}

func FuzzDecodeClipMP3(f *testing.F) {
	fuzzClip(f, soxSeed(f, "a.mp3", "-r", "8000", "-c", "1"), []byte{0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0})
}

func FuzzDecodeClipVorbis(f *testing.F) {
	fuzzClip(f, soxSeed(f, "a.ogg", "-r", "8000", "-c", "1"), []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01vorbis"))
}

// TestDecodeClipStreamedWAV: a WAV whose sizes are a stream's placeholders
// (0xFFFFFFFF, or 0) — what a writer that cannot seek back leaves, as
// the speech server's streamed bodies do — decodes to all its samples.
func TestDecodeClipStreamedWAV(t *testing.T) {
	samples := make([]int16, 3000)
	for i := range samples {
		samples[i] = int16(i*7%2000 - 1000)
	}
	for _, placeholder := range []uint32{0xFFFFFFFF, 0} {
		var b []byte
		b = append(b, "RIFF"...)
		b = binary.LittleEndian.AppendUint32(b, placeholder)
		b = append(b, "WAVEfmt "...)
		b = binary.LittleEndian.AppendUint32(b, 16)
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint32(b, 16000)
		b = binary.LittleEndian.AppendUint32(b, 32000)
		b = binary.LittleEndian.AppendUint16(b, 2)
		b = binary.LittleEndian.AppendUint16(b, 16)
		b = append(b, "data"...)
		b = binary.LittleEndian.AppendUint32(b, placeholder)
		for _, v := range samples {
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		}
		clip, err := DecodeClip(bytes.NewReader(b), "streamed.wav", ClipOptions{Rate: 16000})
		if err != nil {
			t.Fatalf("size %#x: %v", placeholder, err)
		}
		if len(clip.Samples) != len(samples) {
			t.Fatalf("size %#x: %d samples, want %d", placeholder, len(clip.Samples), len(samples))
		}
		for i, v := range samples {
			if want := float32(v) / 32768; clip.Samples[i] != want {
				t.Fatalf("size %#x: sample %d = %g, want %g", placeholder, i, clip.Samples[i], want)
			}
		}
	}
}
