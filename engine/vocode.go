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

// vocoder is the utterance's DAC stage. Decoding never waits for a
// vocoder window: frames go into a queue, and the engine's vocoder pool
// (vocoderPool) takes every frame queued at each of the stream's turns,
// so when it falls behind its next window is longer and it catches up
// (windows of any length give exactly the samples one-shot decoding
// gives, engine/dac). On a backend with a side lane (compute.Laned) the
// codec was loaded on that lane, so its kernels also run beside the
// decode steps on the GPU. The one exception is the first emission on
// such a backend (holdFirstEmission in stream.go): a lone decoder waits
// for it (awaitFirstAudio).
type vocoder struct {
	r      *run
	s      *dac.Streamer
	frames chan [zonos.NumCodebooks]int32
	ctx    context.Context
	cancel context.CancelFunc
	pool   *vocoderPool
	done   chan struct{}
	err    error // set before done closes
	closed bool  // frames closed (decoder side)
	// first closes once the first non-empty PCM went out as an Audio
	// event (firstOut: pool side), releasing a decoder held for it
	// (awaitFirstAudio).
	first    chan struct{}
	firstOut bool

	// Pool side.
	pending [][zonos.NumCodebooks]int32 // frames taken from the queue, not yet pushed
	ending  bool                        // the queue is closed: Flush with the next push
}

// startVocoder starts the stage over streamer s on the engine's pool.
func (r *run) startVocoder(s *dac.Streamer) *vocoder {
	ctx, cancel := context.WithCancel(r.ctx)
	v := &vocoder{r: r, s: s, frames: make(chan [zonos.NumCodebooks]int32, vocoderQueue), ctx: ctx, cancel: cancel,
		pool: r.e.vocoders, done: make(chan struct{}), first: make(chan struct{})}
	v.pool.add(v)
	return v
}

// push queues one frame (decoder goroutine). It fails once the vocoder has
// failed or the utterance was cancelled.
func (v *vocoder) push(f [zonos.NumCodebooks]int32) error {
	select {
	case v.frames <- f:
		v.pool.wake()
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

// sent marks pcm as sent (pool side): the first non-empty one closes
// first.
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
// waits for it, so no Audio event follows the caller's Failed. After
// finish it only waits.
func (v *vocoder) stop() {
	v.cancel()
	v.close()
	<-v.done
}

func (v *vocoder) close() {
	if !v.closed {
		v.closed = true
		close(v.frames)
		v.pool.wake()
	}
}

// take moves the queued frames into pending (pool side) and reports
// whether the stream has work: frames to push, or its end to flush.
func (v *vocoder) take() bool {
	for {
		select {
		case f, ok := <-v.frames:
			if !ok {
				v.ending = true
				return true
			}
			v.pending = append(v.pending, f)
			continue
		default:
		}
		return len(v.pending) > 0 || v.ending
	}
}

// end finishes the stage with err (pool side): however it ends, its
// decoder state goes — the carried columns' device memory, and a recorded
// first push it may still hold (dac.Model.RecordFirstPush), which the
// next utterance replays.
func (v *vocoder) end(err error) {
	func() {
		defer func() { _ = recover() }() // a failed backend: the error is already err
		v.s.Reset()
	}()
	v.err = err
	if err != nil {
		v.cancel() // the decoder's next push fails
	}
	close(v.done)
}

// deliver commits one push's samples (pool side): the meters, the Audio
// event, the first-audio release; after the stream's Flush, its end.
func (v *vocoder) deliver(pcm []float32, t0 time.Time, flushed bool) bool {
	if len(pcm) > 0 && v.s.Emitted() == len(pcm) {
		v.r.meter(func(mt *meter) { mt.m.FirstVocode = time.Since(t0) })
	}
	if err := v.r.audio(v.ctx, pcm); err != nil {
		v.end(err)
		return false
	}
	v.sent(pcm)
	if flushed {
		v.end(nil)
		return false
	}
	return true
}
