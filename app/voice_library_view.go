package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/internal/voices"
)

// voiceLibraryView is the speaker card's row for the named voice library
// (the one `zonos voice` keeps): pick a saved voice to speak in it with no
// clip, or save the current clip's voice under a name. The speaker is
// either a clip or a saved voice: choosing one drops the other. Files in
// the library that are not readable voices are named in a line below.
type voiceLibraryView struct {
	ui      *UI
	lib     *voices.Library
	clips   *clipView
	obj     fyne.CanvasObject
	picker  *widget.Select
	saveBtn *widget.Button
	msg     *widget.Label

	list   []voices.Voice
	picked *voices.Voice // nil: none picked

	// The dialogs last shown, for tests to answer.
	nameDialog    *dialog.FormDialog
	nameEntry     *widget.Entry
	replaceDialog *dialog.ConfirmDialog
}

const noSavedVoices = "No saved voices yet"

func newVoiceLibraryView(ui *UI, lib *voices.Library, clips *clipView) *voiceLibraryView {
	v := &voiceLibraryView{ui: ui, lib: lib, clips: clips}
	v.picker = widget.NewSelect(nil, v.pick)
	v.saveBtn = widget.NewButtonWithIcon("Save as voice…", theme.DocumentSaveIcon(), v.showSaveDialog)
	v.saveBtn.Disable()
	reload := widget.NewButtonWithIcon("", theme.ViewRefreshIcon(), v.refresh) // voices added meanwhile by `zonos voice add`
	v.msg = widget.NewLabel("")
	v.msg.Wrapping = fyne.TextWrapWord
	v.msg.Importance = widget.WarningImportance
	v.msg.Hide()
	v.obj = container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabel("Saved voice"), container.NewHBox(reload, v.saveBtn), v.picker),
		v.msg)
	v.refresh()
	return v
}

// refresh re-reads the library; a voice picked before stays picked.
func (v *voiceLibraryView) refresh() {
	vs, bad, err := v.lib.List()
	v.list = vs
	v.picker.SetOptions(voices.Names(vs))
	v.picker.PlaceHolder = "Pick a saved voice"
	if len(vs) == 0 {
		v.picker.PlaceHolder = noSavedVoices
		v.picker.Disable()
	} else {
		v.picker.Enable()
	}
	v.picker.Refresh()
	var problems []string
	if err != nil {
		problems = append(problems, "The voice library cannot be read: "+err.Error())
	}
	for _, d := range bad {
		m := d.Error()
		problems = append(problems, strings.ToUpper(m[:1])+m[1:])
	}
	if len(problems) > 0 {
		v.msg.SetText(strings.Join(problems, "\n") + "\n(" + v.lib.Dir + ": delete such a file, or save the voice again under its name)")
		v.msg.Show()
	} else {
		v.msg.Hide()
	}
}

// pick makes the saved voice of that name the speaker, dropping the clip.
func (v *voiceLibraryView) pick(name string) {
	var found *voices.Voice
	for i := range v.list {
		if v.list[i].Name == name {
			found = &v.list[i]
		}
	}
	if found == nil {
		return // cleared
	}
	v.picked = found
	if v.clips.clip != nil {
		v.clips.set(nil)
	}
	from := "a saved vector"
	if found.ClipSeconds > 0 {
		from = fmt.Sprintf("a %.1f s clip", found.ClipSeconds)
	}
	v.clips.info.SetText(fmt.Sprintf("Saved voice %q, made from %s on %s.", found.Name, from, found.Created.Local().Format("2006-01-02")))
	v.clips.clrBtn.Enable()
}

// unpick drops the picked voice (Clear, or a clip chosen instead).
func (v *voiceLibraryView) unpick() {
	v.picked = nil
	if v.picker.Selected != "" {
		v.picker.ClearSelected()
	}
}

// clipSet hears that the speaker clip changed: a clip replaces a picked
// voice and can be saved.
func (v *voiceLibraryView) clipSet(c *Clip) {
	if c == nil {
		v.saveBtn.Disable()
		return
	}
	v.unpick()
	v.saveBtn.Enable()
}

// embedding is the picked voice's, nil when none is picked.
func (v *voiceLibraryView) embedding() []float32 {
	if v.picked == nil {
		return nil
	}
	return v.picked.Embedding
}

// showSaveDialog asks for the name to save the current clip's voice as.
func (v *voiceLibraryView) showSaveDialog() {
	if v.clips.clip == nil {
		v.ui.showError(errors.New("open or record a speaker clip first, then save its voice"))
		return
	}
	e := widget.NewEntry()
	e.SetPlaceHolder("a name, e.g. Anna, calm")
	if n := strings.TrimSuffix(v.clips.clip.Name, filepath.Ext(v.clips.clip.Name)); v.clips.clip.SHA256 != "" && voices.CheckName(n) == nil {
		e.SetText(n) // the clip file's name as a start
	}
	e.Validator = func(s string) error { return voices.CheckName(strings.TrimSpace(s)) }
	v.nameEntry = e
	v.nameDialog = dialog.NewForm("Save as voice", "Save", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("Name", e)},
		func(ok bool) {
			if ok {
				v.saveAs(strings.TrimSpace(e.Text))
			}
		}, v.ui.Win)
	v.nameDialog.Resize(fyne.NewSize(420, 0))
	v.nameDialog.Show()
}

// saveAs saves the current clip's voice as name, asking first when the
// name is taken.
func (v *voiceLibraryView) saveAs(name string) {
	c := v.clips.clip
	if c == nil {
		v.ui.showError(errors.New("open or record a speaker clip first, then save its voice"))
		return
	}
	if err := voices.CheckName(name); err != nil {
		v.ui.showError(err)
		return
	}
	old, err := v.lib.Get(name)
	var d *voices.Damaged
	switch {
	case errors.Is(err, voices.ErrNotFound):
		v.store(name, c, false)
		return
	case err == nil:
		err = fmt.Errorf("a voice named %q already exists (saved %s)", old.Name, old.Created.Local().Format("2006-01-02 15:04"))
	case !errors.As(err, &d):
		v.ui.showError(fmt.Errorf("saving the voice %q: %w", name, err))
		return
	}
	v.replaceDialog = dialog.NewConfirm("Replace the saved voice?", err.Error()+". Replace it with this clip's voice?",
		func(ok bool) {
			if ok {
				v.store(name, c, true)
			}
		}, v.ui.Win)
	v.replaceDialog.SetConfirmText("Replace")
	v.replaceDialog.Show()
}

// store embeds c in the background and saves it; the outcome is shown
// when it is done.
func (v *voiceLibraryView) store(name string, c *Clip, replace bool) {
	err := v.ui.Speaker.EmbedClip(c, func(emb []float32, model string, err error) {
		if err == nil {
			err = v.lib.Add(savedVoice(name, c, emb, model), replace)
		}
		v.ui.do(func() {
			switch {
			case errors.Is(err, context.Canceled):
				v.ui.notify(fmt.Sprintf("Saving the voice %q stopped.", name))
			case err != nil:
				v.ui.showError(fmt.Errorf("saving the voice %q: %w", name, err))
			default:
				v.refresh()
				v.ui.notify(fmt.Sprintf("Saved the voice %q: pick it under Saved voice to speak in it without the clip.", name))
			}
		})
	})
	if err != nil {
		v.ui.showError(fmt.Errorf("saving the voice %q: %w", name, err))
		return
	}
	v.ui.notify(fmt.Sprintf("Saving the voice %q: embedding the clip…", name))
	v.ui.busy()
}

// clear drops the speaker clip and any picked voice (the Clear button).
func (v *clipView) clear() {
	if v.library != nil {
		v.library.unpick()
	}
	v.set(nil)
}

// savedVoice is the picked saved voice's embedding when the speaker is
// one (nil: a clip, or no voice).
func (v *clipView) savedVoice() []float32 {
	if v.library == nil || v.clip != nil {
		return nil
	}
	return v.library.embedding()
}
