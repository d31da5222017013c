//go:build cuda

package gpu

import (
	"flag"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/sample"
	"zonostream/engine/zonos"
	"zonostream/internal/randmodel"
)

// The profiling tests run only with -profile, under a profiler that
// records the ranges they mark (ProfileRange); they assert nothing but
// that the work runs.
var (
	profile       = flag.Bool("profile", false, "run the TestProfile* tests (under ncu or nsys with --profile-from-start off)")
	profileBatch  = flag.Int("profile.batch", 4, "utterances in TestProfileBatchStep's batch")
	profileFrames = flag.Int("profile.frames", dac.DefaultStreamConfig.Chunk, "frames of TestProfileVocoder's steady emission")
)

// needProfile skips a profiling test without -profile.
func needProfile(t *testing.T) {
	t.Helper()
	need(t)
	if !*profile {
		t.Skip("pass -profile and run under a profiler")
	}
}

// TestProfileDecodeStep runs, each inside a profiler range, one decode step
// of the real-shape hybrid (random weights) as generation runs it (the
// replayed step graph) and op by op, then the prefill of a 61-position
// prompt, then one steady 16-frame chunk of the streamed 44 kHz DAC, for
// a kernel profile (ranges in that order):
//
//	ncu --clock-control none --profile-from-start off \
//	  --metrics gpu__time_duration.sum --csv ./gpu.test -test.run TestProfileDecodeStep -profile
func TestProfileDecodeStep(t *testing.T) {
	needProfile(t)
	m, prefix, mask := realHybridPrompt(t, 60)
	for _, eager := range []bool{false, true} {
		o := zonos.GenerateOptions{MaxNewTokens: 16, CFGScale: 2, Sampling: sample.Defaults(), Seed: 1, ForbidEOS: true, EagerSteps: eager}
		dec := m.NewDecoder(prefix, prefix.Shape()[1]+32, o)
		tok, err := dec.Prefill([][zonos.NumCodebooks]int32{mask})
		if err != nil {
			t.Fatal(err)
		}
		hist := make([][]int32, zonos.NumCodebooks)
		step := func() {
			var col [zonos.NumCodebooks]int32
			copy(col[:], tok)
			for k := range hist {
				hist[k] = append(hist[k], col[k])
			}
			if tok, err = dec.Step(col, hist); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 3; i++ {
			step()
		}
		gb.ProfileRange(step)
		dec.Close()
	}
	st := m.NewState(prefix.Shape()[1] + 4)
	gb.ProfileRange(func() {
		if _, err := m.Prefill(st, prefix, [][zonos.NumCodebooks]int32{mask}, 2, nil); err != nil {
			t.Fatal(err)
		}
	})

	profileVocoderChunk(t, 16)
}

// TestProfileVocoder runs one steady emission of the streamed real-shape
// 44 kHz DAC (-profile.frames frames, the default steady chunk unless
// given) inside a profiler range, for a kernel profile of the vocoder
// alone:
//
//	ncu --clock-control none --profile-from-start off \
//	  --metrics gpu__time_duration.sum,launch__grid_size --csv ./gpu.test -test.run TestProfileVocoder -profile
func TestProfileVocoder(t *testing.T) {
	needProfile(t)
	profileVocoderChunk(t, *profileFrames)
}

// profileVocoderChunk streams the real-shape 44 kHz DAC (random weights)
// past its first chunk and look-ahead in chunks of the given frames, then
// pushes one more chunk inside a profiler range.
func profileVocoderChunk(t *testing.T, frames int) {
	t.Helper()
	dcfg := dac.Dac44kHz()
	sm, err := realDAC(t, gb).NewStreamer(dac.StreamConfig{FirstChunk: 4, Chunk: frames})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	frame := func() (f [dac.Codebooks]int32) {
		for k := range f {
			f[k] = int32(r.IntN(dcfg.CodebookSize))
		}
		return f
	}
	for i := 0; i < 40+2*frames; i++ { // past the first chunk and the look-ahead
		if _, err := sm.Push(frame()); err != nil {
			t.Fatal(err)
		}
	}
	fs := make([][dac.Codebooks]int32, frames)
	for i := range fs {
		fs[i] = frame()
	}
	gb.ProfileRange(func() {
		if _, err := sm.Push(fs...); err != nil {
			t.Fatal(err)
		}
	})
}

// realHybridPrompt builds the real-shape hybrid with random weights on gb
// and the conditioning prefix of a prompt of n phoneme ids (BOS, n − 2
// symbols, EOS; English), with the all-MASK column a prefill feeds.
func realHybridPrompt(t *testing.T, n int) (*zonos.Model, compute.Tensor, [zonos.NumCodebooks]int32) {
	t.Helper()
	cfg := zonos.RealConfig(zonos.Hybrid)
	f, err := randmodel.Zonos(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := zonos.New(gb, cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, n)
	ids[0], ids[n-1] = 2, 3
	for i := 1; i < n-1; i++ {
		ids[i] = int32(4 + i%150)
	}
	prefix, _, err := m.Prefix(zonos.Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {24}}})
	if err != nil {
		t.Fatal(err)
	}
	mask := [zonos.NumCodebooks]int32{}
	for k := range mask {
		mask[k] = zonos.MASK
	}
	return m, prefix, mask
}

// TestProfileBatchStep runs one replayed decode step of a batch of
// -profile.batch utterances (4 unless given) of the real-shape hybrid
// inside a profiler range, for a kernel profile of the batched step
// (zonos bench's "batch" rows):
//
//	ncu --clock-control none --profile-from-start off \
//	  --metrics gpu__time_duration.sum --csv ./gpu.test -test.run TestProfileBatchStep -profile
func TestProfileBatchStep(t *testing.T) {
	needProfile(t)
	n := max(1, *profileBatch)
	m, prefix, mask := realHybridPrompt(t, 60)
	o := zonos.GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), ForbidEOS: true}
	bt, err := m.NewBatch(n, prefix.Shape()[1]+32)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	tok := make([][]int32, n)
	for u := range tok {
		o.Seed = uint64(1 + u)
		if tok[u], err = bt.Join(u, prefix, [][zonos.NumCodebooks]int32{mask}, o); err != nil {
			t.Fatal(err)
		}
	}
	step := func() {
		cols := make([][zonos.NumCodebooks]int32, n)
		for u := range cols {
			for k := range cols[u] {
				cols[u][k] = min(tok[u][k], zonos.CodebookSize-1)
			}
		}
		if tok, err = bt.Step(cols, make([][][]int32, n)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		step()
	}
	gb.ProfileRange(step)
}
