package speaker_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/speaker"
	"zonostream/internal/golden"
	"zonostream/internal/randmodel"
)

// benchClip is a voiced test signal of the given length at 16 kHz.
func benchClip(seconds float64) []float32 {
	r := rand.New(rand.NewPCG(3, 4))
	s := make([]float32, int(seconds*speaker.SampleRate))
	for i := range s {
		t := float64(i) / speaker.SampleRate
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
		m, err := speaker.Load(filepath.Join(p, speaker.WeightsFile), filepath.Join(p, speaker.LDAFile), be)
		if err != nil {
			b.Fatal(err)
		}
		runEmbedBench(b, m, benchClip(10))
	})
	b.Run("resnet293-10s", func(b *testing.B) {
		if testing.Short() {
			b.Skip("full-size ResNet293 skipped with -short")
		}
		m := randmodel.Speaker(be, 64, speaker.RealBlocks, 7)
		runEmbedBench(b, m, benchClip(10))
	})
}

func runEmbedBench(b *testing.B, m *speaker.Model, clip []float32) {
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := m.Embed(ctx, clip)
		if err != nil || len(v) != 128 {
			b.Fatal(len(v), err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/(float64(len(clip))/speaker.SampleRate), "s/audio_s")
}

func TestRandomFullSizeShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size ResNet293 skipped with -short")
	}
	m := randmodel.Speaker(cpu.New(0), 64, speaker.RealBlocks, 7)
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
