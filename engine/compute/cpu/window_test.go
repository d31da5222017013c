package cpu

import (
	"slices"
	"testing"

	"zonostream/engine/compute"
)

// TestWindow: Window joins carried columns (or lead zeros), new columns
// and trail zeros row by row, and its tail is the window's last keep
// columns; a missing part is left out, and prev and x stay usable.
func TestWindow(t *testing.T) {
	be := New(0)
	// Two rows (B 1, C 2): prev [1 2 | 3 4], x [5 6 7 | 8 9 10].
	prev := be.FromF32([]float32{1, 2, 3, 4}, 1, 2, 2)
	x := be.FromF32([]float32{5, 6, 7, 8, 9, 10}, 1, 2, 3)
	for _, c := range []struct {
		name              string
		prev, x           compute.Tensor
		lead, trail, keep int
		w, tail           []float32
		cols              int
	}{
		{"carried, new", prev, x, 9, 0, 2, []float32{1, 2, 5, 6, 7, 3, 4, 8, 9, 10}, []float32{6, 7, 9, 10}, 5},
		{"lead zeros, new, trail", nil, x, 2, 1, 3, []float32{0, 0, 5, 6, 7, 0, 0, 0, 8, 9, 10, 0}, []float32{6, 7, 0, 9, 10, 0}, 6},
		{"carried, trail, no tail", prev, nil, 0, 2, 0, []float32{1, 2, 0, 0, 3, 4, 0, 0}, nil, 4},
		{"whole window kept", prev, x, 0, 0, 5, []float32{1, 2, 5, 6, 7, 3, 4, 8, 9, 10}, []float32{1, 2, 5, 6, 7, 3, 4, 8, 9, 10}, 5},
	} {
		w, tail := be.Window(c.prev, c.lead, c.x, c.trail, c.keep)
		if got := w.Shape(); !slices.Equal(got, []int{1, 2, c.cols}) {
			t.Errorf("%s: window shape %v, want [1 2 %d]", c.name, got, c.cols)
		}
		if got := be.ReadF32(w); !slices.Equal(got, c.w) {
			t.Errorf("%s: window %v, want %v", c.name, got, c.w)
		}
		if c.tail == nil {
			if tail != nil {
				t.Errorf("%s: tail %v, want none", c.name, be.ReadF32(tail))
			}
			continue
		}
		if tail == nil || !slices.Equal(be.ReadF32(tail), c.tail) {
			t.Errorf("%s: tail %v, want %v", c.name, tail, c.tail)
		}
	}
	if got := be.ReadF32(x); !slices.Equal(got, []float32{5, 6, 7, 8, 9, 10}) {
		t.Errorf("x changed to %v", got)
	}
	for _, bad := range []func(){
		func() { be.Window(nil, 1, nil, 1, 0) },                // nothing to join
		func() { be.Window(prev, 0, x, 0, 6) },                 // keep past the window
		func() { be.Window(prev, 0, be.Zeros(1, 3, 2), 0, 0) }, // channels differ
		func() { be.Window(be.Zeros(2, 4), 0, nil, 1, 0) },     // not [B, C, T]
		func() { be.Window(nil, -1, x, 0, 0) },                 // negative lead
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad Window arguments did not panic")
				}
			}()
			bad()
		}()
	}
}
