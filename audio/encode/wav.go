package encode

import (
	"fmt"
	"io"

	"zonostream/audio"
)

// wavEncoder writes a 16-bit mono WAV stream with audio.WAVWriter, whose
// header says "until end of stream" (sizes 0xFFFFFFFF) on a writer it
// cannot seek. The header is written by New, before any audio, so a client
// can start its decoder on the first bytes.
type wavEncoder struct {
	state
	ww   *audio.WAVWriter
	res  resampled
	rate int
}

// streamOnly hides every method of a writer but Write, so that
// audio.WAVWriter writes the streaming header even to a regular file: an
// encoder's output is a stream whatever it is written to.
type streamOnly struct{ w io.Writer }

func (s streamOnly) Write(p []byte) (int, error) { return s.w.Write(p) }

func newWAV(w io.Writer, inRate, outRate int) (*wavEncoder, error) {
	res, err := newResampled(inRate, outRate)
	if err != nil {
		return nil, fmt.Errorf("wav encoder: %w", err)
	}
	ww, err := audio.NewWAVWriter(streamOnly{w}, outRate, audio.WAVPCM16)
	if err != nil {
		return nil, fmt.Errorf("wav encoder: %w", err)
	}
	return &wavEncoder{state: state{format: WAV}, ww: ww, res: res, rate: outRate}, nil
}

func (e *wavEncoder) Write(pcm []float32) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := e.ww.Write(e.res.write(pcm)); err != nil {
		return e.fail(err)
	}
	return nil
}

func (e *wavEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.err != nil {
		return e.err
	}
	if err := e.ww.Write(e.res.flush()); err != nil {
		return e.fail(err)
	}
	if err := e.ww.Close(); err != nil {
		return e.fail(err)
	}
	return nil
}

func (e *wavEncoder) Rate() int { return e.rate }
