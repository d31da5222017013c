package app

import (
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"zonostream/engine"
)

func TestHistoryLimits(t *testing.T) {
	h := NewHistory(3, 1000)
	for i := 0; i < 5; i++ {
		h.Add(&Utterance{Text: "x", PCM: make([]float32, 100)})
	}
	l := h.List()
	if len(l) != 3 || l[0].ID != 5 || l[2].ID != 3 || h.Last().ID != 5 {
		t.Fatalf("ids %d,%d,%d len %d", l[0].ID, l[1].ID, l[2].ID, len(l))
	}
	h.Add(&Utterance{PCM: make([]float32, 5000)}) // over the sample budget alone: kept, the rest dropped
	if h.Len() != 1 || h.Last().ID != 6 {
		t.Fatalf("budget: len %d", h.Len())
	}
}

func TestHistoryConcurrent(t *testing.T) {
	h := NewHistory(5, 1<<20)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				h.Add(&Utterance{PCM: make([]float32, 10)})
				_ = h.List()
			}
		}()
	}
	wg.Wait()
	if h.Len() != 5 || h.Last().ID != 400 {
		t.Fatalf("len %d last %d", h.Len(), h.Last().ID)
	}
}

func TestSaveWAVExact(t *testing.T) {
	pcm := []float32{0, 0.5, -0.25, 1.5, -1e-7}
	path := filepath.Join(t.TempDir(), "u.wav")
	if err := SaveWAV(path, pcm); err != nil {
		t.Fatal(err)
	}
	c := readWAV(t, path)
	if c.Rate != engine.SampleRate || len(c.Samples) != len(pcm) {
		t.Fatalf("rate %d, %d samples", c.Rate, len(c.Samples))
	}
	for i := range pcm {
		if c.Samples[i] != pcm[i] {
			t.Fatalf("sample %d: %g, streamed %g", i, c.Samples[i], pcm[i])
		}
	}
	if err := SaveWAV(path, nil); err == nil {
		t.Fatal("empty utterance saved")
	}
}

func TestMeters(t *testing.T) {
	m := NewMeters()
	m.SetBackend(testBackend)
	start := time.Now()
	m.Begin(start)
	mt := engine.Metrics{TTFA: 40 * time.Millisecond, RTF: 1.5, FrameLatencyP50: 8 * time.Millisecond, FrameLatencyP90: 10 * time.Millisecond}
	m.Observe(engine.Event{Kind: engine.Audio, At: 40 * time.Millisecond, PCM: make([]float32, 2048), Metrics: mt})
	m.Observe(engine.Event{Kind: engine.Audio, At: 80 * time.Millisecond, PCM: make([]float32, 8192), Metrics: mt})
	m.Playback(44100, 441000, 2, start.Add(120*time.Millisecond))
	s := m.Snapshot()
	if s.Phase != PhaseSpeaking || !s.HasTTFA || s.TTFA != 40*time.Millisecond || s.LastFrame != 2500*time.Microsecond {
		t.Fatalf("snapshot %+v", s)
	}
	if !s.HasSound || s.FirstSound != 120*time.Millisecond || s.RingFill != 0.1 || s.Underruns != 2 || s.Buffered != time.Second {
		t.Fatalf("playback %+v", s)
	}
	if len(s.Spark) != 2 || !reflect.DeepEqual(s.Backend, testBackend) {
		t.Fatalf("spark %v backend %+v", s.Spark, s.Backend)
	}
	for i := 0; i < 3*SparkLen; i++ {
		m.Observe(engine.Event{Kind: engine.Audio, PCM: make([]float32, 512), Metrics: mt})
	}
	m.Observe(engine.Event{Kind: engine.Done, Metrics: mt})
	if s := m.Snapshot(); len(s.Spark) != SparkLen || s.Phase != PhaseDone {
		t.Fatalf("spark %d phase %s", len(s.Spark), s.Phase)
	}
}

func TestWaveform(t *testing.T) {
	w := NewWaveform(4, 2)
	w.Push([]float32{0.1, -0.2, 0.3})
	if p := w.Peaks(); len(p) != 1 || p[0] != (Peak{-0.2, 0.1}) {
		t.Fatalf("peaks %v", p)
	}
	w.Push([]float32{0.4, 1, 1, 2, 2, 3, 3, 4, 4})
	p := w.Peaks()
	if len(p) != 4 || p[0] != (Peak{1, 1}) || p[3] != (Peak{4, 4}) {
		t.Fatalf("scrolled peaks %v", p)
	}
	w.Reset()
	if len(w.Peaks()) != 0 {
		t.Fatal("reset")
	}
}

// readWAV decodes the WAV file at path.
func readWAV(t *testing.T, path string) *Clip {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
