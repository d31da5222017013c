package encode

import (
	"fmt"
	"io"
)

// pcmEncoder writes raw signed 16-bit little-endian mono samples.
type pcmEncoder struct {
	state
	w    io.Writer
	res  resampled
	rate int
	buf  []byte
}

func newPCM(w io.Writer, inRate, outRate int) (*pcmEncoder, error) {
	res, err := newResampled(inRate, outRate)
	if err != nil {
		return nil, fmt.Errorf("pcm encoder: %w", err)
	}
	return &pcmEncoder{state: state{format: PCM}, w: w, res: res, rate: outRate}, nil
}

func (e *pcmEncoder) Write(pcm []float32) error {
	if err := e.check(); err != nil {
		return err
	}
	e.buf = appendPCM16(e.buf[:0], e.res.write(pcm))
	return e.write(e.w, e.buf)
}

func (e *pcmEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.err != nil {
		return e.err
	}
	e.buf = appendPCM16(e.buf[:0], e.res.flush())
	return e.write(e.w, e.buf)
}

func (e *pcmEncoder) Rate() int { return e.rate }
