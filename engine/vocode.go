package engine

import (
	"context"
	"fmt"
	"time"

	"zonostream/engine/dac"
	"zonostream/engine/zonos"
)

// vocoderQueue is how many generated frames may wait for the vocoder
// (about 12 s of audio) before the decoder waits for it in turn: the
// vocoder runs tens of times faster than real time, so the queue only
// fills when the reader of the events stops reading.
const vocoderQueue = 1024

// vocoder is the utterance's DAC stage on its own goroutine. Decoding never
// waits for a vocoder window: frames go into a queue, and the vocoder
// takes every frame queued at each turn, so when it falls behind its next
// window is longer and it catches up (windows of any length give exactly
// the samples one-shot decoding gives, engine/dac). On a backend with a
// side lane (compute.Laned) the codec was loaded on that lane, so its
// kernels also run beside the decode steps on the GPU. The one exception
// is the first emission on such a backend (holdFirstEmission in
// stream.go): the decoder waits for it (awaitFirstAudio).
type vocoder struct {
	r      *run
	s      *dac.Streamer
	frames chan [zonos.NumCodebooks]int32
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done closes
	closed bool  // frames closed (decoder side)
	// first closes once the first non-empty PCM went out as an Audio
	// event (firstOut: vocoder side), releasing a decoder held for it
	// (awaitFirstAudio).
	first    chan struct{}
	firstOut bool
}

// startVocoder starts the stage over streamer s.
func (r *run) startVocoder(s *dac.Streamer) *vocoder {
	ctx, cancel := context.WithCancel(r.ctx)
	v := &vocoder{r: r, s: s, frames: make(chan [zonos.NumCodebooks]int32, vocoderQueue), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), first: make(chan struct{})}
	go v.loop()
	return v
}

// push queues one frame (decoder goroutine). It fails once the vocoder has
// failed or the utterance was cancelled.
func (v *vocoder) push(f [zonos.NumCodebooks]int32) error {
	select {
	case v.frames <- f:
		return nil
	case <-v.done:
		if v.err != nil {
			return v.err
		}
		return fmt.Errorf("engine: the vocoder stopped early")
	case <-v.ctx.Done():
		if err := v.r.ctx.Err(); err != nil {
			return err // the utterance was cancelled
		}
		<-v.done // the vocoder failed and cancelled its context
		return v.err
	}
}

// awaitFirstAudio blocks the decoder until the vocoder has committed its
// first audio (stream.go's holdFirstEmission). It cannot outlast the
// vocoder: a vocoder that ended first (failed, or the utterance was
// cancelled) returns its error, and a cancelled utterance returns at once
// even if the vocoder is still inside a window.
func (v *vocoder) awaitFirstAudio() error {
	select {
	case <-v.first:
		return nil
	case <-v.done:
		if v.err != nil {
			return v.err
		}
		return fmt.Errorf("engine: the vocoder stopped early")
	case <-v.r.ctx.Done():
		return v.r.ctx.Err()
	}
}

// sent marks pcm as sent (vocoder goroutine): the first non-empty one
// closes first.
func (v *vocoder) sent(pcm []float32) {
	if len(pcm) > 0 && !v.firstOut {
		v.firstOut = true
		close(v.first)
	}
}

// finish ends the input, waits until the vocoder has committed the last
// sample (Flush), and returns its error.
func (v *vocoder) finish() error {
	v.close()
	<-v.done
	return v.err
}

// stop abandons the stage (an error or cancellation in the decoder) and
// waits for its goroutine, so no Audio event follows the caller's Failed.
// After finish it only waits.
func (v *vocoder) stop() {
	v.cancel()
	v.close()
	<-v.done
}

func (v *vocoder) close() {
	if !v.closed {
		v.closed = true
		close(v.frames)
	}
}

func (v *vocoder) loop() {
	defer close(v.done)
	// However the stream ends, its decoder state goes: the carried
	// columns' device memory, and a recorded first push it may still hold
	// (dac.Model.RecordFirstPush), which the next utterance replays.
	defer func() {
		defer func() { _ = recover() }() // a failed backend: the error is already v.err
		v.s.Reset()
	}()
	defer func() {
		// A backend panic (a failed kernel launch, out of memory) ends
		// the utterance with Failed, not the process.
		if p := recover(); p != nil {
			v.err = fmt.Errorf("engine: the %s backend failed while vocoding: %v", v.r.e.backend.Name(), p)
		}
		if v.err != nil {
			v.cancel() // the decoder's next push fails
		}
	}()
	batch := make([][zonos.NumCodebooks]int32, 0, 64)
	for f := range v.frames {
		batch = append(batch[:0], f)
	more:
		for {
			select {
			case g, ok := <-v.frames:
				if !ok {
					break more
				}
				batch = append(batch, g)
			default:
				break more
			}
		}
		if v.ctx.Err() != nil {
			v.err = v.ctx.Err()
			return
		}
		t0 := time.Now()
		pcm, err := v.s.Push(batch...)
		if err != nil {
			v.err = err
			return
		}
		v.stampFirst(pcm, t0)
		if err := v.r.audio(v.ctx, pcm); err != nil {
			v.err = err
			return
		}
		v.sent(pcm)
	}
	if err := v.ctx.Err(); err != nil {
		v.err = err
		return
	}
	t0 := time.Now()
	pcm, err := v.s.Flush()
	if err == nil {
		v.stampFirst(pcm, t0)
		err = v.r.audio(v.ctx, pcm)
	}
	v.err = err
}

// stampFirst records Metrics.FirstVocode when pcm, decoded from t0 on, is
// the utterance's first audio (a short utterance's may be its Flush).
func (v *vocoder) stampFirst(pcm []float32, t0 time.Time) {
	if len(pcm) > 0 && v.s.Emitted() == len(pcm) {
		v.r.meter(func(mt *meter) { mt.m.FirstVocode = time.Since(t0) })
	}
}
