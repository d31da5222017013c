package app

import "sync"

// Peak is the lowest and highest sample of one waveform column.
type Peak struct{ Min, Max float32 }

// Waveform keeps the peaks of the most recent audio for a scrolling view:
// one column per PerColumn samples, the last Columns columns. Safe for one
// writer and concurrent readers.
type Waveform struct {
	mu        sync.Mutex
	perColumn int
	cols      []Peak // ring of columns
	next      int
	full      bool
	cur       Peak
	inCur     int
}

// NewWaveform shows columns×perColumn samples (e.g. 600 × 441 = 6 s).
func NewWaveform(columns, perColumn int) *Waveform {
	return &Waveform{perColumn: max(1, perColumn), cols: make([]Peak, max(1, columns))}
}

// Push adds streamed samples.
func (w *Waveform) Push(pcm []float32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range pcm {
		if w.inCur == 0 {
			w.cur = Peak{v, v}
		} else {
			w.cur.Min, w.cur.Max = min(w.cur.Min, v), max(w.cur.Max, v)
		}
		w.inCur++
		if w.inCur == w.perColumn {
			w.cols[w.next] = w.cur
			w.next++
			if w.next == len(w.cols) {
				w.next, w.full = 0, true
			}
			w.inCur = 0
		}
	}
}

// Reset clears the view.
func (w *Waveform) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.cols)
	w.next, w.full, w.inCur = 0, false, 0
}

// Peaks returns the columns, oldest first (fewer than Columns until full).
func (w *Waveform) Peaks() []Peak {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.full {
		return append([]Peak(nil), w.cols[:w.next]...)
	}
	out := make([]Peak, 0, len(w.cols))
	out = append(out, w.cols[w.next:]...)
	return append(out, w.cols[:w.next]...)
}

// Columns is the view's width in columns.
func (w *Waveform) Columns() int { return len(w.cols) }
