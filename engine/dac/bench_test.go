package dac_test

import (
	"fmt"
	"testing"
	"time"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// benchModels: the tiny golden pack and (without -short) a random
// full-size dac_44khz decoder.
func benchModels(b *testing.B) []struct {
	name string
	m    *dac.Model
} {
	be := cpu.New(0)
	tiny, err := dac.Load(golden.Pack(b, "dac-tiny"), be)
	if err != nil {
		b.Fatal(err)
	}
	ms := []struct {
		name string
		m    *dac.Model
	}{{"tiny", tiny}}
	if !testing.Short() {
		ms = append(ms, struct {
			name string
			m    *dac.Model
		}{"full-44k", randomModel(b, dac.Dac44kHz(), be, 13)})
	}
	return ms
}

// reportSpeed adds ms per frame and the real-time factor (seconds of audio
// per second of wall time; > 1 is faster than real time).
func reportSpeed(b *testing.B, m *dac.Model, frames int, per time.Duration) {
	cfg := m.Config()
	audio := float64(frames*cfg.HopLength) / float64(cfg.SamplingRate)
	b.ReportMetric(float64(per.Microseconds())/1000/float64(frames), "ms/frame")
	b.ReportMetric(audio/per.Seconds(), "x_realtime")
}

// BenchmarkDecode times one-shot decoding of 32 frames (0.37 s of audio).
func BenchmarkDecode(b *testing.B) {
	const frames = 32
	for _, mm := range benchModels(b) {
		b.Run(mm.name, func(b *testing.B) {
			cfg := mm.m.Config()
			codes := randomCodes(cfg, frames, 1)
			b.ResetTimer()
			for range b.N {
				decode(b, mm.m, codes)
			}
			reportSpeed(b, mm.m, frames, b.Elapsed()/time.Duration(b.N))
			b.ReportMetric(cfg.FLOPsPerFrame()*frames*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkStream times streamed decoding per chunk configuration and
// reports the overhead ratio (streamed / one-shot time, both measured in
// this run). The full-size decoder runs only the larger chunks: on the CPU
// a one-frame chunk re-decodes ~20 frames per frame.
func BenchmarkStream(b *testing.B) {
	const frames = 40
	for _, mm := range benchModels(b) {
		cfg := mm.m.Config()
		codes := randomCodes(cfg, frames, 2)
		start := time.Now()
		decode(b, mm.m, codes)
		oneShot := time.Since(start)
		for _, c := range conformance.StreamCases {
			if mm.name != "tiny" && c.Chunk < 16 {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", mm.name, c.Name), func(b *testing.B) {
				for i := range b.N {
					if _, err := conformance.CompareStream(mm.m, codes, make([]float32, frames*cfg.HopLength), c, uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
				per := b.Elapsed() / time.Duration(b.N)
				reportSpeed(b, mm.m, frames, per)
				b.ReportMetric(per.Seconds()/oneShot.Seconds(), "x_oneshot_time")
			})
		}
	}
}

// BenchmarkPushMany times steady 16-frame emissions of N streams at once:
// one PushMany call ("many") against each stream's own Push ("alone"),
// in the same run. x_realtime counts every stream's audio. Every stream
// emits the same shapes, so PushMany stacks all N at every stage.
func BenchmarkPushMany(b *testing.B) {
	const chunk = 16
	sc := dac.StreamConfig{FirstChunk: chunk, Chunk: chunk}
	for _, mm := range benchModels(b) {
		codes := randomCodes(mm.m.Config(), chunk, 3)
		frames := make([][dac.Codebooks]int32, chunk)
		for i := range frames {
			frames[i] = frameAt(codes, i)
		}
		ns := []int{1, 4, 8}
		if mm.name != "tiny" { // about 5 s a stream's emission on a 2-core CPU
			ns = []int{1, 4}
		}
		for _, n := range ns {
			for _, way := range []string{"many", "alone"} {
				b.Run(fmt.Sprintf("%s/N=%d/%s", mm.name, n, way), func(b *testing.B) {
					pushes := make([]dac.Push, n)
					for i := range pushes {
						s, err := mm.m.NewStreamer(sc)
						if err != nil {
							b.Fatal(err)
						}
						for range 2 { // the first emission: steady from here
							if _, err := s.Push(frames...); err != nil {
								b.Fatal(err)
							}
						}
						pushes[i] = dac.Push{S: s, Frames: frames}
					}
					b.ResetTimer()
					for range b.N {
						if way == "many" {
							if _, err := dac.PushMany(pushes); err != nil {
								b.Fatal(err)
							}
							continue
						}
						for _, p := range pushes {
							if _, err := p.S.Push(p.Frames...); err != nil {
								b.Fatal(err)
							}
						}
					}
					reportSpeed(b, mm.m, n*chunk, b.Elapsed()/time.Duration(b.N))
				})
			}
		}
	}
}
