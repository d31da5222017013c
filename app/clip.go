package app

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"zonostream/audio"
	"zonostream/internal/voices"
)

// Clip is a mono recording: a speaker sample or an audio prefix.
type Clip struct {
	Name    string // file name or "microphone"
	Samples []float32
	Rate    int
	// SHA256 is the hex SHA-256 of the file the clip was read from (""
	// for a recording): a voice saved from the clip records it.
	SHA256 string
}

// Duration of the clip.
func (c *Clip) Duration() time.Duration {
	if c == nil || c.Rate == 0 {
		return 0
	}
	return time.Duration(len(c.Samples)) * time.Second / time.Duration(c.Rate)
}

// Clip limits: long enough to carry a voice, short enough to stay cheap.
const (
	MaxClipBytes    = 64 << 20
	MaxClipDuration = 5 * time.Minute
)

// ErrUnsupportedClip is wrapped by errors for formats LoadClip cannot read.
var ErrUnsupportedClip = errors.New("unsupported clip format")

// LoadClip reads a clip in any format the audio package decodes (WAV,
// FLAC, MP3, Ogg Vorbis), mixed to mono at the engine's 44.1 kHz; clips
// longer than MaxClipDuration are trimmed. Unsupported files get an error
// naming their format and the supported ones.
func LoadClip(path string) (*Clip, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("clip %s: %w", filepath.Base(path), err)
	}
	if st.Size() > MaxClipBytes {
		return nil, fmt.Errorf("clip %s is larger than %d MiB; use a clip of a few seconds", filepath.Base(path), MaxClipBytes>>20)
	}
	c, err := audio.LoadClip(path, audio.ClipOptions{MaxSeconds: MaxClipDuration.Seconds(), Rate: audio.SampleRate})
	if err != nil {
		return nil, fmt.Errorf("clip %s: %w", filepath.Base(path), err)
	}
	sum, err := voices.FileSHA256(path)
	if err != nil {
		return nil, fmt.Errorf("clip %s: %w", filepath.Base(path), err)
	}
	return &Clip{Name: filepath.Base(path), Samples: c.Samples, Rate: c.Rate, SHA256: sum}, nil
}

// sniff names a few common audio formats by their magic bytes.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("fLaC")):
		return "flac"
	case bytes.HasPrefix(b, []byte("OggS")):
		return "ogg"
	case bytes.HasPrefix(b, []byte("ID3")), len(b) > 1 && b[0] == 0xFF && b[1]&0xE0 == 0xE0:
		return "mp3"
	case len(b) >= 12 && string(b[:4]) == "FORM" && (string(b[8:12]) == "AIFF" || string(b[8:12]) == "AIFC"):
		return "aiff"
	case len(b) >= 8 && string(b[4:8]) == "ftyp":
		return "m4a"
	}
	return ""
}

// DecodeWAV parses a RIFF/WAVE file held in memory. Every size is checked
// against the data before use.
func DecodeWAV(b []byte) (*Clip, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		if f := sniff(b); f != "" {
			return nil, fmt.Errorf("%w '%s'; use WAV (convert with e.g. 'sox in.%s out.wav')", ErrUnsupportedClip, f, f)
		}
		return nil, fmt.Errorf("%w: not a WAV file; use WAV", ErrUnsupportedClip)
	}
	var (
		format, channels, bits int
		rate                   int
		data                   []byte
		haveFmt                bool
	)
	for p := 12; p+8 <= len(b); {
		id := string(b[p : p+4])
		size := int(binary.LittleEndian.Uint32(b[p+4 : p+8]))
		body := b[p+8:]
		if size > len(body) {
			if id != "data" {
				return nil, fmt.Errorf("WAV chunk %q claims %d bytes but only %d remain (truncated file)", id, size, len(body))
			}
			size = len(body) - len(body)%4 // a streamed WAV with an unpatched size: take what is there
		}
		body = body[:size]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, fmt.Errorf("WAV fmt chunk of %d bytes is too short", size)
			}
			format = int(binary.LittleEndian.Uint16(body[0:]))
			channels = int(binary.LittleEndian.Uint16(body[2:]))
			rate = int(binary.LittleEndian.Uint32(body[4:]))
			bits = int(binary.LittleEndian.Uint16(body[14:]))
			if format == 0xFFFE && size >= 26 { // WAVE_FORMAT_EXTENSIBLE: the subformat's first two bytes
				format = int(binary.LittleEndian.Uint16(body[24:]))
			}
			haveFmt = true
		case "data":
			data = body
		}
		p += 8 + size + size&1
	}
	if !haveFmt || data == nil {
		return nil, fmt.Errorf("WAV file has no fmt or data chunk")
	}
	if channels < 1 || channels > 32 {
		return nil, fmt.Errorf("WAV file has %d channels; want 1 to 32", channels)
	}
	if rate < 8000 || rate > 384000 {
		return nil, fmt.Errorf("WAV sample rate %d Hz is out of range; use 8 kHz to 384 kHz", rate)
	}
	var read func([]byte) float32
	switch {
	case format == 1 && bits == 8:
		read = func(s []byte) float32 { return (float32(s[0]) - 128) / 128 }
	case format == 1 && bits == 16:
		read = func(s []byte) float32 { return float32(int16(binary.LittleEndian.Uint16(s))) / 32768 }
	case format == 1 && bits == 24:
		read = func(s []byte) float32 {
			v := int32(uint32(s[0])<<8|uint32(s[1])<<16|uint32(s[2])<<24) >> 8
			return float32(v) / (1 << 23)
		}
	case format == 1 && bits == 32:
		read = func(s []byte) float32 { return float32(int32(binary.LittleEndian.Uint32(s))) / (1 << 31) }
	case format == 3 && bits == 32:
		read = func(s []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(s)) }
	case format == 3 && bits == 64:
		read = func(s []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(s))) }
	default:
		return nil, fmt.Errorf("%w: WAV encoding %d with %d bits; use 16-bit PCM or 32-bit float", ErrUnsupportedClip, format, bits)
	}
	frameBytes := channels * bits / 8
	n := len(data) / frameBytes
	if n == 0 {
		return nil, fmt.Errorf("WAV file holds no samples")
	}
	if time.Duration(n)*time.Second/time.Duration(rate) > MaxClipDuration {
		return nil, fmt.Errorf("clip is longer than %v; trim it to a few seconds", MaxClipDuration)
	}
	out := make([]float32, n)
	bps := bits / 8
	for i := range out {
		var sum float32
		for c := 0; c < channels; c++ {
			v := read(data[i*frameBytes+c*bps:])
			if v != v || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("WAV sample %d is not a finite number", i)
			}
			sum += v
		}
		out[i] = sum / float32(channels)
	}
	return &Clip{Samples: out, Rate: rate}, nil
}
