//go:build cuda

package gpu

import (
	"runtime"
	"testing"

	"zonostream/engine/compute"
)

// onBooks says whether the collector tracks h (a cleanup and a weak
// pointer: track).
func onBooks(h *handle) bool {
	gb.pool.mu.Lock()
	defer gb.pool.mu.Unlock()
	_, ok := gb.pool.live[h]
	return ok
}

// TestRunScope: a tensor made inside Run goes on the collector's books
// only when the Run ends, and only if it was not freed; a forced
// collection inside a Run releases the Run's dropped tensors at once, as
// it releases any other unreachable tensor.
func TestRunScope(t *testing.T) {
	need(t)
	if scopeOff {
		t.Skip("ZONOS_RUN_SCOPE=0")
	}
	var kept compute.Tensor
	var freed, dropped *handle
	gb.Run(func() {
		kept = gb.Zeros(4, 256)
		f := gb.Zeros(4, 256)
		freed = cast(f).h
		gb.Free(f)
		dropped = cast(gb.Zeros(4, 256)).h
		if gb.scope == nil || len(gb.scope.made) != 3 {
			t.Errorf("scope inside Run: %+v, want the 3 tensors made", gb.scope)
		}
		if onBooks(cast(kept).h) || onBooks(dropped) {
			t.Error("a tensor made inside Run is tracked before the Run ends")
		}
	})
	if gb.scope != nil {
		t.Error("scope still open after Run")
	}
	if !onBooks(cast(kept).h) || !onBooks(dropped) || onBooks(freed) {
		t.Errorf("after Run: kept tracked %v, dropped tracked %v, freed tracked %v; want true, true, false",
			onBooks(cast(kept).h), onBooks(dropped), onBooks(freed))
	}
	gb.do(func() { gb.pool.collect(-1) })
	if !dropped.done.Load() {
		t.Error("a tensor dropped inside a Run was not released by a collection after it")
	}
	if cast(kept).h.done.Load() {
		t.Error("a live tensor was released")
	}
	runtime.KeepAlive(kept)

	gb.Run(func() {
		h := cast(gb.Zeros(1024, 1024)).h
		gb.pool.collect(-1)
		if !h.done.Load() {
			t.Error("a forced collection inside a Run kept the Run's dropped tensor")
		}
		if len(gb.scope.made) != 0 {
			t.Errorf("the collection left %d tensors in the scope", len(gb.scope.made))
		}
	})
	gb.Free(kept)
}
