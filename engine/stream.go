package engine

import (
	"context"
	"fmt"
	"io"
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
	// PartStart: a part of the text begins (Event.Part), before its first
	// frame. A short text is one part; a long one is spoken as several,
	// each continuing from the audio before it (LongForm).
	PartStart
)

func (k EventKind) String() string {
	return [...]string{"prefill-done", "first-frame", "audio", "frame", "notice", "done", "failed", "part"}[k]
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
	Part    Part          // PartStart
	Metrics Metrics       // snapshot at the event
}

// Part is one part of an utterance's text as it is spoken. The stream's
// committed PCM sample n belongs to frame n/512, so a player that knows
// how many samples it has played knows which part is heard: the last one
// whose FirstSample is at most that.
type Part struct {
	Index      int    // 0, 1, 2, … in the stream
	Start, End int    // byte offsets of Text in the whole text (Request.Text, or all of a feed)
	Text       string // the part's text
	// FirstFrame is the stream's index of the part's first frame, and
	// FirstSample = 512·FirstFrame the first sample of its audio.
	FirstFrame  int
	FirstSample int64
	// ContextFrames is how many frames of earlier audio it continues from.
	ContextFrames int
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

// Codes are all frames spoken, in order (valid after the stream ended;
// nil with Request.DiscardCodes). Vocoding them in one piece gives exactly
// the stream's audio.
func (s *Stream) Codes() [][zonos.NumCodebooks]int32 { <-s.done; return s.codes }

// Synthesize validates req and starts it. Errors in the request (bad
// language, empty text, knobs out of range, a first part the front end
// refuses) are returned at once; later failures, including a later part
// of a long text the front end refuses, arrive as a Failed event after
// everything before it was spoken.
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
	langID, err := text.LanguageID(req.Language)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cut, first, err := req.firstPiece(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Stream{events: make(chan Event, eventQueue), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer cancel()
		r := &run{e: e, req: req, s: s, ctx: ctx, mt: newMeter(start), langID: langID}
		r.mt.m.Started = time.Since(start)
		s.err = r.run(cut, first)
		close(s.done)
		close(s.events)
	}()
	return s, nil
}

// eventQueue is how many events wait for the reader before the utterance
// waits for it in turn: about 10 s of frames. An utterance that waits
// holds up the others in its batch (zonos.Scheduler), so a reader that
// may stop for longer (a network client) reads into a buffer of its own
// and ends a reader that falls too far behind (server/pump.go).
const eventQueue = 1024

// firstPiece starts cutting the request's text. For a whole text it cuts
// the first piece now, so a text the front end refuses is an error of the
// request; a feed's first piece is awaited by the utterance (first.p is
// empty).
func (r Request) firstPiece(ctx context.Context) (*cutter, pieceOrErr, error) {
	feed := r.Feed
	if feed == nil {
		feed = textFeed(r.Text)
	}
	c := newCutter(feed, r.Language, r.PhonemeBudget)
	if r.Feed != nil {
		return c, pieceOrErr{}, nil
	}
	p, err := c.next(ctx)
	if err == io.EOF {
		_, _, err = text.Prepare(r.Text, r.Language)
		if err == nil {
			err = fmt.Errorf("nothing to say in %q", truncate(r.Text, 40))
		}
	}
	if err != nil {
		return nil, pieceOrErr{}, err
	}
	return c, pieceOrErr{p: p}, nil
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
	frames int // frames spoken so far (given to the vocoder)
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

func (r *run) run(cut *cutter, first pieceOrErr) (err error) {
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
	maxFrames := int(math.Ceil(r.req.MaxSeconds * SampleRate / 512))
	if r.req.FixedFrames > 0 {
		maxFrames = r.req.FixedFrames
	}
	// The cutter runs ahead on its own goroutine, so the next part's text
	// front end is done while this one is generated; what it has cut
	// waits in pending until the loop takes it.
	ahead := cut.ahead(r.ctx)
	var pending *pieceOrErr
	if r.req.Feed == nil {
		pending = &first
	}
	take := func(wait bool) *pieceOrErr {
		if pending == nil {
			if wait {
				select {
				case v, ok := <-ahead:
					if !ok { // the cutter stopped: cancelled, or past its end
						v = pieceOrErr{err: r.ctx.Err()}
						if v.err == nil {
							v.err = io.EOF
						}
					}
					pending = &v
				case <-r.ctx.Done():
					v := pieceOrErr{err: r.ctx.Err()}
					pending = &v
				}
			} else {
				select {
				case v, ok := <-ahead:
					if ok {
						pending = &v
					}
				default:
				}
			}
		}
		return pending
	}
	spoken := spokenContext{cfg: r.req.LongForm}
	var lastSpoken time.Time // when the previous part's last frame was spoken
	for i := 0; ; i++ {
		next := take(true)
		pending = nil
		if next.err == io.EOF {
			if i == 0 {
				return fmt.Errorf("nothing to say in the text given")
			}
			break
		}
		if next.err != nil {
			if r.ctx.Err() == nil && r.frames > 0 {
				// The text failed (the feed, or the front end on a later
				// part): what was generated before it is still committed.
				if err := voc.finish(); err != nil {
					return err
				}
			}
			return next.err
		}
		p := next.p
		if i == 0 && r.req.Feed != nil {
			// A fed utterance's clock starts when its first sentence is
			// complete: the time before is the writer's, not ours.
			r.meter(func(mt *meter) { mt.start = p.ready })
		}
		if i == 1 {
			msg := "long text: speaking it part by part, each continuing the voice of the audio before it"
			if r.req.LongForm.ContextParts == 0 && r.req.LongForm.NoAnchor {
				msg = "long text: speaking it part by part, each part afresh (no context)"
			}
			if err := r.send(Event{Kind: Notice, Message: msg}); err != nil {
				return err
			}
		}
		// Later parts continue from the audio already spoken; the first
		// from the request's own audio prefix, which it speaks (as
		// generate() returns it).
		prefix, ids, _ := spoken.prompt(p)
		contextFrames := len(prefix)
		if i == 0 {
			prefix, contextFrames = r.req.AudioPrefix, 0
		}
		part := Part{Index: i, Start: p.start, End: p.end, Text: p.text, FirstFrame: r.frames,
			FirstSample: int64(r.frames) * 512, ContextFrames: contextFrames}
		r.meter(func(mt *meter) { mt.m.Parts = i + 1 })
		if err := r.send(Event{Kind: PartStart, Part: part}); err != nil {
			return err
		}
		in := r.req.inputs(ids, r.langID, r.e.model.HasConditioner)
		o := zonos.GenerateOptions{
			MaxNewTokens: maxFrames,
			CFGScale:     r.req.Knobs.CFGScale,
			Sampling:     r.req.Knobs.Sampling,
			Seed:         r.req.Seed + uint64(i),
			ForbidEOS:    r.req.FixedFrames > 0,
			AudioPrefix:  prefix,
			// Ask at EOS whether another part follows (the cutter may know
			// by then): only a part that another continues from is trimmed.
			TailTrim: func() int {
				// Once all the text is in, the cutter is at most one front
				// end call from knowing: wait for it. A feed still open
				// may yet bring more, so the part is trimmed.
				if v := take(cut.feed.isEnded()); v != nil && v.err != nil {
					return 0 // the end of the text, or an error: no part follows
				}
				return r.req.LongForm.TrimFrames
			},
		}
		if i == 0 {
			o.OnConditioned = func() { r.meter(func(mt *meter) { mt.m.Conditioned = time.Since(mt.start) }) }
		}
		if i == 0 && holdFirstEmission(r.e.backend) {
			// Every frame of the first part goes to the vocoder, prefix
			// frames too, so its first emission follows the push of frame
			// FirstEmissionFrames−1 whatever the prefix.
			o.HoldAfterFrames = r.e.codec.FirstEmissionFrames(sc)
			o.Hold = voc.awaitFirstAudio
		}
		o.OnPrefill = func(d time.Duration) error {
			if i > 0 {
				return nil // later parts: prefill is mid-stream
			}
			r.meter(func(mt *meter) { mt.m.Prefill, mt.m.PrefillCompute = time.Since(mt.start), d })
			return r.send(Event{Kind: PrefillDone})
		}
		o.OnStep = func(_ int, d time.Duration) error {
			r.meter(func(mt *meter) { mt.step(d) })
			return nil
		}
		var codes [][zonos.NumCodebooks]int32 // this part's spoken frames
		lastFrame := time.Now()
		res, err := r.e.generate(r.ctx, in, o, func(f zonos.Frame) error {
			if f.Prefix && i > 0 {
				return nil // earlier audio, already spoken
			}
			now := time.Now()
			step := now.Sub(lastFrame)
			lastFrame = now
			if len(codes) == 0 && i > 0 {
				from := lastSpoken
				if p.ready.After(from) {
					from = p.ready // the text came later than the audio before it ended
				}
				r.meter(func(mt *meter) { mt.boundary(now.Sub(from)) })
			}
			codes = append(codes, f.Codes)
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
		lastSpoken = lastFrame
		if !r.req.DiscardCodes {
			r.s.codes = append(r.s.codes, codes...)
		}
		if res != nil {
			for _, n := range res.Notes {
				if i > 0 {
					break // the same knobs: noticed at the first part
				}
				if err := r.send(Event{Kind: Notice, Message: n}); err != nil {
					return err
				}
			}
		}
		if err != nil {
			if r.ctx.Err() == nil && r.frames > 0 {
				// The frames generated before the failure are still
				// committed; the failure, not a vocoder's, is reported.
				_ = voc.finish()
			}
			return err
		}
		spoken.add(spokenPart{index: i, phonemes: p.phonemes, codes: codes})
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
