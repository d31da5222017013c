//go:build cuda

package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"zonostream/engine/dac"
)

// BenchmarkPushManyGPU measures the vocoder work of n streams in steady
// state on the full-size DAC (random weights) on the side lane: one
// 32-frame emission for each, as one dac.PushMany ("many") against one
// Push per stream ("alone"). frames/s is audio frames vocoded per second
// of wall time (86 a second of audio).
func BenchmarkPushManyGPU(b *testing.B) {
	if noGPU != nil {
		b.Skip("no CUDA device:", noGPU)
	}
	m := realDAC(b, gb.Lane())
	sc := dac.StreamConfig{FirstChunk: 32, Chunk: 32}
	r := rand.New(rand.NewPCG(3, 4))
	chunk := func() [][dac.Codebooks]int32 {
		c := make([][dac.Codebooks]int32, 32)
		for f := range c {
			for k := range c[f] {
				c[f][k] = int32(r.IntN(1024))
			}
		}
		return c
	}
	for _, n := range []int{1, 8, 16, 32} {
		for _, mode := range []string{"alone", "many"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				ss := make([]*dac.Streamer, n)
				for i := range ss {
					s, err := m.NewStreamer(sc)
					if err != nil {
						b.Fatal(err)
					}
					defer s.Reset()
					for w := 0; w < 2; w++ { // past the first emission and the ramp
						if _, err := s.Push(chunk()...); err != nil {
							b.Fatal(err)
						}
					}
					ss[i] = s
				}
				in := chunk()
				b.ResetTimer()
				for it := 0; it < b.N; it++ {
					if mode == "many" {
						ps := make([]dac.Push, n)
						for i, s := range ss {
							ps[i] = dac.Push{S: s, Frames: in}
						}
						if _, err := dac.PushMany(ps); err != nil {
							b.Fatal(err)
						}
						continue
					}
					for _, s := range ss {
						if _, err := s.Push(in...); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N*n*len(in))/b.Elapsed().Seconds(), "frames/s")
			})
		}
	}
}
