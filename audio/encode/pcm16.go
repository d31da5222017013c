package encode

import (
	"encoding/binary"
	"fmt"

	"zonostream/audio"
)

// resampled is the front of the 16-bit formats: it resamples the input to
// the output rate with torchaudio's filter (audio.ResampleStream), so the
// stream carries exactly audio.Resample of the whole utterance, at most a
// few input samples behind it.
type resampled struct {
	rs  *audio.ResampleStream
	out []float32 // reused output buffer
}

func newResampled(inRate, outRate int) (resampled, error) {
	r, err := audio.NewResampler(inRate, outRate)
	if err != nil {
		return resampled{}, fmt.Errorf("output rate: %w", err)
	}
	return resampled{rs: r.Stream()}, nil
}

// write returns the output samples that pcm completes, valid until the
// next call.
func (r *resampled) write(pcm []float32) []float32 {
	r.out = r.rs.Write(r.out[:0], pcm)
	return r.out
}

// flush returns the last output samples.
func (r *resampled) flush() []float32 {
	r.out = r.rs.Flush(r.out[:0])
	return r.out
}

// appendPCM16 appends samples as signed 16-bit little-endian, quantised as
// WAV files are (audio.PCM16).
func appendPCM16(dst []byte, samples []float32) []byte {
	for _, s := range samples {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(audio.PCM16(s)))
	}
	return dst
}
