//go:build cuda

package gpu

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"zonostream/engine/dac"
)

var vocoderTime = flag.Bool("vocoder.time", false, "run TestVocoderSchedule, which times the bench's vocoder schedule")

// TestVocoderSchedule times each emission of the bench's vocoder figure
// on the streamed real-shape 44 kHz DAC (random weights): 172 random
// frames pushed one at a time under the default stream configuration
// (first push recorded, as the bench does), then the flush. It logs, per
// emission in order, the frames it took, the samples it gave and the
// median GPU time over the rounds (the backend's event timer, host
// launches and read-backs included), and the whole run's real-time factor:
// where the bench's vocoder time goes. A measurement, not a check: it
// runs only with -vocoder.time.
func TestVocoderSchedule(t *testing.T) {
	need(t)
	if !*vocoderTime {
		t.Skip("pass -vocoder.time to time the bench's vocoder schedule")
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
