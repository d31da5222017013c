package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedEncoder blocks each Embed until release is closed (or its context
// ends), counting calls.
type gatedEncoder struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
}

func (g *gatedEncoder) Embed(ctx context.Context, s []float32, rate int) ([]float32, error) {
	g.calls.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.release:
		e := make([]float32, 128) // Zonos' embedding width
		e[0] = float32(len(s)) / 1000
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func newGated() *gatedEncoder {
	return &gatedEncoder{started: make(chan struct{}, 8), release: make(chan struct{})}
}

func waitStarted(t *testing.T, g *gatedEncoder) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the encoder was not called")
	}
}

// TestVoiceCacheSharesEncoding: callers asking for a clip that is being
// encoded wait for that encoding instead of starting their own.
func TestVoiceCacheSharesEncoding(t *testing.T) {
	var vc voiceCache
	g := newGated()
	c := &Clip{Samples: make([]float32, 100), Rate: 16000}
	var wg sync.WaitGroup
	got := make([][]float32, 3)
	errs := make([]error, 3)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = vc.embed(context.Background(), g, c)
		}()
		if i == 0 {
			waitStarted(t, g) // the others arrive while it runs
		}
	}
	close(g.release)
	wg.Wait()
	for i := range got {
		if errs[i] != nil || len(got[i]) != 128 || got[i][0] != 0.1 {
			t.Fatalf("caller %d: %v %v", i, got[i], errs[i])
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("one clip encoded %d times", n)
	}
}

// TestVoiceCacheCancelledEncoding: when the encoding a caller waits for is
// cancelled (its own caller went away), the waiting caller encodes the
// clip itself; a cancelled caller gets its context's error.
func TestVoiceCacheCancelledEncoding(t *testing.T) {
	var vc voiceCache
	g := newGated()
	c := &Clip{Samples: make([]float32, 7), Rate: 16000}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := vc.embed(ctx, g, c)
		first <- err
	}()
	waitStarted(t, g)
	second := make(chan []float32, 1)
	go func() {
		v, err := vc.embed(context.Background(), g, c)
		if err != nil {
			t.Errorf("waiting caller: %v", err)
		}
		second <- v
	}()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	waitStarted(t, g) // the waiting caller's own attempt
	close(g.release)
	if v := <-second; len(v) != 128 || v[0] != 0.007 {
		t.Fatalf("waiting caller got %v", v)
	}
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d encodings, want 2 (the cancelled one and the retry)", n)
	}
}

// TestPrepareVoiceEncodesInBackground: setting a speaker clip starts its
// encoding before Speak, and Speak then uses it (one encoding in all).
func TestPrepareVoiceEncodesInBackground(t *testing.T) {
	tu := newTestUI(t, false)
	g := newGated()
	tu.Speaker.Voice = g
	tu.on(func() { tu.compose.speaker.set(&Clip{Name: "v.wav", Samples: make([]float32, 16000*4), Rate: 16000}) })
	waitStarted(t, g) // before any Speak
	close(g.release)
	tu.speak(t, "Voice.")
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("encoder called %d times for one clip", n)
	}
	if u := tu.Speaker.History.Last(); u == nil || u.Outcome != PhaseDone {
		t.Fatalf("utterance with the prepared voice: %+v", u)
	}
}
