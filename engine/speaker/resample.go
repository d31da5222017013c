package speaker

import (
	"context"
	"fmt"
	"sync"
)

// The files of Zyphra/Zonos-v0.1-speaker-embedding.
const (
	WeightsFile = "ResNet293_SimAM_ASP_base.pt"
	LDAFile     = "ResNet293_SimAM_ASP_base_LDA-128.pt"
)

// Resampler converts mono samples from one fixed rate to 16 kHz. The
// reference uses torchaudio's default sinc resampler; audio.Resampler
// reproduces it and satisfies this interface.
type Resampler interface {
	Resample(src []float32) []float32
}

var (
	resamplerMu  sync.RWMutex
	newResampler func(from, to int) (Resampler, error)
)

// SetResampler installs the constructor used by EmbedAt and by the wav16k
// conformance check. engine/speaker does not import the audio package
// (which links the audio device library); programs install it once:
//
//	speaker.SetResampler(func(from, to int) (speaker.Resampler, error) {
//		return audio.NewResampler(from, to)
//	})
func SetResampler(mk func(from, to int) (Resampler, error)) {
	resamplerMu.Lock()
	newResampler = mk
	resamplerMu.Unlock()
}

// ResampleTo16k converts mono samples at rate to 16 kHz with the installed
// resampler (a copy when rate is already 16 kHz).
func ResampleTo16k(samples []float32, rate int) ([]float32, error) {
	if rate == SampleRate {
		return append([]float32(nil), samples...), nil
	}
	resamplerMu.RLock()
	mk := newResampler
	resamplerMu.RUnlock()
	if mk == nil {
		return nil, fmt.Errorf("speaker: no resampler installed for %d Hz → 16 kHz (call speaker.SetResampler with audio.NewResampler)", rate)
	}
	r, err := mk(rate, SampleRate)
	if err != nil {
		return nil, fmt.Errorf("speaker: %w", err)
	}
	return r.Resample(samples), nil
}

// EmbedAt is Embed for mono samples at any rate: they are resampled to
// 16 kHz first, as SpeakerEmbedding.prepare_input does.
func (m *Model) EmbedAt(ctx context.Context, samples []float32, rate int) ([]float32, error) {
	s16, err := ResampleTo16k(samples, rate)
	if err != nil {
		return nil, err
	}
	return m.Embed(ctx, s16)
}
