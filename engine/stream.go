package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/text"
	"zonostream/engine/zonos"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// PrefillDone: the prompt is in the caches; decoding starts.
	PrefillDone EventKind = iota
	// FirstFrame: the first complete 9-code frame exists.
	FirstFrame
	// Audio: PCM became final (Event.PCM); the first one is first audio.
	Audio
	// FrameDone: one frame was generated (Event.Frame, Event.Step).
	FrameDone
	// Notice: something the user should know (a clamped knob, a split).
	Notice
	// Done: the utterance finished; Event.Metrics is final.
	Done
	// Failed: the utterance ended with an error (Event.Err); cancellation
	// reports context.Canceled. Nothing follows it.
	Failed
)

func (k EventKind) String() string {
	return [...]string{"prefill-done", "first-frame", "audio", "frame", "notice", "done", "failed"}[k]
}

// Event is one thing that happened during an utterance.
type Event struct {
	Kind    EventKind
	At      time.Duration // since the request was accepted
	PCM     []float32     // Audio: committed 44.1 kHz mono samples
	Frame   int           // FrameDone: frame index in the stream
	Codes   [zonos.NumCodebooks]int32
	Step    time.Duration // FrameDone: wall time since the previous frame (one decode step once streaming)
	Message string        // Notice
	Err     error         // Failed
	Metrics Metrics       // snapshot at the event
}

// Stream is an utterance in progress. Read Events until it is closed: the
// last event is Done or Failed. The producer waits for the reader, so no
// audio is ever dropped; a reader that stops reading should Cancel.
type Stream struct {
	events chan Event
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	codes  [][zonos.NumCodebooks]int32
}

// Events delivers the utterance's events in order and is closed after the
// final Done or Failed.
func (s *Stream) Events() <-chan Event { return s.events }

// Cancel stops generation; Failed with context.Canceled follows.
func (s *Stream) Cancel() { s.cancel() }

// Wait blocks until the utterance ends and returns its error (nil after
// Done). Wait does not consume events: read them concurrently or Cancel.
func (s *Stream) Wait() error { <-s.done; return s.err }

// Codes are all frames generated (valid after the stream ended).
func (s *Stream) Codes() [][zonos.NumCodebooks]int32 { <-s.done; return s.codes }

// Synthesize validates req and starts it. Errors in the request (bad
// language, empty text, knobs out of range) are returned at once; later
// failures arrive as a Failed event.
func (e *Engine) Synthesize(ctx context.Context, req Request) (*Stream, error) {
	start := time.Now()
	if err := req.normalise(); err != nil {
		return nil, err
	}
	if err := req.Knobs.Sampling.Validate(); err != nil {
		return nil, err
	}
	for _, u := range req.Knobs.Unconditional {
		if !e.model.HasConditioner(u) {
			return nil, fmt.Errorf("unconditional %q: the model has no conditioner of that name (e.g. speaker, emotion, vqscore_8, dnsmos_ovrl)", u)
		}
	}
	pieces, err := splitPieces(req)
	if err != nil {
		return nil, err
	}
	langID, err := text.LanguageID(req.Language)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{events: make(chan Event, 64), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer cancel()
		e.mu.Lock()
		defer e.mu.Unlock()
		r := &run{e: e, req: req, s: s, ctx: ctx, mt: newMeter(start), langID: langID}
		r.mt.m.Started = time.Since(start)
		s.err = r.run(pieces)
		close(s.done)
		close(s.events)
	}()
	return s, nil
}

// piece is one part of a long text with its phoneme ids.
type piece struct {
	text string
	ids  []int32
}

// splitPieces runs the text front end, splitting long text under the phoneme
// budget so every piece fits the model's conditioning well. It needs no
// model (Request.Check runs it before one loads).
func splitPieces(req Request) ([]piece, error) {
	parts := text.Split(req.Text, req.PhonemeBudget, text.PhonemeCost(req.Language))
	var out []piece
	for _, p := range parts {
		ids, _, err := text.Prepare(p, req.Language)
		if err != nil {
			if errors.Is(err, text.ErrEmpty) || errors.Is(err, text.ErrNothingToSay) {
				continue // a whitespace or punctuation-only piece between sentences
			}
			return nil, err
		}
		if len(ids) > MaxPartPhonemes+2 { // + BOS and EOS
			return nil, fmt.Errorf("text: %q… gives %d phonemes without a place to split it (limit %d); add spaces or punctuation",
				truncate(p, 40), len(ids)-2, MaxPartPhonemes)
		}
		out = append(out, piece{p, ids})
	}
	if len(out) == 0 {
		_, _, err := text.Prepare(req.Text, req.Language)
		if err == nil {
			err = fmt.Errorf("nothing to say in %q", req.Text)
		}
		return nil, err
	}
	return out, nil
}

// truncate cuts s to at most n runes, for messages.
func truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// holdFirstEmission reports whether utterances on backend b hold for
// their first emission: the decoder pauses once per utterance, after the
// frame that completes the vocoder's first emission, until that first
// audio is committed, queueing no decode step behind it
// (zonos.GenerateOptions Hold), so the first emission runs alone on the
// device.
// Only the first piece of a long text holds. That is where the vocoder has
// a side lane of the same device (compute.Laned, the CUDA backend), whose
// decode steps would otherwise run beside the first emission: on an H200
// (2026-11-30) the first emission took 1.12–1.20 ms alone against
// 2.38–2.45 ms beside them, and request → first sample less the prefill
// 25.7–25.8 against 26.9–27.1 ms. Elsewhere (the CPU backend) decoding
// never waits for the vocoder (TestDecodingDoesNotWaitForVocoder).
func holdFirstEmission(b compute.Backend) bool {
	_, laned := b.(compute.Laned)
	return laned
}

// failGrace is how long a failed utterance waits for its reader to take
// the Failed event before giving up on it.
const failGrace = 2 * time.Second

// run is one utterance: decoding on the engine's goroutine, vocoding on
// the vocoder's (vocode.go). Both send events and update the meters.
type run struct {
	e      *Engine
	req    Request
	s      *Stream
	ctx    context.Context
	mu     sync.Mutex // guards mt
	mt     *meter
	langID int
	frames int
}

func (r *run) send(ev Event) error { return r.sendCtx(r.ctx, ev) }

// sendCtx stamps ev with the meters and delivers it, unless ctx ends first.
func (r *run) sendCtx(ctx context.Context, ev Event) error {
	now := time.Now()
	r.mu.Lock()
	r.mt.update(now)
	ev.At = now.Sub(r.mt.start)
	ev.Metrics = r.mt.m
	r.mu.Unlock()
	select {
	case r.s.events <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// meter runs f on the meters under the lock.
func (r *run) meter(f func(mt *meter)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.mt)
}

func (r *run) run(pieces []piece) (err error) {
	defer func() {
		if err != nil {
			// Deliver the failure even if the context is gone: the reader
			// is still draining events.
			var ev Event
			r.meter(func(mt *meter) {
				mt.update(time.Now())
				ev = Event{Kind: Failed, Err: err, At: time.Since(mt.start), Metrics: mt.m}
			})
			select {
			case r.s.events <- ev:
			case <-time.After(failGrace):
				// The reader has gone; Wait still reports err.
			}
		}
	}()
	// A backend panic (the CUDA allocator's out-of-memory, a failed kernel
	// launch) ends this utterance with Failed instead of the process; the
	// next utterance builds its state afresh.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine: the %s backend failed during generation: %v", r.e.backend.Name(), p)
		}
	}()
	sc := dac.StreamConfig{FirstChunk: r.req.FirstChunk, Chunk: r.req.Chunk}
	streamer, err := r.e.codec.NewStreamer(sc)
	if err != nil {
		return err
	}
	voc := r.startVocoder(streamer)
	defer voc.stop() // runs before the Failed event above is sent
	if len(pieces) > 1 {
		if err := r.send(Event{Kind: Notice, Message: fmt.Sprintf("long text: speaking it in %d parts", len(pieces))}); err != nil {
			return err
		}
	}
	maxFrames := int(math.Ceil(r.req.MaxSeconds * SampleRate / 512))
	if r.req.FixedFrames > 0 {
		maxFrames = r.req.FixedFrames
	}
	for i, p := range pieces {
		in := r.req.inputs(p.ids, r.langID, r.e.model.HasConditioner)
		o := zonos.GenerateOptions{
			MaxNewTokens: maxFrames,
			CFGScale:     r.req.Knobs.CFGScale,
			Sampling:     r.req.Knobs.Sampling,
			Seed:         r.req.Seed + uint64(i),
			ForbidEOS:    r.req.FixedFrames > 0,
		}
		if i == 0 {
			o.AudioPrefix = r.req.AudioPrefix
		}
		if i == 0 {
			o.OnConditioned = func() { r.meter(func(mt *meter) { mt.m.Conditioned = time.Since(mt.start) }) }
		}
		if i == 0 && holdFirstEmission(r.e.backend) {
			// Every frame generated goes to the vocoder, prefix frames
			// too, so its first emission follows the push of frame
			// FirstEmissionFrames−1 whatever the prefix.
			o.HoldAfterFrames = r.e.codec.FirstEmissionFrames(sc)
			o.Hold = voc.awaitFirstAudio
		}
		o.OnPrefill = func(d time.Duration) error {
			if i > 0 {
				return nil // later pieces of a long text: prefill is mid-stream
			}
			r.meter(func(mt *meter) { mt.m.Prefill, mt.m.PrefillCompute = time.Since(mt.start), d })
			return r.send(Event{Kind: PrefillDone})
		}
		o.OnStep = func(_ int, d time.Duration) error {
			r.meter(func(mt *meter) { mt.step(d) })
			return nil
		}
		lastFrame := time.Now()
		res, err := r.e.model.Generate(r.ctx, in, o, func(f zonos.Frame) error {
			now := time.Now()
			step := now.Sub(lastFrame)
			lastFrame = now
			r.frames++
			r.meter(func(mt *meter) {
				mt.m.Frames = r.frames
				if r.frames == 1 {
					mt.m.FirstFrame = now.Sub(mt.start)
				}
			})
			if r.frames == 1 {
				if err := r.send(Event{Kind: FirstFrame}); err != nil {
					return err
				}
			}
			// Queued before the event goes out, so the vocoder starts on
			// it while the reader takes the event.
			if err := voc.push(f.Codes); err != nil {
				return err
			}
			return r.send(Event{Kind: FrameDone, Frame: r.frames - 1, Codes: f.Codes, Step: step})
		})
		if res != nil {
			r.s.codes = append(r.s.codes, res.Codes...)
			for _, n := range res.Notes {
				if err := r.send(Event{Kind: Notice, Message: n}); err != nil {
					return err
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if err := voc.finish(); err != nil {
		return err
	}
	return r.send(Event{Kind: Done})
}

// audio commits pcm to the meters and sends it (vocoder goroutine).
func (r *run) audio(ctx context.Context, pcm []float32) error {
	if len(pcm) == 0 {
		return nil
	}
	r.meter(func(mt *meter) { mt.commit(len(pcm), time.Now()) })
	return r.sendCtx(ctx, Event{Kind: Audio, PCM: pcm})
}
