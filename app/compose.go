package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// composeView is the text, language, model and the two clips.
type composeView struct {
	obj      fyne.CanvasObject
	entry    *composeEntry
	language *widget.Select
	model    *widget.Select
	output   *widget.Select // nil without device access
	gpuPlan  *widget.Select // nil without the CUDA backend
	serve    *serveView
	modelMsg *widget.Label
	speaker  *clipView
	prefix   *clipView

	ui      *UI
	langs   []Language
	choices []ModelChoice
}

func newComposeView(ui *UI) *composeView {
	v := &composeView{ui: ui, langs: PickerLanguages()}
	v.entry = newComposeEntry(ui.Speak, ui.Stop, ui.SaveLast)
	v.entry.SetPlaceHolder("Type what to say…")
	v.entry.SetText(ui.settings.Text)
	v.entry.OnChanged = func(s string) { ui.settings.Text = s }

	labels := make([]string, len(v.langs))
	for i, l := range v.langs {
		labels[i] = l.Label()
	}
	v.language = widget.NewSelect(labels, func(s string) {
		for _, l := range v.langs {
			if l.Label() == s {
				ui.settings.Language = l.Code
			}
		}
	})
	setLang := func() {
		for _, l := range v.langs {
			if l.Code == ui.settings.Language {
				v.language.SetSelected(l.Label())
			}
		}
	}
	setLang()
	ui.refreshes = append(ui.refreshes, setLang)

	v.modelMsg = widget.NewLabel("")
	v.modelMsg.Wrapping = fyne.TextWrapWord
	v.model = widget.NewSelect(nil, func(s string) {
		for _, c := range v.choices {
			if c.Label() == s {
				ui.settings.Variant = c.Variant
				v.modelMsg.SetText("")
				if !c.Installed {
					v.modelMsg.SetText("Not installed: see the Models tab to download it or to choose a folder that has it.")
				}
			}
		}
	})
	v.model.PlaceHolder = "no model"

	v.speaker = newClipView(ui, "Speaker voice",
		"A clip of 3–30 s of one person speaking; Zonos imitates the voice.", true)
	v.prefix = newClipView(ui, "Audio prefix (optional)",
		"Speech continues from this audio: its voice, room and pace carry over.", false)

	form := widget.NewForm(
		widget.NewFormItem("Language", v.language),
		widget.NewFormItem("Model", container.NewVBox(v.model, v.modelMsg)),
	)
	if v.output = newOutputPicker(ui); v.output != nil {
		form.Append("Sound output", v.output)
	}
	if ui.cfg.GPUPlans {
		v.gpuPlan = newGPUPlanPicker(ui)
		note := widget.NewLabel("auto: the kernels made for this GPU (Hopper's on an H100 or H200); generic: the kernels every NVIDIA GPU from Ampere on runs. Applies when the app next starts; the meters' Backend line shows the plan in use.")
		note.Wrapping = fyne.TextWrapWord
		note.SizeName = theme.SizeNameCaptionText
		note.Importance = widget.LowImportance
		form.Append("GPU plan", container.NewVBox(v.gpuPlan, note))
	}
	v.serve = newServeView(ui)
	form.Append("Speech service", v.serve.obj)
	v.obj = container.NewBorder(form,
		container.NewVBox(v.speaker.obj, v.prefix.obj), nil, nil,
		v.entry)
	return v
}

// newGPUPlanPicker chooses between GPUPlanAuto and GPUPlanGeneric,
// remembering the choice for the next start (the backend and the loaded
// model stay as they are until then).
func newGPUPlanPicker(ui *UI) *widget.Select {
	sel := widget.NewSelect([]string{GPUPlanAuto, GPUPlanGeneric}, nil)
	sel.SetSelected(ui.settings.GPUPlan)
	sel.OnChanged = func(p string) {
		if p == ui.settings.GPUPlan {
			return
		}
		ui.settings.GPUPlan = p
		ui.SaveSettings()
		ui.notify("The " + p + " GPU plan applies when Zonos Stream next starts.")
	}
	return sel
}

// refreshModels re-reads which models are installed.
func (v *composeView) refreshModels() {
	v.choices = nil
	if v.ui.cfg.Models != nil {
		v.choices = v.ui.cfg.Models.Choices()
	}
	labels := make([]string, len(v.choices))
	sel := ""
	for i, c := range v.choices {
		labels[i] = c.Label()
		if c.Variant == v.ui.settings.Variant {
			sel = labels[i]
		}
	}
	if sel == "" && len(v.choices) > 0 { // e.g. --model-dir replaces the hub models
		sel = labels[0]
		for i, c := range v.choices {
			if c.Installed {
				sel = labels[i]
				break
			}
		}
	}
	v.model.SetOptions(labels)
	if sel != "" {
		v.model.SetSelected(sel)
	}
}

// composeEntry is the multi-line text box that also takes Ctrl+Enter
// (speak) and Esc (stop), which a focused entry would otherwise swallow.
type composeEntry struct {
	widget.Entry
	onSpeak, onStop, onSave func()
}

func newComposeEntry(speak, stop, save func()) *composeEntry {
	e := &composeEntry{onSpeak: speak, onStop: stop, onSave: save}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.SetMinRowsVisible(4)
	e.ExtendBaseWidget(e)
	return e
}

// TypedShortcut catches Ctrl+Enter and Ctrl+S before the entry.
func (e *composeEntry) TypedShortcut(s fyne.Shortcut) {
	if isSpeakShortcut(s) {
		e.onSpeak()
		return
	}
	if s.ShortcutName() == saveShortcut.ShortcutName() {
		e.onSave()
		return
	}
	e.Entry.TypedShortcut(s)
}

// TypedKey stops on Esc.
func (e *composeEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape {
		e.onStop()
		return
	}
	e.Entry.TypedKey(k)
}
