//go:build cuda

package gpu

import (
	"flag"
	"fmt"
	"sort"
	"testing"
	"time"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/engine/zonos"
)

// TestPrefillTimeline (opt-in: -timeline; builds the real-shape
// hybrid) says whether an 80-position prefill waits on the host or on the
// GPU: the whole prefill runs on the owner thread (as forwardHeads' Runner
// does), and after each layer's ops are queued an event is recorded, so
// for every layer it logs when the host had queued it and when the GPU
// finished it, both from the prefill's start. A GPU that finishes each
// layer just after the host queued it is waiting for the host.
// timeline runs TestPrefillTimeline.
var timeline = flag.Bool("timeline", false, "run TestPrefillTimeline (builds the real-shape hybrid)")

func TestPrefillTimeline(t *testing.T) {
	need(t)
	if !*timeline {
		t.Skip("pass -timeline (builds the real-shape hybrid)")
	}
	m, prefix, mask := realHybridPrompt(t, 78)
	var err error
	const layers = 64 // at least the backbone's layer count; the hook fills n of them
	n := 0
	events := make([]cu.Event, layers+1)
	for i := range events {
		gb.do(func() {
			if events[i], err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				t.Fatal(err)
			}
		})
	}
	host := make([]time.Duration, layers)
	var totals []float64
	for run := 0; run < 8; run++ {
		st := m.NewState(prefix.Shape()[1] + 4)
		var start time.Time
		var hostEnd time.Duration
		gb.Run(func() {
			gb.sync("timeline start")
			start = time.Now()
			if err := events[layers].Record(gb.stream); err != nil {
				t.Fatal(err)
			}
			hook := func(layer int, _ compute.Tensor) {
				host[layer] = time.Since(start)
				n = max(n, layer+1)
				if err := events[layer].Record(gb.stream); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Prefill(st, prefix, [][zonos.NumCodebooks]int32{mask}, 2, hook); err != nil {
				t.Fatal(err)
			}
			hostEnd = time.Since(start)
		})
		if run < 3 {
			continue // warm-up: allocator classes, tc_wg's planes, lazily laid-out weights
		}
		var last float64
		lines := ""
		for i := 0; i < n; i++ {
			var ms float64
			gb.do(func() { ms, err = events[layers].Elapsed(events[i]) })
			if err != nil {
				t.Fatal(err)
			}
			last = ms
			if run == 7 {
				lines += fmt.Sprintf("\nlayer %2d: host queued %7.3f ms, GPU done %7.3f ms", i, float64(host[i].Microseconds())/1e3, ms)
			}
		}
		totals = append(totals, float64(hostEnd.Microseconds())/1e3)
		t.Logf("run %d: host queued the last layer at %.3f ms, the GPU finished it at %.3f ms; Prefill returned at %.3f ms%s",
			run, float64(host[n-1].Microseconds())/1e3, last, float64(hostEnd.Microseconds())/1e3, lines)
	}
	sort.Float64s(totals)
	t.Logf("Prefill wall time, median of %d: %.3f ms", len(totals), totals[len(totals)/2])
}
