//go:build cuda

package gpu

import (
	"encoding/binary"
	"testing"
)

// pdlProbe launches pdl_probe_spin (50 µs) then pdl_probe_stamp, directly
// or as a recorded graph, and returns the probe's three times: spin end,
// stamp start, stamp's wait returned (ns of the global timer).
func pdlProbe(t *testing.T, graph bool) [3]uint64 {
	t.Helper()
	probe := gb.FromI32([]int32{0, 0, -1, -1, 0, 0}, 6)
	ptr := cast(probe).ptr()
	work := func() {
		gb.do(func() {
			gb.launch(gb.k["pdl_probe_spin"], [3]int{4, 1, 1}, block256, ptr, 50000) // int travels as a 64-bit value
			gb.launch(gb.k["pdl_probe_stamp"], [3]int{4, 1, 1}, block256, ptr)
		})
	}
	if graph {
		g, err := gb.Capture(work)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Destroy()
		if err := g.Launch(); err != nil {
			t.Fatal(err)
		}
	} else {
		work()
	}
	raw := gb.readRaw(cast(probe))
	var v [3]uint64
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return v
}

// TestPDLOverlap: on Hopper with programmatic dependent launch the next
// kernel starts before the previous one ends, eagerly and inside a
// recorded graph, and its wait returns only after the previous kernel
// ended (the correctness every kernel relies on).
func TestPDLOverlap(t *testing.T) {
	need(t)
	for _, graph := range []bool{false, true} {
		v := pdlProbe(t, graph)
		spinEnd, stampStart, waited := v[0], v[1], v[2]
		t.Logf("graph %v: stamp started %+.1f µs from the spin's end, its wait returned %+.1f µs after it",
			graph, -float64(int64(spinEnd-stampStart))/1e3, float64(int64(waited-spinEnd))/1e3)
		if waited < spinEnd {
			t.Errorf("graph %v: the wait returned %d ns before the previous kernel ended", graph, spinEnd-waited)
		}
		if gb.pdl && stampStart >= spinEnd {
			t.Errorf("graph %v: PDL is on but the next kernel started only after the previous one ended", graph)
		}
	}
}
