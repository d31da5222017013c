package speaker

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/cpu"
	"zonostream/internal/golden"
)

// randomModel builds a model of the given geometry with random weights
// (He-scaled convolutions, BatchNorm already folded), for benchmarks of the
// real ResNet293 without its checkpoint.
func randomModel(b compute.SpeakerBackend, inPlanes int, blocks [4]int, seed uint64) *Model {
	r := rand.New(rand.NewPCG(seed, 1))
	randn := func(n int, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * std)
		}
		return v
	}
	mk := func(cout, cin, k int, spec compute.Conv2dSpec) conv {
		return conv{b.FromF32(randn(cout*cin*k*k, math.Sqrt(2/float64(cin*k*k))), cout, cin, k, k), b.FromF32(randn(cout, 0.05), cout), spec}
	}
	m := &Model{b: b, Config: Config{InPlanes: inPlanes, Blocks: blocks, Embed: 256, LDA: 128}}
	m.stem = mk(inPlanes, 1, 3, compute.Conv2dSpec{Padding: 1, ReLU: true})
	cin := inPlanes
	for s := 0; s < 4; s++ {
		w := inPlanes << s
		m.Config.Widths[s] = w
		for i := 0; i < blocks[s]; i++ {
			st := 1
			if s > 0 && i == 0 {
				st = 2
			}
			blk := block{c1: mk(w, cin, 3, compute.Conv2dSpec{Stride: st, Padding: 1, ReLU: true}), c2: mk(w, w, 3, compute.Conv2dSpec{Padding: 1})}
			if st != 1 || cin != w {
				d := mk(w, cin, 1, compute.Conv2dSpec{Stride: st})
				blk.down = &d
			}
			m.stages[s] = append(m.stages[s], blk)
			cin = w
		}
	}
	P := cin * NMels / 8
	m.Config.PoolIn = P
	m.att1 = mk(128, P, 1, compute.Conv2dSpec{ReLU: true})
	m.att2 = mk(P, 128, 1, compute.Conv2dSpec{})
	m.bnW, m.bnB = b.FromF32(randn(256*2*P, 1/math.Sqrt(float64(2*P))), 256, 2*P), b.FromF32(randn(256, 0.05), 256)
	m.ldaW, m.ldaB = b.FromF32(randn(128*256, 1/16.0), 128, 256), b.FromF32(randn(128, 0.05), 128)
	return m
}

func benchClip(seconds float64) []float32 {
	r := rand.New(rand.NewPCG(3, 4))
	s := make([]float32, int(seconds*SampleRate))
	for i := range s {
		t := float64(i) / SampleRate
		s[i] = float32(0.3*math.Sin(2*math.Pi*140*t) + 0.15*math.Sin(2*math.Pi*280*t) + 0.02*r.NormFloat64())
	}
	return s
}

// BenchmarkEmbed reports seconds of compute per second of audio
// ("s/audio_s") for the golden tiny model on a 10 s clip and, without
// -short, for a randomly initialised full-size ResNet293 ([10 20 64 3] ×
// 64) on a 10 s clip (issue 8's figure; minutes on a CPU).
func BenchmarkEmbed(b *testing.B) {
	be := cpu.New(0)
	b.Run("tiny-10s", func(b *testing.B) {
		p := golden.Pack(b, "speaker-tiny")
		m, err := Load(filepath.Join(p, WeightsFile), filepath.Join(p, LDAFile), be)
		if err != nil {
			b.Fatal(err)
		}
		runEmbedBench(b, m, benchClip(10))
	})
	b.Run("resnet293-10s", func(b *testing.B) {
		if testing.Short() {
			b.Skip("full-size ResNet293 skipped with -short")
		}
		m := randomModel(be, 64, [4]int{10, 20, 64, 3}, 7)
		runEmbedBench(b, m, benchClip(10))
	})
}

func runEmbedBench(b *testing.B, m *Model, clip []float32) {
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := m.Embed(ctx, clip)
		if err != nil || len(v) != 128 {
			b.Fatal(len(v), err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/(float64(len(clip))/SampleRate), "s/audio_s")
}

func TestRandomFullSizeShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size ResNet293 skipped with -short")
	}
	m := randomModel(cpu.New(0), 64, [4]int{10, 20, 64, 3}, 7)
	v, err := m.Vectors(context.Background(), benchClip(0.5))
	if err != nil || len(v.Embedding) != 256 || len(v.LDA) != 128 {
		t.Fatalf("%d/%d values, %v", len(v.Embedding), len(v.LDA), err)
	}
	for _, x := range v.LDA {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatal("non-finite output")
		}
	}
}
