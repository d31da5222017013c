package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// TextFeed is text given to an utterance while it is spoken (Request.Feed):
// a chat model's output as it is written, standard input read line by
// line, a WebSocket's messages. The utterance speaks each sentence as soon
// as it is complete (text.FirstSentence) and ends after End once all of it
// has been spoken. A TextFeed is safe for concurrent use and serves one
// utterance.
type TextFeed struct {
	mu      sync.Mutex
	text    []byte        // every byte appended, incomplete trailing rune included
	valid   int           // text[:valid] is whole runes
	flushed int           // text[:flushed] counts as complete however it ends
	ended   bool          // End was called
	err     error         // the feed failed (invalid UTF-8, over the limit)
	changed chan struct{} // closed and replaced whenever the above change
	at      time.Time     // when they last changed
}

// ErrFeedEnded is returned by Append and Flush after End.
var ErrFeedEnded = errors.New("text feed: the text was already ended")

// NewTextFeed returns an empty feed.
func NewTextFeed() *TextFeed { return &TextFeed{changed: make(chan struct{})} }

// Append adds text. It may split a character between calls (bytes read
// from a pipe), but the text as a whole must be UTF-8 and within
// MaxTextBytes: the first violation fails the feed, and the utterance ends
// with that error after speaking what came before it.
func (f *TextFeed) Append(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refusal(); err != nil {
		return err
	}
	if len(f.text)+len(s) > MaxTextBytes {
		return f.fail(fmt.Errorf("text beyond the %d-byte (%d MiB) limit of one utterance", MaxTextBytes, MaxTextBytes>>20))
	}
	f.text = append(f.text, s...)
	for f.valid < len(f.text) {
		r, n := utf8.DecodeRune(f.text[f.valid:])
		if r == utf8.RuneError && n <= 1 {
			if !utf8.FullRune(f.text[f.valid:]) {
				break // the rest of the character is still to come
			}
			return f.fail(fmt.Errorf("text is not valid UTF-8 at byte %d; give UTF-8 text", f.valid))
		}
		f.valid += n
	}
	f.signal()
	return nil
}

// Flush makes the text appended so far count as complete, as if a sentence
// ended there: a voice agent's turn that ends without punctuation is spoken
// now rather than when more text comes.
func (f *TextFeed) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refusal(); err != nil {
		return err
	}
	f.flushed = f.valid
	f.signal()
	return nil
}

// End says no more text will come. Text that ends in the middle of a
// character fails the feed.
func (f *TextFeed) End() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return nil
	}
	f.ended = true
	if f.err == nil && f.valid < len(f.text) {
		f.fail(fmt.Errorf("text ends inside a UTF-8 character at byte %d", f.valid))
	}
	f.signal()
	return f.err
}

// refusal is why the feed takes no more text (under mu): it ended or
// failed; nil while it takes text.
func (f *TextFeed) refusal() error {
	if f.ended {
		return ErrFeedEnded
	}
	return f.err
}

// isEnded reports whether End was called.
func (f *TextFeed) isEnded() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

// fail records err as the feed's error (under mu) and returns it.
func (f *TextFeed) fail(err error) error {
	f.err = err
	f.signal()
	return err
}

func (f *TextFeed) signal() {
	f.at = time.Now()
	close(f.changed)
	f.changed = make(chan struct{})
}

// feedView is what the part cutter reads of a feed at one moment, from
// byte pos on.
type feedView struct {
	text    string // whole runes from pos, at most scanWindow bytes
	more    bool   // the feed holds more text after text
	flushed int    // text[:flushed] counts as complete (0: none)
	ended   bool
	err     error
	changed <-chan struct{} // closes at the next change
	at      time.Time       // when the feed last changed: text in the view was complete by then
}

// scanWindow bounds what one look at a feed copies: a part is cut from the
// first bytes after the last one, so a 4 MiB text is never copied whole.
const scanWindow = 16 << 10

func (f *TextFeed) view(pos int) feedView {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := min(f.valid, pos+scanWindow)
	for end < f.valid && !utf8.RuneStart(f.text[end]) {
		end--
	}
	v := feedView{text: string(f.text[pos:end]), more: end < f.valid, ended: f.ended, err: f.err, changed: f.changed, at: f.at}
	if f.flushed > pos {
		v.flushed = min(f.flushed, end) - pos
	}
	return v
}

// textFeed is a feed holding all of text, already ended (Request.Text).
func textFeed(text string) *TextFeed {
	f := NewTextFeed()
	f.text, f.valid, f.ended, f.at = []byte(text), len(text), true, time.Now()
	return f
}
