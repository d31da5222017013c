//go:build cuda

package gpu

import (
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
	force, rowsOff, copiesOff, tileMax, splitPer, prep, pipe, fold, wg := convTileForce, reduceRowsOff, copyRowsOff, convTileMax, convSplitPer, convPrep, convPipe, convFold, convWgOn
	reset := func() {
		convTileForce, reduceRowsOff, copyRowsOff, convTileMax, convSplitPer, convPrep, convPipe, convFold, convWgOn = force, rowsOff, copiesOff, tileMax, splitPer, prep, pipe, fold, wg
	}
	defer reset()
	variants := []variant{
		{"default", func() {}},
		{"one k step in flight (conv_tcp)", func() { convPipe = false }},
		{"conv_wg (TF32 wgmmas; ZONOS_CONV_WG=1 loads it)", func() { convWgOn = gb.k["conv_wg"] != nil }},
		{"conv_wg, splits never folded", func() { convWgOn, convFold = gb.k["conv_wg"] != nil, 0 }},
		{"conv_tcq with conv_wg loaded", func() { convWgOn = false }},
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
	src, err := dac.RandomSource(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := dac.New(cfg, src, gb)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := codec.NewStreamer(dac.StreamConfig{FirstChunk: frames, Chunk: frames})
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
