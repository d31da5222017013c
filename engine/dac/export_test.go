package dac

// DecodeLatent runs the decoder on a host latent [hidden][T], as Decode
// does after the codebooks.
func (m *Model) DecodeLatent(latent []float32, T int) []float32 {
	l := m.be.FromF32(latent, 1, m.cfg.HiddenSize, T)
	a := m.decoder.forward(m.be, l)
	defer m.be.Free(a)
	m.be.Free(l)
	return m.be.ReadF32(a)
}

// SetWindowStreaming makes the streamers created next window streamers
// (on) or stateful ones, and returns the previous setting.
func SetWindowStreaming(on bool) (was bool) {
	was, windowStreaming = windowStreaming, on
	return was
}

// Stateful reports whether s decodes with carried state rather than by
// re-decoding a window.
func (s *Streamer) Stateful() bool { return s.st != nil }
