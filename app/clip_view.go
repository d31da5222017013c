package app

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// clipView chooses one clip: open a file, drop one on it, or record the
// microphone (with a level meter, 3–30 s); play it back or clear it.
type clipView struct {
	ui      *UI
	speaker bool // the speaker clip (else the prefix)
	clip    *Clip
	card    *widget.Card
	obj     fyne.CanvasObject
	info    *widget.Label
	level   *widget.ProgressBar
	timer   *widget.Label
	recBtn  *widget.Button
	playBtn *widget.Button
	clrBtn  *widget.Button
	rec     *Recorder
	library *voiceLibraryView // the speaker clip's saved voices; nil without a library
}

func newClipView(ui *UI, title, help string, speaker bool) *clipView {
	v := &clipView{ui: ui, speaker: speaker}
	v.info = widget.NewLabel("No clip. " + help)
	v.info.Wrapping = fyne.TextWrapWord
	v.level = widget.NewProgressBar()
	v.level.TextFormatter = func() string { return "" }
	v.level.Hide()
	v.timer = widget.NewLabel("")
	v.timer.Hide()
	open := widget.NewButtonWithIcon("Open…", theme.FolderOpenIcon(), v.openDialog)
	v.recBtn = widget.NewButtonWithIcon("Record", theme.MediaRecordIcon(), v.toggleRecord)
	v.playBtn = widget.NewButtonWithIcon("Play", theme.MediaPlayIcon(), v.play)
	v.clrBtn = widget.NewButtonWithIcon("Clear", theme.ContentClearIcon(), v.clear)
	v.playBtn.Disable()
	v.clrBtn.Disable()
	rows := []fyne.CanvasObject{v.info}
	if speaker && ui.cfg.Voice == nil {
		warn := widget.NewLabelWithStyle(ErrNoVoiceEncoder.Error()+".", fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
		warn.Wrapping = fyne.TextWrapWord
		warn.Importance = widget.WarningImportance
		rows = append(rows, warn)
	}
	rows = append(rows,
		container.NewHBox(open, v.recBtn, v.playBtn, v.clrBtn, v.timer),
		v.level)
	if speaker && ui.cfg.Voices != nil {
		v.library = newVoiceLibraryView(ui, ui.cfg.Voices, v)
		rows = append(rows, v.library.obj)
	}
	v.card = widget.NewCard("", title, container.NewVBox(rows...))
	v.obj = v.card
	return v
}

// set shows clip c (nil clears); a speaker clip starts encoding in the
// background (Speaker.PrepareVoice).
func (v *clipView) set(c *Clip) {
	v.clip = c
	if v.speaker {
		v.ui.Speaker.PrepareVoice(c)
	}
	if v.library != nil {
		v.library.clipSet(c)
	}
	if c == nil {
		v.info.SetText("No clip.")
		v.playBtn.Disable()
		v.clrBtn.Disable()
		return
	}
	v.info.SetText(fmt.Sprintf("%s — %.1f s at %d Hz", c.Name, c.Duration().Seconds(), c.Rate))
	v.playBtn.Enable()
	v.clrBtn.Enable()
	if v.speaker && (c.Duration() < MinRecording || c.Duration() > MaxRecording) {
		v.info.SetText(v.info.Text + fmt.Sprintf(" (voices work best with %v–%v)", MinRecording, MaxRecording))
	}
}

func (v *clipView) openDialog() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			v.ui.showError(err)
			return
		}
		if r == nil {
			return // cancelled
		}
		r.Close()
		v.load(r.URI())
	}, v.ui.Win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".wav", ".WAV", ".wave"}))
	d.Show()
}

// load reads a clip file off the UI goroutine.
func (v *clipView) load(u fyne.URI) {
	if u.Scheme() != "file" {
		v.ui.showError(fmt.Errorf("clip %s: only local files can be used", u.Name()))
		return
	}
	v.info.SetText("Reading " + u.Name() + "…")
	go func() {
		c, err := LoadClip(u.Path())
		v.ui.do(func() {
			if err != nil {
				v.set(v.clip)
				v.ui.showError(err)
				return
			}
			v.set(c)
		})
	}()
}

func (v *clipView) play() {
	if v.clip == nil {
		return
	}
	if err := v.ui.Speaker.Play(v.clip.Samples, v.clip.Rate); err != nil {
		v.ui.showError(err)
		return
	}
	v.ui.busy()
}

// toggleRecord starts or stops the microphone.
func (v *clipView) toggleRecord() {
	if v.rec != nil {
		v.stopRecord()
		return
	}
	rec, err := StartRecording(v.ui.cfg.NullMicrophone)
	if err != nil {
		v.ui.showError(err)
		return
	}
	v.rec = rec
	v.recBtn.SetText("Stop recording")
	v.recBtn.SetIcon(theme.MediaStopIcon())
	v.level.Show()
	v.timer.Show()
	go func() {
		t := time.NewTicker(time.Second / UIRate)
		defer t.Stop()
		for {
			select {
			case <-rec.Full():
				v.ui.do(func() {
					if v.rec == rec {
						v.stopRecord()
					}
				})
				return
			case <-t.C:
				lvl, el := rec.Level(), rec.Elapsed()
				stopped := false
				v.ui.do(func() {
					if v.rec != rec {
						stopped = true
						return
					}
					v.level.SetValue(float64(lvl))
					v.timer.SetText(fmt.Sprintf("%.1f / %.0f s", el.Seconds(), MaxRecording.Seconds()))
				})
				if stopped {
					return
				}
			}
		}
	}()
}

func (v *clipView) stopRecord() {
	rec := v.rec
	v.rec = nil
	v.recBtn.SetText("Record")
	v.recBtn.SetIcon(theme.MediaRecordIcon())
	v.level.Hide()
	v.timer.Hide()
	c, err := rec.Stop()
	if err != nil {
		v.ui.showError(err)
		return
	}
	v.set(c)
}

// contains reports whether an absolute window position is over the card.
func (v *clipView) contains(p fyne.Position) bool {
	d := fyne.CurrentApp().Driver()
	at := d.AbsolutePositionForObject(v.card)
	sz := v.card.Size()
	return v.card.Visible() && p.X >= at.X && p.Y >= at.Y && p.X <= at.X+sz.Width && p.Y <= at.Y+sz.Height
}

// dropped takes files dropped on the window: a text file (or any file
// that is not audio, while the Read tab is shown) opens in the Read tab;
// audio dropped onto the prefix card sets the prefix, anywhere else the
// speaker clip.
func (ui *UI) dropped(p fyne.Position, uris []fyne.URI) {
	if len(uris) == 0 {
		return
	}
	if ui.forReading(uris[0]) {
		ui.tabs.Select(ui.readTab)
		ui.reading.open(uris[0])
		return
	}
	target := ui.compose.speaker
	if ui.compose.prefix.contains(p) {
		target = ui.compose.prefix
	}
	ui.tabs.SelectIndex(0)
	target.load(uris[0])
}

// forReading says whether a dropped file is one for the Read tab.
func (ui *UI) forReading(u fyne.URI) bool {
	switch strings.ToLower(u.Extension()) {
	case ".txt", ".text", ".md", ".markdown":
		return true
	case ".wav", ".wave", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".m4a", ".aif", ".aiff":
		return false
	}
	return ui.tabs.Selected() == ui.readTab
}
