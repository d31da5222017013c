package zonos

import (
	"fmt"
	"slices"
)

// loop is the scheduler's goroutine: it takes the members' requests and
// runs, in turn, at most one admission, the lone utterance's step when it
// asked for one, and the batch's step once every slot has asked.
func (s *Scheduler) loop() {
	defer close(s.done)
	defer s.shutdown()
	for {
		if !s.runnable() {
			select {
			case r := <-s.in:
				s.accept(r)
			case <-s.quit:
				return
			}
		}
		for more := true; more; {
			select {
			case r := <-s.in:
				s.accept(r)
			case <-s.quit:
				return
			default:
				more = false
			}
		}
		s.admit()
		s.adoptAlone()
		s.stepAlone()
		s.stepBatch()
		s.count()
	}
}

// count publishes the loop's counts for Stats.
func (s *Scheduler) count() {
	active := s.occupied()
	if s.solo != nil {
		active++
	}
	s.stats.active.Store(int64(active))
	s.stats.waiting.Store(int64(len(s.waiting)))
}

// runnable reports whether the loop has work it can do now.
func (s *Scheduler) runnable() bool {
	return s.canAdmit() || (s.solo != nil && s.solo.pending != nil) || s.batchReady()
}

// accept records one request.
func (s *Scheduler) accept(r *request) {
	mb := r.mb
	switch r.kind {
	case askCondition:
		var rp reply
		rp.err = s.guard(func() error {
			var err error
			rp.prefix, rp.notes, err = s.m.Prefix(mb.in)
			return err
		})
		mb.reply <- rp
	case askPrepare:
		mb.reply <- reply{err: s.guard(func() error {
			if s.batch == nil {
				var err error
				if s.batch, err = s.m.NewBatch(s.slots, s.maxLen); err != nil {
					return err
				}
			}
			if s.batch.Occupied() > 0 {
				return nil // already in use: its steps are being recorded as they come
			}
			return s.batch.RecordSteps(histWidth(specOf(mb.o.Sampling)))
		})}
	case askJoin:
		s.waiting = append(s.waiting, r)
	case askStep:
		if mb.broken != nil {
			mb.reply <- reply{err: mb.broken}
			return
		}
		mb.pending = r
	case askLeave:
		mb.pending = nil
		if i := slices.IndexFunc(s.waiting, func(w *request) bool { return w.mb == mb }); i >= 0 {
			s.waiting = slices.Delete(s.waiting, i, i+1)
		}
		s.free(mb)
		if s.solo == mb {
			s.guard(func() error { mb.dec.Close(); return nil })
			mb.dec, s.solo = nil, nil
		}
		if mb.slot >= 0 {
			u := mb.slot
			s.inBatch[u], mb.slot = nil, -1
			if s.batch != nil {
				// Leaving moves another stream's rows; a device that fails
				// there leaves the batch suspect, so its streams fail.
				if err := s.guard(func() error { return s.batch.Leave(u) }); err != nil {
					s.failBatch(err)
				}
			}
		}
	}
}

// occupied is how many batch slots hold an utterance.
func (s *Scheduler) occupied() int {
	n := 0
	for _, mb := range s.inBatch {
		if mb != nil {
			n++
		}
	}
	return n
}

// freeSlot is an empty batch slot, or −1.
func (s *Scheduler) freeSlot() int {
	return slices.Index(s.inBatch, nil)
}

// canAdmit reports whether the first waiting utterance can take a place
// now: the lone place is free, or a batch slot is and (once conditioned)
// it fits there.
func (s *Scheduler) canAdmit() bool {
	if len(s.waiting) == 0 {
		return false
	}
	running := s.occupied()
	if s.solo != nil {
		running++
	}
	if running >= s.Capacity() {
		return false
	}
	if s.solo == nil {
		return true
	}
	return s.freeSlot() >= 0 && s.fits(s.waiting[0].mb)
}

// fits reports whether an utterance fits a batch slot's positions.
func (s *Scheduler) fits(mb *member) bool {
	return mb.positions(mb.prefix.Shape()[1]) <= s.maxLen
}

// admit gives the first waiting utterance a place, when there is one: it
// decodes alone when nothing else runs (or every batch slot is taken),
// else it joins the batch.
func (s *Scheduler) admit() {
	if !s.canAdmit() {
		return
	}
	r := s.waiting[0]
	mb := r.mb
	alone := s.solo == nil && s.occupied() == 0
	slot := -1
	if !alone {
		if slot = s.freeSlot(); slot >= 0 && !s.fits(mb) {
			slot = -1
		}
		if slot < 0 && s.solo == nil {
			alone = true
		}
		if !alone && slot < 0 {
			return // waits for a place that fits it
		}
	}
	s.waiting = s.waiting[1:]
	var tok []int32
	err := s.guard(func() error {
		var err error
		if alone {
			// Room for the batch's positions when it fits them, so the
			// batch can adopt it later (adoptAlone).
			n := mb.positions(mb.prefix.Shape()[1])
			if n <= s.maxLen {
				n = s.maxLen
			}
			mb.dec = s.m.NewDecoder(mb.prefix, n, mb.o)
			tok, err = mb.dec.Prefill(r.cols)
			return err
		}
		if s.batch == nil {
			if s.batch, err = s.m.NewBatch(s.slots, s.maxLen); err != nil {
				return err
			}
		}
		tok, err = s.batch.Join(slot, mb.prefix, r.cols, mb.o)
		return err
	})
	if !alone || err != nil {
		s.free(mb) // the batch copied it in; alone, the decoder holds it
	}
	switch {
	case err != nil && alone:
		if mb.dec != nil {
			s.guard(func() error { mb.dec.Close(); return nil })
			mb.dec = nil
		}
	case err != nil:
	case alone:
		mb.alone.Store(true)
		mb.stay = !s.fits(mb) // the batch's rows cannot hold all its positions
		s.solo = mb
		s.stats.alone.Add(1)
	default:
		mb.slot, s.inBatch[slot] = slot, mb
		s.stats.batched.Add(1)
	}
	mb.reply <- reply{tok: tok, err: err}
}

// free drops a member's conditioning once nothing needs it.
func (s *Scheduler) free(mb *member) {
	if mb.prefix != nil {
		p := mb.prefix
		mb.prefix = nil
		s.guard(func() error { s.m.b.Free(p); return nil })
	}
}

// adoptAlone moves the utterance decoding alone into the batch once the
// batch runs and has a slot: between two of its steps, with no step of
// its queued on the device (if one is, its next step queues none, and it
// moves after that). One with more positions than the batch's rows hold,
// or that the batch fails to take, stays alone.
func (s *Scheduler) adoptAlone() {
	mb := s.solo
	if mb == nil || mb.stay || s.batch == nil || s.occupied() == 0 {
		return
	}
	if mb.dec.Queued() {
		mb.noAhead = true
		return
	}
	slot := s.freeSlot()
	if slot < 0 {
		return
	}
	if err := s.guard(func() error { return s.batch.Adopt(slot, mb.dec, mb.o) }); err != nil {
		mb.stay = true
		return
	}
	s.guard(func() error { mb.dec.Close(); return nil })
	mb.dec, s.solo, mb.noAhead = nil, nil, false
	mb.alone.Store(false)
	mb.slot, s.inBatch[slot] = slot, mb
	s.stats.adopted.Add(1)
}

// stepAlone runs the lone utterance's step, when it asked for one.
func (s *Scheduler) stepAlone() {
	mb := s.solo
	if mb == nil || mb.pending == nil {
		return
	}
	r := mb.pending
	mb.pending = nil
	var tok []int32
	err := s.guard(func() error {
		var err error
		if as, ok := mb.dec.ts.(aheadSource); ok {
			tok, err = as.stepTokensAhead(r.col, r.history, r.loop, r.ahead && !mb.noAhead)
		} else {
			tok, err = mb.dec.ts.stepTokens(r.col, r.history)
		}
		return err
	})
	mb.reply <- reply{tok: tok, err: err}
}

// batchReady reports whether every occupied batch slot has asked for its
// step (and at least one is occupied).
func (s *Scheduler) batchReady() bool {
	any := false
	for _, mb := range s.inBatch {
		if mb != nil {
			if mb.pending == nil {
				return false
			}
			any = true
		}
	}
	return any
}

// stepBatch runs one step for every utterance in the batch, once all have
// asked. A failed step fails every one of them (failBatch).
func (s *Scheduler) stepBatch() {
	if !s.batchReady() {
		return
	}
	cols := make([][NumCodebooks]int32, s.slots)
	hist := make([][][]int32, s.slots)
	for u, mb := range s.inBatch {
		if mb != nil {
			cols[u], hist[u] = mb.pending.col, mb.pending.history
		}
	}
	var tok [][]int32
	err := s.guard(func() error {
		var err error
		tok, err = s.batch.Step(cols, hist)
		return err
	})
	if err != nil {
		s.failBatch(err)
		return
	}
	for u, mb := range s.inBatch {
		if mb != nil {
			mb.pending = nil
			mb.reply <- reply{tok: tok[u]}
		}
	}
}

// failBatch fails every utterance in the batch with err — the one waiting
// for a step at once, the others at their next — and drops the batch (its
// state is suspect); the next arrival builds a new one.
func (s *Scheduler) failBatch(err error) {
	for u, mb := range s.inBatch {
		if mb == nil {
			continue
		}
		mb.broken = err
		mb.slot, s.inBatch[u] = -1, nil
		if mb.pending != nil {
			mb.pending = nil
			mb.reply <- reply{err: err}
		}
	}
	s.guard(func() error { s.batch.Close(); return nil })
	s.batch = nil
}

// guard runs f, turning a backend panic (the CUDA allocator out of memory,
// a failed launch) into an error, so one utterance's failure is not the
// process's.
func (s *Scheduler) guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the %s backend failed: %v", s.m.b.Name(), p)
		}
	}()
	return f()
}

// shutdown fails every utterance still waiting or running and frees the
// states.
func (s *Scheduler) shutdown() {
	for _, r := range s.waiting {
		s.free(r.mb)
		r.mb.reply <- reply{err: errClosed}
	}
	s.waiting = nil
	if mb := s.solo; mb != nil {
		s.guard(func() error { mb.dec.Close(); return nil })
		s.solo = nil
	}
	for u := range s.inBatch {
		s.inBatch[u] = nil
	}
	if s.batch != nil {
		s.guard(func() error { s.batch.Close(); return nil })
		s.batch = nil
	}
}
