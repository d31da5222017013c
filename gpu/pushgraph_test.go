//go:build cuda

package gpu

import (
	"math/rand/v2"
	"testing"

	"zonostream/engine/dac"
	"zonostream/internal/golden"
)

// TestFirstPushGraph: the DAC streamer's recorded first push (on the side
// lane, where the engine vocodes) replays bit for bit what one-shot
// decoding gives; a stream whose first push finds the recording still
// held by another stream's carried columns pushes op by op, with the same
// samples; once the holder has pushed again (or is reset) the next stream
// replays again.
func TestFirstPushGraph(t *testing.T) {
	need(t)
	lane := gb.Lane().(*Backend)
	m, err := dac.Load(golden.Pack(t, "dac-tiny"), lane)
	if err != nil {
		t.Fatal(err)
	}
	sc := dac.StreamConfig{FirstChunk: 1, Chunk: 4}
	if err := m.RecordFirstPush(sc); err != nil {
		t.Fatal(err)
	}
	if rec, rep := m.FirstPushGraphs(); rec != 1 || rep != 0 {
		t.Fatalf("after RecordFirstPush: %d recorded, %d replayed; want 1, 0", rec, rep)
	}
	r := rand.New(rand.NewPCG(51, 52))
	const frames = 30
	type stream struct {
		s     *dac.Streamer
		codes [][dac.Codebooks]int32
		pcm   []float32
		next  int
	}
	newStream := func() *stream {
		s, err := m.NewStreamer(sc)
		if err != nil {
			t.Fatal(err)
		}
		st := &stream{s: s, codes: make([][dac.Codebooks]int32, frames)}
		for i := range st.codes {
			for k := range st.codes[i] {
				st.codes[i][k] = int32(r.IntN(1024))
			}
		}
		return st
	}
	// push feeds frames one at a time until the stream has emitted n times
	// more (or has no frames left).
	push := func(st *stream, emissions int) {
		for emissions > 0 && st.next < frames {
			pcm, err := st.s.Push(st.codes[st.next])
			if err != nil {
				t.Fatal(err)
			}
			st.next++
			if len(pcm) > 0 {
				emissions--
				st.pcm = append(st.pcm, pcm...)
			}
		}
	}
	finish := func(name string, st *stream) {
		push(st, frames)
		tail, err := st.s.Flush()
		if err != nil {
			t.Fatal(err)
		}
		st.pcm = append(st.pcm, tail...)
		cb := make([][]int32, dac.Codebooks)
		for _, f := range st.codes {
			for k := range cb {
				cb[k] = append(cb[k], f[k])
			}
		}
		ref, err := m.Decode(cb)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.pcm) != len(ref) {
			t.Fatalf("%s: streamed %d samples, one-shot %d", name, len(st.pcm), len(ref))
		}
		for i := range ref {
			if st.pcm[i] != ref[i] {
				t.Fatalf("%s: sample %d streamed %g, one-shot %g", name, i, st.pcm[i], ref[i])
			}
		}
	}
	replays := func(want int, when string) {
		t.Helper()
		if _, rep := m.FirstPushGraphs(); rep != want {
			t.Fatalf("%s: %d first pushes replayed, want %d", when, rep, want)
		}
	}

	a := newStream()
	finish("alone", a)
	replays(1, "one stream")

	b, c := newStream(), newStream()
	push(b, 1) // b's first emission replays; b holds the carried columns
	push(c, 1) // so c's first push runs op by op
	replays(2, "two streams at their first emission")
	push(b, 1) // b's second push joins its views: the recording is free again
	d := newStream()
	push(d, 1)
	replays(3, "a third stream after the holder's second push")
	e := newStream()
	push(e, 1) // d holds it now: op by op
	replays(3, "a stream while the third holds the recording")
	d.s.Reset() // a reset stream lets go of it as well
	f := newStream()
	push(f, 1)
	replays(4, "a stream after the holder's reset")
	for _, x := range []struct {
		name string
		st   *stream
	}{{"replayed, interleaved", b}, {"op by op, interleaved", c}, {"op by op while held", e}, {"replayed after a reset", f}} {
		finish(x.name, x.st)
	}
}
