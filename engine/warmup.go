package engine

import (
	"context"
	"errors"
	"fmt"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/zonos"
)

// warmupText is the throwaway utterance's text: short, with sound in every
// espeak-ng voice.
const warmupText = "Hello."

// fullWarmup reports whether warming up runs a throwaway utterance on
// backend b. Where the decode step is recorded as a device graph
// (compute.GraphOps: the CUDA backend) the first utterance carries
// one-time costs — recording the step, the allocator's first growth, the
// vocoder's first kernels — that a throwaway utterance of tens of
// milliseconds takes instead. On the CPU backend it would cost seconds and
// save little. A variable so tests can take the full path on the CPU.
var fullWarmup = func(b compute.Backend) bool {
	_, ok := b.(compute.GraphOps)
	return ok
}

// Warmup readies the engine so that its first utterance's time to first
// audio is the steady one. It runs the text front end in req's language
// (the first espeak-ng call loads its data: about 11 ms) and, where it pays
// (fullWarmup), a throwaway utterance with req's knobs and length limit,
// stopped at its first audio: its decode state, with the step recorded for
// those knobs, goes back to the model's state pool for the next utterance.
// Nothing is played or returned, and later utterances' output does not
// depend on it (each seeds its own sampler and starts from a cleared
// state). Once per engine: later calls return at once. Cancelling ctx
// stops it; the engine is then warmed by the next call.
func (e *Engine) Warmup(ctx context.Context, req Request) error {
	e.warmMu.Lock()
	defer e.warmMu.Unlock()
	if e.warmed {
		return nil
	}
	w := req
	w.Text, w.Feed, w.AudioPrefix, w.FixedFrames = warmupText, nil, nil, 0
	if !fullWarmup(e.backend) {
		if err := w.normalise(); err != nil {
			return err
		}
		if _, _, err := w.firstPiece(ctx); err != nil {
			return fmt.Errorf("engine warm-up: %w", err)
		}
		e.warmed = true
		return nil
	}
	if _, err := e.SpeakToFirstAudio(ctx, w); err != nil {
		return fmt.Errorf("engine warm-up: %w", err)
	}
	if err := w.normalise(); err != nil {
		return err
	}
	if err := e.sched.Prepare(zonos.GenerateOptions{Sampling: w.Knobs.Sampling}); err != nil {
		return fmt.Errorf("engine warm-up: recording the batch's steps: %w", err)
	}
	if err := e.warmBatch(ctx, w); err != nil {
		return fmt.Errorf("engine warm-up of the batch: %w", err)
	}
	// The vocoder's first push, recorded for req's first chunk: streams
	// replay it instead of launching its kernels one by one. A recording
	// that fails leaves them pushing op by op, as before.
	_ = e.codec.RecordFirstPush(dac.StreamConfig{FirstChunk: w.FirstChunk, Chunk: w.Chunk})
	e.warmed = true
	return nil
}

// warmBatch speaks w twice at once, each to its first audio: the second
// arrives while the first decodes alone, so it joins the scheduler's
// batch (whose steps Prepare recorded) — first-use costs of a join that
// the first stream to share the device would otherwise pay.
func (e *Engine) warmBatch(ctx context.Context, w Request) error {
	first, err := e.Synthesize(ctx, w)
	if err != nil {
		return err
	}
	defer first.Cancel()
	for ev := range first.Events() {
		if ev.Kind == PrefillDone || ev.Kind == Done || ev.Kind == Failed {
			break
		}
	}
	_, err = e.SpeakToFirstAudio(ctx, w)
	first.Cancel()
	for range first.Events() {
	}
	if werr := first.Wait(); werr != nil && !errors.Is(werr, context.Canceled) && err == nil {
		err = werr
	}
	return err
}

// SpeakToFirstAudio runs req until its first committed audio has been
// through every stage, stops it there, and returns the utterance's meters
// (TTFA among them; zero when it ended without audio). Nothing is played.
// Warmup's throwaway utterance, and zonos bench's cold first utterance.
func (e *Engine) SpeakToFirstAudio(ctx context.Context, req Request) (Metrics, error) {
	s, err := e.Synthesize(ctx, req)
	if err != nil {
		return Metrics{}, err
	}
	var final Event
	for ev := range s.Events() {
		switch ev.Kind {
		case Audio:
			s.Cancel()
		case Done, Failed:
			final = ev
		}
	}
	if err := ctx.Err(); err != nil {
		return Metrics{}, err
	}
	if err := s.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return Metrics{}, err
	}
	return final.Metrics, nil
}
