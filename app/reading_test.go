package app

import (
	"testing"
	"time"

	"zonostream/engine"
)

// fakePlayback counts played samples as a test sets them.
type fakePlayback struct{ n int64 }

func (f *fakePlayback) FirstSound() (time.Time, bool) { return time.Time{}, f.n > 0 }
func (f *fakePlayback) Underruns() int64              { return 0 }
func (f *fakePlayback) Played() int64                 { return f.n }
func (f *fakePlayback) Done() bool                    { return false }

// TestTrackFollowsThePlayedPosition drives a track with PartStart offsets
// and played counts as a stream makes them: the sentence heard is the one
// of the part being played, at the part's played fraction, shifted by the
// offset the reading started from.
func TestTrackFollowsThePlayedPosition(t *testing.T) {
	d, err := NewDocument("t.txt", []byte("Zero zero. One one one one. Two two. Three three three. Four. Five five five five five."))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Sentences
	base := s[1].Start // the reading started at sentence 1
	tr := newReadTrack(base)
	pb := &fakePlayback{}
	tr.playing(pb)
	rel := func(i int) int { return s[i].Start - base }
	at := func(played int64) int {
		pb.n = played
		return d.SentenceAt(tr.heard(tr.played(), defaultPace))
	}
	if got := at(0); got != 1 {
		t.Fatalf("before the first part: sentence %d, want 1", got)
	}
	// Part 0: sentences 1 and 2, from sample 0; part 1: sentence 3 from
	// sample 60000; part 2: sentences 4 and 5, from 90000, still being
	// generated.
	tr.part(rel(1), rel(3), 0)
	tr.commit(30000)
	tr.part(rel(3), rel(4), 60000)
	tr.commit(40000)
	for _, c := range []struct {
		played int64
		want   int
	}{
		{0, 1}, {20000, 1}, {59999, 2}, {60000, 3}, {89999, 3},
	} {
		if got := at(c.played); got != c.want {
			t.Errorf("played %d: sentence %d, want %d", c.played, got, c.want)
		}
	}
	tr.part(rel(4), len(d.Text)-base, 90000)
	tr.commit(20000) // 90000 committed
	// Part 2's end is not known yet: estimated at the pace given (and never
	// before what is committed).
	pb.n = 90000 + 1000
	if got := d.SentenceAt(tr.heard(pb.n, 1000)); got != 4 {
		t.Errorf("early in the open part: sentence %d, want 4", got)
	}
	tr.commit(60000)
	tr.end(true) // part 2 ends at 150000
	if got := at(149000); got != 5 {
		t.Errorf("late in the last part: sentence %d, want 5", got)
	}
	if got := at(1 << 40); got != len(s)-1 {
		t.Errorf("past the end: sentence %d", got)
	}
	var p pace
	tr.pace(&p)
	if p.samples != 150000 || p.bytes != len(d.Text)-base {
		t.Fatalf("pace %d samples over %d bytes, want 150000 over %d", p.samples, p.bytes, len(d.Text)-base)
	}
}

func TestPaceAndPositionText(t *testing.T) {
	var p pace
	if got := p.left(150); got != 10*time.Second {
		t.Fatalf("default pace: 150 bytes take %v, want 10s", got)
	}
	p.add(engine.SampleRate*10, 200) // 20 bytes a second
	if got := p.left(1200); got != time.Minute {
		t.Fatalf("measured pace: 1200 bytes take %v, want 1m", got)
	}
	if got := positionText(11, 340, 62*time.Second, 14*time.Minute+30*time.Second); got != "Sentence 12 of 340 · 1:02 played · about 14:30 left" {
		t.Fatalf("position %q", got)
	}
	if got := clock(2*time.Hour + 3*time.Minute + 4*time.Second); got != "2:03:04" {
		t.Fatalf("clock %q", got)
	}
}

// TestPaceLeavesOutAStoppedLastPart: a reading stopped while its last
// part was being generated adds only the parts before it to the pace;
// the cut part (half its samples for all its text) would make speech
// look twice as fast.
func TestPaceLeavesOutAStoppedLastPart(t *testing.T) {
	tr := newReadTrack(0)
	tr.part(0, 100, 0)
	tr.commit(50000)
	tr.part(100, 200, 50000)
	tr.commit(25000) // half of the 50000 the part would take
	tr.end(false)
	var p pace
	tr.pace(&p)
	if p.samples != 50000 || p.bytes != 100 {
		t.Fatalf("pace %d samples over %d bytes, want 50000 over 100 (the stopped part left out)", p.samples, p.bytes)
	}
}
