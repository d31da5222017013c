package app

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"zonostream/engine"
	"zonostream/engine/text"
	"zonostream/engine/weights"
	"zonostream/internal/backend"
	"zonostream/server"
)

// Settings is everything the user sets in the window that is remembered
// between runs: the text, language and model, and Zonos' knobs.
type Settings struct {
	Text     string `json:"text"`
	Language string `json:"language"`
	Variant  string `json:"variant"`

	Emotion        [8]float64 `json:"emotion"`
	SpeakingRate   float64    `json:"speaking_rate"`
	PitchStd       float64    `json:"pitch_std"`
	Fmax           float64    `json:"fmax"`
	VQScore        float64    `json:"vq_score"`
	DNSMOS         float64    `json:"dnsmos"`
	DenoiseSpeaker bool       `json:"denoise_speaker"`
	CFGScale       float64    `json:"cfg_scale"`
	Seed           uint64     `json:"seed"`
	RandomSeed     bool       `json:"random_seed"`

	Linear     float64 `json:"linear"`
	Confidence float64 `json:"confidence"`
	Quadratic  float64 `json:"quadratic"`
	TopP       float64 `json:"top_p"`
	TopK       int     `json:"top_k"`
	MinP       float64 `json:"min_p"`

	// Unconditional lists the conditioners left to their learned
	// unconditional value (Zonos' unconditional_keys).
	Unconditional []string `json:"unconditional"`
	SamplingOpen  bool     `json:"sampling_open"`
	// OutputDevice is the chosen sound output ("" : the system default).
	OutputDevice string `json:"output_device"`
	// GPUPlan is GPUPlanAuto or GPUPlanGeneric; the backend is opened with
	// it when the app starts.
	GPUPlan string `json:"gpu_plan"`

	// How a long text's parts continue one another (engine.LongForm):
	// part size in phonemes, parts of context (0: each part afresh), the
	// first part kept in every context, frames trimmed at a part's end.
	PartPhonemes int  `json:"part_phonemes"`
	ContextParts int  `json:"context_parts"`
	Anchor       bool `json:"anchor"`
	TrimFrames   int  `json:"trim_frames"`

	// Serve runs the speech server in the app, on the loaded model
	// (Service), at ServeListen (host:port, loopback: the app has no API
	// keys, so the server refuses any other address).
	Serve       bool   `json:"serve"`
	ServeListen string `json:"serve_listen"`
}

// GPU plans the settings offer. Auto lets the CUDA backend pick its kernels
// from the GPU (the Hopper plan on sm_90); generic forces the kernels every
// NVIDIA GPU from Ampere on runs.
const (
	GPUPlanAuto    = backend.PlanAuto
	GPUPlanGeneric = backend.PlanGeneric
)

// UnconditionalKeys are the conditioners Zonos' interface lets the user
// leave unconditional, in its order.
var UnconditionalKeys = []string{"speaker", "emotion", "vqscore_8", "fmax", "pitch_std", "speaking_rate", "dnsmos_ovrl", "speaker_noised"}

// DefaultSettings are engine.DefaultKnobs (Zonos' make_cond_dict and
// generate defaults, the same as `zonos say`), English, the hybrid model
// and a seed drawn afresh for every utterance.
func DefaultSettings() Settings {
	k := engine.DefaultKnobs()
	s := Settings{
		Text:           "",
		Language:       "en-us",
		Variant:        string(weights.Hybrid),
		SpeakingRate:   float64(k.SpeakingRate),
		PitchStd:       float64(k.PitchStd),
		Fmax:           float64(k.Fmax),
		VQScore:        float64(k.VQScore),
		DNSMOS:         float64(k.DNSMOS),
		DenoiseSpeaker: k.SpeakerNoised,
		CFGScale:       float64(k.CFGScale),
		Seed:           420,
		RandomSeed:     true,
		Linear:         float64(k.Sampling.Linear),
		Confidence:     float64(k.Sampling.Conf),
		Quadratic:      float64(k.Sampling.Quad),
		TopP:           float64(k.Sampling.TopP),
		TopK:           k.Sampling.TopK,
		MinP:           float64(k.Sampling.MinP),
		Unconditional:  slices.Clone(k.Unconditional),
		GPUPlan:        GPUPlanAuto,
		PartPhonemes:   engine.DefaultPhonemeBudget,
		ContextParts:   1,
		Anchor:         true,
		TrimFrames:     3,
		ServeListen:    server.DefaultListen,
	}
	for i, e := range k.Emotion {
		s.Emotion[i] = round4(float64(e))
	}
	return s
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// Range is a knob's slider: bounds and step, as in Zonos' interface
// (gradio_interface.py), narrowed where the engine is stricter.
type Range struct{ Min, Max, Step float64 }

// Knob ranges.
var (
	EmotionRange      = Range{0, 1, 0.05}
	SpeakingRateRange = Range{5, 30, 0.5}
	PitchStdRange     = Range{0, 300, 1}
	FmaxRange         = Range{0, 24000, 1}
	VQScoreRange      = Range{0.5, 0.8, 0.01}
	DNSMOSRange       = Range{1, 5, 0.1}
	CFGScaleRange     = Range{1.1, 5, 0.1} // the engine refuses exactly 1 (no guidance)
	LinearRange       = Range{0, 1, 0.01}  // sample.Params.Validate: [0, 1]
	ConfidenceRange   = Range{-2, 2, 0.01}
	QuadraticRange    = Range{-2, 2, 0.01}
	TopPRange         = Range{0, 1, 0.01}
	TopKRange         = Range{0, 1024, 1}
	MinPRange         = Range{0, 1, 0.01}
	PartPhonemesRange = Range{40, 400, 10}
	ContextPartsRange = Range{0, 4, 1}
	TrimFramesRange   = Range{0, 7, 1} // zonos.MaxTailTrim
)

// Clamp puts v in the range (NaN becomes Min).
func (r Range) Clamp(v float64) float64 {
	if math.IsNaN(v) || v < r.Min {
		return r.Min
	}
	return min(v, r.Max)
}

// Sanitize brings every field into its range and replaces unknown
// languages, variants and keys, so settings from an older or edited
// preferences file can never break a request.
func (s Settings) Sanitize() Settings {
	d := DefaultSettings()
	if text.CheckLanguage(s.Language) != nil {
		s.Language = d.Language
	}
	if _, err := weights.ParseVariant(s.Variant); err != nil && s.Variant != CustomVariant {
		s.Variant = d.Variant
	}
	for i := range s.Emotion {
		s.Emotion[i] = EmotionRange.Clamp(s.Emotion[i])
	}
	s.SpeakingRate = SpeakingRateRange.Clamp(s.SpeakingRate)
	s.PitchStd = PitchStdRange.Clamp(s.PitchStd)
	s.Fmax = FmaxRange.Clamp(s.Fmax)
	s.VQScore = VQScoreRange.Clamp(s.VQScore)
	s.DNSMOS = DNSMOSRange.Clamp(s.DNSMOS)
	s.CFGScale = CFGScaleRange.Clamp(s.CFGScale)
	s.Linear = LinearRange.Clamp(s.Linear)
	s.Confidence = ConfidenceRange.Clamp(s.Confidence)
	s.Quadratic = QuadraticRange.Clamp(s.Quadratic)
	s.TopP = TopPRange.Clamp(s.TopP)
	s.TopK = int(TopKRange.Clamp(float64(s.TopK)))
	s.MinP = MinPRange.Clamp(s.MinP)
	s.PartPhonemes = int(PartPhonemesRange.Clamp(float64(s.PartPhonemes)))
	s.ContextParts = int(ContextPartsRange.Clamp(float64(s.ContextParts)))
	s.TrimFrames = int(TrimFramesRange.Clamp(float64(s.TrimFrames)))
	var keys []string
	for _, k := range s.Unconditional {
		if slices.Contains(UnconditionalKeys, k) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	s.Unconditional = keys
	if s.GPUPlan != GPUPlanGeneric {
		s.GPUPlan = GPUPlanAuto
	}
	// An address the server refuses is kept: the settings line shows the
	// server's reason, which a silent default would hide.
	if s.ServeListen = strings.TrimSpace(s.ServeListen); s.ServeListen == "" {
		s.ServeListen = d.ServeListen
	}
	if len(s.Text) > engine.MaxTextBytes {
		s.Text, _ = trimText(s.Text, engine.MaxTextBytes)
	}
	return s
}

// IsUnconditional reports whether key is in Unconditional.
func (s Settings) IsUnconditional(key string) bool { return slices.Contains(s.Unconditional, key) }

// SetUnconditional adds or removes key.
func (s *Settings) SetUnconditional(key string, on bool) {
	s.Unconditional = slices.DeleteFunc(slices.Clone(s.Unconditional), func(k string) bool { return k == key })
	if on {
		s.Unconditional = append(s.Unconditional, key)
	}
}

// Prefs is the part of fyne.Preferences settings use (a map in tests).
type Prefs interface {
	String(key string) string
	SetString(key, value string)
}

// settingsKey holds the settings as JSON: one key, so a new field needs no
// migration (absent fields keep their defaults).
const settingsKey = "settings.v1"

// LoadSettings reads the remembered settings, or the defaults.
func LoadSettings(p Prefs) Settings {
	s := DefaultSettings()
	if raw := p.String(settingsKey); raw != "" {
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			s = DefaultSettings()
		}
	}
	return s.Sanitize()
}

// SaveSettings remembers s.
func SaveSettings(p Prefs, s Settings) {
	b, err := json.Marshal(s.Sanitize())
	if err != nil {
		return // unreachable: Settings has only plain fields
	}
	p.SetString(settingsKey, string(b))
}
