package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
)

// forceFullWarmup makes Warmup run its throwaway utterance on the CPU
// backend for the duration of the test.
func forceFullWarmup(t *testing.T) {
	old := fullWarmup
	fullWarmup = func(b compute.Backend) bool { return true }
	t.Cleanup(func() { fullWarmup = old })
}

// TestWarmupLeavesNoTrace: an engine that ran the throwaway warm-up
// utterance speaks a request exactly as a cold engine does (same frames,
// same PCM), and a second Warmup does nothing.
func TestWarmupLeavesNoTrace(t *testing.T) {
	forceFullWarmup(t)
	warm, cold := tinyEngine(t, "hybrid"), tinyEngine(t, "hybrid")
	if err := warm.Warmup(context.Background(), shortRequest()); err != nil {
		t.Fatal(err)
	}
	if !warm.warmed {
		t.Fatal("Warmup returned without warming")
	}
	if err := warm.Warmup(context.Background(), Request{}); err != nil {
		t.Fatalf("second Warmup (a no-op) failed: %v", err)
	}
	a := drain(mustSynthesize(t, warm, shortRequest()))
	b := drain(mustSynthesize(t, cold, shortRequest()))
	if a.final.Kind != Done || b.final.Kind != Done {
		t.Fatalf("utterances ended with %v / %v", a.final.Err, b.final.Err)
	}
	if a.frames != b.frames || !slices.Equal(a.pcm, b.pcm) {
		t.Fatalf("after warm-up: %d frames, %d samples; cold: %d frames, %d samples (or different PCM)",
			a.frames, len(a.pcm), b.frames, len(b.pcm))
	}
}

// TestWarmupCancelled: a cancelled warm-up says so, leaves the engine
// unwarmed (the next call warms it) and usable.
func TestWarmupCancelled(t *testing.T) {
	forceFullWarmup(t)
	e := tinyEngine(t, "hybrid")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Warmup(ctx, shortRequest()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled warm-up: %v", err)
	}
	if e.warmed {
		t.Fatal("a cancelled warm-up marked the engine warm")
	}
	if err := e.Warmup(context.Background(), shortRequest()); err != nil || !e.warmed {
		t.Fatalf("warm-up after a cancelled one: %v", err)
	}
}

// TestWarmupBadRequest: a warm-up in a language espeak-ng does not know
// fails with the front end's error and leaves the engine unwarmed.
func TestWarmupBadRequest(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	r := shortRequest()
	r.Language = "xx-nowhere"
	if err := e.Warmup(context.Background(), r); err == nil || e.warmed {
		t.Fatalf("warm-up in an unknown language: %v (warmed %v)", err, e.warmed)
	}
}

// TestFullWarmupOnlyWithGraphs: the throwaway utterance is for backends
// that record the decode step; the CPU backend only warms the front end.
func TestFullWarmupOnlyWithGraphs(t *testing.T) {
	if fullWarmup(cpu.New(0)) {
		t.Error("the CPU backend would run a throwaway utterance (seconds on real weights)")
	}
}
