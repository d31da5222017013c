package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"zonostream/engine"
)

// knobFlags binds Zonos' conditioning and sampling knobs to flags, with the
// reference's defaults.
type knobFlags struct {
	k       engine.Knobs
	emotion string
	uncond  string
}

func addKnobFlags(fs *flag.FlagSet) *knobFlags {
	kf := &knobFlags{k: engine.DefaultKnobs()}
	k := &kf.k
	def := make([]string, 8)
	for i, e := range k.Emotion {
		def[i] = strconv.FormatFloat(float64(e), 'g', -1, 32)
	}
	fs.StringVar(&kf.emotion, "emotion", strings.Join(def, ","), "eight emotion weights: "+strings.Join(engine.Emotions[:], ","))
	fs.Func("fmax", fmt.Sprintf("maximum frequency conditioning, Hz 0–24000 (default %g)", k.Fmax), floatInto(&k.Fmax))
	fs.Func("pitch-std", fmt.Sprintf("pitch variation 0–400; 20–45 normal, 60–150 expressive (default %g)", k.PitchStd), floatInto(&k.PitchStd))
	fs.Func("rate", fmt.Sprintf("speaking rate 0–40; 10 slow, 30 very fast (default %g)", k.SpeakingRate), floatInto(&k.SpeakingRate))
	fs.Func("vq", fmt.Sprintf("voice-quality score 0.5–0.8, used when not unconditional (default %g)", k.VQScore), floatInto(&k.VQScore))
	fs.Func("dnsmos", fmt.Sprintf("DNSMOS overall 1–5, used when not unconditional (default %g)", k.DNSMOS), floatInto(&k.DNSMOS))
	fs.BoolVar(&k.SpeakerNoised, "denoise", false, "the speaker clip is noisy (speaker_noised)")
	fs.Func("cfg", fmt.Sprintf("classifier-free guidance scale (default %g)", k.CFGScale), floatInto(&k.CFGScale))
	s := &k.Sampling
	fs.Func("temperature", fmt.Sprintf("sampling temperature; 0 = greedy (default %g)", s.Temperature), floatInto(&s.Temperature))
	fs.Func("top-p", "nucleus sampling mass, 0 = off", floatInto(&s.TopP))
	fs.IntVar(&s.TopK, "top-k", 0, "keep the k most likely tokens, 0 = off")
	fs.Func("min-p", fmt.Sprintf("drop tokens below min-p × the best (default %g)", s.MinP), floatInto(&s.MinP))
	fs.Func("linear", "unified sampler: linear (0 = off)", floatInto(&s.Linear))
	fs.Func("conf", "unified sampler: confidence", floatInto(&s.Conf))
	fs.Func("quad", "unified sampler: quadratic", floatInto(&s.Quad))
	fs.Func("repetition-penalty", fmt.Sprintf("repetition penalty, 1 = off (default %g)", s.RepetitionPenalty), floatInto(&s.RepetitionPenalty))
	fs.IntVar(&s.RepetitionWindow, "repetition-window", s.RepetitionWindow, "repetition penalty window in frames")
	fs.StringVar(&kf.uncond, "uncond", strings.Join(k.Unconditional, ","), "conditioners left unconditional (comma-separated; e.g. emotion,speaker)")
	return kf
}

func floatInto(p *float32) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		*p = float32(v)
		return nil
	}
}

// knobs finishes parsing the composite flags.
func (kf *knobFlags) knobs() (engine.Knobs, error) {
	k := kf.k
	parts := strings.Split(kf.emotion, ",")
	if len(parts) != 8 {
		return k, fmt.Errorf("--emotion wants 8 comma-separated weights (%s), got %d", strings.Join(engine.Emotions[:], ","), len(parts))
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil || v < 0 {
			return k, fmt.Errorf("--emotion %s: %q must be a number ≥ 0", engine.Emotions[i], p)
		}
		k.Emotion[i] = float32(v)
	}
	k.Unconditional = nil
	for _, u := range strings.Split(kf.uncond, ",") {
		if u = strings.TrimSpace(u); u != "" {
			k.Unconditional = append(k.Unconditional, u)
		}
	}
	return k, nil
}
