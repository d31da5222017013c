package zonos_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
	"zonostream/internal/randmodel"
)

// benchModel is a model to benchmark plus the bytes of weights one decode
// step reads (every backbone projection, norm and head; embeddings and the
// conditioner are not read by a step).
type benchModel struct {
	name      string
	m         *zonos.Model
	stepBytes int64
}

var (
	fullOnce sync.Once
	fullM    *benchModel
	fullErr  error
)

func benchModels(b *testing.B) []*benchModel {
	var out []*benchModel
	for _, v := range []string{"hybrid", "transformer"} {
		dir := golden.Pack(b, "zonos-"+v+"-tiny")
		cfg, err := zonos.LoadConfig(filepath.Join(dir, "config.json"))
		if err != nil {
			b.Fatal(err)
		}
		f := golden.Open(b, "zonos-"+v+"-tiny", "model.safetensors")
		m, err := zonos.New(cpu.New(0), cfg, f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, &benchModel{"tiny-" + v, m, zonos.StepBytes(f)})
	}
	if testing.Short() {
		return out
	}
	fullOnce.Do(func() {
		cfg := zonos.RealConfig(zonos.Hybrid)
		f, err := randmodel.Zonos(cfg, 1)
		if err != nil {
			fullErr = err
			return
		}
		m, err := zonos.New(cpu.New(0), cfg, f)
		if err != nil {
			fullErr = err
			return
		}
		fullM = &benchModel{"full-hybrid", m, zonos.StepBytes(f)}
		runtime.GC()
	})
	if fullErr != nil {
		b.Fatal(fullErr)
	}
	return append(out, fullM)
}

func benchPrefix(b *testing.B, m *zonos.Model, phonemes int) compute.Tensor {
	ids := make([]int32, phonemes)
	ids[0], ids[phonemes-1] = 2, 3
	for i := 1; i < phonemes-1; i++ {
		ids[i] = int32(4 + i%180)
	}
	p, _, err := m.Prefix(zonos.Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {24}}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// maskColumn is the prefill's first delayed column: MASK in every codebook.
var maskColumn = func() (c [zonos.NumCodebooks]int32) {
	for k := range c {
		c[k] = zonos.MASK
	}
	return c
}()

// BenchmarkPrefill: an 80-position prompt (prefix + one column), CFG batch 2.
func BenchmarkPrefill(b *testing.B) {
	for _, bm := range benchModels(b) {
		b.Run(bm.name, func(b *testing.B) {
			prefix := benchPrefix(b, bm.m, 80-10)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st := bm.m.NewState(prefix.Shape()[1] + 2)
				if _, err := bm.m.Prefill(st, prefix, [][zonos.NumCodebooks]int32{maskColumn}, 2, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/prefill")
		})
	}
}

// BenchmarkDecodeStep: one CFG decode step after a short prefill, with the
// effective weight-read rate beside the machine's own read bandwidth.
func BenchmarkDecodeStep(b *testing.B) {
	bw := measureReadBandwidth()
	for _, bm := range benchModels(b) {
		b.Run(bm.name, func(b *testing.B) {
			prefix := benchPrefix(b, bm.m, 20)
			st := bm.m.NewState(prefix.Shape()[1] + 1 + b.N + 1)
			if _, err := bm.m.Prefill(st, prefix, [][zonos.NumCodebooks]int32{maskColumn}, 2, nil); err != nil {
				b.Fatal(err)
			}
			col := [zonos.NumCodebooks]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := bm.m.Step(st, col, 2, nil); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(sec*1e3, "ms/step")
			b.ReportMetric(float64(bm.stepBytes)/sec/1e9, "GB/s-weights")
			b.ReportMetric(bw/1e9, "GB/s-mem-read")
			b.ReportMetric(float64(bm.stepBytes)/1e9, "GB/step")
		})
	}
}

// measureReadBandwidth sums a 1 GiB buffer on every core (bytes/s): the
// memory read ceiling of this machine, measured in the same run.
func measureReadBandwidth() float64 {
	const n = 1 << 28 // float32s = 1 GiB
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = float32(i & 7)
	}
	w := runtime.GOMAXPROCS(0)
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		start := time.Now()
		var wg sync.WaitGroup
		sums := make([]float32, w*16)
		for g := 0; g < w; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				var s0, s1, s2, s3 float32
				lo, hi := g*n/w, (g+1)*n/w
				for i := lo; i+4 <= hi; i += 4 {
					s0 += buf[i]
					s1 += buf[i+1]
					s2 += buf[i+2]
					s3 += buf[i+3]
				}
				sums[g*16] = s0 + s1 + s2 + s3
			}(g)
		}
		wg.Wait()
		if r := float64(4*n) / time.Since(start).Seconds(); r > best {
			best = r
		}
		_ = fmt.Sprint(sums[0])
	}
	return best
}
