//go:build cuda

package gpu

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"zonostream/engine"
	"zonostream/engine/speaker"
	"zonostream/internal/golden"
	"zonostream/internal/randmodel"
)

// TestSpeakerRealShape embeds with a randomly initialised full-size
// ResNet293 (64 planes, blocks [10 20 64 3]) on both backends: a 1 s clip
// must agree (cosine ≥ 0.9999, issue 8), and the time of a 10 s clip on
// the GPU is logged (issue 8's H200 figure).
func TestSpeakerRealShape(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("full-size speaker model in -short")
	}
	clip := func(seconds float64) []float32 {
		r := rand.New(rand.NewPCG(5, 6))
		s := make([]float32, int(seconds*speaker.SampleRate))
		for i := range s {
			x := float64(i) / speaker.SampleRate
			s[i] = float32(0.3*math.Sin(2*math.Pi*140*x) + 0.1*math.Sin(2*math.Pi*420*x) + 0.02*r.NormFloat64())
		}
		return s
	}
	ctx := context.Background()
	mg := randmodel.Speaker(gb, 64, speaker.RealBlocks, 7)
	mc := randmodel.Speaker(cb, 64, speaker.RealBlocks, 7)
	short := clip(1)
	vg, err := mg.Embed(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := mc.Embed(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	var dot, ng, nc float64
	for i := range vg {
		dot += float64(vg[i]) * float64(vc[i])
		ng += float64(vg[i]) * float64(vg[i])
		nc += float64(vc[i]) * float64(vc[i])
	}
	cos := dot / math.Sqrt(ng*nc)
	t.Logf("full-size speaker, 1 s clip: cosine GPU vs CPU %.9f", cos)
	if !(cos >= 0.9999) {
		t.Fatalf("cosine %.9f < 0.9999", cos)
	}
	long := clip(10)
	if _, err := mg.Embed(ctx, long); err != nil { // warm-up: allocator and JIT
		t.Fatal(err)
	}
	var best time.Duration
	for i := 0; i < 3; i++ {
		d := gb.Time(func() {
			if _, err := mg.Embed(ctx, long); err != nil {
				t.Fatal(err)
			}
		})
		if best == 0 || d < best {
			best = d
		}
	}
	t.Logf("full-size speaker, 10 s clip on the GPU: %.1f ms (best of 3; %.4f s per second of audio)", float64(best)/1e6, best.Seconds()/10)
}

// TestCUDASoak runs 200 short utterances on the tiny golden models with
// random knobs and random cancels (issue 11): device memory reserved by
// the allocator, Go heap and goroutines must stay flat after a warm-up.
func TestCUDASoak(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("soak in -short")
	}
	e, err := engine.Load(gb, engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	texts := []string{"Hello there.", "A short test of the engine.", "Numbers like 42 and 1999.", "Stop, then go again!"}
	one := func(i int) {
		k := engine.DefaultKnobs()
		k.Sampling.Temperature = float32(0.5 + r.Float64())
		k.Sampling.MinP = float32(r.Float64() * 0.2)
		k.PitchStd = float32(r.Float64() * 100)
		k.SpeakingRate = float32(5 + r.Float64()*25)
		for j := range k.Emotion {
			k.Emotion[j] = float32(r.Float64())
		}
		k.Emotion[7] += 0.1
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := e.Synthesize(ctx, engine.Request{Text: texts[i%len(texts)], Language: "en-us", Knobs: k,
			Seed: uint64(i), MaxSeconds: 0.1 + r.Float64()*0.3})
		if err != nil {
			t.Fatalf("utterance %d: %v", i, err)
		}
		stopAt := -1
		if r.IntN(3) == 0 {
			stopAt = r.IntN(20)
		}
		n := 0
		for ev := range s.Events() {
			if ev.Kind == engine.FrameDone {
				if n == stopAt {
					cancel()
				}
				n++
			}
		}
		if err := s.Wait(); err != nil && ctx.Err() == nil {
			t.Fatalf("utterance %d: %v", i, err)
		}
	}
	const warm, total = 20, 200
	for i := 0; i < warm; i++ {
		one(i)
	}
	runtime.GC()
	st0, g0, r0 := gb.MemStats(), runtime.NumGoroutine(), gb.MemoryInUse()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := warm; i < total; i++ {
		one(i)
	}
	runtime.GC()
	st1, g1, r1 := gb.MemStats(), runtime.NumGoroutine(), gb.MemoryInUse()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	t.Logf("after %d utterances (%d warm-up): device reserved by all lanes %d → %d MiB; main lane reserved %d → %d MiB, in use %d → %d MiB, driver allocations %d → %d; Go heap %d → %d MiB; goroutines %d → %d",
		total, warm, r0>>20, r1>>20, st0.Reserved>>20, st1.Reserved>>20, st0.InUse>>20, st1.InUse>>20, st0.DriverAllocs, st1.DriverAllocs,
		m0.HeapInuse>>20, m1.HeapInuse>>20, g0, g1)
	if r1 > r0+64<<20 {
		t.Errorf("device memory grew by %d MiB", (r1-r0)>>20)
	}
	if m1.HeapInuse > m0.HeapInuse+32<<20 {
		t.Errorf("Go heap grew by %d MiB", (m1.HeapInuse-m0.HeapInuse)>>20)
	}
	if g1 > g0+2 {
		t.Errorf("goroutines %d → %d", g0, g1)
	}
}
