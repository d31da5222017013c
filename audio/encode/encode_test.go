package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"zonostream/audio"
)

const inRate = audio.SampleRate

// Parts of testSignal, in samples at 44.1 kHz.
const (
	sigSilence = 4410  // 0.1 s of digital silence (FLAC's constant subframes)
	sigTones   = 66150 // 1.5 s of 440 + 1000 Hz under a slow envelope
	sigNoise   = 13230 // 0.3 s of Gaussian noise (verbatim subframes)
	sigOver    = 4410  // 0.1 s of a 300 Hz sine peaking at 1.3 (clamped)
	sigLen     = sigSilence + sigTones + sigNoise + sigOver
)

// testSignal is 2 s of audio that takes every path of the encoders.
func testSignal() []float32 {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 0, sigLen)
	x = append(x, make([]float32, sigSilence)...)
	for i := range sigTones {
		t := float64(i) / inRate
		env := 0.6 + 0.4*math.Sin(2*math.Pi*1.5*t)
		x = append(x, float32(env*(0.35*math.Sin(2*math.Pi*440*t)+0.2*math.Sin(2*math.Pi*1000*t))))
	}
	for range sigNoise {
		x = append(x, float32(0.25*rng.NormFloat64()))
	}
	for i := range sigOver {
		x = append(x, float32(1.3*math.Sin(2*math.Pi*300*float64(i)/inRate)))
	}
	return x
}

// feed writes x as the speech server does: 512-sample pieces first, then
// pieces of random sizes up to 32×512.
func feed(t testing.TB, e Encoder, x []float32, rng *rand.Rand) {
	t.Helper()
	for at, k := 0, 0; at < len(x); k++ {
		n := 512
		if k >= 8 {
			n = 1 + rng.IntN(32*512)
		}
		n = min(n, len(x)-at)
		if err := e.Write(x[at : at+n]); err != nil {
			t.Fatalf("Write of %d samples at %d: %v", n, at, err)
		}
		at += n
	}
}

// encodeAll encodes x in server-sized pieces and returns the stream.
func encodeAll(t testing.TB, f Format, o Options, x []float32, seed uint64) ([]byte, Encoder) {
	t.Helper()
	var buf bytes.Buffer
	e, err := New(f, &buf, inRate, o)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, e, x, rand.New(rand.NewPCG(seed, 1)))
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes(), e
}

// TestLossless decodes WAV, PCM and FLAC streams with sox and checks that
// the samples are exactly the input, or its one-shot torchaudio resampling,
// quantised by audio.PCM16: the resampler's streaming and FLAC's coding
// lose nothing.
func TestLossless(t *testing.T) {
	x := testSignal()
	for _, f := range []Format{WAV, PCM, FLAC} {
		for _, rate := range []int{0, 24000, 16000, 48000} {
			t.Run(string(f)+"/"+rateName(rate), func(t *testing.T) {
				data, e := encodeAll(t, f, Options{Rate: rate}, x, uint64(rate))
				want, outRate := x, inRate
				if rate != 0 {
					var err error
					if want, err = audio.Resample(x, inRate, rate); err != nil {
						t.Fatal(err)
					}
					outRate = rate
				}
				if e.Rate() != outRate {
					t.Errorf("Rate() = %d, want %d", e.Rate(), outRate)
				}
				d := decode(t, f, data, e.Rate())
				if d.rate != e.Rate() || d.channels != 1 {
					t.Fatalf("decoded at %d Hz with %d channels, want %d Hz mono", d.rate, d.channels, e.Rate())
				}
				if len(d.pcm) != len(want) {
					t.Fatalf("decoded %d samples, want %d", len(d.pcm), len(want))
				}
				for i, s := range want {
					if d.pcm[i] != audio.PCM16(s) {
						t.Fatalf("sample %d decodes as %d, want %d (from %v)", i, d.pcm[i], audio.PCM16(s), s)
					}
				}
			})
		}
	}
}

// TestLossy decodes Opus (opusdec, at 48 kHz) and MP3 (sox, libmad)
// streams and checks their length against the input's, within the codec's
// delay and padding, and that the tones survive: after aligning by the
// codec delay, the decoded tone part correlates with the input (resampled
// to the decoder's rate) by more than minCorr.
func TestLossy(t *testing.T) {
	x := testSignal()
	cases := []struct {
		f          Format
		o          Options
		rate       int // the decoded rate
		pad        int // most extra samples, at rate: delay and padding
		maxLag     int // largest codec delay searched, at rate
		minCorr    float64
		bitrateMin int // bytes of the stream at least, b/s of audio
	}{
		// opusdec trims the pre-skip and the end padding (RFC 7845):
		// the length is the input's at 48 kHz, rounded up.
		{f: Opus, rate: 48000, pad: 1, maxLag: 200, minCorr: 0.98},
		{f: Opus, o: Options{Bitrate: 24000}, rate: 48000, pad: 1, maxLag: 200, minCorr: 0.98},
		// Without the LAME tag libmad keeps LAME's encoder delay (576),
		// its own (529) and the last frame's padding.
		{f: MP3, rate: 44100, pad: 576 + 529 + 2*1152, maxLag: 1500, minCorr: 0.98},
		{f: MP3, o: Options{Rate: 24000, Bitrate: 64000}, rate: 24000, pad: 576 + 529 + 2*576, maxLag: 1500, minCorr: 0.98},
		{f: MP3, o: Options{Rate: 8000}, rate: 8000, pad: 576 + 529 + 2*576, maxLag: 1500, minCorr: 0.98},
	}
	for _, c := range cases {
		t.Run(string(c.f)+"/"+rateName(c.o.Rate)+"/"+rateName(c.o.Bitrate), func(t *testing.T) {
			data, e := encodeAll(t, c.f, c.o, x, 5)
			if e.Rate() != c.rate {
				t.Errorf("Rate() = %d, want %d", e.Rate(), c.rate)
			}
			if c.f == Opus {
				// The identification header (RFC 7845, 5.1) fills the
				// first page, after its 27-byte header and 1 lacing value.
				if len(data) < 47 || string(data[28:36]) != "OpusHead" {
					t.Fatalf("no OpusHead at the start: % x", data[:min(len(data), 47)])
				}
				if ch, r := data[37], binary.LittleEndian.Uint32(data[40:]); ch != 1 || r != inRate {
					t.Errorf("OpusHead says %d channels, input rate %d; want 1 and %d", ch, r, inRate)
				}
			}
			d := decode(t, c.f, data, 0)
			if d.rate != c.rate || d.channels != 1 {
				t.Fatalf("decoded at %d Hz with %d channels, want %d Hz mono", d.rate, d.channels, c.rate)
			}
			ref, err := audio.Resample(x, inRate, c.rate)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.pcm) < len(ref) || len(d.pcm) > len(ref)+c.pad {
				t.Errorf("decoded %d samples; want %d to %d (the input's %d and up to %d of delay and padding)", len(d.pcm), len(ref), len(ref)+c.pad, len(ref), c.pad)
			}
			// The tone part, clear of the edges that the onset of
			// silence → tones and the lag search disturb.
			lo := (sigSilence + 4410) * c.rate / inRate
			hi := (sigSilence + sigTones - 4410) * c.rate / inRate
			corr, lag := bestCorrelation(d.pcm, ref, lo, hi, c.maxLag)
			t.Logf("%d bytes for %.1f s (%.1f kb/s); tone correlation %.4f at lag %d", len(data), float64(sigLen)/inRate, float64(8*len(data))/(float64(sigLen)/inRate)/1000, corr, lag)
			if corr < c.minCorr {
				t.Errorf("tone correlation %.4f at lag %d, want ≥ %.2f", corr, lag, c.minCorr)
			}
		})
	}
}

// bestCorrelation is the largest normalised correlation between
// got[lo+lag : hi+lag] and want[lo:hi] over lags 0..maxLag, and its lag.
func bestCorrelation(got []int16, want []float32, lo, hi, maxLag int) (best float64, bestLag int) {
	best = math.Inf(-1)
	for lag := 0; lag <= maxLag && hi+lag <= len(got); lag++ {
		var gw, gg, ww float64
		for i := lo; i < hi; i++ {
			g, w := float64(got[i+lag])/32767, float64(want[i])
			gw += g * w
			gg += g * g
			ww += w * w
		}
		if c := gw / math.Sqrt(gg*ww); c > best {
			best, bestLag = c, lag
		}
	}
	return best, bestLag
}

// TestStreaming writes the first 0.5 s in 512-sample pieces, as the server
// does while the first sentence is generated, and checks that the bytes
// written before Close already decode to all of it but at most one codec
// frame (plus, for MP3, both codecs' delays, which the decoded length
// counts): nothing waits for Close or for a page or buffer to fill.
func TestStreaming(t *testing.T) {
	x := testSignal()
	const written = 43 * 512 // 0.5 s
	held := map[Format]int{  // most samples the decoded prefix may lack, at the output rate
		WAV:  0,
		PCM:  0,
		FLAC: flacBlock,
		Opus: 2 * 960, // the packet being filled, the encoder's lookahead
		// LAME's lookahead of a frame and an MDCT window (1904 samples)
		// and the frame libmad decodes once it sees the next header,
		// less its 529-sample decoder delay (which lengthens the output):
		// 1904 + 1152 − 529; with a frame of margin.
		MP3: 1904 + 2*1152 - 529,
	}
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			e, err := New(f, &buf, inRate, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			header := buf.Len()
			for at := 0; at < written; at += 512 {
				if err := e.Write(x[at : at+512]); err != nil {
					t.Fatal(err)
				}
			}
			if buf.Len() <= header {
				t.Fatalf("%d bytes written before Close, all of them before the first Write", buf.Len())
			}
			if f == WAV {
				h := buf.Bytes()
				riff, data := binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[40:])
				if string(h[:4]) != "RIFF" || string(h[36:40]) != "data" || riff != 0xFFFFFFFF || data != 0xFFFFFFFF {
					t.Errorf("WAV header %q: RIFF size %#x, data size %#x; want 0xFFFFFFFF (until end of stream)", h[:44], riff, data)
				}
			}
			d := decode(t, f, bytes.Clone(buf.Bytes()), e.Rate())
			want := written * e.Rate() / inRate
			t.Logf("%d bytes (%d of headers) decode to %d samples of %d", buf.Len(), header, len(d.pcm), want)
			if len(d.pcm) < want-held[f] {
				t.Errorf("the stream so far decodes to %d samples; want at least %d (%d written, %d held back at most)", len(d.pcm), want-held[f], want, held[f])
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, f := range Formats {
		for _, s := range []string{string(f), strings.ToUpper(string(f)), strings.ToUpper(string(f[:1])) + string(f[1:])} {
			if got, err := Parse(s); err != nil || got != f {
				t.Errorf("Parse(%q) = %q, %v; want %q", s, got, err, f)
			}
		}
		if f.ContentType() == "application/octet-stream" || !strings.HasPrefix(f.ContentType(), "audio/") {
			t.Errorf("%s: content type %q", f, f.ContentType())
		}
	}
	for _, s := range []string{"aac", "", "wave", " mp3"} {
		_, err := Parse(s)
		if err == nil {
			t.Errorf("Parse(%q) accepted", s)
			continue
		}
		want := `response format "` + s + `" is not supported; use one of wav, pcm, flac, opus, mp3`
		if err.Error() != want {
			t.Errorf("Parse(%q): %q, want %q", s, err, want)
		}
	}
	if Opus.ContentType() != "audio/ogg" || MP3.ContentType() != "audio/mpeg" {
		t.Errorf("opus %q, mp3 %q", Opus.ContentType(), MP3.ContentType())
	}
}

// TestOptionsRefused checks that impossible settings fail in New, naming
// what is wrong.
func TestOptionsRefused(t *testing.T) {
	cases := []struct {
		f      Format
		inRate int
		o      Options
		want   string
	}{
		{Opus, inRate, Options{Rate: 24000}, "always 48000 Hz"},
		{Opus, inRate, Options{Bitrate: 1000}, "out of Opus's range"},
		{MP3, inRate, Options{Rate: 96000}, "not an MP3 rate"},
		{MP3, inRate, Options{Bitrate: 100000}, "not an MP3 bitrate at 44100 Hz"},
		{MP3, inRate, Options{Rate: 8000, Bitrate: 128000}, "not an MP3 bitrate at 8000 Hz"},
		{WAV, 0, Options{}, "input rate 0 Hz"},
		{PCM, inRate, Options{Rate: -1}, "output rate -1 Hz"},
		{FLAC, inRate, Options{Bitrate: -5}, "negative"},
		{"aac", inRate, Options{}, "not supported"},
	}
	for _, c := range cases {
		e, err := New(c.f, new(bytes.Buffer), c.inRate, c.o)
		if err == nil {
			e.Close()
			t.Errorf("%s %d Hz %+v: accepted", c.f, c.inRate, c.o)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d Hz %+v: %q, want it to say %q", c.f, c.inRate, c.o, err, c.want)
		}
	}
}

// TestClose checks the end of every encoder's life: a stream closed without
// audio still decodes (to nothing, or to the codec's padding), Close twice
// returns nil, and Write after Close fails.
func TestClose(t *testing.T) {
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			e, err := New(f, &buf, inRate, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			n := buf.Len()
			if err := e.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := e.Write(make([]float32, 512)); err == nil || !strings.Contains(err.Error(), "write after Close") {
				t.Errorf("Write after Close: %v", err)
			}
			if buf.Len() != n {
				t.Errorf("%d bytes written after the first Close", buf.Len()-n)
			}
			t.Logf("an empty stream is %d bytes", n)
			switch f {
			case PCM: // no header, no samples
				if n != 0 {
					t.Errorf("an empty raw stream is %d bytes", n)
				}
			case MP3: // one silent frame, which sox does not open: check its header
				if h := buf.Bytes(); n < 4 || h[0] != 0xFF || h[1] != 0xFB {
					t.Errorf("an empty MP3 stream is %d bytes starting % x; want an MPEG-1 layer III frame", n, h[:min(n, 4)])
				}
			default:
				if d := decode(t, f, buf.Bytes(), inRate); len(d.pcm) != 0 {
					t.Errorf("an empty stream decodes to %d samples", len(d.pcm))
				}
			}
		})
	}
}

// failWriter accepts limit bytes, then fails.
type failWriter struct{ limit, n int }

var errFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		k := w.limit - w.n
		w.n = w.limit
		return k, errFull
	}
	w.n += len(p)
	return len(p), nil
}

// TestWriterError checks that a failing writer ends the stream: the error
// comes back from the Write that met it, wrapped with the format, from
// every later Write and from Close; Close still frees the codec.
func TestWriterError(t *testing.T) {
	x := testSignal()[:inRate]
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			e, err := New(f, &failWriter{limit: 200}, inRate, Options{})
			if err != nil {
				t.Fatal(err) // every header fits 200 bytes
			}
			var first error
			for at := 0; at < len(x) && first == nil; at += 4096 {
				first = e.Write(x[at:min(len(x), at+4096)])
			}
			if !errors.Is(first, errFull) || !strings.Contains(first.Error(), string(f)+" encoder") {
				t.Fatalf("writing 1 s to a writer that takes 200 bytes: %v", first)
			}
			if err := e.Write(x[:512]); !errors.Is(err, errFull) {
				t.Errorf("Write after the failure: %v", err)
			}
			if err := e.Close(); !errors.Is(err, errFull) {
				t.Errorf("Close after the failure: %v", err)
			}
		})
	}
}

func rateName(r int) string {
	if r == 0 {
		return "default"
	}
	return strconv.Itoa(r)
}
