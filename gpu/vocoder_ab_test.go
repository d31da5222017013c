//go:build cuda

package gpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"zonostream/engine/dac"
)

// TestVocoderVariants times steady emissions of the streamed real-shape
// 44 kHz DAC (random weights; the default steady chunk, or
// ZONOS_VOCODER_AB_FRAMES frames) under the backend's measurement
// switches, alternating the variants round by round so that a slower
// stretch of the machine falls on all of them, and logs the median device
// time per emission (the backend's event timer, host launches included, as
// the bench's vocoder figure). ZONOS_VOCODER_AB_ONLY=text keeps the
// default and the variants whose names contain text. It is a measurement,
// not a check: skipped unless ZONOS_VOCODER_AB is set.
func TestVocoderVariants(t *testing.T) {
	need(t)
	if os.Getenv("ZONOS_VOCODER_AB") == "" {
		t.Skip("set ZONOS_VOCODER_AB=1 to time the vocoder's variants")
	}
	type variant struct {
		name string
		set  func()
	}
	force, rowsOff, copiesOff, tileMax, splitPer, prep, pipe, fold := convTileForce, reduceRowsOff, copyRowsOff, convTileMax, convSplitPer, convPrep, convPipe, convFold
	reset := func() {
		convTileForce, reduceRowsOff, copyRowsOff, convTileMax, convSplitPer, convPrep, convPipe, convFold = force, rowsOff, copiesOff, tileMax, splitPer, prep, pipe, fold
	}
	defer reset()
	variants := []variant{
		{"default", func() {}},
		{"one k step in flight (conv_tcp)", func() { convPipe = false }},
		{"weights gathered and split at every k step (conv_tc)", func() { convPrep = false }},
		{"widest tile 64", func() { convTileMax = 64 }},
		{"flat reduce and copies", func() { reduceRowsOff, copyRowsOff = true, true }},
		{"split 128", func() { convSplitPer = 128 }},
		{"split 256", func() { convSplitPer = 256 }},
		{"split 768", func() { convSplitPer = 768 }},
		{"splits never folded", func() { convFold = 0 }},
		{"splits never folded, split 768", func() { convFold, convSplitPer = 0, 768 }},
		{"splits folded from half a wave", func() { convFold = 50 }},
		{"splits folded from two waves", func() { convFold = 200 }},
	}
	if only := os.Getenv("ZONOS_VOCODER_AB_ONLY"); only != "" { // variants whose names contain it, and the default
		variants = slices.DeleteFunc(variants, func(v variant) bool {
			return v.name != "default" && !strings.Contains(v.name, only)
		})
	}
	frames := envInt("ZONOS_VOCODER_AB_FRAMES", dac.DefaultStreamConfig.Chunk)
	cfg := dac.Dac44kHz()
	sm, err := realDAC(t, gb).NewStreamer(dac.StreamConfig{FirstChunk: frames, Chunk: frames})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	chunk := func() [][dac.Codebooks]int32 {
		fs := make([][dac.Codebooks]int32, frames)
		for i := range fs {
			for k := range fs[i] {
				fs[i][k] = int32(r.IntN(cfg.CodebookSize))
			}
		}
		return fs
	}
	emit := func() {
		if _, err := sm.Push(chunk()...); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ { // past the look-ahead; every variant's kernels loaded
		emit()
	}
	times := make([][]float64, len(variants))
	for round := 0; round < 12; round++ {
		for j := range variants {
			v := (j + round) % len(variants)
			reset()
			variants[v].set()
			emit() // the variant's first emission warms its allocations
			for i := 0; i < 3; i++ {
				times[v] = append(times[v], float64(gb.Time(emit))/float64(time.Millisecond))
			}
		}
	}
	audio := float64(frames) * 512 / 44100.0 * 1000 // ms of audio per emission
	t.Logf("steady emissions of %d frames", frames)
	for v, ts := range times {
		slices.Sort(ts)
		med := ts[len(ts)/2]
		t.Logf("%-48s emission p50 %.3f ms (p10 %.3f, p90 %.3f, n %d): %.1f× real time", variants[v].name, med, ts[len(ts)/10], ts[len(ts)*9/10], len(ts), audio/med)
	}
}

// TestVocoderSchedule times each emission of the bench's vocoder figure
// on the streamed real-shape 44 kHz DAC (random weights): 172 random
// frames pushed one at a time under the default stream configuration
// (first push recorded, as the bench does), then the flush. It logs, per
// emission in order, the frames it took, the samples it gave and the
// median device time over the rounds (the backend's event timer, host
// launches and read-backs included), and the whole run's real-time factor:
// where the bench's vocoder time goes. A measurement, not a check: skipped
// unless ZONOS_VOCODER_AB is set.
func TestVocoderSchedule(t *testing.T) {
	need(t)
	if os.Getenv("ZONOS_VOCODER_AB") == "" {
		t.Skip("set ZONOS_VOCODER_AB=1 to time the bench's vocoder schedule")
	}
	cfg := dac.Dac44kHz()
	codec := realDAC(t, gb)
	sc := dac.DefaultStreamConfig
	if err := codec.RecordFirstPush(sc); err != nil {
		t.Fatal(err)
	}
	const frames = 172
	r := rand.New(rand.NewPCG(3, 4))
	codes := make([][dac.Codebooks]int32, frames)
	for i := range codes {
		for k := range codes[i] {
			codes[i][k] = int32(r.IntN(cfg.CodebookSize))
		}
	}
	type emission struct{ frame, samples int }
	var shape []emission
	var times [][]float64
	var totals []float64
	for round := 0; round < 6; round++ {
		sm, err := codec.NewStreamer(sc)
		if err != nil {
			t.Fatal(err)
		}
		k, total := 0, 0.0
		record := func(frame int, f func() []float32) {
			var pcm []float32
			d := float64(gb.Time(func() { pcm = f() })) / float64(time.Millisecond)
			total += d
			if len(pcm) == 0 {
				return
			}
			if round == 0 {
				shape = append(shape, emission{frame, len(pcm)})
				times = append(times, nil)
			}
			if k >= len(times) || shape[k].samples != len(pcm) {
				t.Fatalf("round %d: emission %d gave %d samples, round 0 gave a different schedule", round, k, len(pcm))
			}
			times[k] = append(times[k], d)
			k++
		}
		for i, f := range codes {
			record(i+1, func() []float32 {
				pcm, err := sm.Push(f)
				if err != nil {
					t.Fatal(err)
				}
				return pcm
			})
		}
		record(-1, func() []float32 {
			pcm, err := sm.Flush()
			if err != nil {
				t.Fatal(err)
			}
			return pcm
		})
		if round > 0 { // the first round warms the allocations of every length
			totals = append(totals, total)
		}
	}
	for k, e := range shape {
		ts := times[k][1:]
		slices.Sort(ts)
		at := fmt.Sprintf("at frame %d", e.frame)
		if e.frame < 0 {
			at = "flush"
		}
		t.Logf("emission %2d %-14s %6d samples: p50 %.3f ms", k, at, e.samples, ts[len(ts)/2])
	}
	slices.Sort(totals)
	audio := float64(frames) * 512 / 44100.0 * 1000
	t.Logf("whole run (all pushes): p50 %.3f ms, %.1f× real time", totals[len(totals)/2], audio/totals[len(totals)/2])
}
