package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"zonostream/engine"
)

// pump carries one engine stream to one client. A goroutine reads the
// engine's events into a queue bounded by the audio it holds; the
// client's side takes them and writes them out. The engine never waits on
// the network: only when the client has fallen so far behind that the
// queue holds Limits.MaxBufferedSeconds of audio does generation pause
// for it, and a client that then takes nothing for SlowClientTimeout has
// its stream ended (errSlowClient), the engine's work freed for others.
type pump struct {
	s       *engine.Stream
	mu      sync.Mutex
	cond    *sync.Cond
	items   []engine.Event
	samples int // audio samples in items
	max     int
	ended   bool // the engine's last event is queued
	gone    bool // the client side stopped taking
	slow    time.Duration
	// keep says which non-audio events the client wants (Audio, Done
	// and Failed always pass).
	keep func(engine.EventKind) bool
	// onEvent sees every event as it leaves the engine (metrics).
	onEvent func(engine.Event)
	// stalled is set when the stream was ended for a slow client.
	stalled bool
}

// errSlowClient ends a stream whose client stopped reading.
var errSlowClient = errors.New("the client read too slowly: the audio buffered for it reached its limit and it took nothing for the slow-client timeout")

func newPump(s *engine.Stream, maxSamples int, slow time.Duration, keep func(engine.EventKind) bool, onEvent func(engine.Event)) *pump {
	p := &pump{s: s, max: maxSamples, slow: slow, keep: keep, onEvent: onEvent}
	p.cond = sync.NewCond(&p.mu)
	go p.fill()
	return p
}

func (p *pump) fill() {
	for ev := range p.s.Events() {
		if p.onEvent != nil {
			p.onEvent(ev)
		}
		switch ev.Kind {
		case engine.Audio, engine.Done, engine.Failed:
		default:
			if p.keep == nil || !p.keep(ev.Kind) {
				continue
			}
		}
		if !p.put(ev) {
			// The client is gone or too slow: stop the engine and drain
			// what it still sends so it can finish.
			p.s.Cancel()
			for range p.s.Events() {
			}
			break
		}
	}
	p.mu.Lock()
	p.ended = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// put queues ev, waiting while the queue is full of audio. It reports
// false when the client side has gone or did not make room in time.
func (p *pump) put(ev engine.Event) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Kind == engine.Audio && p.samples+len(ev.PCM) > p.max && p.samples > 0 {
		deadline := time.Now().Add(p.slow)
		timer := time.AfterFunc(p.slow, func() {
			p.mu.Lock()
			p.cond.Broadcast()
			p.mu.Unlock()
		})
		for !p.gone && p.samples+len(ev.PCM) > p.max && p.samples > 0 {
			if !time.Now().Before(deadline) {
				p.stalled, p.gone = true, true
				p.items = nil
				p.cond.Broadcast()
				timer.Stop()
				return false
			}
			p.cond.Wait()
		}
		timer.Stop()
	}
	if p.gone {
		return false
	}
	p.items = append(p.items, ev)
	if ev.Kind == engine.Audio {
		p.samples += len(ev.PCM)
	}
	p.cond.Broadcast()
	return true
}

// next waits for the next event; ok is false once the stream has ended
// and everything queued was taken, or ctx ended.
func (p *pump) next(ctx context.Context) (ev engine.Event, ok bool) {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.items) == 0 && !p.ended && !p.gone && ctx.Err() == nil {
		p.cond.Wait()
	}
	if len(p.items) == 0 || p.gone || ctx.Err() != nil {
		return engine.Event{}, false
	}
	ev = p.items[0]
	p.items[0] = engine.Event{}
	p.items = p.items[1:]
	if ev.Kind == engine.Audio {
		p.samples -= len(ev.PCM)
	}
	p.cond.Broadcast()
	return ev, true
}

// abandon is the client side giving up (disconnect, write failure,
// cancel): generation stops at once and the engine's slot is freed as
// soon as the engine has wound down.
func (p *pump) abandon() {
	p.mu.Lock()
	p.gone = true
	p.items = nil
	p.cond.Broadcast()
	p.mu.Unlock()
	p.s.Cancel()
}

// slowClient reports whether the stream was ended because its client
// stopped reading.
func (p *pump) slowClient() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// wait blocks until the engine has finished with the stream (so its slot
// can be handed on) and returns its error.
func (p *pump) wait() error {
	err := p.s.Wait()
	p.mu.Lock()
	for !p.ended {
		p.cond.Wait()
	}
	p.mu.Unlock()
	return err
}
