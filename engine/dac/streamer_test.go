package dac_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// TestStreamerMatchesOneShot is the streaming gate: chunked output against
// one-shot decoding of the same codes, every StreamCase, on the tiny pack,
// dac_44khz's geometry with few channels (several lengths, including
// streams shorter than the tail) and, without -short, a random full-size
// dac_44khz. On the CPU backend the streamed samples must be bit-identical;
// the worst max |Δ| and SNR are logged.
func TestStreamerMatchesOneShot(t *testing.T) {
	be := cpu.New(0)
	type model struct {
		name   string
		m      *dac.Model
		frames []int
		cases  []conformance.StreamCase
	}
	tiny, err := dac.Load(golden.Pack(t, "dac-tiny"), be)
	if err != nil {
		t.Fatal(err)
	}
	ms := []model{
		{"dac-tiny", tiny, []int{48}, conformance.StreamCases},
		{"narrow-44k", randomModel(t, narrow44k(), be, 5), []int{1, 3, 15, 40}, conformance.StreamCases},
	}
	if !testing.Short() {
		ms = append(ms, model{"full-44k", randomModel(t, dac.Dac44kHz(), be, 6), []int{36}, []conformance.StreamCase{{Name: "4,16", FirstChunk: 4, Chunk: 16}}})
	}
	for _, mm := range ms {
		worstAbs, worstSNR := 0.0, math.Inf(1)
		for _, T := range mm.frames {
			hop := mm.m.Config().HopLength
			codes := randomCodes(mm.m.Config(), T, uint64(T))
			ref := decode(t, mm.m, codes)
			for i, c := range mm.cases {
				r, err := conformance.CompareStream(mm.m, codes, ref, c, uint64(i))
				if err != nil {
					t.Fatalf("%s T=%d %s: %v", mm.name, T, c.Name, err)
				}
				if r.Samples != T*hop {
					t.Errorf("%s T=%d %s: emitted %d samples, want %d", mm.name, T, c.Name, r.Samples, T*hop)
				}
				if r.MaxAbs != 0 {
					t.Errorf("%s T=%d %s: max |Δ| %.3g (SNR %.1f dB) against one-shot; the CPU backend should be bit-identical", mm.name, T, c.Name, r.MaxAbs, r.SNR)
				}
				worstAbs, worstSNR = max(worstAbs, r.MaxAbs), min(worstSNR, r.SNR)
			}
		}
		t.Logf("%s: worst max |Δ| %.3g, worst SNR %.1f dB over frames %v × %d chunkings", mm.name, worstAbs, worstSNR, mm.frames, len(mm.cases))
	}
}

// TestStreamerChunking checks when PCM comes out: nothing until the audio
// of the FirstChunk-th frame begins to be final (more than FirstChunk−1
// frames, at most FirstChunk), then emissions of at least FirstChunk·2^k
// frames, capped at Chunk, the rest at Flush.
func TestStreamerChunking(t *testing.T) {
	m := randomModel(t, narrow44k(), cpu.New(0), 7)
	f, hop := m.Field(), m.Config().HopLength
	for _, sc := range []dac.StreamConfig{{FirstChunk: 1, Chunk: 1}, {FirstChunk: 1, Chunk: 8}, {FirstChunk: 4, Chunk: 16},
		{FirstChunk: 16, Chunk: 16}, {FirstChunk: 3, Chunk: 20}, {FirstChunk: 8, Chunk: 4}} {
		s, err := m.NewStreamer(sc)
		if err != nil {
			t.Fatal(err)
		}
		codes := randomCodes(m.Config(), 40, 9)
		var sizes []int
		for i := 0; i < 40; i++ {
			pcm, err := s.Push(frameAt(codes, i))
			if err != nil {
				t.Fatal(err)
			}
			if len(pcm) > 0 {
				sizes = append(sizes, len(pcm))
				ramp := sc.FirstChunk << (len(sizes) - 1)
				if len(sizes) > 1 {
					ramp = min(ramp, sc.Chunk)
				}
				want := ramp * hop
				if len(sizes) == 1 {
					// Exact samples after the first and the one-before
					// pushes: the emission fires on the first push that
					// makes more than FirstChunk−1 frames final.
					least := (sc.FirstChunk-1)*hop + 1
					if first := i + 1; first*hop-f.RightSamples < least || (first-1)*hop-f.RightSamples >= least {
						t.Errorf("%v: first PCM after %d frames", sc, first)
					}
					if len(pcm) < least || len(pcm) > sc.FirstChunk*hop {
						t.Errorf("%v: first emission has %d samples, want (%d, %d]", sc, len(pcm), least-1, sc.FirstChunk*hop)
					}
					continue
				}
				if len(pcm) < want || len(pcm) >= want+hop {
					t.Errorf("%v: emission %d has %d samples, want [%d, %d)", sc, len(sizes), len(pcm), want, want+hop)
				}
			}
		}
		pcm, err := s.Flush()
		if err != nil {
			t.Fatal(err)
		}
		if s.Emitted() != 40*hop || s.Pending() != 0 || len(pcm) == 0 {
			t.Errorf("%v: emitted %d, pending %d after flush", sc, s.Emitted(), s.Pending())
		}
		t.Logf("%v: emissions %v + flush %d", sc, sizes, len(pcm))
	}
}

// TestStreamerBadInput: out-of-range codes, flush with nothing pushed,
// double flush, push after flush, bad chunk sizes: errors, no panic, no
// partial push.
func TestStreamerBadInput(t *testing.T) {
	m := randomModel(t, narrow44k(), cpu.New(0), 8)
	if _, err := m.NewStreamer(dac.StreamConfig{FirstChunk: 0, Chunk: 4}); err == nil {
		t.Error("FirstChunk 0 accepted")
	}
	s, err := m.NewStreamer(dac.StreamConfig{FirstChunk: 1, Chunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(); err == nil || !strings.Contains(err.Error(), "no frames") {
		t.Errorf("flush with nothing pushed: %v", err)
	}
	good, bad := [dac.Codebooks]int32{}, [dac.Codebooks]int32{}
	bad[4] = 1024
	if _, err := s.Push(good, bad); err == nil || !strings.Contains(err.Error(), "1024") {
		t.Errorf("code 1024: %v", err)
	}
	bad[4] = -1
	if _, err := s.Push(bad); err == nil {
		t.Error("code -1 accepted")
	}
	if s.Frames() != 0 {
		t.Errorf("a rejected push added %d frames", s.Frames())
	}
	if _, err := s.Push(good); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(); err == nil {
		t.Error("second flush accepted")
	}
	if _, err := s.Push(good); err == nil {
		t.Error("push after flush accepted")
	}
	s.Reset()
	if _, err := s.Push(good); err != nil {
		t.Errorf("push after Reset: %v", err)
	}
	// Decode's own validation.
	for name, codes := range map[string][][]int32{
		"wrong codebook count": make([][]int32, 8),
		"zero frames":          make([][]int32, 9),
		"ragged":               append(make([][]int32, 8), []int32{0, 0}),
		"code 1025":            append(make([][]int32, 8), []int32{1025}),
	} {
		for k := range codes {
			if codes[k] == nil && name != "zero frames" {
				codes[k] = []int32{0}
			}
		}
		if _, err := m.Decode(codes); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := m.Encode(nil); err == nil {
		t.Error("Encode(nil) accepted")
	}
}

// ExampleStreamer shows the engine-side loop: push each frame as the
// generator completes it, play what comes back, flush at the end.
func ExampleStreamer() {
	var m *dac.Model // dac.Load(dir, backend)
	if m == nil {
		fmt.Println("load the DAC first")
		return
	}
	s, _ := m.NewStreamer(dac.DefaultStreamConfig)
	var frames [][dac.Codebooks]int32 // from the generator, EOS/MASK mapped to 0
	for _, f := range frames {
		pcm, err := s.Push(f)
		if err != nil {
			return
		}
		_ = pcm // into the ring
	}
	tail, _ := s.Flush()
	_ = tail
	// Output: load the DAC first
}

// TestStreamerStatefulMatchesWindow: the stateful streamer (the default)
// emits exactly what the window streamer emits — the same samples in the
// same emissions — for every StreamCase and several stream lengths, and
// Reset starts a new stream cleanly in both.
func TestStreamerStatefulMatchesWindow(t *testing.T) {
	m := randomModel(t, narrow44k(), cpu.New(0), 12)
	run := func(window bool, sc dac.StreamConfig, codes [][]int32) [][]float32 {
		s, err := m.NewStreamerWindow(sc, window)
		if err != nil {
			t.Fatal(err)
		}
		if s.Stateful() == window {
			t.Fatalf("window %v: stateful decoder present %v", window, s.Stateful())
		}
		var out [][]float32
		for rep := 0; rep < 2; rep++ { // the second pass after Reset
			for i := range codes[0] {
				pcm, err := s.Push(frameAt(codes, i))
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, pcm)
			}
			pcm, err := s.Flush()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pcm)
			s.Reset()
		}
		return out
	}
	for _, T := range []int{1, 7, 23, 41} {
		codes := randomCodes(m.Config(), T, uint64(100+T))
		for _, c := range conformance.StreamCases {
			if c.FirstChunk == 0 {
				continue
			}
			sc := dac.StreamConfig{FirstChunk: c.FirstChunk, Chunk: c.Chunk}
			w, st := run(true, sc, codes), run(false, sc, codes)
			for i := range w {
				if len(w[i]) != len(st[i]) {
					t.Fatalf("T=%d %s: emission %d has %d samples stateful, %d windowed", T, c.Name, i, len(st[i]), len(w[i]))
				}
				for j := range w[i] {
					if w[i][j] != st[i][j] {
						t.Fatalf("T=%d %s: emission %d sample %d: stateful %g, windowed %g", T, c.Name, i, j, st[i][j], w[i][j])
					}
				}
			}
		}
	}
}

// frameAt is frame i of codes [Codebooks][T].
func frameAt(codes [][]int32, i int) (fr [dac.Codebooks]int32) {
	for k := range fr {
		fr[k] = codes[k][i]
	}
	return fr
}

// TestFirstFrames: FirstEmissionFrames, the length a recorded first push
// is made for, is the number of frames at which a stream fed one frame at
// a time first emits, for several first chunks.
func TestFirstFrames(t *testing.T) {
	m := randomModel(t, narrow44k(), cpu.New(0), 5)
	codes := randomCodes(m.Config(), 40, 1)
	for _, first := range []int{1, 2, 4, 16} {
		sc := dac.StreamConfig{FirstChunk: first, Chunk: 16}
		s, err := m.NewStreamer(sc)
		if err != nil {
			t.Fatal(err)
		}
		at := 0
		for i := 0; i < 40 && at == 0; i++ {
			var f [dac.Codebooks]int32
			for k := range f {
				f[k] = codes[k][i]
			}
			pcm, err := s.Push(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(pcm) > 0 {
				at = i + 1
			}
		}
		if want := m.FirstEmissionFrames(sc); at != want {
			t.Errorf("first chunk %d: first emission after %d frames, FirstEmissionFrames says %d", first, at, want)
		}
	}
}

// panicky panics in every convolution once armed, as a failed kernel
// launch does.
type panicky struct {
	compute.Backend
	armed bool
}

func (p *panicky) Conv1d(x, w, b compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	if p.armed {
		panic("injected fault")
	}
	return p.Backend.Conv1d(x, w, b, c)
}

// TestPanicInPushReleasesLock: a backend that panics inside a push leaves
// the push lock free, so Reset (which the engine calls after recovering)
// and the next stream do not block on it.
func TestPanicInPushReleasesLock(t *testing.T) {
	be := &panicky{Backend: cpu.New(0)}
	m := randomModel(t, narrow44k(), be, 5)
	sc := dac.StreamConfig{FirstChunk: 1, Chunk: 4}
	codes := randomCodes(m.Config(), 12, 1)
	s, err := m.NewStreamer(sc)
	if err != nil {
		t.Fatal(err)
	}
	be.armed = true
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the push did not reach the failing backend")
			}
		}()
		for i := 0; i < 12; i++ {
			s.Push(frameAt(codes, i))
		}
	}()
	be.armed = false
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Reset()
		for i := 0; i < 12; i++ {
			if _, err := s.Push(frameAt(codes, i)); err != nil {
				t.Error(err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Reset after a panicking push still waits for the push lock")
	}
}
