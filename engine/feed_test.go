package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// nextEvent returns the stream's next event of kind k (or its end).
func nextEvent(t *testing.T, s *Stream, k EventKind) Event {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatalf("stream closed before a %v event", k)
			}
			if ev.Kind == k || ev.Kind == Done || ev.Kind == Failed {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %v event", k)
		}
	}
}

// TestFeedSpeaksBeforeEnd: a fed utterance speaks its first sentence
// while the feed is still open and nothing follows it, takes later text as
// it comes (a character split between appends included), and ends after
// End with every part spoken in order.
func TestFeedSpeaksBeforeEnd(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	f := NewTextFeed()
	req := shortRequest()
	req.Text, req.Feed = "", f
	s := mustSynthesize(t, e, req)
	if err := f.Append("Hello there, "); err != nil {
		t.Fatal(err)
	}
	if err := f.Append("friend. "); err != nil {
		t.Fatal(err)
	}
	first := nextEvent(t, s, Audio)
	if first.Kind != Audio {
		t.Fatalf("first sentence: %v (%v), want audio before the text ended", first.Kind, first.Err)
	}
	if first.Metrics.TTFA <= 0 || first.Metrics.Parts != 1 {
		t.Errorf("first audio: TTFA %v, %d parts", first.Metrics.TTFA, first.Metrics.Parts)
	}
	for _, chunk := range []string{"Caf", "\xc3", "\xa9 au lait", " is next."} {
		if err := f.Append(chunk); err != nil {
			t.Fatalf("append %q: %v", chunk, err)
		}
	}
	if err := f.End(); err != nil {
		t.Fatal(err)
	}
	got := drainParts(s)
	if got.final.Kind != Done {
		t.Fatalf("ended %v: %v", got.final.Kind, got.final.Err)
	}
	if len(got.parts) != 1 || got.parts[0].Text != "Café au lait is next." || got.parts[0].Start != len("Hello there, friend. ") {
		t.Fatalf("parts after the first: %+v", got.parts)
	}
	if err := f.Append("more"); !errors.Is(err, ErrFeedEnded) {
		t.Errorf("append after End: %v, want ErrFeedEnded", err)
	}
}

// TestFeedFlush: text without a sentence end is spoken at Flush.
func TestFeedFlush(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	f := NewTextFeed()
	req := shortRequest()
	req.Text, req.Feed = "", f
	s := mustSynthesize(t, e, req)
	f.Append("no full stop yet")
	f.Flush()
	if ev := nextEvent(t, s, PartStart); ev.Kind != PartStart || ev.Part.Text != "no full stop yet" {
		t.Fatalf("after Flush: %v %+v", ev.Kind, ev.Part)
	}
	f.End()
	if got := drainParts(s); got.final.Kind != Done {
		t.Fatalf("ended %v: %v", got.final.Kind, got.final.Err)
	}
}

// TestFeedBadText: invalid UTF-8, text past the limit, or an end inside a
// character fail the feed; the utterance speaks what came before, the
// unfinished sentence too, then fails with a message saying what was
// wrong; the engine serves the next utterance.
func TestFeedBadText(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	for _, c := range []struct {
		name string
		bad  func(f *TextFeed) error
		want string
	}{
		{"invalid UTF-8", func(f *TextFeed) error { return f.Append("bad \xff\xfe bytes. ") }, "UTF-8"},
		{"over the limit", func(f *TextFeed) error { return f.Append(strings.Repeat("a ", MaxTextBytes/2)) }, "limit"},
		{"ends inside a character", func(f *TextFeed) error { f.Append("caf\xc3"); return f.End() }, "inside a UTF-8 character"},
	} {
		f := NewTextFeed()
		req := shortRequest()
		req.Text, req.Feed = "", f
		s := mustSynthesize(t, e, req)
		f.Append("A good sentence first. And an unfinished one ")
		if err := c.bad(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: the feed returned %v, want it to mention %q", c.name, err, c.want)
		}
		got := drainParts(s)
		if got.final.Kind != Failed || !strings.Contains(got.final.Err.Error(), c.want) {
			t.Errorf("%s: ended %v (%v), want Failed mentioning %q", c.name, got.final.Kind, got.final.Err, c.want)
		}
		var said string
		for _, p := range got.parts {
			said += p.Text
		}
		if !strings.HasPrefix(said, "A good sentence first. And an unfinished one") || len(got.pcm) == 0 || len(got.pcm) != got.frames*512 {
			t.Errorf("%s: parts %+v, %d samples for %d frames; want both sentences spoken whole", c.name, got.parts, len(got.pcm), got.frames)
		}
	}
	req := shortRequest()
	req.Feed = NewTextFeed()
	if _, err := e.Synthesize(context.Background(), req); err == nil {
		t.Error("a request with both text and a feed was accepted")
	}
	if got := drain(mustSynthesize(t, e, shortRequest())); got.final.Kind != Done {
		t.Fatalf("next utterance: %v", got.final.Err)
	}
}

// TestFeedCancelWhileWaiting: an utterance waiting for text is cancelled
// at once.
func TestFeedCancelWhileWaiting(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	req := shortRequest()
	req.Text, req.Feed = "", NewTextFeed()
	s := mustSynthesize(t, e, req)
	s.Cancel()
	if err := s.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want Canceled", err)
	}
}

// cutAll cuts a feed and returns the pieces' texts, checking each sits at
// its offsets in whole (when given).
func cutAll(t *testing.T, f *TextFeed, budget int, whole string) []string {
	t.Helper()
	c := newCutter(f, "en-us", budget)
	var out []string
	for {
		p, err := c.next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if whole != "" && whole[p.start:p.end] != p.text {
			t.Fatalf("piece %q is not the text's bytes %d…%d", p.text, p.start, p.end)
		}
		out = append(out, p.text)
	}
}

// TestCutter: sentences are packed under the budget and never cut
// elsewhere; a sentence over the budget is cut at clauses; the pieces
// tile the text in order; a text fed in small chunks is cut as the same
// text given whole; silent pieces are skipped.
func TestCutter(t *testing.T) {
	text := "Short one. Another short one. " +
		"This sentence is rather long, with several clauses in it; it goes on and on, well past the budget. Last."
	whole := cutAll(t, textFeed(text), 35, text)
	if len(whole) < 4 || strings.Join(whole, "") != text {
		t.Fatalf("pieces %q do not tile the text", whole)
	}
	if whole[0] != "Short one. Another short one. " {
		t.Errorf("short sentences not packed: %q", whole[0])
	}
	f := NewTextFeed()
	go func() {
		for i := 0; i < len(text); i += 7 {
			f.Append(text[i:min(i+7, len(text))])
		}
		f.End()
	}()
	if fed := cutAll(t, f, 35, ""); strings.Join(fed, "|") != strings.Join(whole, "|") {
		t.Errorf("fed in chunks: %q\nwhole: %q", fed, whole)
	}
	silent := "Hello there. ?! Goodbye now."
	if got := cutAll(t, textFeed(silent), 13, silent); strings.Join(got, "|") != "Hello there. |Goodbye now." {
		t.Errorf("with a silent sentence: %q", got)
	}
	// A run-on line without a sentence end is spoken in pieces cut at
	// spaces once it is long, not held until its end.
	runOn := strings.Repeat("word ", maxPending/5+50)
	g := NewTextFeed()
	g.Append(runOn)
	c := newCutter(g, "en-us", DefaultPhonemeBudget)
	p, err := c.next(context.Background())
	if err != nil || !strings.HasSuffix(p.text, " ") || len(p.text) > maxPending {
		t.Fatalf("run-on line: first piece %d bytes %q…, %v", len(p.text), truncate(p.text, 20), err)
	}
}

// TestRefusedPieceAfterSpokenOnes: when a later clause of a sentence too
// long for one part is refused by the front end, the clauses before it
// are spoken first and the stream then fails naming the problem.
func TestRefusedPieceAfterSpokenOnes(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	req := shortRequest()
	req.Text = "This first clause is fine and long enough to need a cut of its own, then " +
		strings.Repeat("9", 40) + " is a number too large to read."
	req.PhonemeBudget, req.MaxSeconds = 40, 0.15
	s, err := e.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatalf("refused at once: %v", err)
	}
	got := drainParts(s)
	var said string
	for _, p := range got.parts {
		said += p.Text
	}
	if got.final.Kind != Failed || !strings.Contains(got.final.Err.Error(), "too large") || said != req.Text[:len(said)] ||
		!strings.HasSuffix(said, "then ") || len(got.pcm) != got.frames*512 || got.frames == 0 {
		t.Fatalf("ended %v (%v) after parts %+v and %d samples for %d frames", got.final.Kind, got.final.Err, got.parts, len(got.pcm), got.frames)
	}
}
