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

// NewStreamerWindow is NewStreamer, decoding windows instead of carrying
// state when window is set (the tests compare the two).
func (m *Model) NewStreamerWindow(sc StreamConfig, window bool) (*Streamer, error) {
	return m.newStreamer(sc, window)
}

// Stateful reports whether s decodes with carried state rather than by
// re-decoding a window.
func (s *Streamer) Stateful() bool { return s.st != nil }
