package app

import (
	"fmt"
	"sync"
	"time"

	"zonostream/engine"
)

// readTrack follows one reading of a document from byte offset base: the
// parts of the stream as the engine announced them (shifted into the
// document) and how much audio is committed. From the number of samples
// played it tells which byte of the document is being heard. Safe for
// concurrent use: the Speaker's goroutine feeds it, the view polls it.
type readTrack struct {
	mu        sync.Mutex
	base      int
	parts     []trackPart
	committed int64 // samples committed so far
	ended     bool  // the stream is over: the last part ends at committed
	whole     bool  // it ended Done: the last part was generated to its end
	pb        Playback
}

// trackPart is one part of the stream: bytes [start, end) of the document,
// spoken from sample first of the stream.
type trackPart struct {
	start, end int
	first      int64
}

func newReadTrack(base int) *readTrack { return &readTrack{base: base} }

// part records a part the engine started; start and end are offsets in
// the run's text (the document from base).
func (t *readTrack) part(start, end int, first int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.parts = append(t.parts, trackPart{t.base + start, t.base + end, first})
}

// commit counts n more committed samples.
func (t *readTrack) commit(n int) {
	t.mu.Lock()
	t.committed += int64(n)
	t.mu.Unlock()
}

// end marks the stream as over; done says it ended with Done (not
// stopped or failed part way through its last part).
func (t *readTrack) end(done bool) {
	t.mu.Lock()
	t.ended, t.whole = true, done
	t.mu.Unlock()
}

// playing sets the playback the reading's samples are counted on.
func (t *readTrack) playing(pb Playback) {
	t.mu.Lock()
	t.pb = pb
	t.mu.Unlock()
}

// played is the number of the run's samples played so far (0 without an
// output).
func (t *readTrack) played() int64 {
	t.mu.Lock()
	pb := t.pb
	t.mu.Unlock()
	if pb == nil {
		return 0
	}
	return pb.Played()
}

// partEnd is the sample where part i ends: the next part's first sample,
// the end of the stream, or, while part i is still being generated, an
// estimate from its length in bytes at spb samples a byte (never before
// what is committed of it already).
func (t *readTrack) partEnd(i int, spb float64) int64 {
	p := t.parts[i]
	switch {
	case i+1 < len(t.parts):
		return t.parts[i+1].first
	case t.ended:
		return t.committed
	}
	return max(p.first+int64(float64(p.end-p.start)*spb), t.committed)
}

// heard is the document offset being heard after played samples: within
// the part being played (the last one starting at or before played, as
// the engine's PartStart events say), the byte at the same fraction of
// the part's text as played is of its samples. Before the first part it
// is base. spb is the pace to assume for a part whose end is not known
// yet.
func (t *readTrack) heard(played int64, spb float64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := len(t.parts) - 1
	for i >= 0 && t.parts[i].first > played {
		i--
	}
	if i < 0 {
		return t.base
	}
	p := t.parts[i]
	end := t.partEnd(i, spb)
	if end <= p.first || p.end <= p.start {
		return p.start
	}
	frac := min(float64(played-p.first)/float64(end-p.first), 1)
	return min(p.start+int(frac*float64(p.end-p.start)), p.end-1)
}

// pace adds this run's finished parts to a pace estimate. The last part
// counts only when the stream ended Done: a stopped reading's last part
// has only some of its samples for all of its text, and would make speech
// look faster than it is.
func (t *readTrack) pace(into *pace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.parts {
		if i+1 == len(t.parts) && !t.whole {
			break
		}
		into.add(t.partEnd(i, 0)-t.parts[i].first, t.parts[i].end-t.parts[i].start)
	}
}

// pace is how many samples a byte of text takes to speak, measured over
// finished parts; before any it assumes defaultPace.
type pace struct {
	samples int64
	bytes   int
}

// defaultPace is 15 characters a second, about the speed of English at
// Zonos' default speaking rate.
const defaultPace = float64(engine.SampleRate) / 15

func (p *pace) add(samples int64, bytes int) {
	if samples > 0 && bytes > 0 {
		p.samples += samples
		p.bytes += bytes
	}
}

// samplesPerByte is the estimate.
func (p pace) samplesPerByte() float64 {
	if p.bytes == 0 {
		return defaultPace
	}
	return float64(p.samples) / float64(p.bytes)
}

// left estimates the time it takes to speak n more bytes.
func (p pace) left(n int) time.Duration {
	return time.Duration(float64(max(n, 0)) * p.samplesPerByte() / engine.SampleRate * float64(time.Second))
}

// positionText is the reading view's position line, e.g. "Sentence 12 of
// 340 · 1:02 played · about 14:30 left".
func positionText(sentence, total int, played, left time.Duration) string {
	return fmt.Sprintf("Sentence %d of %d · %s played · about %s left", sentence+1, total, clock(played), clock(left))
}

// clock formats a duration as m:ss, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
