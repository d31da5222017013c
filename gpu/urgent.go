//go:build cuda

package gpu

import (
	"fmt"
	"os"

	"gorgonia.org/cu"
)

// The first emission's graph on an urgent stream.
//
// Where decode steps run first (decodeFirst, lane.go), the vocoder's lane
// has the lowest priority, and its kernels wait for SMs behind the decode
// step's. That is right for the steady emissions, which are ahead of
// playback, but the first emission is on the path to an utterance's first
// sample: with the vocoder's lane first it took 1.22–1.30 ms, behind the
// decode steps 2.1 ms (docs/gpu/2026-11-30-session16 and -session18). The
// first emission is a recorded graph (engine/dac/pushgraph.go), and it is
// the only graph the vocoder's lane replays, so the side lane replays its
// graphs on a stream of the highest priority, joined to the lane's own
// stream by events on both sides: the lane's earlier work is done before
// the graph starts, and the lane's later work (and its memory pool, which
// recycles blocks in the lane's stream order) waits for the graph, as if
// it had run on the lane's stream. The decode steps beside it wait longer
// for SMs during that one emission.
//
// ZONOS_DAC_URGENT=0 replays on the lane's own stream (measurements).
var urgentOff = os.Getenv("ZONOS_DAC_URGENT") == "0"

// urgentLane is a side lane's urgent stream and its two join events.
type urgentLane struct {
	stream      cu.Stream
	before, end cu.Event
}

// newUrgentLane makes the urgent stream of a side lane whose own stream
// has the lowest priority, or returns nil where it would not be served
// earlier (owner goroutine).
func newUrgentLane(decodeFirst bool) (*urgentLane, error) {
	if urgentOff || !decodeFirst || lanePriority == "equal" {
		return nil, nil
	}
	_, greatest, err := cu.StreamPriorityRange()
	if err != nil {
		return nil, err
	}
	u := &urgentLane{}
	if u.stream, err = cu.MakeStreamWithPriority(greatest, cu.NonBlocking); err != nil {
		return nil, err
	}
	if u.before, err = cu.MakeEvent(cu.DisableTiming); err == nil {
		u.end, err = cu.MakeEvent(cu.DisableTiming)
	}
	if err != nil {
		u.destroy()
		return nil, err
	}
	return u, nil
}

// launch replays a graph (replay, given the stream) on the urgent stream between two joins with the
// lane's stream s (owner goroutine).
func (u *urgentLane) launch(s cu.Stream, replay func(cu.Stream) error) error {
	if err := u.before.Record(s); err != nil {
		return fmt.Errorf("cuda: urgent replay, event before: %w", err)
	}
	if err := u.stream.Wait(u.before, 0); err != nil {
		return fmt.Errorf("cuda: urgent replay, waiting for the lane: %w", err)
	}
	if err := replay(u.stream); err != nil {
		return err
	}
	if err := u.end.Record(u.stream); err != nil {
		return fmt.Errorf("cuda: urgent replay, event after: %w", err)
	}
	if err := s.Wait(u.end, 0); err != nil {
		return fmt.Errorf("cuda: urgent replay, the lane waiting for it: %w", err)
	}
	return nil
}

// destroy frees the stream and events (owner goroutine; idempotent).
func (u *urgentLane) destroy() {
	if u == nil {
		return
	}
	if u.before != (cu.Event{}) {
		_ = cu.DestroyEvent(&u.before)
	}
	if u.end != (cu.Event{}) {
		_ = cu.DestroyEvent(&u.end)
	}
	if u.stream != (cu.Stream{}) {
		_ = u.stream.Destroy()
		u.stream = cu.Stream{}
	}
}
