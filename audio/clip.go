package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
	"github.com/hajimehoshi/go-mp3"
	"github.com/jfreymuth/oggvorbis"
	"github.com/mewkiz/flac"
)

// Speaker clips: a user's recording of a voice to clone, in any of the
// formats below, decoded to mono float32 in [-1, 1] (integer PCM divided by
// 2^(bits−1), as torchaudio.load does), mixed down by averaging channels
// (the reference's wav.mean(0)) and resampled with the torchaudio-exact
// Resampler. Every file is untrusted: rates, channel counts and lengths are
// bounded before anything is allocated, and a decoder panic becomes an
// error.

// SupportedClipFormats names the formats DecodeClip reads.
const SupportedClipFormats = "WAV (8/16/24/32-bit integer, 32-bit float), FLAC, MP3 or Ogg Vorbis"

// Bounds on clip input.
const (
	DefaultClipSeconds = 30     // ClipOptions.MaxSeconds default
	MinClipRate        = 1000   // Hz
	MaxClipRate        = 384000 // Hz
	MaxClipChannels    = 64
	clipChunkFrames    = 4096
)

// ClipOptions controls DecodeClip; the zero value means 16 kHz output and a
// 30 s limit.
type ClipOptions struct {
	// MaxSeconds trims longer clips to their first MaxSeconds (0: 30 s;
	// negative: no limit, which a caller handling untrusted files should
	// not use).
	MaxSeconds float64
	// Rate is the output rate (0: 16000, the speaker model's).
	Rate int
}

// Clip is a decoded, mono, resampled clip.
type Clip struct {
	Samples       []float32 // mono at Rate
	Rate          int
	Format        string  // "WAV", "FLAC", "MP3", "Ogg Vorbis"
	SourceRate    int     // the file's sample rate
	Channels      int     // the file's channel count
	SourceSeconds float64 // the file's length when the format says (0: unknown)
	Trimmed       bool    // the clip was longer than MaxSeconds
	// Notice is a one-line message for the user when the clip was trimmed.
	Notice string
}

// Seconds is the decoded duration.
func (c *Clip) Seconds() float64 { return float64(len(c.Samples)) / float64(c.Rate) }

// LoadClip decodes the file at path (see DecodeClip).
func LoadClip(path string, opt ClipOptions) (*Clip, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("speaker clip: %w", err)
	}
	defer f.Close()
	return DecodeClip(f, filepath.Base(path), opt)
}

// DecodeClip detects the format of r from its first bytes (not from name,
// which appears in errors only), decodes at most opt.MaxSeconds of it,
// mixes it to mono and resamples it to opt.Rate.
func DecodeClip(r io.ReadSeeker, name string, opt ClipOptions) (clip *Clip, err error) {
	if opt.MaxSeconds == 0 {
		opt.MaxSeconds = DefaultClipSeconds
	}
	if opt.Rate == 0 {
		opt.Rate = 16000
	}
	if opt.Rate < MinClipRate || opt.Rate > MaxClipRate {
		return nil, fmt.Errorf("speaker clip: output rate %d Hz outside [%d, %d]", opt.Rate, MinClipRate, MaxClipRate)
	}
	var head [64]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("speaker clip %s: %w", name, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("speaker clip %s: the file is empty", name)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("speaker clip %s: %w", name, err)
	}
	format := sniffClip(head[:n])
	var dec func(io.ReadSeeker, *clipSink) error
	switch format {
	case "WAV":
		dec = clipDecodeWAV
	case "FLAC":
		dec = clipDecodeFLAC
	case "MP3":
		dec = clipDecodeMP3
	case "Ogg Vorbis":
		dec = clipDecodeVorbis
	default:
		return nil, fmt.Errorf("speaker clip %s: unsupported format '%s'; use %s", name, format, SupportedClipFormats)
	}
	sink := &clipSink{maxSeconds: opt.MaxSeconds}
	defer func() {
		if p := recover(); p != nil {
			clip, err = nil, fmt.Errorf("speaker clip %s: corrupt %s file (decoder failed: %v)", name, format, p)
		}
	}()
	if err := dec(r, sink); err != nil {
		return nil, fmt.Errorf("speaker clip %s: %s: %w", name, format, err)
	}
	if len(sink.mono) == 0 {
		return nil, fmt.Errorf("speaker clip %s: the %s file holds no audio", name, format)
	}
	c := &Clip{Format: format, SourceRate: sink.rate, Channels: sink.channels, Rate: opt.Rate, Trimmed: sink.trimmed}
	if sink.totalFrames > 0 {
		c.SourceSeconds = float64(sink.totalFrames) / float64(sink.rate)
	}
	rs, err := NewResampler(sink.rate, opt.Rate)
	if err != nil {
		return nil, fmt.Errorf("speaker clip %s: %w", name, err)
	}
	c.Samples = rs.Resample(sink.mono)
	if c.Trimmed {
		of := ""
		if c.SourceSeconds > 0 {
			of = fmt.Sprintf(" of %.1f s", c.SourceSeconds)
		}
		c.Notice = fmt.Sprintf("speaker clip %s: using the first %.4g s%s (limit %.4g s)", name, float64(len(sink.mono))/float64(sink.rate), of, opt.MaxSeconds)
	}
	return c, nil
}

// sniffClip names the format from the file's first bytes.
func sniffClip(h []byte) string {
	has := func(off int, s string) bool { return len(h) >= off+len(s) && string(h[off:off+len(s)]) == s }
	switch {
	case has(0, "RIFF") && has(8, "WAVE"):
		return "WAV"
	case has(0, "RF64") || has(0, "BW64"):
		return "RF64 WAV"
	case has(0, "fLaC"):
		return "FLAC"
	case has(0, "ID3"):
		// ID3v2 tags precede MP3 (and sometimes FLAC) audio.
		if i := bytes.Index(h, []byte("fLaC")); i >= 0 {
			return "FLAC"
		}
		return "MP3"
	case has(0, "OggS"):
		switch {
		case bytes.Contains(h, []byte("\x01vorbis")):
			return "Ogg Vorbis"
		case bytes.Contains(h, []byte("OpusHead")):
			return "Ogg Opus"
		case bytes.Contains(h, []byte("\x7fFLAC")):
			return "Ogg FLAC"
		}
		return "Ogg (unknown codec)"
	case has(0, "FORM") && (has(8, "AIFF") || has(8, "AIFC")):
		return "aiff"
	case has(4, "ftyp"):
		return "mp4/m4a"
	case has(0, "\x1a\x45\xdf\xa3"):
		return "webm/mkv"
	case has(0, ".snd"):
		return "au"
	case len(h) >= 2 && h[0] == 0xff && h[1]&0xe0 == 0xe0 && h[1]&0x06 != 0:
		if h[1]&0x06 == 0x06 || h[1]&0x18 == 0x08 { // layer I or reserved version
			return "MPEG audio (not layer III)"
		}
		if h[1]&0x06 == 0x02 {
			return "MP3"
		}
		return "MP2"
	}
	return "unknown"
}

// clipSink accumulates the mono mix of the first maxSeconds.
type clipSink struct {
	maxSeconds  float64
	rate        int
	channels    int
	maxFrames   int
	totalFrames int64 // from the header, when known
	mono        []float32
	trimmed     bool
}

// start validates the stream parameters; total is the header's frame count
// (≤ 0: unknown).
func (s *clipSink) start(rate, channels int, total int64) error {
	if rate < MinClipRate || rate > MaxClipRate {
		return fmt.Errorf("sample rate %d Hz is outside [%d, %d] Hz", rate, MinClipRate, MaxClipRate)
	}
	if channels < 1 || channels > MaxClipChannels {
		return fmt.Errorf("%d channels (supported: 1 to %d)", channels, MaxClipChannels)
	}
	s.rate, s.channels, s.totalFrames = rate, channels, max(total, 0)
	s.maxFrames = math.MaxInt32
	if s.maxSeconds > 0 {
		s.maxFrames = int(s.maxSeconds * float64(rate))
	}
	capHint := s.maxFrames
	if total > 0 {
		capHint = int(min(int64(capHint), total))
	}
	s.mono = make([]float32, 0, min(capHint, 1<<22))
	return nil
}

// full reports whether the limit has been reached.
func (s *clipSink) full() bool { return len(s.mono) >= s.maxFrames }

// add mixes interleaved frames (value(i) for sample i) into the sink and
// reports whether more are wanted; it marks the clip trimmed when frames
// are dropped.
func (s *clipSink) add(frames int, value func(i int) float64) bool {
	inv := 1 / float64(s.channels)
	for f := 0; f < frames; f++ {
		if s.full() {
			s.trimmed = true
			return false
		}
		var acc float64
		for c := 0; c < s.channels; c++ {
			acc += value(f*s.channels + c)
		}
		s.mono = append(s.mono, float32(acc*inv))
	}
	return true
}

// moreAfterLimit marks the clip trimmed when the stream holds frames past
// the limit (called once the limit is reached).
func (s *clipSink) moreAfterLimit(more bool) {
	if s.full() && more {
		s.trimmed = true
	}
}

// wavFormatTag walks a RIFF file's chunks up to "data" and returns the
// format tag of its "fmt " chunk (WAVE_FORMAT_EXTENSIBLE resolved to its
// sub-format), which go-audio/wav does not resolve. It also refuses chunks
// before "data" that claim more bytes than the file holds or more than
// 16 MiB, because go-audio/wav allocates what LIST and smpl chunks claim.
// dataAt is the offset of the data chunk's size field, and streamed is
// set when that size is a stream's placeholder (0xFFFFFFFF or 0, as
// written by a writer that could not seek back: this product's own
// speech server among them) or runs past the end of the file.
func wavFormatTag(r io.ReadSeeker) (tag uint16, dataAt, size int64, streamed bool, err error) {
	size, err = r.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, 0, 0, false, err
	}
	if _, err := r.Seek(12, io.SeekStart); err != nil {
		return 0, 0, 0, false, err
	}
	pos := int64(12)
	var hdr [8]byte
	haveFmt := false
	for i := 0; i < 1024; i++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break
		}
		pos += 8
		n := int64(binary.LittleEndian.Uint32(hdr[4:]))
		id := string(hdr[:4])
		if id == "data" {
			if !haveFmt {
				return 0, 0, 0, false, fmt.Errorf("audio data before the fmt chunk")
			}
			return tag, pos - 4, size, n == 0xFFFFFFFF || n == 0 || n > size-pos, nil
		}
		if n > size-pos || n > 16<<20 {
			return 0, 0, 0, false, fmt.Errorf("chunk %q claims %d bytes; the file has %d left (truncated or corrupt)", id, n, size-pos)
		}
		if id == "fmt " {
			if n < 16 {
				return 0, 0, 0, false, fmt.Errorf("fmt chunk of %d bytes", n)
			}
			var fmtb [26]byte
			got, _ := io.ReadFull(r, fmtb[:min(n, 26)])
			tag, haveFmt = binary.LittleEndian.Uint16(fmtb[:2]), true
			if tag == 0xfffe && got >= 26 {
				tag = binary.LittleEndian.Uint16(fmtb[24:26])
			}
			if _, err := r.Seek(pos, io.SeekStart); err != nil {
				return 0, 0, 0, false, err
			}
		}
		pos += n + n&1
		if _, err := r.Seek(pos, io.SeekStart); err != nil {
			return 0, 0, 0, false, err
		}
	}
	if !haveFmt {
		return 0, 0, 0, false, fmt.Errorf("no fmt chunk")
	}
	return 0, 0, 0, false, fmt.Errorf("no data chunk: no audio")
}

// sizeOverlay reads a file with some 32-bit little-endian fields replaced.
type sizeOverlay struct {
	io.ReadSeeker
	pos     int64
	patches []sizePatch
}

type sizePatch struct {
	at int64
	v  uint32
}

func (o *sizeOverlay) Read(p []byte) (int, error) {
	n, err := o.ReadSeeker.Read(p)
	for _, pt := range o.patches {
		var field [4]byte
		binary.LittleEndian.PutUint32(field[:], pt.v)
		for i := range field {
			if off := pt.at + int64(i) - o.pos; off >= 0 && off < int64(n) {
				p[off] = field[i]
			}
		}
	}
	o.pos += int64(n)
	return n, err
}

func (o *sizeOverlay) Seek(offset int64, whence int) (int64, error) {
	pos, err := o.ReadSeeker.Seek(offset, whence)
	if err == nil {
		o.pos = pos
	}
	return pos, err
}

func clipDecodeWAV(r io.ReadSeeker, s *clipSink) error {
	tag, dataAt, size, streamed, err := wavFormatTag(r)
	if err != nil {
		return err
	}
	if streamed {
		// A streamed WAV's sizes are placeholders: read it with the
		// sizes the file's length gives.
		r = &sizeOverlay{ReadSeeker: r, patches: []sizePatch{
			{4, uint32(min(size-8, math.MaxUint32))}, {dataAt, uint32(min(size-dataAt-4, math.MaxUint32))}}}
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d := wav.NewDecoder(r)
	d.ReadInfo()
	if d.Err() != nil {
		return fmt.Errorf("bad header: %v", d.Err())
	}
	bits := int(d.BitDepth)
	var scale func(v int) float64
	switch {
	case tag == 1 && bits == 8:
		scale = func(v int) float64 { return float64(v-128) / 128 }
	case tag == 1 && (bits == 16 || bits == 24 || bits == 32):
		k := 1 / float64(int64(1)<<(bits-1))
		scale = func(v int) float64 { return float64(v) * k }
	case tag == 3 && bits == 32:
		scale = func(v int) float64 {
			f := float64(math.Float32frombits(uint32(int32(v))))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return 0
			}
			return f
		}
	case tag == 3:
		return fmt.Errorf("%d-bit float samples are not supported (use 32-bit float or 16/24-bit integer)", bits)
	case tag == 1:
		return fmt.Errorf("%d-bit integer samples are not supported (use 8, 16, 24 or 32)", bits)
	default:
		return fmt.Errorf("WAV encoding 0x%04x is not supported (use PCM or IEEE float; compressed WAV such as ADPCM or μ-law is not)", tag)
	}
	ch := int(d.NumChans)
	if err := d.FwdToPCM(); err != nil {
		return fmt.Errorf("no audio data: %v", err)
	}
	var total int64
	if ch > 0 && bits > 0 {
		total = d.PCMLen() / int64(ch*bits/8)
	}
	if err := s.start(int(d.SampleRate), ch, total); err != nil {
		return err
	}
	buf := &goaudio.IntBuffer{Data: make([]int, clipChunkFrames*ch)}
	pending := []int{}
	for !s.full() {
		n, err := d.PCMBuffer(buf)
		if n == 0 || err != nil {
			if err != nil && !errors.Is(err, io.EOF) && len(s.mono) == 0 {
				return err
			}
			break
		}
		pending = append(pending, buf.Data[:n]...)
		frames := len(pending) / ch
		s.add(frames, func(i int) float64 { return scale(pending[i]) })
		pending = append(pending[:0], pending[frames*ch:]...)
	}
	if s.full() {
		n, _ := d.PCMBuffer(buf)
		s.moreAfterLimit(n > 0 || len(pending) > 0)
	}
	return nil
}

func clipDecodeFLAC(r io.ReadSeeker, s *clipSink) error {
	st, err := flac.New(r)
	if err != nil {
		return err
	}
	info := st.Info
	if info.BitsPerSample < 4 || info.BitsPerSample > 32 {
		return fmt.Errorf("%d bits per sample", info.BitsPerSample)
	}
	if err := s.start(int(info.SampleRate), int(info.NChannels), int64(min(info.NSamples, math.MaxInt64/2))); err != nil {
		return err
	}
	for !s.full() {
		fr, err := st.ParseNext()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if len(s.mono) > 0 {
				return fmt.Errorf("corrupt frame after %.2f s: %v", float64(len(s.mono))/float64(s.rate), err)
			}
			return err
		}
		if len(fr.Subframes) != s.channels {
			return fmt.Errorf("frame with %d channels in a %d-channel stream", len(fr.Subframes), s.channels)
		}
		bps := int(fr.BitsPerSample)
		if bps < 4 || bps > 32 {
			bps = int(info.BitsPerSample)
		}
		k := 1 / float64(int64(1)<<(bps-1))
		n := len(fr.Subframes[0].Samples)
		for _, sf := range fr.Subframes {
			if len(sf.Samples) != n {
				return fmt.Errorf("ragged frame")
			}
		}
		ch := s.channels
		s.add(n, func(i int) float64 { return float64(fr.Subframes[i%ch].Samples[i/ch]) * k })
	}
	_, err = st.ParseNext()
	s.moreAfterLimit(err == nil)
	return nil
}

func clipDecodeMP3(r io.ReadSeeker, s *clipSink) error {
	d, err := mp3.NewDecoder(r)
	if err != nil {
		return err
	}
	// go-mp3 always yields 16-bit little-endian stereo.
	total := d.Length() / 4
	if err := s.start(d.SampleRate(), 2, total); err != nil {
		return err
	}
	s.channels = 2
	buf := make([]byte, clipChunkFrames*4)
	for !s.full() {
		n, err := io.ReadFull(d, buf)
		frames := n / 4
		s.add(frames, func(i int) float64 { return float64(int16(binary.LittleEndian.Uint16(buf[2*i:]))) / 32768 })
		if err != nil {
			break
		}
	}
	if s.full() {
		n, _ := d.Read(buf[:4])
		s.moreAfterLimit(n > 0)
	}
	return nil
}

func clipDecodeVorbis(r io.ReadSeeker, s *clipSink) error {
	d, err := oggvorbis.NewReader(r)
	if err != nil {
		return err
	}
	if err := s.start(d.SampleRate(), d.Channels(), d.Length()); err != nil {
		return err
	}
	buf := make([]float32, clipChunkFrames*s.channels)
	var pending []float32
	for !s.full() {
		n, err := d.Read(buf)
		pending = append(pending, buf[:n]...)
		frames := len(pending) / s.channels
		s.add(frames, func(i int) float64 {
			v := float64(pending[i])
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0
			}
			return v
		})
		pending = append(pending[:0], pending[frames*s.channels:]...)
		if err != nil {
			if !errors.Is(err, io.EOF) && len(s.mono) == 0 {
				return err
			}
			break
		}
		if n == 0 {
			break
		}
	}
	if s.full() {
		n, _ := d.Read(buf[:s.channels])
		s.moreAfterLimit(n > 0 || len(pending) > 0)
	}
	return nil
}
