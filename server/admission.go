package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// admission hands out the engine's slots in arrival order: as many as the
// engine generates at once (engine.Capacity: its batch and the one
// decoded alone), so every admitted stream is decoded from the moment it
// is admitted and none is pushed behind real time by a stream the engine
// could not carry. A request that finds every slot taken waits in a
// bounded queue (its position told to a WebSocket client as it moves),
// and one that finds the queue full is answered 503 with a Retry-After
// from the recent length of a stream.
// No request waits behind one that came later, so none starves; a queued
// request that is cancelled leaves the queue at once.
type admission struct {
	mu        sync.Mutex
	slots     int
	running   int
	queue     []*ticket
	maxQueue  int
	perKey    map[string]int
	maxPerKey int
	closed    bool
	// service is a running mean of how long a stream holds a slot, for
	// Retry-After.
	service  time.Duration
	onChange func(running, queued int)
	idleCh   chan struct{} // closed once closed with no slot held (idle)
}

type ticket struct {
	ready    chan struct{}
	refused  bool      // the server closed while it waited
	position func(int) // told the ticket's place in the queue as it moves (1 = next)
}

func newAdmission(slots, maxQueue, maxPerKey int, onChange func(running, queued int)) *admission {
	return &admission{slots: slots, maxQueue: maxQueue, maxPerKey: maxPerKey, perKey: map[string]int{}, onChange: onChange}
}

// admit waits for a slot for who and returns the function that gives it
// back. position, when set, hears the request's place in the queue while
// it waits. It fails at once when who has too many streams, when the
// queue is full or the server is shutting down, and when ctx ends while
// waiting.
func (a *admission) admit(ctx context.Context, who string, position func(int)) (release func(), err *apiError) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, errShuttingDown()
	}
	if a.perKey[who] >= a.maxPerKey {
		n := a.perKey[who]
		a.mu.Unlock()
		return nil, &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "too_many_streams",
			Message:    fmt.Sprintf("%d streams of this client are running or queued, the most allowed at once; wait for one to end", n),
			RetryAfter: a.retryAfter()}
	}
	if a.running < a.slots && len(a.queue) == 0 {
		a.running++
		a.perKey[who]++
		a.changed()
		a.mu.Unlock()
		return a.releaser(who), nil
	}
	if len(a.queue) >= a.maxQueue {
		ra := a.retryAfter()
		a.mu.Unlock()
		return nil, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full",
			Message: fmt.Sprintf("the engine is busy and %d requests are already waiting; retry later", a.maxQueue), RetryAfter: ra}
	}
	t := &ticket{ready: make(chan struct{}), position: position}
	a.queue = append(a.queue, t)
	a.perKey[who]++
	if position != nil {
		position(len(a.queue))
	}
	a.changed()
	a.mu.Unlock()
	select {
	case <-t.ready:
		if t.refused {
			a.mu.Lock()
			a.perKey[who]--
			a.mu.Unlock()
			return nil, errShuttingDown()
		}
		return a.releaser(who), nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-t.ready: // handed the slot as ctx ended: give it on
		a.perKey[who]--
		if !t.refused {
			a.handOn()
		}
	default:
		for i, q := range a.queue {
			if q == t {
				a.queue = append(a.queue[:i], a.queue[i+1:]...)
				break
			}
		}
		a.perKey[who]--
		a.tellPositions()
	}
	a.changed()
	return nil, &apiError{Status: 499, Type: "cancelled", Message: "the client went away while waiting"}
}

func (a *admission) releaser(who string) func() {
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			d := time.Since(start)
			if a.service == 0 {
				a.service = d
			} else {
				a.service = (7*a.service + d) / 8
			}
			a.perKey[who]--
			if a.perKey[who] == 0 {
				delete(a.perKey, who)
			}
			a.handOn()
			a.changed()
		})
	}
}

func errShuttingDown() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
		Message: "the server is shutting down", RetryAfter: time.Second}
}

// handOn gives a freed slot to the head of the queue, or frees it.
func (a *admission) handOn() {
	if len(a.queue) == 0 {
		a.running--
		if a.running == 0 {
			a.idleNow()
		}
		return
	}
	t := a.queue[0]
	a.queue = a.queue[1:]
	close(t.ready)
	a.tellPositions()
}

func (a *admission) tellPositions() {
	for i, t := range a.queue {
		if t.position != nil {
			t.position(i + 1)
		}
	}
}

func (a *admission) changed() {
	if a.onChange != nil {
		a.onChange(a.running, len(a.queue))
	}
}

// retryAfter estimates when a place frees: the mean stream length times
// the queue ahead, at least a second.
func (a *admission) retryAfter() time.Duration {
	d := a.service * time.Duration(len(a.queue)+1) / time.Duration(a.slots)
	return max(d, time.Second)
}

// capacity is how many more requests would be taken now (run or queued).
func (a *admission) capacity() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0
	}
	return a.slots - a.running + a.maxQueue - len(a.queue)
}

func (a *admission) load() (running, queued int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, len(a.queue)
}

// close refuses every later request and every queued one; running ones
// go on until they end.
func (a *admission) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, t := range a.queue {
		t.refused = true
		close(t.ready)
	}
	a.queue = nil
	a.changed()
	if a.running == 0 {
		a.idleNow()
	}
}

// idle is closed once the server is closed and nothing holds a slot.
func (a *admission) idle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.idleCh == nil {
		a.idleCh = make(chan struct{})
		if a.closed && a.running == 0 {
			close(a.idleCh)
		}
	}
	return a.idleCh
}

// idleNow closes idle's channel once closed (a.mu held).
func (a *admission) idleNow() {
	if !a.closed {
		return
	}
	if a.idleCh == nil {
		a.idleCh = make(chan struct{})
	}
	select {
	case <-a.idleCh:
	default:
		close(a.idleCh)
	}
}
