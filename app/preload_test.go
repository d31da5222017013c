package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/weights"
)

// waitPreload waits for the UI's Preload to end and returns its error.
func waitPreload(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("the preload did not end within 60 s")
		return nil
	}
}

// TestPreloadLoadsSelectedModel: Preload loads the selected, installed
// model in the background, and the first Speak then uses that engine
// instead of loading another.
func TestPreloadLoadsSelectedModel(t *testing.T) {
	tu := newTestUI(t, false)
	m := tu.cfg.Models.(*tinyModels)
	done := make(chan error, 1)
	tu.OnPreloaded = func(err error) { done <- err }
	tu.on(func() { tu.Preload() })
	if err := waitPreload(t, done); err != nil {
		t.Fatalf("preload: %v", err)
	}
	m.mu.Lock()
	loads, loaded := m.loads, m.eng[tu.Settings().Variant] != nil
	m.mu.Unlock()
	if loads != 1 || !loaded {
		t.Fatalf("after the preload: %d loads, %s loaded %v", loads, tu.Settings().Variant, loaded)
	}
	tu.speak(t, "Hello there.")
	if u := tu.Speaker.History.Last(); u == nil || u.Outcome != PhaseDone {
		t.Fatalf("first utterance after the preload: %+v", u)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loads != 1 {
		t.Fatalf("the first Speak loaded the model again (%d loads)", m.loads)
	}
}

// failingModels is installed but cannot be loaded, or (block) loads until
// its context ends.
type failingModels struct {
	block bool
}

func (failingModels) Choices() []ModelChoice {
	return []ModelChoice{{Variant: "hybrid", Installed: true}, {Variant: "transformer", Installed: true}}
}
func (f failingModels) Load(ctx context.Context, v string) (*engine.Engine, error) {
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("model.safetensors: checksum mismatch")
}
func (failingModels) Backend() BackendInfo { return testBackend }

// TestPreloadFailureReported: a model that cannot be loaded is reported
// in the status line, naming the model and the cause.
func TestPreloadFailureReported(t *testing.T) {
	tu := newTestUI(t, false)
	tu.Speaker.Models = failingModels{}
	done := make(chan error, 1)
	tu.OnPreloaded = func(err error) { done <- err }
	tu.on(func() { tu.Preload() })
	if err := waitPreload(t, done); err == nil {
		t.Fatal("a failing load reported success")
	}
	tu.on(func() {
		if s := tu.status.Text; !strings.Contains(s, "background") || !strings.Contains(s, "checksum mismatch") {
			t.Errorf("status %q does not report the failed preload", s)
		}
	})
}

// TestPreloadStopped: Stop cancels a preload in progress; a cancelled
// preload reports nothing.
func TestPreloadStopped(t *testing.T) {
	tu := newTestUI(t, false)
	tu.Speaker.Models = failingModels{block: true}
	var before string
	tu.on(func() { before = tu.status.Text })
	done := make(chan error, 1)
	tu.OnPreloaded = func(err error) { done <- err }
	tu.on(func() { tu.Preload() })
	tu.Stop()
	if err := waitPreload(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped preload ended with %v", err)
	}
	tu.on(func() {
		if tu.status.Text != before {
			t.Errorf("a cancelled preload changed the status to %q", tu.status.Text)
		}
	})
}

// TestChoicesDuringLoad: the model picker's Choices and the cache in use
// answer while a model is loading (a full-size load holds the loader for
// seconds, and the window asks them on its own goroutine).
func TestChoicesDuringLoad(t *testing.T) {
	h := &HubModels{B: cpu.New(0), Cache: weights.Cache{Dir: t.TempDir(), From: "test"}}
	h.loadMu.Lock() // a load in progress
	defer h.loadMu.Unlock()
	done := make(chan []ModelChoice, 1)
	go func() {
		_ = h.CurrentCache()
		done <- h.Choices()
	}()
	select {
	case ch := <-done:
		if len(ch) != 2 || ch[0].Installed {
			t.Errorf("choices of an empty cache: %+v", ch)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Choices waited for the load to finish")
	}
}
