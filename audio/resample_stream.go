package audio

// ResampleStream converts audio that arrives in pieces, for encoders that
// send speech while it is generated. Its output over all the pieces and
// Flush is exactly Resample of the pieces joined, whatever their sizes:
// each output sample is computed, with the same sums, as soon as the last
// input sample of its filter window has arrived (about Width input samples
// after its own time, 0.3 ms for 44.1 → 24 kHz), and the samples whose
// window reaches past the end are given by Flush with torchaudio's zero
// padding. A ResampleStream is used by one goroutine at a time.
type ResampleStream struct {
	r        *Resampler
	in       []float32 // input samples from index off to n
	off, n   int
	next     int // index of the next output sample
	minStart int // smallest phaseStart: bounds the input later outputs use
}

// Stream starts converting a new input with r's rates.
func (r *Resampler) Stream() *ResampleStream {
	s := &ResampleStream{r: r}
	if r.from != r.to {
		s.minStart = r.phaseStart[0]
		for _, p := range r.phaseStart {
			s.minStart = min(s.minStart, p)
		}
	}
	return s
}

// Write takes the next piece of input and appends the output samples it
// completes to dst, returning the extended slice.
func (s *ResampleStream) Write(dst, src []float32) []float32 {
	r := s.r
	if r.from == r.to {
		return append(dst, src...)
	}
	s.in = append(s.in, src...)
	s.n += len(src)
	// OutLen never decreases as input grows, so every output below it now
	// belongs to the final output too.
	for limit := r.OutLen(s.n); s.next < limit && r.windowEnd(s.next) <= s.n; s.next++ {
		dst = append(dst, r.convolve(s.next, s.in, s.off))
	}
	// Outputs from next on use no input before block(next)·orig +
	// minStart − width: drop what lies before it.
	if drop := min((s.next/r.new)*r.orig+s.minStart-r.width-s.off, len(s.in)); drop > 0 {
		s.in = s.in[:copy(s.in, s.in[drop:])]
		s.off += drop
	}
	return dst
}

// Flush appends the rest of the output to dst: the samples whose windows
// reach past the end of the input. The stream is then ready for a new
// input.
func (s *ResampleStream) Flush(dst []float32) []float32 {
	r := s.r
	if r.from != r.to {
		for limit := r.OutLen(s.n); s.next < limit; s.next++ {
			dst = append(dst, r.convolve(s.next, s.in, s.off))
		}
	}
	s.in, s.off, s.n, s.next = s.in[:0], 0, 0, 0
	return dst
}
