package app

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"zonostream/engine"
	"zonostream/engine/sample"
	"zonostream/engine/zonos"
)

// Knobs turns the settings into the engine's knobs.
func (s Settings) Knobs() engine.Knobs {
	k := engine.DefaultKnobs()
	for i, e := range s.Emotion {
		k.Emotion[i] = float32(e)
	}
	k.SpeakingRate = float32(s.SpeakingRate)
	k.PitchStd = float32(s.PitchStd)
	k.Fmax = float32(s.Fmax)
	k.VQScore = float32(s.VQScore)
	k.DNSMOS = float32(s.DNSMOS)
	k.SpeakerNoised = s.DenoiseSpeaker
	k.CFGScale = float32(s.CFGScale)
	k.Sampling = sample.Defaults()
	k.Sampling.Linear = float32(s.Linear)
	k.Sampling.Conf = float32(s.Confidence)
	k.Sampling.Quad = float32(s.Quadratic)
	k.Sampling.TopP = float32(s.TopP)
	k.Sampling.TopK = s.TopK
	k.Sampling.MinP = float32(s.MinP)
	k.Unconditional = append([]string(nil), s.Unconditional...)
	return k
}

// LongForm turns the settings into the engine's long-form options.
func (s Settings) LongForm() engine.LongForm {
	return engine.LongFormOf(s.ContextParts, s.Anchor, s.TrimFrames, 0)
}

// Voice is the conditioning that comes from clips rather than knobs.
type Voice struct {
	Speaker []float32                   // 128-d embedding, nil for none
	Prefix  [][zonos.NumCodebooks]int32 // DAC codes of the prefix clip
}

// BuildRequest makes the engine request for the current settings. seed
// draws a fresh seed when the settings ask for a random one; the seed used
// is in the request (the window shows it so a voice can be reproduced).
// Notices say what was changed on the way (trimmed text).
func BuildRequest(s Settings, v Voice, seed func() uint64) (engine.Request, []string, error) {
	var notices []string
	t := strings.TrimSpace(s.Text)
	s = s.Sanitize()
	if t == "" {
		return engine.Request{}, nil, fmt.Errorf("nothing to speak: type some text first")
	}
	if len(t) > engine.MaxTextBytes {
		var cut int
		t, cut = trimText(t, engine.MaxTextBytes)
		notices = append(notices, fmt.Sprintf("text is longer than %d MiB: the last %d characters were left out", engine.MaxTextBytes>>20, cut))
	}
	sum := 0.0
	for _, e := range s.Emotion {
		sum += e
	}
	if sum <= 0 && !s.IsUnconditional("emotion") {
		return engine.Request{}, nil, fmt.Errorf("all emotion sliders are at 0: raise one, or tick emotion under Unconditional")
	}
	r := engine.Request{
		Text:        t,
		Language:    s.Language,
		Knobs:       s.Knobs(),
		Seed:        s.Seed,
		Speaker:     v.Speaker,
		AudioPrefix: v.Prefix,

		PhonemeBudget: s.PartPhonemes,
		LongForm:      s.LongForm(),
	}
	if s.IsUnconditional("speaker") {
		r.Speaker = nil
	}
	if s.RandomSeed && seed != nil {
		r.Seed = seed()
	}
	return r, notices, nil
}

// trimText cuts s to at most n bytes at a rune boundary, preferring the end
// of a sentence in the last tenth; it returns the kept text and how many
// characters were cut.
func trimText(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	kept := s[:cut]
	if i := strings.LastIndexAny(kept, ".!?\n"); i >= cut-cut/10 && i > 0 {
		kept = kept[:i+1]
	}
	return kept, utf8.RuneCountInString(s[len(kept):])
}
