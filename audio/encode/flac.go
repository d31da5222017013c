package encode

import (
	"bytes"
	"fmt"
	"io"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"

	"zonostream/audio"
)

// flacBlock is the number of samples per FLAC frame: libFLAC's default
// block size, within the streamable subset's limit of 4608 at rates up to
// 48 kHz, and 93 ms at 44.1 kHz, the most the encoder holds back.
const flacBlock = 4096

// flacEncoder writes 16-bit mono FLAC through mewkiz/flac, one frame per
// flacBlock samples. Only Encoder.WriteFrame is used: the library's Close
// would rewrite STREAMINFO by seeking, which a stream cannot do, so
// STREAMINFO keeps "unknown" for the length, the frame sizes and the MD5.
type flacEncoder struct {
	state
	w     io.Writer
	enc   *flac.Encoder
	out   bytes.Buffer // enc writes here; each frame then goes to w in one Write
	res   resampled
	rate  int
	block []int32 // samples not yet in a frame, fewer than flacBlock
}

func newFLAC(w io.Writer, inRate, outRate int) (*flacEncoder, error) {
	res, err := newResampled(inRate, outRate)
	if err != nil {
		return nil, fmt.Errorf("flac encoder: %w", err)
	}
	e := &flacEncoder{state: state{format: FLAC}, w: w, res: res, rate: outRate, block: make([]int32, 0, flacBlock)}
	info := &meta.StreamInfo{
		BlockSizeMin:  flacBlock, // the last frame may be shorter, as FLAC allows
		BlockSizeMax:  flacBlock,
		SampleRate:    uint32(outRate),
		NChannels:     1,
		BitsPerSample: 16,
	}
	if e.enc, err = flac.NewEncoder(&e.out, info); err != nil {
		return nil, fmt.Errorf("flac encoder: %w", err)
	}
	if err := e.flushOut(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *flacEncoder) Write(pcm []float32) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := e.add(e.res.write(pcm)); err != nil {
		return err
	}
	return e.flushOut()
}

// add quantises samples into the pending block, encoding each block that
// fills.
func (e *flacEncoder) add(samples []float32) error {
	for _, s := range samples {
		e.block = append(e.block, int32(audio.PCM16(s)))
		if len(e.block) == flacBlock {
			if err := e.frame(); err != nil {
				return err
			}
		}
	}
	return nil
}

// frame encodes the pending block as one frame into e.out.
func (e *flacEncoder) frame() error {
	f := &frame.Frame{
		Header: frame.Header{
			HasFixedBlockSize: true,
			BlockSize:         uint16(len(e.block)),
			SampleRate:        flacHeaderRate(e.rate),
			Channels:          frame.ChannelsMono,
			BitsPerSample:     16,
		},
		// Verbatim lets the library pick the cheapest of its constant,
		// fixed-predictor and verbatim codings.
		Subframes: []*frame.Subframe{{
			SubHeader: frame.SubHeader{Pred: frame.PredVerbatim},
			Samples:   e.block,
			NSamples:  len(e.block),
		}},
	}
	if err := e.enc.WriteFrame(f); err != nil {
		return e.fail(fmt.Errorf("frame of %d samples: %w", len(e.block), err))
	}
	e.block = e.block[:0]
	return nil
}

// flushOut writes what the library has encoded to w.
func (e *flacEncoder) flushOut() error {
	err := e.write(e.w, e.out.Bytes())
	e.out.Reset()
	return err
}

// flacHeaderRate is the rate a frame header states: the rate itself where
// the header can code it, as the streamable subset asks, else 0 ("see
// STREAMINFO").
func flacHeaderRate(rate int) uint32 {
	if rate <= 65535 || (rate <= 655350 && rate%10 == 0) {
		return uint32(rate)
	}
	return 0
}

func (e *flacEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.err != nil {
		return e.err
	}
	if err := e.add(e.res.flush()); err != nil {
		return err
	}
	if len(e.block) > 0 { // the last frame, shorter
		if err := e.frame(); err != nil {
			return err
		}
	}
	return e.flushOut()
}

func (e *flacEncoder) Rate() int { return e.rate }
