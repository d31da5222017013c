package engine

import (
	"fmt"
	"math"
	"strings"

	"zonostream/engine/text"
	"zonostream/engine/zonos"
)

// LongForm says how a text of several parts is spoken as one voice. Every
// part after the first continues from audio already spoken: the codes of
// the parts before it become its audio prefix, with their phonemes before
// its own in the text it is conditioned on, and the prefix is not spoken
// again. The zero value is the default. See docs/design.md ("Long-form
// reading") for why these defaults.
type LongForm struct {
	// ContextParts is how many of the parts just before a part it
	// continues from (default 1; negative: none, and no anchor either:
	// every part starts afresh, as Zonos itself would).
	ContextParts int
	// NoAnchor leaves the first part out of later parts' context. By
	// default it stays in every part's context (as well as the parts just
	// before), which holds the voice where the first part set it instead
	// of letting it drift a little with each part.
	NoAnchor bool
	// TrimFrames is how many frames are dropped from the end of every part
	// that another part follows (default 3, about 35 ms; negative: none;
	// at most zonos.MaxTailTrim). Generated speech tends to end in a fade
	// or a click just before EOS; what is dropped is neither heard nor
	// used as context.
	TrimFrames int
	// MaxContextSeconds bounds the audio a part continues from (default
	// 20 s, at most 30): the anchor is left out first, then the oldest
	// parts. Zonos was trained on clips of up to 30 s, and the prefill
	// grows with the context.
	MaxContextSeconds float64
}

// LongFormOf is the options as a user states them, where 0 context parts
// or 0 trimmed frames mean none (in LongForm, 0 means the default): the
// CLI's flags and the app's settings.
func LongFormOf(contextParts int, anchor bool, trimFrames int, maxContextSeconds float64) LongForm {
	lf := LongForm{ContextParts: contextParts, NoAnchor: !anchor, TrimFrames: trimFrames, MaxContextSeconds: maxContextSeconds}
	if contextParts == 0 {
		lf.ContextParts = -1 // every part afresh
	}
	if trimFrames == 0 {
		lf.TrimFrames = -1
	}
	return lf
}

// Long-form defaults.
const (
	defaultContextParts      = 1
	defaultTrimFrames        = 3
	defaultMaxContextSeconds = 20
)

func (l *LongForm) normalise() error {
	switch {
	case l.ContextParts == 0:
		l.ContextParts = defaultContextParts
	case l.ContextParts < 0:
		l.ContextParts, l.NoAnchor = 0, true
	case l.ContextParts > 8:
		return fmt.Errorf("long-form context of %d parts: at most 8", l.ContextParts)
	}
	switch {
	case l.TrimFrames == 0:
		l.TrimFrames = defaultTrimFrames
	case l.TrimFrames < 0:
		l.TrimFrames = 0
	case l.TrimFrames > zonos.MaxTailTrim:
		return fmt.Errorf("long-form trim of %d frames: at most %d", l.TrimFrames, zonos.MaxTailTrim)
	}
	if l.MaxContextSeconds == 0 {
		l.MaxContextSeconds = defaultMaxContextSeconds
	}
	if l.MaxContextSeconds < 0 || l.MaxContextSeconds > 30 || math.IsNaN(l.MaxContextSeconds) {
		return fmt.Errorf("long-form context of %g s must be in (0, 30]", l.MaxContextSeconds)
	}
	return nil
}

// spokenPart is a part already spoken, kept while later parts may
// continue from it.
type spokenPart struct {
	index    int
	phonemes string
	codes    [][zonos.NumCodebooks]int32 // exactly the frames spoken
}

// spokenContext is what later parts continue from: the anchor (the first part)
// and the most recent parts, nothing older, so its memory stays bounded
// however long the text.
type spokenContext struct {
	cfg    LongForm
	anchor *spokenPart
	recent []spokenPart // oldest first, at most cfg.ContextParts
}

// add records a spoken part.
func (c *spokenContext) add(p spokenPart) {
	if p.index == 0 && !c.cfg.NoAnchor {
		c.anchor = &p
	}
	if c.cfg.ContextParts == 0 {
		return
	}
	c.recent = append(c.recent, p)
	if n := len(c.recent) - c.cfg.ContextParts; n > 0 {
		c.recent = append(c.recent[:0:0], c.recent[n:]...)
	}
}

// prompt returns the audio prefix and phoneme ids part p is generated
// from: the context's parts in order (the anchor first, unless it is
// already among the recent ones), then p. It leaves parts out, anchor
// first, while the audio exceeds MaxContextSeconds or the phonemes
// MaxPartPhonemes; with nothing left, p starts afresh. used lists the
// context parts' indices.
func (c *spokenContext) prompt(p piece) (prefix [][zonos.NumCodebooks]int32, ids []int32, used []int) {
	var parts []spokenPart
	if c.anchor != nil && (len(c.recent) == 0 || c.recent[0].index != 0) {
		parts = append(parts, *c.anchor)
	}
	parts = append(parts, c.recent...)
	maxFrames := int(c.cfg.MaxContextSeconds * SampleRate / 512)
	fits := func(parts []spokenPart) bool {
		frames, phonemes := 0, len(p.ids)
		for _, q := range parts {
			frames += len(q.codes)
			phonemes += len([]rune(q.phonemes)) + 1
		}
		return frames <= maxFrames && phonemes <= MaxPartPhonemes+2
	}
	for len(parts) > 0 && !fits(parts) {
		parts = parts[1:]
	}
	if len(parts) == 0 {
		return nil, p.ids, nil
	}
	var ph []string
	for _, q := range parts {
		prefix = append(prefix, q.codes...)
		ph = append(ph, q.phonemes)
		used = append(used, q.index)
	}
	// Each part's phonemes as it was spoken, joined by a word space:
	// exactly what the prefix audio says.
	ph = append(ph, p.phonemes)
	return prefix, text.Tokenize(strings.Join(ph, " ")), used
}
