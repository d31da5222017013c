package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
)

// heldBackend holds the codec's first convolution — inside the vocoder's
// first emission — until gate closes; then it runs it, or panics as a
// failed kernel launch does (fail).
type heldBackend struct {
	compute.Backend
	fail    bool
	once    sync.Once
	reached chan struct{} // closed when the vocoder first needs the device
	gate    chan struct{}
	release sync.Once
}

func (h *heldBackend) Conv1d(x, w, b compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	h.once.Do(func() { close(h.reached) })
	<-h.gate
	if h.fail {
		panic("injected vocoder fault")
	}
	return h.Backend.Conv1d(x, w, b, c)
}

func (h *heldBackend) open() { h.release.Do(func() { close(h.gate) }) }

// heldUtterance starts req on an engine whose backend has a side lane (so
// it holds for the first emission, as the CUDA backend does) with the
// tiny DAC on a heldBackend, reads its events up to the hold — FrameDone n−1, n the
// frames the vocoder's first emission needs — and checks that the
// decoder then waits: no event for 200 ms while the vocoder is held.
// The caller opens the gate.
func heldUtterance(t *testing.T, req Request, fail bool) (s *Stream, h *heldBackend, n int) {
	t.Helper()
	e := tinyEngine(t, "hybrid")
	h = &heldBackend{Backend: cpu.New(0), fail: fail, reached: make(chan struct{}), gate: make(chan struct{})}
	t.Cleanup(h.open) // a failed test leaves no vocoder held
	codec := tinyCodecOn(t, h)
	norm := req
	if err := norm.normalise(); err != nil {
		t.Fatal(err)
	}
	n = codec.FirstEmissionFrames(dac.StreamConfig{FirstChunk: norm.FirstChunk, Chunk: norm.Chunk})
	if n+5 > req.FixedFrames {
		t.Fatalf("the first emission needs %d frames: make the utterance longer", n)
	}
	s, err := New(lanedCPU{e.backend}, e.model, codec).Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok || ev.Kind == Failed || ev.Kind == Audio || (ev.Kind == FrameDone && ev.Frame >= n) {
				t.Fatalf("%v event (frame %d, ok %v, err %v) before the hold after frame %d", ev.Kind, ev.Frame, ok, ev.Err, n-1)
			}
			if ev.Kind != FrameDone || ev.Frame != n-1 {
				continue
			}
			<-h.reached
			select {
			case ev := <-s.Events():
				t.Fatalf("%v event (frame %d) while the first emission was held: decoding did not wait", ev.Kind, ev.Frame)
			case <-time.After(200 * time.Millisecond):
			}
			return s, h, n
		case <-timeout:
			t.Fatalf("no frame %d after 2 minutes", n-1)
		}
	}
}

// TestFirstEmissionAlone: on a laned backend, decoding waits after the
// frame that completes the vocoder's first emission; released, the first
// Audio event comes before any later FrameDone, and the utterance
// completes with the PCM of one-shot decoding.
func TestFirstEmissionAlone(t *testing.T) {
	req := shortRequest()
	req.FixedFrames = 30
	req.FirstChunk, req.Chunk = 2, 8
	s, h, n := heldUtterance(t, req, false)
	h.open()
	var pcm []float32
	frames := n
	for ev := range s.Events() {
		switch ev.Kind {
		case FrameDone:
			frames++
			if len(pcm) == 0 {
				t.Fatalf("frame %d before the first audio", ev.Frame)
			}
		case Audio:
			pcm = append(pcm, ev.PCM...)
		case Failed:
			t.Fatal(ev.Err)
		}
	}
	if frames != req.FixedFrames {
		t.Fatalf("%d frames, want %d", frames, req.FixedFrames)
	}
	matchesOneShot(t, tinyEngine(t, "hybrid").Codec(), s.Codes(), pcm)
}

// TestFirstEmissionAloneCancel: cancelling while the decoder is held for
// the first emission ends the utterance with context.Canceled, and no
// frame past the hold is generated.
func TestFirstEmissionAloneCancel(t *testing.T) {
	req := shortRequest()
	req.FixedFrames = 30
	s, h, n := heldUtterance(t, req, false)
	s.Cancel()
	// The vocoder is still inside its first window; the run waits for it
	// before its Failed event (vocoder.stop).
	h.open()
	last := endOf(t, s, n)
	if last.Kind != Failed || !errors.Is(last.Err, context.Canceled) || !errors.Is(s.Wait(), context.Canceled) {
		t.Fatalf("last event %v, error %v; want Failed with context.Canceled", last.Kind, last.Err)
	}
}

// TestFirstEmissionAloneVocoderFails: a vocoder that fails in its first
// emission while the decoder waits for it ends the utterance with the
// vocoder's error, and the decoder goes no further.
func TestFirstEmissionAloneVocoderFails(t *testing.T) {
	req := shortRequest()
	req.FixedFrames = 30
	s, h, n := heldUtterance(t, req, true)
	h.open()
	last := endOf(t, s, n)
	if last.Kind != Failed || last.Err == nil || !strings.Contains(last.Err.Error(), "while vocoding") ||
		!strings.Contains(last.Err.Error(), "injected vocoder fault") {
		t.Fatalf("last event %v, error %v; want Failed with the vocoder's error", last.Kind, last.Err)
	}
}

// endOf reads s to its end within a minute, checking that no frame from
// n on is generated, and returns the last event.
func endOf(t *testing.T, s *Stream, n int) Event {
	t.Helper()
	var last Event
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return last
			}
			if ev.Kind == FrameDone && ev.Frame >= n {
				t.Errorf("frame %d generated after the hold", ev.Frame)
			}
			last = ev
		case <-timeout:
			t.Fatal("no end a minute after the hold ended: the held decoder hangs")
		}
	}
}

// TestAwaitFirstAudio: the hold ends with the first audio, with the
// vocoder's error when it ends first, and with the utterance's context
// even while the vocoder is still busy.
func TestAwaitFirstAudio(t *testing.T) {
	newVoc := func() (*vocoder, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		return &vocoder{r: &run{ctx: ctx}, first: make(chan struct{}), done: make(chan struct{})}, cancel
	}
	v, cancel := newVoc()
	defer cancel()
	v.sent(nil) // empty PCM is not first audio
	select {
	case <-v.first:
		t.Fatal("empty PCM released the hold")
	default:
	}
	v.sent([]float32{0.5})
	v.sent([]float32{0.5}) // and only once
	if err := v.awaitFirstAudio(); err != nil {
		t.Fatalf("after the first audio: %v", err)
	}

	v, cancel = newVoc()
	defer cancel()
	v.err = errors.New("vocoder failed")
	close(v.done)
	if err := v.awaitFirstAudio(); err != v.err {
		t.Fatalf("after the vocoder failed: %v, want its error", err)
	}

	v, cancel = newVoc()
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := v.awaitFirstAudio(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the cancel: %v, want context.Canceled", err)
	}
}

// lanedCPU is a CPU backend that says it has a side lane (itself), as the
// CUDA backend does.
type lanedCPU struct{ compute.Backend }

func (l lanedCPU) Lane() compute.Backend { return l.Backend }

// TestHoldFirstEmission: only a backend with a side lane holds for the
// first emission.
func TestHoldFirstEmission(t *testing.T) {
	for _, c := range []struct {
		b     compute.Backend
		want  bool
		label string
	}{{cpu.New(1), false, "cpu"}, {lanedCPU{cpu.New(1)}, true, "laned"}} {
		if got := holdFirstEmission(c.b); got != c.want {
			t.Errorf("on the %s backend: hold %v, want %v", c.label, got, c.want)
		}
	}
}
