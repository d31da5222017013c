//go:build cuda

package gpu

import (
	"runtime"
	"testing"
	"time"

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

// TestCollectionRunsBehind: once gcEvery bytes were handed out, the pool
// starts a collection on a goroutine of its own at the next allocation,
// hit or miss, and the tensors dropped without Free before it come back
// to the pool when it ends, with no miss having waited for them.
func TestCollectionRunsBehind(t *testing.T) {
	need(t)
	gb.do(func() { gb.pool.collect(-1) }) // from a clean count
	gb.pool.mu.Lock()
	old := gb.pool.gcEvery
	gb.pool.gcEvery = 64 << 20
	gcs := gb.pool.gcs
	gb.pool.mu.Unlock()
	defer func() {
		gb.pool.mu.Lock()
		gb.pool.gcEvery = old
		gb.pool.mu.Unlock()
	}()
	var dropped []*handle
	for i := 0; i < 20; i++ { // 80 MiB, dropped without Free
		dropped = append(dropped, cast(gb.Zeros(1024, 1024)).h)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, h := range dropped[:15] { // the ones dropped before the threshold
		for !h.done.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !h.done.Load() {
			t.Fatal("a tensor dropped before the threshold was not released by the collection behind it")
		}
	}
	gb.pool.mu.Lock()
	n := gb.pool.gcs - gcs
	gb.pool.mu.Unlock()
	if n < 1 {
		t.Errorf("%d collections ran", n)
	}
}
