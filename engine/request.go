package engine

import (
	"context"
	"fmt"
	"math"
	"unicode/utf8"

	"zonostream/engine/dac"
	"zonostream/engine/sample"
	"zonostream/engine/text"
	"zonostream/engine/zonos"
)

// Emotions names the eight emotion conditioner inputs in order.
var Emotions = [8]string{"happiness", "sadness", "disgust", "fear", "surprise", "anger", "other", "neutral"}

// Knobs are Zonos' conditioning and sampling controls, as in its own
// interface (make_cond_dict and generate defaults).
type Knobs struct {
	Emotion       [8]float32 // normalised to sum 1 before use
	Fmax          float32    // Hz, 0…24000; 22050 for 44.1 kHz voices
	PitchStd      float32    // 0…400; 20–45 normal speech
	SpeakingRate  float32    // phonemes per minute /10-ish scale, 0…40
	VQScore       float32    // 0.5…0.8, applied to all 8 slots
	DNSMOS        float32    // 1…5
	CTCLoss       float32    // -1…1000
	SpeakerNoised bool       // the speaker clip is noisy: denoise it
	CFGScale      float32    // classifier-free guidance, 2.0
	Sampling      sample.Params
	// Unconditional lists conditioners left to their learned unconditional
	// vector (Zonos' unconditional_keys; default vqscore_8 and dnsmos_ovrl).
	Unconditional []string
}

// DefaultKnobs are Zonos' defaults (make_cond_dict, generate()).
func DefaultKnobs() Knobs {
	return Knobs{
		Emotion:       [8]float32{0.3077, 0.0256, 0.0256, 0.0256, 0.0256, 0.0256, 0.2564, 0.3077},
		Fmax:          22050,
		PitchStd:      20,
		SpeakingRate:  15,
		VQScore:       0.78,
		DNSMOS:        4,
		CTCLoss:       0,
		CFGScale:      2,
		Sampling:      sample.Defaults(),
		Unconditional: []string{"vqscore_8", "dnsmos_ovrl"},
	}
}

// Request is one utterance.
type Request struct {
	Text     string
	Language string // espeak code, e.g. "en-us"
	// Speaker is a 128-d voice embedding (engine/speaker); nil leaves the
	// speaker unconditional.
	Speaker []float32
	// AudioPrefix is DAC codes of audio the speech continues from.
	AudioPrefix [][zonos.NumCodebooks]int32
	Knobs       Knobs
	Seed        uint64
	// MaxSeconds bounds the audio of one sentence group (default 30 s).
	MaxSeconds float64
	// FirstChunk and Chunk are the vocoder's commit sizes in frames: the
	// first emission (whose last frame may be partial), and the steady
	// size emissions ramp up to (default 1 and 32: dac.DefaultStreamConfig). A vocoder that has fallen behind
	// takes every frame queued at once, so an emission can be larger.
	FirstChunk, Chunk int
	// PhonemeBudget is the size of a part of a long text: whole sentences
	// packed up to this many phonemes (default 150, about 10 s of speech),
	// a longer sentence cut at clauses, then words. Parts are generated
	// one after another into one stream, each continuing from the audio
	// before it (LongForm).
	PhonemeBudget int
	// LongForm says how the parts of a long text continue one another.
	LongForm LongForm
	// Feed, when set, is the text, given while it is spoken (Text must be
	// empty): each sentence is spoken once it is complete, and the
	// utterance ends after the feed's End. Metrics.TTFA then counts from
	// the first complete sentence.
	Feed *TextFeed
	// DiscardCodes stops the stream keeping every frame for Codes, so a
	// reading of hours holds no more than its last parts in memory; the
	// FrameDone events still carry each frame.
	DiscardCodes bool
	// FixedFrames, when > 0, generates exactly that many frames with EOS
	// suppressed (benchmarks' fixed-length rollouts); MaxSeconds is ignored.
	FixedFrames int
}

// MaxTextBytes bounds the text of one utterance (4 MiB: some 60 hours of
// speech), whole or fed. The text is cut into parts only as they are about
// to be spoken, so its length costs nothing before the first part.
const MaxTextBytes = 4 << 20

// MaxPartPhonemes bounds the phonemes of one part of the text, the length
// of the prompt the model prefills: text.Split never cuts inside a word, so
// a long run without spaces (64 KiB of it gives 13 032 phonemes, a prefill
// of minutes on the tiny model) is refused instead.
const MaxPartPhonemes = 1024

// DefaultPhonemeBudget is the default size of a part of a long text:
// about 10 s of speech, so that with 20 s of context a part's prompt
// stays within the 30 s clips Zonos was trained on.
const DefaultPhonemeBudget = 150

// Check reports what Synthesize would refuse in r without a model: a
// limit, a knob or the text (its first part through the front end; a later
// part it refuses ends the utterance there, after the parts before it). A
// caller that loads a model only to speak one request (zonos say) checks
// first, so a mistake is reported before a load of seconds to minutes.
func (r Request) Check() error {
	if err := r.normalise(); err != nil {
		return err
	}
	_, _, err := r.firstPiece(context.Background())
	return err
}

func (r *Request) normalise() error {
	if len(r.Text) > MaxTextBytes {
		return fmt.Errorf("text of %d bytes exceeds the %d-byte (%d MiB) limit; split it into several requests", len(r.Text), MaxTextBytes, MaxTextBytes>>20)
	}
	if r.Feed != nil && r.Text != "" {
		return fmt.Errorf("give the text either whole or through a feed, not both")
	}
	if r.Feed == nil && !utf8.ValidString(r.Text) {
		return fmt.Errorf("text is not valid UTF-8; give UTF-8 text")
	}
	if r.Language == "" {
		r.Language = "en-us"
	}
	if err := text.CheckLanguage(r.Language); err != nil {
		return err
	}
	if r.MaxSeconds == 0 {
		r.MaxSeconds = 30
	}
	if r.MaxSeconds < 0 || r.MaxSeconds > 60 || math.IsNaN(r.MaxSeconds) {
		return fmt.Errorf("max seconds %g must be in (0, 60]", r.MaxSeconds)
	}
	if r.FirstChunk == 0 {
		r.FirstChunk = dac.DefaultStreamConfig.FirstChunk
	}
	if r.Chunk == 0 {
		r.Chunk = dac.DefaultStreamConfig.Chunk
	}
	if r.FirstChunk < 1 || r.Chunk < 1 || r.FirstChunk > 512 || r.Chunk > 512 {
		return fmt.Errorf("vocoder chunk sizes %d/%d frames must be in [1, 512]", r.FirstChunk, r.Chunk)
	}
	if r.FixedFrames < 0 || r.FixedFrames > zonos.MaxFrames {
		return fmt.Errorf("fixed frames %d must be in [0, %d]", r.FixedFrames, zonos.MaxFrames)
	}
	if r.PhonemeBudget == 0 {
		r.PhonemeBudget = DefaultPhonemeBudget
	}
	if r.PhonemeBudget < 1 || r.PhonemeBudget > MaxPartPhonemes {
		return fmt.Errorf("phoneme budget %d must be in [1, %d]", r.PhonemeBudget, MaxPartPhonemes)
	}
	if err := r.LongForm.normalise(); err != nil {
		return err
	}
	if r.Speaker != nil && len(r.Speaker) != 128 {
		return fmt.Errorf("speaker embedding has %d values, want 128", len(r.Speaker))
	}
	for i, v := range r.Speaker {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("speaker embedding value %d is %g", i, v)
		}
	}
	k := r.Knobs
	for _, f := range []struct {
		name string
		v    float32
	}{{"fmax", k.Fmax}, {"pitch std", k.PitchStd}, {"speaking rate", k.SpeakingRate}, {"vq score", k.VQScore},
		{"dnsmos", k.DNSMOS}, {"ctc loss", k.CTCLoss}, {"cfg scale", k.CFGScale}} {
		if f.v != f.v { // ±Inf is clamped into the conditioner's range with a notice
			return fmt.Errorf("%s is NaN; give a number", f.name)
		}
	}
	var sum float32
	for i, e := range k.Emotion {
		if e < 0 || e != e || math.IsInf(float64(e), 0) {
			return fmt.Errorf("emotion %s = %g must be a finite number ≥ 0", Emotions[i], e)
		}
		sum += e
	}
	if sum <= 0 && !r.isUnconditional("emotion") {
		return fmt.Errorf("emotion weights sum to 0; give at least one a positive weight")
	}
	return nil
}

func (r *Request) isUnconditional(key string) bool {
	for _, k := range r.Knobs.Unconditional {
		if k == key {
			return true
		}
	}
	return false
}

// inputs turns the knobs into conditioner values for the model's
// conditioners (make_cond_dict).
func (r *Request) inputs(ids []int32, langID int, has func(string) bool) zonos.Inputs {
	k := r.Knobs
	in := zonos.Inputs{PhonemeIDs: ids, Values: map[string][]float32{}}
	set := func(name string, v ...float32) {
		if has(name) && !r.isUnconditional(name) {
			in.Values[name] = v
		}
	}
	var sum float32
	for _, e := range k.Emotion {
		sum += e
	}
	emo := make([]float32, 8)
	for i, e := range k.Emotion {
		emo[i] = e / sum
	}
	if r.Speaker != nil {
		set("speaker", r.Speaker...)
	}
	set("emotion", emo...)
	set("fmax", k.Fmax)
	set("pitch_std", k.PitchStd)
	set("speaking_rate", k.SpeakingRate)
	set("language_id", float32(langID))
	vq := make([]float32, 8)
	for i := range vq {
		vq[i] = k.VQScore
	}
	set("vqscore_8", vq...)
	set("ctc_loss", k.CTCLoss)
	set("dnsmos_ovrl", k.DNSMOS)
	noised := float32(0)
	if k.SpeakerNoised {
		noised = 1
	}
	set("speaker_noised", noised)
	return in
}
