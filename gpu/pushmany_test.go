//go:build cuda

package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"zonostream/engine/dac"
	"zonostream/internal/golden"
)

// TestPushManyOnGPU: dac.PushMany on the side lane gives every stream, bit
// for bit, what the same stream pushed alone on the lane gives, call by
// call, and each stream's whole output equals one-shot decoding on the
// GPU. Five streams take the same frame counts under one chunking, so
// their emissions are stacked at every stage (the first one's first push
// replays the recorded graph; the others find it busy and push op by op,
// stacked); two more have chunkings of their own. Each flushes in its
// last call.
func TestPushManyOnGPU(t *testing.T) {
	need(t)
	lane := gb.Lane().(*Backend)
	load := func() *dac.Model {
		m, err := dac.Load(golden.Pack(t, "dac-tiny"), lane)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m, lone := load(), load()
	type stream struct {
		sc       dac.StreamConfig
		lockstep bool
		codes    [][dac.Codebooks]int32
		s, ref   *dac.Streamer
		at       int
		pcm      []float32
	}
	r := rand.New(rand.NewPCG(71, 72))
	var ss []*stream
	for i, n := range []int{40, 40, 33, 47, 40, 29, 52} {
		st := &stream{sc: dac.StreamConfig{FirstChunk: 1, Chunk: 4}, lockstep: i < 5, codes: make([][dac.Codebooks]int32, n)}
		switch i {
		case 5:
			st.sc = dac.StreamConfig{FirstChunk: 4, Chunk: 16}
		case 6:
			st.sc = dac.DefaultStreamConfig
		}
		for f := range st.codes {
			for k := range st.codes[f] {
				st.codes[f][k] = int32(r.IntN(1024))
			}
		}
		var err error
		if st.s, err = m.NewStreamer(st.sc); err != nil {
			t.Fatal(err)
		}
		if st.ref, err = lone.NewStreamer(st.sc); err != nil {
			t.Fatal(err)
		}
		ss = append(ss, st)
	}
	for _, mm := range []*dac.Model{m, lone} {
		if err := mm.RecordFirstPush(ss[0].sc); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; slices.ContainsFunc(ss, func(st *stream) bool { return st.at < len(st.codes) }); round++ {
		shared := 1 + r.IntN(6)
		var pushes []dac.Push
		var in []*stream
		for _, st := range ss {
			if st.at == len(st.codes) { // flushed
				continue
			}
			n := 1 + r.IntN(6)
			if st.lockstep {
				n = shared
			}
			n = min(n, len(st.codes)-st.at)
			p := dac.Push{S: st.s, Frames: st.codes[st.at : st.at+n], Flush: st.at+n == len(st.codes)}
			st.at += n
			pushes, in = append(pushes, p), append(in, st)
		}
		out, err := dac.PushMany(pushes)
		if err != nil {
			t.Fatal(err)
		}
		for k, st := range in {
			want, err := st.ref.Push(pushes[k].Frames...)
			if err == nil && pushes[k].Flush {
				var tail []float32
				tail, err = st.ref.Flush()
				want = append(want, tail...)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out[k], want) {
				t.Fatalf("round %d stream %d (%v): PushMany gave %d samples, Push %d, or different ones", round, k, st.sc, len(out[k]), len(want))
			}
			st.pcm = append(st.pcm, out[k]...)
		}
	}
	for i, st := range ss {
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
		if !slices.Equal(st.pcm, ref) {
			t.Errorf("stream %d (%v): %d samples streamed, one-shot %d, or different ones", i, st.sc, len(st.pcm), len(ref))
		}
	}
	if rec, rep := m.FirstPushGraphs(); rec != 1 || rep < 1 {
		t.Errorf("PushMany's model: %d first pushes recorded, %d replayed; want 1 and at least 1", rec, rep)
	}
}
