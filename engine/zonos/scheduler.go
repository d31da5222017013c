package zonos

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"zonostream/engine/compute"
)

// Scheduler runs the generate loops of many utterances on one model at
// once (continuous batching). Each utterance's loop — the codebook delay,
// the EOS rule, the audio prefix, its frames to onFrame — runs on its
// caller's goroutine as Generate's does; its model work goes to the
// scheduler's goroutine, which owns the device:
//
//   - An utterance that arrives while nothing else runs decodes alone, as
//     Generate would (its own state; on the GPU the recorded single step
//     with device-side token feedback), so a lone stream keeps the single
//     utterance's latency.
//   - An utterance that arrives while others run joins a free slot of one
//     Batch of Slots utterances between two steps (its prompt prefilled
//     on a state of its own, then copied in) and leaves it the moment it
//     ends or is cancelled. Every batch step feeds every occupied slot.
//   - The utterance decoding alone moves into the batch (Batch.Adopt) as
//     soon as others share the device, so the device runs one step for
//     all of them rather than a lone step and a batch step each round.
//   - The loop takes at most one arrival between steps, so a prefill
//     delays the running utterances by one prefill, never more; arrivals
//     wait in order of arrival (first come, first served) while every
//     place is taken.
//
// Each utterance keeps its own knobs, seed, sampler state and position,
// and draws from its logits exactly what it would draw alone (Batch). On
// a backend whose rows are computed with the same arithmetic whatever the
// batch (the CPU backend), its codes are therefore those Generate gives.
//
// A batch step waits until every occupied slot has asked for it: an
// onFrame that blocks holds up every utterance in the batch, so callers
// hand frames on (the engine queues them for its vocoder and its reader).
type Scheduler struct {
	m      *Model
	slots  int
	maxLen int
	in     chan *request
	quit   chan struct{}
	done   chan struct{}

	stats stats // read by Stats from any goroutine

	// Owned by the loop goroutine.
	batch   *Batch
	inBatch []*member // per slot; nil: free
	solo    *member
	waiting []*request // joins not yet admitted, in order of arrival
}

// NewScheduler starts a scheduler of at most slots utterances at once (0:
// one at a time, each alone): a batch of slots, each of at most maxLen
// positions, with the one decoding alone counted among them — it moves
// into the batch when another arrives, so a full scheduler steps one
// batch, never a batch and a lone utterance beside it. An utterance that
// needs more positions decodes alone, when that place is free. Close
// stops it.
func (m *Model) NewScheduler(slots, maxLen int) (*Scheduler, error) {
	if slots < 0 || slots > MaxBatch {
		return nil, fmt.Errorf("scheduler of %d batch slots; 0 (one utterance at a time) to %d", slots, MaxBatch)
	}
	if maxLen < 2 {
		return nil, fmt.Errorf("scheduler of %d positions per utterance", maxLen)
	}
	s := &Scheduler{m: m, slots: slots, maxLen: maxLen, in: make(chan *request, 4*slots+4),
		quit: make(chan struct{}), done: make(chan struct{}), inBatch: make([]*member, slots)}
	go s.loop()
	return s, nil
}

// Capacity is how many utterances decode at once: the batch's slots (the
// one decoding alone among them), or 1 without a batch.
func (s *Scheduler) Capacity() int { return max(1, s.slots) }

// SchedulerStats are a scheduler's counts at one moment.
type SchedulerStats struct {
	Active  int // utterances decoding (alone or in the batch)
	Waiting int // utterances waiting for a place
	// Alone and Batched count the utterances that have started alone and
	// in the batch since the scheduler started; Adopted those of the
	// Alone that moved into the batch.
	Alone, Batched, Adopted int
}

type stats struct {
	active, waiting, alone, batched, adopted atomic.Int64
}

// Stats are the scheduler's counts now.
func (s *Scheduler) Stats() SchedulerStats {
	return SchedulerStats{Active: int(s.stats.active.Load()), Waiting: int(s.stats.waiting.Load()),
		Alone: int(s.stats.alone.Load()), Batched: int(s.stats.batched.Load()), Adopted: int(s.stats.adopted.Load())}
}

// Prepare makes the batch's state and records its steps for the
// repetition window of o's sampler while nothing runs, so the first
// utterances to share the device pay neither (engine warm-up).
func (s *Scheduler) Prepare(o GenerateOptions) error {
	if s.slots == 0 {
		return nil
	}
	mb := &member{s: s, ctx: context.Background(), o: o, reply: make(chan reply, 1), slot: -1}
	rp := mb.call(&request{kind: askPrepare})
	return rp.err
}

// errClosed: the scheduler was closed while an utterance waited for it.
var errClosed = errors.New("the model's scheduler is closed")

// Close stops the scheduler: utterances still running or waiting fail
// with an error, and the device memory of its states is freed.
func (s *Scheduler) Close() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}

// Generate is Model.Generate for one utterance among the scheduler's: it
// blocks until the utterance ends, with the same results, callbacks and
// errors. Hold (GenerateOptions) applies only to an utterance that
// decodes alone: in a batch it would hold up the others.
func (s *Scheduler) Generate(ctx context.Context, in Inputs, o GenerateOptions, onFrame func(Frame) error) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	mb := &member{s: s, ctx: ctx, in: in, o: o, reply: make(chan reply, 1), slot: -1}
	defer mb.leave()
	if o.Hold != nil {
		hold := o.Hold
		o.Hold = func() error {
			if mb.alone.Load() {
				return hold()
			}
			return nil
		}
	}
	prefix, notes, err := mb.condition()
	if err != nil {
		return nil, err
	}
	mb.prefix, mb.notes = prefix, notes
	if o.OnConditioned != nil {
		o.OnConditioned()
	}
	res, err := runTokens(ctx, mb, o, onFrame)
	if res != nil {
		res.Notes = mb.notes
	}
	return res, err
}

// requestKind is what a member asks of the loop.
type requestKind int

const (
	askCondition requestKind = iota // the prompt's conditioning prefix
	askJoin                         // prefill and take a place
	askStep                         // one decode step
	askLeave                        // the utterance ended
	askPrepare                      // make the batch and record its steps
)

// request is one member's question to the loop.
type request struct {
	mb   *member
	kind requestKind
	cols [][NumCodebooks]int32 // join: the prefill's columns
	// step
	col     [NumCodebooks]int32
	history [][]int32
	loop    loopState
	ahead   bool
}

type reply struct {
	tok    []int32
	err    error
	prefix compute.Tensor // condition
	notes  []string
}

// member is one utterance's token source (runTokens) on the scheduler.
type member struct {
	s      *Scheduler
	ctx    context.Context
	in     Inputs
	o      GenerateOptions
	reply  chan reply
	prefix compute.Tensor // the prompt's conditioning, until the join
	notes  []string       // from the conditioning
	alone  atomic.Bool    // decodes alone (set before the join's reply; cleared when the batch adopts it)
	left   bool

	// Owned by the loop goroutine.
	slot    int      // batch slot, or −1
	dec     *Decoder // decoding alone
	pending *request // a step asked for and not yet run
	broken  error    // its batch failed: every later step fails so
	noAhead bool     // alone, about to move into the batch: queue no step ahead
	stay    bool     // alone for good: the batch cannot adopt its state
}

// ask sends r to the loop and waits for its reply; a cancelled utterance
// stops waiting (the loop still answers into the buffered channel, and
// the member's leave, which follows, cleans up).
func (mb *member) ask(r *request) ([]int32, error) {
	rp := mb.call(r)
	return rp.tok, rp.err
}

// condition asks the loop for the prompt's conditioning prefix.
func (mb *member) condition() (compute.Tensor, []string, error) {
	rp := mb.call(&request{kind: askCondition})
	return rp.prefix, rp.notes, rp.err
}

// call sends r to the loop and waits for its reply.
func (mb *member) call(r *request) reply {
	r.mb = mb
	select {
	case mb.s.in <- r:
	case <-mb.s.done:
		return reply{err: errClosed}
	case <-mb.ctx.Done():
		return reply{err: mb.ctx.Err()}
	}
	select {
	case rp := <-mb.reply:
		return rp
	case <-mb.s.done:
		return reply{err: errClosed}
	case <-mb.ctx.Done():
		return reply{err: mb.ctx.Err()}
	}
}

func (mb *member) prefillTokens(cols [][NumCodebooks]int32) ([]int32, error) {
	return mb.ask(&request{kind: askJoin, cols: cols})
}

func (mb *member) stepTokens(col [NumCodebooks]int32, history [][]int32) ([]int32, error) {
	return mb.ask(&request{kind: askStep, col: col, history: history})
}

func (mb *member) stepTokensAhead(col [NumCodebooks]int32, history [][]int32, loop loopState, ahead bool) ([]int32, error) {
	return mb.ask(&request{kind: askStep, col: col, history: history, loop: loop, ahead: ahead})
}

// leave tells the loop the utterance ended (once; it does not wait).
func (mb *member) leave() {
	if mb.left {
		return
	}
	mb.left = true
	select {
	case mb.s.in <- &request{mb: mb, kind: askLeave}:
	case <-mb.s.done:
	}
}

// positions is what the utterance needs in its state: prompt, prefill
// columns, steps and the delay's closing columns (as Generate sizes it).
func (mb *member) positions(prompt int) int {
	return prompt + len(mb.o.AudioPrefix) + mb.o.MaxNewTokens + NumCodebooks + 1
}
