package app

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"zonostream/audio"
	"zonostream/engine"
)

// Utterance is one spoken text as it was streamed.
type Utterance struct {
	ID       int
	Text     string // the text spoken, its first HistoryText bytes for a long one
	Language string
	Seed     uint64
	When     time.Time
	PCM      []float32 // 44.1 kHz mono, exactly the committed samples (nil when on disk)
	Outcome  Phase     // done, stopped or failed
	Err      string    // when failed
	Metrics  engine.Metrics
	Notices  []string
	Sound    time.Duration // first sound, when played
	HadSound bool

	// file holds the audio instead of PCM for an utterance longer than
	// SpoolAfter (a float32 WAV in the history's folder), samples its
	// length.
	file    string
	samples int
}

// Samples is the length of the audio, in memory or on disk.
func (u *Utterance) Samples() int {
	if u.file != "" {
		return u.samples
	}
	return len(u.PCM)
}

// OnDisk reports whether the audio is kept in a file rather than in PCM.
func (u *Utterance) OnDisk() bool { return u.file != "" }

// EachPCM calls f with the audio in order, a second at a time when it is
// read from disk (f must not keep the slice).
func (u *Utterance) EachPCM(f func([]float32) error) error {
	if u.file == "" {
		if len(u.PCM) == 0 {
			return nil
		}
		return f(u.PCM)
	}
	return readSpooled(u.file, u.samples, f)
}

// Duration of the audio.
func (u *Utterance) Duration() time.Duration {
	return time.Duration(u.Samples()) * time.Second / engine.SampleRate
}

// Title is the history row's label.
func (u *Utterance) Title() string {
	t := []rune(u.Text)
	if len(t) > 48 {
		t = append(t[:47], '…')
	}
	return fmt.Sprintf("%s  %.1fs  %s", u.When.Format("15:04:05"), u.Duration().Seconds(), string(t))
}

// HistoryText is how much of an utterance's text the history keeps: a
// reading of a whole book needs only its beginning for its title.
const HistoryText = 1 << 10

// historyText is text cut to HistoryText bytes at a rune boundary.
func historyText(text string) string {
	if len(text) <= HistoryText {
		return text
	}
	n := HistoryText
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return strings.Clone(text[:n]) + "…"
}

// HistoryLimit bounds the history: at most this many utterances…
const HistoryLimit = 20

// …and at most this many samples in all (10 minutes, 106 MB).
const HistorySamples = 10 * 60 * engine.SampleRate

// History is the recent utterances, newest first. Safe for concurrent use.
// Long utterances live on disk once UseDisk has given it a folder
// (SpoolAfter); a file is deleted when its utterance leaves the history.
type History struct {
	mu     sync.Mutex
	items  []*Utterance
	nextID int
	limit  int
	budget int // samples in memory
	disk   int // samples on disk
	folder *spoolFolder
	after  int // SpoolAfter (tests lower it)
}

// NewHistory keeps up to limit utterances and samples in all in memory
// (and HistoryDiskSamples on disk, after UseDisk).
func NewHistory(limit, samples int) *History {
	return &History{limit: max(1, limit), budget: max(1, samples), disk: HistoryDiskSamples, after: SpoolAfter, nextID: 1}
}

// UseDisk keeps utterances longer than SpoolAfter in a folder of this app
// under root (DefaultHistoryDir), removing the folders other apps left
// behind when they ended without cleaning up. Without it (or if it fails)
// the history keeps everything in memory.
func (h *History) UseDisk(root string) error {
	f, err := openSpoolFolder(root)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.folder != nil {
		h.folder.Close()
	}
	h.folder = f
	return nil
}

// spool starts collecting one utterance's audio: on disk past SpoolAfter
// when the history has a folder.
func (h *History) spool() *pcmSpool {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir := ""
	if h.folder != nil {
		dir = h.folder.dir
	}
	return newPCMSpool(dir, h.after)
}

// Add records u (assigning its ID), dropping the oldest beyond the limits
// (count, samples in memory, samples on disk) and deleting their files;
// the newest is always kept.
func (h *History) Add(u *Utterance) *Utterance {
	h.mu.Lock()
	defer h.mu.Unlock()
	u.ID = h.nextID
	h.nextID++
	h.items = append([]*Utterance{u}, h.items...)
	mem, disk := 0, 0
	for i, it := range h.items {
		if it.OnDisk() {
			disk += it.Samples()
		} else {
			mem += it.Samples()
		}
		if i > 0 && (i >= h.limit || mem > h.budget || disk > h.disk) {
			for _, old := range h.items[i:] {
				old.removeFile()
			}
			h.items = h.items[:i]
			break
		}
	}
	return u
}

// removeFile deletes the utterance's file, if it has one; its audio is
// gone from then on.
func (u *Utterance) removeFile() {
	if u.file != "" {
		os.Remove(u.file)
	}
}

// Close deletes the history's files and folder (the app is closing).
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = nil
	if h.folder == nil {
		return nil
	}
	err := h.folder.Close()
	h.folder = nil
	return err
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
	return SaveUtteranceWAV(path, &Utterance{PCM: pcm})
}

// SaveUtteranceWAV writes u's audio, from memory or from its file, as
// SaveWAV does.
func SaveUtteranceWAV(path string, u *Utterance) error {
	if u.Samples() == 0 {
		return fmt.Errorf("save %s: the utterance has no audio", path)
	}
	w, err := audio.CreateWAV(path, engine.SampleRate, audio.WAVFloat32)
	if err != nil {
		return err
	}
	if err := u.EachPCM(w.Write); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}
