package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/engine/weights"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// gatedBackend holds the codec's first convolution until gate closes.
type gatedBackend struct {
	compute.Backend
	once    sync.Once
	reached chan struct{} // closed when the vocoder first needs the device
	gate    chan struct{}
}

func (g *gatedBackend) Conv1d(x, w, b compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	g.once.Do(func() { close(g.reached) })
	<-g.gate
	return g.Backend.Conv1d(x, w, b, c)
}

// TestDecodingDoesNotWaitForVocoder: with the vocoder held inside its first
// window, generation still runs to its last frame; released, the vocoder
// commits every sample, equal to one-shot decoding of the codes.
func TestDecodingDoesNotWaitForVocoder(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	gb := &gatedBackend{Backend: cpu.New(0), reached: make(chan struct{}), gate: make(chan struct{})}
	codec := tinyCodecOn(t, gb)
	ge := New(e.backend, e.model, codec)
	const frames = 40
	req := shortRequest()
	req.FixedFrames = frames
	s, err := ge.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	seen, released := 0, false
	t.Cleanup(func() {
		if !released {
			close(gb.gate) // let the held vocoder go after a failure
		}
	})
	timeout := time.After(2 * time.Minute)
	events := s.Events()
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				break
			}
			switch ev.Kind {
			case FrameDone:
				seen++
				if seen == frames {
					select {
					case <-gb.reached:
					default:
						t.Fatal("all frames generated before the vocoder started its first window: the test gates nothing")
					}
					released = true
					close(gb.gate)
				}
			case Audio:
				if !released {
					t.Fatal("audio while the vocoder was held")
				}
				pcm = append(pcm, ev.PCM...)
			case Failed:
				t.Fatal(ev.Err)
			}
		case <-timeout:
			t.Fatalf("%d of %d frames after 2 minutes with the vocoder held: decoding waits for it", seen, frames)
		}
	}
	if !released {
		t.Fatalf("%d of %d frames while the vocoder was held: decoding waited for it", seen, frames)
	}
	matchesOneShot(t, e.Codec(), s.Codes(), pcm)
}

// tinyCodecOn loads the dac-tiny golden pack's codec onto backend b (its
// weights file stays open until the test ends).
func tinyCodecOn(t *testing.T, b compute.Backend) *dac.Model {
	t.Helper()
	dd := golden.Pack(t, "dac-tiny")
	cfg, err := dac.LoadConfig(dd + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := weights.Open(dd + "/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	codec, err := dac.New(cfg, f, b)
	if err != nil {
		t.Fatal(err)
	}
	return codec
}

// matchesOneShot fails t unless pcm, the streamed audio of codes, is
// sample for sample codec's one-shot decoding of them.
func matchesOneShot(t *testing.T, codec *dac.Model, codes [][zonos.NumCodebooks]int32, pcm []float32) {
	t.Helper()
	cb := make([][]int32, zonos.NumCodebooks)
	for _, fr := range codes {
		for k := range cb {
			cb[k] = append(cb[k], fr[k])
		}
	}
	ref, err := codec.Decode(cb)
	if err != nil {
		t.Fatal(err)
	}
	if len(pcm) != len(ref) {
		t.Fatalf("streamed %d samples, one-shot %d", len(pcm), len(ref))
	}
	for i := range ref {
		if pcm[i] != ref[i] {
			t.Fatalf("sample %d: streamed %g, one-shot %g", i, pcm[i], ref[i])
		}
	}
}
