package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

// tinyEngine loads the golden tiny hybrid model with the tiny DAC: random
// weights of small shapes, the real code paths end to end.
func tinyEngine(t *testing.T, variant string) *Engine {
	t.Helper()
	zd := golden.Pack(t, "zonos-"+variant+"-tiny")
	dd := golden.Pack(t, "dac-tiny")
	e, err := Load(cpu.New(0), PathsFromDirs(zd, dd))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type collected struct {
	pcm    []float32
	kinds  []EventKind
	final  Event
	frames int
}

func drain(s *Stream) collected {
	var c collected
	for ev := range s.Events() {
		c.kinds = append(c.kinds, ev.Kind)
		switch ev.Kind {
		case Audio:
			c.pcm = append(c.pcm, ev.PCM...)
		case FrameDone:
			c.frames++
		case Done, Failed:
			c.final = ev
		}
	}
	return c
}

func shortRequest() Request {
	r := Request{Text: "Hello there.", Language: "en-us", Knobs: DefaultKnobs(), Seed: 7, MaxSeconds: 0.5}
	return r
}

// TestStreamIsExactOneShot: the PCM streamed during generation equals
// one-shot decoding of the generated codes, sample for sample, and the
// stream's events arrive in the documented order.
func TestStreamIsExactOneShot(t *testing.T) {
	for _, variant := range []string{"hybrid", "transformer"} {
		t.Run(variant, func(t *testing.T) {
			e := tinyEngine(t, variant)
			s, err := e.Synthesize(context.Background(), shortRequest())
			if err != nil {
				t.Fatal(err)
			}
			c := drain(s)
			if err := s.Wait(); err != nil {
				t.Fatal(err)
			}
			if c.final.Kind != Done {
				t.Fatalf("last event %v, want done", c.final.Kind)
			}
			codes := s.Codes()
			if c.frames != len(codes) || len(codes) == 0 {
				t.Fatalf("%d frame events for %d frames", c.frames, len(codes))
			}
			cb := make([][]int32, 9)
			for _, f := range codes {
				for k := range cb {
					cb[k] = append(cb[k], f[k])
				}
			}
			ref, err := e.Codec().Decode(cb)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.pcm) != len(ref) || len(ref) != 512*len(codes) {
				t.Fatalf("streamed %d samples, one-shot %d, frames %d", len(c.pcm), len(ref), len(codes))
			}
			for i := range ref {
				if c.pcm[i] != ref[i] {
					t.Fatalf("sample %d: streamed %g, one-shot %g", i, c.pcm[i], ref[i])
				}
			}
			if c.kinds[0] != PartStart || c.kinds[1] != PrefillDone {
				t.Errorf("first events %v, %v; want part, prefill-done", c.kinds[0], c.kinds[1])
			}
			m := c.final.Metrics
			if m.TTFA <= 0 || m.FirstFrame <= 0 || m.Prefill <= 0 || m.TTFA < m.FirstFrame || m.FirstFrame < m.Prefill {
				t.Errorf("meters out of order: prefill %v first frame %v ttfa %v", m.Prefill, m.FirstFrame, m.TTFA)
			}
			if m.FirstVocode <= 0 || m.FirstVocode > m.TTFA-m.FirstFrame {
				t.Errorf("first emission %v, not within the %v between first frame and first sample", m.FirstVocode, m.TTFA-m.FirstFrame)
			}
			if m.Started <= 0 || m.Conditioned < m.Started || m.Conditioned+m.PrefillCompute > m.Prefill {
				t.Errorf("set-up stamps out of order: started %v conditioned %v prefill %v (compute %v)", m.Started, m.Conditioned, m.Prefill, m.PrefillCompute)
			}
			if want := float64(len(ref)) / SampleRate; m.AudioSeconds != want {
				t.Errorf("audio seconds %g, want %g", m.AudioSeconds, want)
			}
		})
	}
}

// TestSeedReproducible: the same seed gives the same codes.
func TestSeedReproducible(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	run := func(seed uint64) [][9]int32 {
		r := shortRequest()
		r.Seed = seed
		s, err := e.Synthesize(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		drain(s)
		if err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		return s.Codes()
	}
	a, b, c := run(1), run(1), run(2)
	if len(a) != len(b) {
		t.Fatalf("lengths %d, %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("frame %d differs between runs with one seed", i)
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Error("seeds 1 and 2 gave identical codes")
	}
}

// TestCancel: cancelling mid-utterance ends the stream with
// context.Canceled, and the engine serves the next request.
func TestCancel(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	r := shortRequest()
	r.MaxSeconds = 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := e.Synthesize(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var last Event
	for ev := range s.Events() {
		if ev.Kind == FrameDone && ev.Frame == 3 {
			cancel()
		}
		last = ev
	}
	if last.Kind != Failed || !errors.Is(last.Err, context.Canceled) || !errors.Is(s.Wait(), context.Canceled) {
		t.Fatalf("last event %v err %v", last.Kind, last.Err)
	}
	s2, err := e.Synthesize(context.Background(), shortRequest())
	if err != nil {
		t.Fatal(err)
	}
	drain(s2)
	if err := s2.Wait(); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
}

// TestBadRequests: each bad input is refused with an error naming it.
func TestBadRequests(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	cases := []struct {
		name string
		mod  func(*Request)
		want string
	}{
		{"empty", func(r *Request) { r.Text = "" }, "empty"},
		{"whitespace", func(r *Request) { r.Text = " \n\t " }, "whitespace"},
		{"language", func(r *Request) { r.Language = "xx-yy" }, "xx-yy"},
		{"speaker", func(r *Request) { r.Speaker = make([]float32, 3) }, "speaker"},
		{"emotion", func(r *Request) { r.Knobs.Emotion = [8]float32{} }, "emotion"},
		{"temperature", func(r *Request) { r.Knobs.Sampling.Temperature = -1 }, "temperature"},
		{"seconds", func(r *Request) { r.MaxSeconds = 1e9 }, "seconds"},
		{"text size", func(r *Request) { r.Text = strings.Repeat("a", MaxTextBytes+1) }, "limit"},
	}
	for _, c := range cases {
		r := shortRequest()
		c.mod(&r)
		_, err := e.Synthesize(context.Background(), r)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestPathsFromDirs(t *testing.T) {
	p := PathsFromDirs("/a", "/b")
	if p.ModelConfig != filepath.Join("/a", "config.json") || p.DACWeights != filepath.Join("/b", "model.safetensors") {
		t.Fatalf("%+v", p)
	}
}

// TestLoadCancelled: a load whose context is already done gives up with
// the context's error instead of finishing.
func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := LoadContext(ctx, cpu.New(1), PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
