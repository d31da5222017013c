package sample

// Sampler draws one token per codebook from a step's logits.
type Sampler struct {
	Params Params
	Noise  Noise

	probs, q []float32
	n        int // values in probs from the last call (0: greedy or none)
}

// New returns a sampler; noise may be nil for greedy parameters.
func New(p Params, noise Noise) *Sampler { return &Sampler{Params: p, Noise: noise} }

// Sample applies every stage to logits (C rows of V, modified in place) and
// returns C tokens. history[c] holds codebook c's generated tokens (the
// reference's generated_tokens); only its last RepetitionWindow entries
// are used, and nil history skips the penalty (as at prefill).
func (s *Sampler) Sample(logits []float32, V int, history [][]int32) []int32 {
	p := s.Params
	if p.RepetitionPenalty != 1 && history != nil {
		win := make([][]int32, len(history))
		for c, h := range history {
			if w := p.RepetitionWindow; w > 0 && len(h) > w { // W = 0 is the whole history, as h[..., -0:]
				h = h[len(h)-w:]
			}
			win[c] = h
		}
		RepetitionPenalty(logits, V, win, p.RepetitionPenalty)
	}
	if p.Temperature <= 0 {
		s.n = 0
		return Argmax(logits, V)
	}
	if cap(s.probs) < len(logits) {
		s.probs = make([]float32, len(logits))
		s.q = make([]float32, len(logits))
	}
	s.n = len(logits)
	probs, q := s.probs[:len(logits)], s.q[:len(logits)]
	Softmax(probs, logits, V, p.Temperature)
	if p.Linear > 0 {
		Unified(probs, V, p.Linear, p.Conf, p.Quad)
	}
	if p.TopP > 0 {
		TopP(probs, V, p.TopP)
	}
	if p.TopK > 0 {
		TopK(probs, V, p.TopK)
	}
	if p.MinP > 0 {
		MinP(probs, V, p.MinP)
	}
	s.Noise.Exp(q)
	return Draw(probs, q, V)
}

// Probs is the distribution the last Sample call drew from: C rows of V
// after every stage (temperature, unified, top-p, top-k, min-p), so a
// caller can see how sure each draw was or compare it with another
// sampler's. It is nil after a greedy call and the sampler's own buffer,
// overwritten by the next call.
func (s *Sampler) Probs() []float32 {
	if s.n == 0 {
		return nil
	}
	return s.probs[:s.n]
}
