package app

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/engine"
)

// knobsView holds Zonos' controls, laid out as in its own interface.
type knobsView struct {
	obj      fyne.CanvasObject
	ui       *UI
	seed     *widget.Entry
	sampling *widget.Accordion
}

// field reads and writes one numeric settings field.
type field struct {
	get func(Settings) float64
	set func(*Settings, float64)
}

func f64(p func(*Settings) *float64) field {
	return field{func(s Settings) float64 { return *p(&s) }, func(s *Settings, v float64) { *p(s) = v }}
}

func integer(p func(*Settings) *int) field {
	return field{func(s Settings) float64 { return float64(*p(&s)) }, func(s *Settings, v float64) { *p(s) = int(math.Round(v)) }}
}

// knob is one labelled slider bound to a settings field.
func (ui *UI) knob(name string, r Range, f field) fyne.CanvasObject {
	s := widget.NewSlider(r.Min, r.Max)
	s.Step = r.Step
	val := widget.NewLabel("")
	format := func(v float64) string {
		switch {
		case r.Step >= 1:
			return strconv.FormatFloat(v, 'f', 0, 64)
		case r.Step >= 0.1:
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s.OnChanged = func(v float64) {
		f.set(&ui.settings, v)
		val.SetText(format(v))
	}
	s.OnChangeEnded = func(float64) { ui.SaveSettings() }
	load := func() {
		v := f.get(ui.settings)
		s.SetValue(v)
		val.SetText(format(v))
	}
	load()
	ui.refreshes = append(ui.refreshes, load)
	lbl := widget.NewLabel(name)
	return container.NewBorder(nil, nil, container.NewGridWrap(fyne.NewSize(130, lbl.MinSize().Height), lbl),
		container.NewGridWrap(fyne.NewSize(60, val.MinSize().Height), val), s)
}

// check is a checkbox bound to a settings field.
func (ui *UI) check(name string, field func(*Settings) *bool) *widget.Check {
	c := widget.NewCheck(name, func(b bool) { *field(&ui.settings) = b; ui.SaveSettings() })
	load := func() { c.SetChecked(*field(&ui.settings)) }
	load()
	ui.refreshes = append(ui.refreshes, load)
	return c
}

func newKnobsView(ui *UI) *knobsView {
	v := &knobsView{ui: ui}
	title := func(s string) fyne.CanvasObject {
		return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	var emo []fyne.CanvasObject
	for i, name := range engine.Emotions {
		emo = append(emo, ui.knob(strings.ToUpper(name[:1])+name[1:], EmotionRange, f64(func(s *Settings) *float64 { return &s.Emotion[i] })))
	}
	conditioning := container.NewVBox(
		ui.knob("Speaking rate", SpeakingRateRange, f64(func(s *Settings) *float64 { return &s.SpeakingRate })),
		ui.knob("Pitch std", PitchStdRange, f64(func(s *Settings) *float64 { return &s.PitchStd })),
		ui.knob("Fmax (Hz)", FmaxRange, f64(func(s *Settings) *float64 { return &s.Fmax })),
		ui.knob("VQ score", VQScoreRange, f64(func(s *Settings) *float64 { return &s.VQScore })),
		ui.knob("DNSMOS", DNSMOSRange, f64(func(s *Settings) *float64 { return &s.DNSMOS })),
		ui.knob("CFG scale", CFGScaleRange, f64(func(s *Settings) *float64 { return &s.CFGScale })),
		ui.check("Denoise speaker", func(s *Settings) *bool { return &s.DenoiseSpeaker }),
	)

	v.seed = widget.NewEntry()
	v.seed.Validator = func(s string) error {
		_, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("a whole number ≥ 0")
		}
		return nil
	}
	v.seed.OnChanged = func(s string) {
		if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
			ui.settings.Seed = n
		}
	}
	loadSeed := func() { v.seed.SetText(strconv.FormatUint(ui.settings.Seed, 10)) }
	loadSeed()
	ui.refreshes = append(ui.refreshes, loadSeed)
	random := ui.check("Randomise every time", func(s *Settings) *bool { return &s.RandomSeed })
	seedRow := container.NewBorder(nil, nil, widget.NewLabel("Seed"), random, v.seed)

	sampling := container.NewVBox(
		widget.NewLabel("Unified sampler (linear 0 turns it off), then top-p, top-k, min-p (0 turns each off)."),
		ui.knob("Linear", LinearRange, f64(func(s *Settings) *float64 { return &s.Linear })),
		ui.knob("Confidence", ConfidenceRange, f64(func(s *Settings) *float64 { return &s.Confidence })),
		ui.knob("Quadratic", QuadraticRange, f64(func(s *Settings) *float64 { return &s.Quadratic })),
		ui.knob("Top-p", TopPRange, f64(func(s *Settings) *float64 { return &s.TopP })),
		ui.knob("Top-k", TopKRange, integer(func(s *Settings) *int { return &s.TopK })),
		ui.knob("Min-p", MinPRange, f64(func(s *Settings) *float64 { return &s.MinP })),
	)
	acc := widget.NewAccordion(widget.NewAccordionItem("Sampling", sampling))
	if ui.settings.SamplingOpen {
		acc.Open(0)
	}
	v.sampling = acc

	var unc []fyne.CanvasObject
	for _, k := range UnconditionalKeys {
		c := widget.NewCheck(k, func(b bool) { ui.settings.SetUnconditional(k, b); ui.SaveSettings() })
		load := func() { c.SetChecked(ui.settings.IsUnconditional(k)) }
		load()
		ui.refreshes = append(ui.refreshes, load)
		unc = append(unc, c)
	}

	longForm := container.NewVBox(
		widget.NewLabel("A long text is spoken in parts of whole sentences; each part continues from the audio before it."),
		ui.knob("Part size (phonemes)", PartPhonemesRange, integer(func(s *Settings) *int { return &s.PartPhonemes })),
		ui.knob("Context (parts; 0: each afresh)", ContextPartsRange, integer(func(s *Settings) *int { return &s.ContextParts })),
		ui.check("Keep the first part in every context (holds the voice)", func(s *Settings) *bool { return &s.Anchor }),
		ui.knob("Frames trimmed at a part's end", TrimFramesRange, integer(func(s *Settings) *int { return &s.TrimFrames })),
	)

	reset := widget.NewButtonWithIcon("Reset to defaults", theme.ViewRefreshIcon(), ui.ResetKnobs)
	v.obj = container.NewVScroll(container.NewVBox(
		title("Emotion"),
		container.NewGridWithColumns(2, emo...),
		widget.NewSeparator(),
		title("Voice and quality"),
		conditioning,
		seedRow,
		acc,
		title("Unconditional (left to the model's learned default)"),
		container.NewGridWithColumns(3, unc...),
		title("Long texts"),
		longForm,
		container.NewHBox(reset),
	))
	return v
}

// showSeed puts the seed drawn for an utterance in the seed box.
func (v *knobsView) showSeed(seed uint64) {
	v.seed.SetText(strconv.FormatUint(seed, 10))
}
