package encode

import (
	"fmt"
	"io"

	"zonostream/audio"
)

// Options tune an encoder; the zero value keeps the input rate and uses
// each codec's default bitrate.
type Options struct {
	// Rate is the output sample rate; 0 keeps the input rate. WAV, PCM and
	// FLAC resample to it when it differs (PCM at 24000 Hz is what OpenAI's
	// pcm format is, and what clients like LiveKit and Pipecat assume).
	// Opus always encodes at 48 kHz internally (the rate field of its
	// header says the input rate), so it takes only 0 or 48000; MP3 takes
	// MPEG audio's rates (8000, 11025, 12000, 16000, 22050, 24000, 32000,
	// 44100, 48000) and LAME resamples to them.
	Rate int
	// Bitrate is in bits per second for Opus (6000–510000, default
	// DefaultOpusBitrate) and MP3 (one of MPEG's CBR bitrates at the output
	// rate, default DefaultMP3Bitrate or the highest below it there); 0
	// means the default. The lossless formats ignore it.
	Bitrate int
}

// Encoder writes one audio stream.
type Encoder interface {
	// Write encodes samples and writes whatever encoded bytes are ready to
	// the writer before returning: no format holds back more than about
	// one codec frame.
	Write(pcm []float32) error
	// Close flushes the end of the stream (the resampler's tail, the last
	// short frame, codec padding, the Ogg end-of-stream page) and frees
	// the codec. It does not close the writer.
	Close() error
	// Rate is the sample rate of the output.
	Rate() int
}

// New starts an encoder of format f writing to w. inRate is the rate of
// the samples given to Write (audio.SampleRate for Zonos).
func New(f Format, w io.Writer, inRate int, o Options) (Encoder, error) {
	if inRate <= 0 || inRate > audio.MaxResampleRate {
		return nil, fmt.Errorf("%s encoder: input rate %d Hz is out of range 1..%d", f, inRate, audio.MaxResampleRate)
	}
	if o.Rate < 0 || o.Rate > audio.MaxResampleRate {
		return nil, fmt.Errorf("%s encoder: output rate %d Hz is out of range 1..%d (0 keeps the input rate)", f, o.Rate, audio.MaxResampleRate)
	}
	if o.Bitrate < 0 {
		return nil, fmt.Errorf("%s encoder: bitrate %d b/s is negative (0 is the default)", f, o.Bitrate)
	}
	outRate := o.Rate
	if outRate == 0 {
		outRate = inRate
	}
	switch f {
	case WAV:
		return newWAV(w, inRate, outRate)
	case PCM:
		return newPCM(w, inRate, outRate)
	case FLAC:
		return newFLAC(w, inRate, outRate)
	case Opus:
		return newOpus(w, inRate, o)
	case MP3:
		return newMP3(w, inRate, outRate, o.Bitrate)
	}
	_, err := Parse(string(f))
	return nil, err
}

// state is what every encoder keeps besides its codec: the first error,
// which ends the stream, and whether Close was called.
type state struct {
	format Format
	err    error
	closed bool
}

// check is the error a Write must return before doing anything.
func (s *state) check() error {
	if s.closed {
		return fmt.Errorf("%s encoder: write after Close", s.format)
	}
	return s.err
}

// fail records err (with the format named) as the stream's end.
func (s *state) fail(err error) error {
	s.err = fmt.Errorf("%s encoder: %w", s.format, err)
	return s.err
}

// write sends p to w whole, recording a failure as the stream's end.
func (s *state) write(w io.Writer, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	n, err := w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return s.fail(fmt.Errorf("writing %d bytes: %w", len(p), err))
	}
	return nil
}
