package app

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/audio"
	"zonostream/engine"
)

// historyView lists recent utterances with replay and save.
type historyView struct {
	obj   fyne.CanvasObject
	list  *widget.List
	items []*Utterance
}

func newHistoryView(ui *UI) *historyView {
	v := &historyView{}
	v.list = widget.NewList(
		func() int { return len(v.items) },
		func() fyne.CanvasObject {
			lbl := widget.NewLabel("00:00:00  0.0s  text")
			lbl.Truncation = fyne.TextTruncateEllipsis
			play := widget.NewButtonWithIcon("", theme.MediaPlayIcon(), nil)
			save := widget.NewButtonWithIcon("", theme.DocumentSaveIcon(), nil)
			return container.NewBorder(nil, nil, nil, container.NewHBox(play, save), lbl)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(v.items) {
				return
			}
			u := v.items[i]
			row := o.(*fyne.Container)
			lbl := row.Objects[0].(*widget.Label)
			btns := row.Objects[1].(*fyne.Container)
			text := u.Title()
			if u.Outcome != PhaseDone {
				text = "[" + string(u.Outcome) + "] " + text
			}
			lbl.SetText(text)
			play, save := btns.Objects[0].(*widget.Button), btns.Objects[1].(*widget.Button)
			play.OnTapped = func() {
				if err := ui.Speaker.PlayUtterance(u); err != nil {
					ui.showError(err)
					return
				}
				ui.busy()
			}
			save.OnTapped = func() { ui.saveDialog(u) }
			if u.Samples() == 0 {
				play.Disable()
				save.Disable()
			} else {
				play.Enable()
				save.Enable()
			}
		},
	)
	v.list.OnSelected = func(i widget.ListItemID) {
		if i < len(v.items) {
			u := v.items[i]
			msg := fmt.Sprintf("%s: seed %d, %s, TTFA %s, RTF %.2f×", u.Language, u.Seed, string(u.Outcome), ms(u.Metrics.TTFA), u.Metrics.RTF)
			if u.Err != "" {
				msg += " — " + u.Err
			}
			ui.notify(msg)
		}
	}
	v.obj = v.list
	return v
}

func (v *historyView) refresh(h *History) {
	v.items = h.List()
	v.list.Refresh()
}

// saveDialog asks where to save u and writes it as WAV.
func (ui *UI) saveDialog(u *Utterance) {
	if u.Samples() == 0 {
		ui.showError(fmt.Errorf("this utterance has no audio to save"))
		return
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil {
			ui.showError(err)
			return
		}
		if w == nil {
			return
		}
		if err := writeUtterance(w, u); err != nil {
			ui.showError(err)
			return
		}
		ui.notify(fmt.Sprintf("Saved %.1f s to %s.", u.Duration().Seconds(), w.URI().Path()))
	}, ui.Win)
	d.SetFileName(fmt.Sprintf("zonos-%s-%d.wav", u.When.Format("20060102-150405"), u.ID))
	d.Show()
}

// writeUtterance saves through a local path when it can (atomic rename),
// else through the writer the dialog opened.
func writeUtterance(w fyne.URIWriteCloser, u *Utterance) error {
	if w.URI().Scheme() == "file" {
		w.Close()
		path := w.URI().Path()
		removeDialogFile(path)
		return SaveUtteranceWAV(path, u)
	}
	defer w.Close()
	ww, err := audio.NewWAVWriter(w, engine.SampleRate, audio.WAVFloat32)
	if err != nil {
		return err
	}
	if err := u.EachPCM(ww.Write); err != nil {
		return err
	}
	return ww.Close()
}
