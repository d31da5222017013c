package app

import (
	"fmt"
	"sync"
	"time"

	"zonostream/audio"
	"zonostream/engine"
)

// Utterance is one spoken text as it was streamed.
type Utterance struct {
	ID       int
	Text     string
	Language string
	Seed     uint64
	When     time.Time
	PCM      []float32 // 44.1 kHz mono, exactly the committed samples
	Outcome  Phase     // done, stopped or failed
	Err      string    // when failed
	Metrics  engine.Metrics
	Notices  []string
	Sound    time.Duration // first sound, when played
	HadSound bool
}

// Duration of the audio.
func (u *Utterance) Duration() time.Duration {
	return time.Duration(len(u.PCM)) * time.Second / engine.SampleRate
}

// Title is the history row's label.
func (u *Utterance) Title() string {
	t := []rune(u.Text)
	if len(t) > 48 {
		t = append(t[:47], '…')
	}
	return fmt.Sprintf("%s  %.1fs  %s", u.When.Format("15:04:05"), u.Duration().Seconds(), string(t))
}

// HistoryLimit bounds the history: at most this many utterances…
const HistoryLimit = 20

// …and at most this many samples in all (10 minutes, 106 MB).
const HistorySamples = 10 * 60 * engine.SampleRate

// History is the recent utterances, newest first. Safe for concurrent use.
type History struct {
	mu     sync.Mutex
	items  []*Utterance
	nextID int
	limit  int
	budget int
}

// NewHistory keeps up to limit utterances and samples in all.
func NewHistory(limit, samples int) *History {
	return &History{limit: max(1, limit), budget: max(1, samples), nextID: 1}
}

// Add records u (assigning its ID), dropping the oldest beyond the limits;
// the newest is always kept.
func (h *History) Add(u *Utterance) *Utterance {
	h.mu.Lock()
	defer h.mu.Unlock()
	u.ID = h.nextID
	h.nextID++
	h.items = append([]*Utterance{u}, h.items...)
	total := 0
	for i, it := range h.items {
		total += len(it.PCM)
		if i > 0 && (i >= h.limit || total > h.budget) {
			h.items = h.items[:i]
			break
		}
	}
	return u
}

// List returns the utterances, newest first.
func (h *History) List() []*Utterance {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Utterance(nil), h.items...)
}

// Last is the newest utterance, or nil.
func (h *History) Last() *Utterance {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// Len is the number of utterances kept.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.items)
}

// SaveWAV writes pcm as a 32-bit float WAV: the streamed samples bit for
// bit. The file appears only when complete (audio.WAVWriter's temp+rename).
func SaveWAV(path string, pcm []float32) error {
	if len(pcm) == 0 {
		return fmt.Errorf("save %s: the utterance has no audio", path)
	}
	w, err := audio.CreateWAV(path, engine.SampleRate, audio.WAVFloat32)
	if err != nil {
		return err
	}
	if err := w.Write(pcm); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}
