package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"zonostream/engine/text"
)

// piece is one part of the text as the model will speak it: whole
// sentences packed under the phoneme budget (a sentence over it cut at
// clauses, then words), with its phonemes.
type piece struct {
	text       string
	start, end int // byte offsets in the whole text
	ids        []int32
	phonemes   string
	ready      time.Time // when its text was complete (at the latest)
}

// maxPending is how much text without a sentence end a feed may hold
// before it is spoken anyway, cut after its last space or clause mark: a
// run-on line is not held back until its end.
const maxPending = 2 << 10

// cutter cuts a feed's text into pieces as it becomes complete. It runs
// the text front end (espeak-ng) once per sentence and once per piece, and
// only on text that is about to be spoken, so a text of megabytes starts
// speaking after its first sentence's front end, not its whole.
type cutter struct {
	feed   *TextFeed
	lang   string
	budget int
	cost   func(string) int
	pos    int     // bytes of the feed already cut
	queue  []piece // cut from one oversized sentence, not yet returned
	err    error   // a later piece of that sentence refused: returned after queue
	// last is the last text costed, and its cost: the sentence that did
	// not fit one part is the first of the next.
	last     string
	lastCost int
}

func newCutter(f *TextFeed, lang string, budget int) *cutter {
	c := &cutter{feed: f, lang: lang, budget: budget}
	phonemes := text.PhonemeCost(lang)
	c.cost = func(s string) int {
		if s != c.last {
			c.last, c.lastCost = s, phonemes(s)
		}
		return c.lastCost
	}
	return c
}

// next returns the next piece, io.EOF once the text ended and all of it
// was cut, the feed's error, or ctx's. It waits for text as long as the
// feed is open.
func (c *cutter) next(ctx context.Context) (piece, error) {
	for {
		if len(c.queue) > 0 {
			p := c.queue[0]
			c.queue = c.queue[1:]
			return p, nil
		}
		if c.err != nil {
			return piece{}, c.err
		}
		v := c.feed.view(c.pos)
		group, n, cost := c.group(v)
		if n < 0 {
			return piece{}, fmt.Errorf("text at byte %d: %q… runs over %d bytes without a space or punctuation to split it at; add spaces or punctuation",
				c.pos, truncate(v.text, 20), maxPending)
		}
		if n == 0 {
			if v.err != nil {
				return piece{}, v.err
			}
			if v.ended && !v.more {
				return piece{}, io.EOF
			}
			select {
			case <-v.changed:
				continue
			case <-ctx.Done():
				return piece{}, ctx.Err()
			}
		}
		start := c.pos
		c.pos += n
		ready := v.at
		var parts []string
		if len(group) == 1 && cost > c.budget {
			parts = text.Split(group[0], c.budget, c.cost)
		} else {
			parts = []string{strings.Join(group, "")}
		}
		off := start
		for _, s := range parts {
			p, err := c.prepare(s, off, ready)
			off += len(s)
			if errors.Is(err, errSilent) {
				continue
			}
			if err != nil {
				// The pieces before it are spoken first.
				c.err = err
				break
			}
			c.queue = append(c.queue, p)
		}
	}
}

// group takes the complete sentences at the front of v, packed while
// their costs add up to at most the budget, and returns them with the
// bytes they span (0: nothing complete yet; −1: a run of maxPending bytes
// without a space or punctuation, which no part can hold) and their cost.
func (c *cutter) group(v feedView) (group []string, n, total int) {
	for {
		rest := v.text[n:]
		if rest == "" {
			return group, n, total
		}
		// A failed feed gets no more text: what it holds is complete.
		final := v.ended && !v.more || v.err != nil && !v.more
		m := text.FirstSentence(rest, final)
		if f := v.flushed - n; f > 0 {
			if k := text.FirstSentence(rest[:f], true); m == 0 || k < m {
				m = k
			}
		}
		if m == 0 && len(group) == 0 && (len(rest) >= maxPending || v.more) {
			// A run without a sentence end: cut after its last space or
			// clause mark within the window. None there: a "word" no
			// part can hold.
			if m = text.LastBreak(rest[:min(len(rest), maxPending)]); m == 0 {
				return nil, -1, 0
			}
		}
		if m == 0 {
			return group, n, total
		}
		s := rest[:m]
		k := c.cost(s)
		if len(group) > 0 && total+k > c.budget {
			return group, n, total
		}
		group = append(group, s)
		total += k
		n += m
		if total >= c.budget {
			return group, n, total
		}
	}
}

// errSilent marks a piece with nothing to say (whitespace or punctuation
// between sentences): it is skipped.
var errSilent = errors.New("nothing to say")

// prepare runs the text front end over one piece.
func (c *cutter) prepare(s string, start int, ready time.Time) (piece, error) {
	ids, ph, err := text.Prepare(s, c.lang)
	if err != nil {
		if errors.Is(err, text.ErrEmpty) || errors.Is(err, text.ErrNothingToSay) {
			return piece{}, errSilent
		}
		return piece{}, fmt.Errorf("text at byte %d (%q…): %w", start, truncate(strings.TrimSpace(s), 40), err)
	}
	if len(ids) > MaxPartPhonemes+2 { // + BOS and EOS
		return piece{}, fmt.Errorf("text: %q… gives %d phonemes without a place to split it (limit %d); add spaces or punctuation",
			truncate(strings.TrimSpace(s), 40), len(ids)-2, MaxPartPhonemes)
	}
	return piece{text: s, start: start, end: start + len(s), ids: ids, phonemes: ph, ready: ready}, nil
}

// pieceOrErr is one result of a cutter running ahead.
type pieceOrErr struct {
	p   piece
	err error // io.EOF at the end of the text
}

// lookahead is how many pieces the cutter prepares ahead of the one being
// generated: the next part's front end is done before it is needed.
const lookahead = 2

// ahead runs c on its own goroutine, lookahead pieces ahead of the reader.
// The channel closes after the first error (io.EOF included).
func (c *cutter) ahead(ctx context.Context) <-chan pieceOrErr {
	out := make(chan pieceOrErr, lookahead)
	go func() {
		defer close(out)
		for {
			p, err := c.next(ctx)
			select {
			case out <- pieceOrErr{p, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}
