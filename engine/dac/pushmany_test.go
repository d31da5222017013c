package dac_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/internal/golden"
)

// stackCounter counts the convolutions run on a batch of more than one
// stream: proof that PushMany stacked streams, not just called Push.
type stackCounter struct {
	compute.Backend
	stacked, rows int
}

func (b *stackCounter) count(x compute.Tensor) {
	if n := x.Shape()[0]; n > 1 {
		b.stacked++
		b.rows += n
	}
}

func (b *stackCounter) Conv1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	b.count(x)
	return b.Backend.Conv1d(x, w, bias, c)
}

func (b *stackCounter) ConvTranspose1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	b.count(x)
	return b.Backend.ConvTranspose1d(x, w, bias, c)
}

// fusedBackend is epilogueBackend with compute.SnakeWindows too, by its
// own ops: the fused paths the CUDA backend takes, on the CPU.
type fusedBackend struct{ epilogueBackend }

func (b *fusedBackend) WindowSnake(prev compute.Tensor, lead int, x compute.Tensor, trail, keep int, alpha compute.Tensor) (w, h, tail compute.Tensor) {
	w, tail = b.Window(prev, lead, x, trail, keep)
	return w, b.Snake(w, alpha), tail
}

// pushScript is one stream of TestPushManyMatchesAlone: its codes, its
// chunking, the round it starts in and the frames it takes alone before.
type pushScript struct {
	frames, seed int
	sc           dac.StreamConfig
	start, pre   int
	window       bool // a streamer that decodes windows
	lockstep     bool // takes the round's shared frame count, every round
}

// TestPushManyMatchesAlone drives streams of different lengths, chunkings
// and phases (started before the first call, joining later, one fed
// alone first, one decoding windows, each flushing inside a call, one
// Reset and started again) through PushMany in rounds of random frame
// counts, beside a copy of each stream pushed alone with the same calls.
// Every call's result and the streamers' counters must equal the lone
// copy's, bit for bit; each stream's output must equal one-shot decoding
// of its codes; and convolutions must have run on stacks of streams. On
// the plain CPU backend and with the fused ops the CUDA backend uses.
func TestPushManyMatchesAlone(t *testing.T) {
	dir := golden.Pack(t, "dac-tiny")
	scripts := []pushScript{
		{frames: 41, seed: 1, sc: dac.StreamConfig{FirstChunk: 2, Chunk: 4}, lockstep: true},
		{frames: 37, seed: 2, sc: dac.StreamConfig{FirstChunk: 2, Chunk: 4}, lockstep: true},
		{frames: 29, seed: 3, sc: dac.StreamConfig{FirstChunk: 2, Chunk: 4}, pre: 17, lockstep: true},
		{frames: 53, seed: 4, sc: dac.DefaultStreamConfig, start: 3},
		{frames: 12, seed: 5, sc: dac.StreamConfig{FirstChunk: 1, Chunk: 1}},
		{frames: 23, seed: 6, sc: dac.StreamConfig{FirstChunk: 4, Chunk: 16}, window: true},
	}
	for _, name := range []string{"cpu", "fused"} {
		t.Run(name, func(t *testing.T) {
			sc := &stackCounter{Backend: cpu.New(0)}
			var be compute.Backend = sc
			if name == "fused" {
				be = &fusedBackend{epilogueBackend{Backend: sc}}
			}
			m, err := dac.Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			lone, err := dac.Load(dir, cpu.New(0))
			if err != nil {
				t.Fatal(err)
			}
			checkPushMany(t, m, lone, scripts, 7)
			if sc.stacked == 0 {
				t.Fatal("no convolution ran on more than one stream")
			}
			t.Logf("%d convolutions on stacks of %.1f streams on average", sc.stacked, float64(sc.rows)/float64(sc.stacked))
		})
	}
}

// checkPushMany runs the scripts on m through PushMany and on lone through
// each streamer's own Push and Flush (the first stream twice, Reset
// between), comparing as TestPushManyMatchesAlone says.
func checkPushMany(t *testing.T, m, lone *dac.Model, scripts []pushScript, burst int) {
	t.Helper()
	type stream struct {
		pushScript
		codes        [][]int32
		s, ref       *dac.Streamer
		at           int // frames given
		got          []float32
		ended, again bool
	}
	newStreamer := func(m *dac.Model, p pushScript) *dac.Streamer {
		s, err := m.NewStreamerWindow(p.sc, p.window)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	frames := func(codes [][]int32, a, b int) [][dac.Codebooks]int32 {
		var fs [][dac.Codebooks]int32
		for i := a; i < b; i++ {
			fs = append(fs, frameAt(codes, i))
		}
		return fs
	}
	var ss []*stream
	for _, p := range scripts {
		st := &stream{pushScript: p, codes: randomCodes(m.Config(), p.frames, uint64(p.seed)), s: newStreamer(m, p), ref: newStreamer(lone, p)}
		for st.at < p.pre { // fed alone first, in steps of three
			n := min(3, p.pre-st.at)
			fs := frames(st.codes, st.at, st.at+n)
			a, err := st.s.Push(fs...)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := st.ref.Push(fs...)
			if !slices.Equal(a, b) {
				t.Fatal("two copies of a stream pushed alone differ")
			}
			st.got, st.at = append(st.got, a...), st.at+n
		}
		ss = append(ss, st)
	}
	ss[0].again = true
	rng := rand.New(rand.NewPCG(uint64(burst), 11))
	for round := 0; ; round++ {
		var pushes []dac.Push
		var in []*stream
		shared := rng.IntN(burst + 1)
		for _, st := range ss {
			n := rng.IntN(burst + 1)
			if st.lockstep {
				n = shared
			}
			if st.ended || round < st.start || (!st.lockstep && rng.IntN(5) == 0) { // sits this round out
				continue
			}
			n = min(n, st.frames-st.at)
			p := dac.Push{S: st.s, Frames: frames(st.codes, st.at, st.at+n)}
			st.at += n
			p.Flush = st.at == st.frames && rng.IntN(2) == 0
			pushes, in = append(pushes, p), append(in, st)
		}
		if len(pushes) == 0 {
			if !slices.ContainsFunc(ss, func(st *stream) bool { return !st.ended }) {
				break
			}
			continue
		}
		out, err := dac.PushMany(pushes)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
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
				t.Fatalf("round %d stream %d (%d frames of %d, flush %v): PushMany gave %d samples, Push %d, first difference at %d",
					round, k, st.at, st.frames, pushes[k].Flush, len(out[k]), len(want), firstDiff(out[k], want))
			}
			if st.s.Frames() != st.ref.Frames() || st.s.Emitted() != st.ref.Emitted() || st.s.Pending() != st.ref.Pending() {
				t.Fatalf("round %d stream %d: counters %d/%d/%d, alone %d/%d/%d", round, k,
					st.s.Frames(), st.s.Emitted(), st.s.Pending(), st.ref.Frames(), st.ref.Emitted(), st.ref.Pending())
			}
			st.got = append(st.got, out[k]...)
			if !pushes[k].Flush {
				continue
			}
			if ref := decode(t, m, st.codes); !slices.Equal(st.got, ref) {
				t.Fatalf("stream of %d frames (%+v): %d samples, one-shot %d, first difference at %d", st.frames, st.sc, len(st.got), len(ref), firstDiff(st.got, ref))
			}
			st.ended = true
			if st.again { // the streamer takes a new stream, joining the next round
				st.again, st.ended = false, false
				st.s.Reset()
				st.ref.Reset()
				st.codes, st.at, st.got = randomCodes(m.Config(), st.frames, 99), 0, nil
			}
		}
	}
}

// firstDiff is the first index where a and b differ (the shorter length
// when one is a prefix of the other).
func firstDiff(a, b []float32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPushManyBadInput: a bad push anywhere in the call is an error that
// names it, and no stream of the call has changed.
func TestPushManyBadInput(t *testing.T) {
	be := cpu.New(0)
	m := randomModel(t, narrow44k(), be, 8)
	other := randomModel(t, narrow44k(), be, 9)
	mk := func(m *dac.Model) *dac.Streamer {
		s, err := m.NewStreamer(dac.StreamConfig{FirstChunk: 1, Chunk: 2})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c, ended := mk(m), mk(m), mk(other), mk(m)
	good, bad := [dac.Codebooks]int32{}, [dac.Codebooks]int32{}
	bad[3] = 1025
	if _, err := ended.Push(good); err != nil {
		t.Fatal(err)
	}
	if _, err := ended.Flush(); err != nil {
		t.Fatal(err)
	}
	fs := [][dac.Codebooks]int32{good, good}
	for name, pushes := range map[string][]dac.Push{
		"push 1: dac streamer: frame 1 codebook 3 holds 1025": {{S: a, Frames: fs}, {S: b, Frames: [][dac.Codebooks]int32{good, bad}}},
		"push 1: a streamer of another DAC model":             {{S: a, Frames: fs}, {S: c, Frames: fs}},
		"push 2: the streamer is in the call twice":           {{S: a, Frames: fs}, {S: b, Frames: fs}, {S: a, Frames: fs}},
		"push 1: dac streamer: push after Flush":              {{S: a, Frames: fs}, {S: ended, Frames: fs}},
		"push 0: dac streamer: Flush with no frames":          {{S: b, Flush: true}},
		"push 1: no streamer":                                 {{S: a, Frames: fs}, {Frames: fs}},
	} {
		_, err := dac.PushMany(pushes)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
		if a.Frames() != 0 || b.Frames() != 0 {
			t.Errorf("%s: a rejected call added frames (%d, %d)", name, a.Frames(), b.Frames())
		}
	}
	if out, err := dac.PushMany(nil); out != nil || err != nil {
		t.Errorf("no pushes: %v, %v", out, err)
	}
}

// TestStackedStages feeds latent columns straight into decoder states,
// few at a time so that early pushes leave short windows and carried
// columns of many lengths: stacks then split and merge between stages.
// Each stream's samples, stacked with whichever others share a stage's
// shape, must equal the same stream's pushed alone, bit for bit.
func TestStackedStages(t *testing.T) {
	m := randomModel(t, narrow44k(), cpu.New(0), 21)
	const n = 6
	h := m.Config().HiddenSize
	rng := rand.New(rand.NewPCG(21, 2))
	var splits, merges, rows int
	for rep := range 4 {
		l, err := m.NewLatentStreams(n)
		if err != nil {
			t.Fatal(err)
		}
		ended := make([]bool, n)
		for round := 0; slices.Contains(ended, false); round++ {
			xs, final := make([][]float32, n), make([]bool, n)
			shared := 1 + rng.IntN(4)
			for i := range xs {
				if ended[i] {
					continue
				}
				cols := rng.IntN(5)
				if rng.IntN(2) == 0 {
					cols = shared
				}
				if rep == 0 && round < 2 {
					// 3 then 1 column, beside 4 at once: the first
					// stage's windows differ (carried 6 columns and
					// none), the next stage's are the same.
					cols = [2][n]int{{3, 0, 2, 2, 3, 0}, {1, 4, 2, 2, 1, 4}}[round][i]
				}
				xs[i] = make([]float32, h*cols)
				for j := range xs[i] {
					xs[i][j] = float32(rng.NormFloat64())
				}
				final[i] = round > 6 && rng.IntN(6) == 0
				ended[i] = final[i]
			}
			stacked, alone, split, merged := l.Push(xs, final)
			for i := range xs {
				if !slices.Equal(stacked[i], alone[i]) {
					t.Fatalf("rep %d round %d stream %d (%d columns, final %v): stacked %d samples, alone %d, first difference at %d",
						rep, round, i, len(xs[i])/h, final[i], len(stacked[i]), len(alone[i]), firstDiff(stacked[i], alone[i]))
				}
				if len(alone[i]) > 0 {
					rows++
				}
			}
			if split {
				splits++
			}
			if merged {
				merges++
			}
		}
	}
	t.Logf("%d emissions; %d calls split a stack, %d merged rows of different stacks", rows, splits, merges)
	if splits == 0 || merges == 0 {
		t.Errorf("stacks split in %d calls and merged in %d: the test no longer reaches both", splits, merges)
	}
}
