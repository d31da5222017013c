package loadtest

import (
	"context"
	"fmt"
)

// verify fetches every complete stream of r again alone, one after
// another, with the same seed and request, and compares the PCM byte for
// byte: a stream spoken among others must be the one spoken alone.
func verify(ctx context.Context, o Options, c *client, r *Result) error {
	o.Progress(fmt.Sprintf("verifying: each of the %d complete streams again, alone", r.Complete))
	for i := range r.PerStream {
		s := &r.PerStream[i]
		loaded := s.audio
		s.audio = nil
		if !s.complete() {
			continue
		}
		alone, err := c.stream(ctx, s.Index, true)
		if err != nil {
			return fmt.Errorf("verifying stream %d alone: %w", s.Index, err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("loadtest: interrupted while verifying: %w", err)
		}
		r.Verified++
		if !alone.complete() {
			s.Mismatch = fmt.Sprintf("alone it did not complete: %s (%s)", alone.Error, alone.Message)
		} else {
			s.Mismatch = compareAudio(loaded, alone.audio)
		}
		if s.Mismatch != "" {
			r.Mismatches++
		}
	}
	return nil
}

// compareAudio says how loaded differs from alone ("" when they are
// equal), naming the first sample that differs.
func compareAudio(loaded, alone []byte) string {
	n := min(len(loaded), len(alone))
	for i := 0; i < n; i++ {
		if loaded[i] != alone[i] {
			return fmt.Sprintf("differs from sample %d (byte %d) on: %d bytes under load, %d alone", i/2, i, len(loaded), len(alone))
		}
	}
	if len(loaded) != len(alone) {
		return fmt.Sprintf("%d bytes under load, %d alone (equal for the first %d)", len(loaded), len(alone), n)
	}
	return ""
}
