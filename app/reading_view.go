package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/engine"
)

// readingView is the Read tab: a document shown a sentence a row, the
// sentence being heard highlighted and kept in view, with the controls to
// read, pause, skip, start at any sentence, set the speaking rate and
// export the whole document to WAV. Its fields are touched on the UI
// goroutine only.
type readingView struct {
	obj fyne.CanvasObject
	ui  *UI

	doc      *Document
	list     *widget.List
	empty    *widget.Label
	title    *widget.Label
	position *widget.Label

	openBtn, pasteBtn, prevBtn, readBtn, nextBtn, stopBtn, exportBtn *widget.Button
	rate                                                             *widget.Slider
	rateVal                                                          *widget.Label
	progress                                                         *widget.ProgressBar
	exportBox                                                        *fyne.Container

	current     int        // the sentence heard, or where reading starts
	track       *readTrack // the reading in progress, nil when none
	stopping    *readTrack // a reading stopped for another, until it has ended
	pending     int        // the sentence to start at once the reading stopped; -1 none
	finished    bool       // the last reading reached the end of the document
	pace        pace       // over the finished parts of this document's readings
	heardBefore int64      // samples heard in earlier readings of this document
	exporting   bool

	// Row heights at the list's width: wrapped sentences take several
	// lines, and the list needs each row's height.
	heights map[int]float32
	width   float32
	measure *widget.Label
}

// noDocument is what the Read tab shows before a document is open.
const noDocument = "Open a .txt or .md file, paste text (Ctrl+V), or drop a file on the window. Then press Read (Space); Left and Right skip a sentence, a click starts at that sentence."

func newReadingView(ui *UI) *readingView {
	v := &readingView{ui: ui, pending: -1, heights: map[int]float32{}}
	v.measure = widget.NewLabel("")
	v.measure.Wrapping = fyne.TextWrapWord
	v.list = widget.NewList(
		func() int {
			if v.doc == nil {
				return 0
			}
			return len(v.doc.Sentences)
		},
		func() fyne.CanvasObject { return newSentenceRow(v.startAt) },
		func(id widget.ListItemID, o fyne.CanvasObject) { v.updateRow(id, o.(*sentenceRow)) },
	)
	v.list.HideSeparators = true
	v.empty = widget.NewLabel(noDocument)
	v.empty.Wrapping = fyne.TextWrapWord
	v.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.title.Truncation = fyne.TextTruncateEllipsis
	v.position = widget.NewLabel("")

	v.openBtn = widget.NewButtonWithIcon("Open…", theme.FolderOpenIcon(), v.openDialog)
	v.pasteBtn = widget.NewButtonWithIcon("Paste", theme.ContentPasteIcon(), v.paste)
	v.prevBtn = widget.NewButtonWithIcon("", theme.MediaSkipPreviousIcon(), func() { v.skip(-1) })
	v.readBtn = widget.NewButtonWithIcon("Read  (Space)", theme.MediaPlayIcon(), v.toggle)
	v.readBtn.Importance = widget.HighImportance
	v.nextBtn = widget.NewButtonWithIcon("", theme.MediaSkipNextIcon(), func() { v.skip(1) })
	v.stopBtn = widget.NewButtonWithIcon("", theme.MediaStopIcon(), v.stop)
	v.exportBtn = widget.NewButtonWithIcon("Export WAV…", theme.DocumentSaveIcon(), v.exportDialog)

	v.rate = widget.NewSlider(SpeakingRateRange.Min, SpeakingRateRange.Max)
	v.rate.Step = SpeakingRateRange.Step
	v.rateVal = widget.NewLabel("")
	loadRate := func() {
		v.rate.SetValue(ui.settings.SpeakingRate)
		v.rateVal.SetText(strconv.FormatFloat(ui.settings.SpeakingRate, 'f', 1, 64))
	}
	loadRate()
	ui.refreshes = append(ui.refreshes, loadRate)
	v.rate.OnChanged = func(r float64) {
		ui.settings.SpeakingRate = r
		v.rateVal.SetText(strconv.FormatFloat(r, 'f', 1, 64))
	}
	v.rate.OnChangeEnded = func(float64) { v.rateChanged() }

	v.progress = widget.NewProgressBar()
	cancel := widget.NewButtonWithIcon("Cancel (no file is written)", theme.CancelIcon(), v.stop)
	v.exportBox = container.NewBorder(nil, nil, widget.NewLabel("Exporting"), cancel, v.progress)
	v.exportBox.Hide()

	controls := container.NewHBox(v.openBtn, v.pasteBtn, widget.NewSeparator(),
		v.prevBtn, v.readBtn, v.nextBtn, v.stopBtn, widget.NewSeparator(), v.exportBtn)
	rateRow := container.NewBorder(nil, nil, widget.NewLabel("Speaking rate"),
		container.NewGridWrap(fyne.NewSize(50, v.rateVal.MinSize().Height), v.rateVal), v.rate)
	top := container.NewVBox(controls, rateRow, v.title, v.position, v.exportBox)
	v.obj = container.NewBorder(top, nil, nil, nil, container.NewStack(v.list, v.empty))
	v.show()
	return v
}

// sentenceRow is one sentence of the document: a wrapped label over a
// highlight; a tap starts reading there.
type sentenceRow struct {
	widget.BaseWidget
	bg    *canvas.Rectangle
	label *widget.Label
	id    int
	onTap func(int)
}

func newSentenceRow(onTap func(int)) *sentenceRow {
	r := &sentenceRow{bg: canvas.NewRectangle(theme.Color(theme.ColorNameSelection)), label: widget.NewLabel(""), onTap: onTap}
	r.label.Wrapping = fyne.TextWrapWord
	r.bg.Hide()
	r.ExtendBaseWidget(r)
	return r
}

func (r *sentenceRow) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(container.NewStack(r.bg, r.label))
}

// Tapped starts reading at the row's sentence.
func (r *sentenceRow) Tapped(*fyne.PointEvent) { r.onTap(r.id) }

// highlighted says whether the row is shown as the sentence heard.
func (r *sentenceRow) highlighted() bool { return r.bg.Visible() }

func (v *readingView) updateRow(id int, r *sentenceRow) {
	if v.doc == nil || id >= len(v.doc.Sentences) {
		return
	}
	s := v.doc.Sentences[id]
	text := v.doc.Text[s.Start:s.End]
	r.id = id
	on := id == v.current
	r.label.TextStyle.Bold = on
	r.label.SetText(text)
	if on {
		r.bg.FillColor = theme.Color(theme.ColorNameSelection)
		r.bg.Show()
	} else {
		r.bg.Hide()
	}
	r.bg.Refresh()
	v.fitRow(id)
}

// fitRow gives row id the height its sentence takes at the list's width.
func (v *readingView) fitRow(id int) {
	s := v.doc.Sentences[id]
	if h := v.rowHeight(id, v.doc.Text[s.Start:s.End]); h > 0 && h != v.heights[id] {
		v.heights[id] = h
		v.list.SetItemHeight(id, h)
	}
}

// rowHeight is the height of a sentence's row at the list's width (0
// before the list has one).
func (v *readingView) rowHeight(id int, text string) float32 {
	w := v.list.Size().Width - 2*theme.Padding() - theme.ScrollBarSize()
	if w <= 0 {
		return 0
	}
	if w != v.width {
		v.width, v.heights = w, map[int]float32{}
	}
	v.measure.TextStyle.Bold = id == v.current
	v.measure.SetText(text)
	v.measure.Resize(fyne.NewSize(w, v.measure.MinSize().Height))
	return v.measure.MinSize().Height
}

// show updates the controls for the current state.
func (v *readingView) show() {
	has := v.doc != nil
	v.list.Hidden, v.empty.Hidden = !has, has
	if has {
		v.title.SetText(v.doc.Name)
	} else {
		v.title.SetText("")
	}
	reading := v.track != nil
	paused := reading && v.paused()
	switch {
	case paused:
		v.readBtn.SetText("Resume  (Space)")
		v.readBtn.SetIcon(theme.MediaPlayIcon())
	case reading:
		v.readBtn.SetText("Pause  (Space)")
		v.readBtn.SetIcon(theme.MediaPauseIcon())
	default:
		v.readBtn.SetText("Read  (Space)")
		v.readBtn.SetIcon(theme.MediaPlayIcon())
	}
	for _, b := range []*widget.Button{v.readBtn, v.prevBtn, v.nextBtn, v.exportBtn} {
		if has && !v.exporting {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	if reading || v.exporting {
		v.stopBtn.Enable()
	} else {
		v.stopBtn.Disable()
	}
	if v.exporting {
		v.exportBox.Show()
		v.openBtn.Disable()
		v.pasteBtn.Disable()
	} else {
		v.exportBox.Hide()
		v.openBtn.Enable()
		v.pasteBtn.Enable()
	}
	v.showPosition()
}

// showPosition writes the position line.
func (v *readingView) showPosition() {
	if v.doc == nil {
		v.position.SetText("")
		return
	}
	played, off := v.heardBefore, v.doc.Sentences[v.current].Start
	p := v.readingPace()
	if v.track != nil {
		n := v.track.played()
		played += n
		off = v.track.heard(n, p.samplesPerByte())
	}
	text := positionText(v.current, len(v.doc.Sentences),
		time.Duration(played)*time.Second/engine.SampleRate, p.left(len(v.doc.Text)-off))
	if v.track != nil && v.paused() {
		text = "Paused · " + text
	}
	v.position.SetText(text)
}

// tick follows the reading in progress (the window's meter ticker calls
// it): the sentence heard moves the highlight and stays in view.
func (v *readingView) tick() {
	if v.track == nil || v.doc == nil {
		return
	}
	i := v.doc.SentenceAt(v.track.heard(v.track.played(), v.readingPace().samplesPerByte()))
	v.setCurrent(i)
	v.showPosition()
}

// readingPace is the pace over this document's finished parts, the
// reading in progress's included.
func (v *readingView) readingPace() pace {
	p := v.pace
	if v.track != nil {
		v.track.pace(&p)
	}
	return p
}

// setCurrent moves the highlight to sentence i and scrolls it into view.
func (v *readingView) setCurrent(i int) {
	if i == v.current {
		return
	}
	old := v.current
	v.current = i
	v.list.RefreshItem(old)
	v.fitRow(i) // before scrolling: the list scrolls by the heights it knows
	v.list.RefreshItem(i)
	v.list.ScrollTo(i)
}

// setDocument shows doc, stopping a reading of the previous one.
func (v *readingView) setDocument(d *Document) {
	if v.track != nil || v.stopping != nil {
		v.pending = -1
		v.track, v.stopping = nil, nil // their end no longer concerns this view
		v.ui.Stop()
	}
	v.doc = d
	v.current, v.finished, v.pace, v.heardBefore = 0, false, pace{}, 0
	v.heights = map[int]float32{}
	v.list.Refresh()
	v.list.ScrollToTop()
	v.show()
	v.ui.notify(fmt.Sprintf("%s: %d sentences. Press Read (Space) to hear it.", d.Name, len(d.Sentences)))
}

// open reads a document from a URI (the Open dialog, a drop).
func (v *readingView) open(u fyne.URI) {
	d, err := readDocument(u)
	if err != nil {
		v.ui.showError(err)
		return
	}
	v.setDocument(d)
}

// readDocument reads and converts the file at u.
func readDocument(u fyne.URI) (*Document, error) {
	r, err := storage.Reader(u)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", u.Name(), err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxDocumentFile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", u.Name(), err)
	}
	return NewDocument(u.Name(), data)
}

func (v *readingView) openDialog() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			v.ui.showError(err)
			return
		}
		if r == nil {
			return
		}
		u := r.URI()
		r.Close()
		v.open(u)
	}, v.ui.Win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".txt", ".md", ".markdown", ".text"}))
	d.Show()
}

// paste opens the clipboard's text as a document (Ctrl+V, Paste).
func (v *readingView) paste() {
	text := v.ui.App.Clipboard().Content()
	if strings.TrimSpace(text) == "" {
		v.ui.showError(errors.New("the clipboard holds no text to read"))
		return
	}
	d, err := NewDocument("pasted text", []byte(text))
	if err != nil {
		v.ui.showError(err)
		return
	}
	v.setDocument(d)
}

// paused says whether the output holds playback.
func (v *readingView) paused() bool {
	p, ok := v.ui.Speaker.Output().(Pauser)
	return ok && p.Paused()
}

// toggle is Space: read from the current sentence, or pause and resume.
func (v *readingView) toggle() {
	if v.doc == nil || v.exporting {
		return
	}
	if v.track == nil {
		i := v.current
		if v.finished {
			i = 0
		}
		v.startAt(i)
		return
	}
	p, ok := v.ui.Speaker.Output().(Pauser)
	if !ok {
		return
	}
	switch {
	case p.Paused():
		p.Resume()
	case v.ui.Speaker.Busy():
		// Only while the reading runs: once it has ended (its end not yet
		// shown here) a pause would hold the next run's playback instead.
		p.Pause()
	}
	v.show()
}

// skip is Left and Right: the sentence before or after the one heard.
// While reading, reading goes on from there.
func (v *readingView) skip(by int) {
	if v.doc == nil || v.exporting {
		return
	}
	i := min(max(v.current+by, 0), len(v.doc.Sentences)-1)
	if v.track == nil && v.pending < 0 {
		v.finished = false
		v.setCurrent(i)
		v.showPosition()
		return
	}
	v.startAt(i)
}

// startAt reads from sentence i: a new request over the text from there
// (offsets then count from that sentence). A reading or other speech in
// progress is stopped first; the new one starts once it has ended.
func (v *readingView) startAt(i int) {
	if v.doc == nil || v.exporting || i < 0 || i >= len(v.doc.Sentences) {
		return
	}
	v.finished = false
	v.setCurrent(i)
	if v.ui.Speaker.Busy() {
		v.pending = i
		if v.track != nil { // the highlight no longer follows it
			v.stopping, v.track = v.track, nil
		}
		v.ui.Stop()
		v.show()
		return
	}
	v.pending = -1
	from := v.doc.Sentences[i].Start
	v.ui.SaveSettings()
	tr, err := v.ui.Speaker.Read(v.job(), v.doc.Text[from:], from)
	if err != nil {
		v.ui.showError(err)
		return
	}
	v.track = tr
	v.ui.notify(fmt.Sprintf("Reading %s from sentence %d of %d.", v.doc.Name, i+1, len(v.doc.Sentences)))
	v.ui.busy()
	v.show()
}

// job is the window's current voice and knobs.
func (v *readingView) job() Job {
	c := v.ui.compose
	return Job{Settings: v.ui.settings, Speaker: c.speaker.clip, Prefix: c.prefix.clip, SpeakerEmbedding: c.speaker.savedVoice()}
}

// stop ends a reading or an export.
func (v *readingView) stop() {
	v.pending = -1
	v.ui.Stop()
}

// rateChanged applies a new speaking rate: a reading in progress goes on
// at it from the sentence heard.
func (v *readingView) rateChanged() {
	v.ui.SaveSettings()
	for _, r := range v.ui.refreshes {
		r() // the Knobs tab shows the same rate
	}
	if v.track != nil {
		v.startAt(v.current)
	}
}

// ended runs on the UI goroutine when a run of the Speaker ended (the
// window's ended): a reading's counts are kept for the position line, and
// a reading asked for meanwhile (a click, Left, Right) starts.
func (v *readingView) ended(u *Utterance) {
	if v.track != nil {
		v.tick()
	}
	if tr := v.track; tr != nil || v.stopping != nil {
		if tr == nil {
			tr = v.stopping
		}
		v.heardBefore += tr.played()
		tr.pace(&v.pace)
		v.track, v.stopping = nil, nil
		if u != nil && u.Outcome == PhaseDone && v.pending < 0 {
			v.finished = true
			v.ui.notify(fmt.Sprintf("Finished reading %s.", v.doc.Name))
		}
	}
	if i := v.pending; i >= 0 && !v.ui.Speaker.Busy() {
		v.startAt(i)
		return
	}
	v.show()
}

// key handles Space, Left and Right for the Read tab; false when the key
// is not its own.
func (v *readingView) key(k *fyne.KeyEvent) bool {
	switch k.Name {
	case fyne.KeySpace:
		v.toggle()
	case fyne.KeyLeft:
		v.skip(-1)
	case fyne.KeyRight:
		v.skip(1)
	default:
		return false
	}
	return true
}

func (v *readingView) exportDialog() {
	if v.doc == nil {
		return
	}
	d := dialog.NewFileSave(v.exportChosen, v.ui.Win)
	d.SetFileName(strings.TrimSuffix(v.doc.Name, filepath.Ext(v.doc.Name)) + ".wav")
	d.Show()
}

// exportChosen is the save dialog's answer: w is the file chosen (nil:
// none). The dialog has already created that file empty (a file chosen
// for overwrite is emptied); it is removed before the export starts, so a
// cancelled or failed export leaves nothing at the path.
func (v *readingView) exportChosen(w fyne.URIWriteCloser, err error) {
	if err != nil {
		v.ui.showError(err)
		return
	}
	if w == nil {
		return
	}
	w.Close()
	if w.URI().Scheme() != "file" {
		v.ui.showError(fmt.Errorf("export writes to a local file; choose a folder on this computer"))
		return
	}
	path := w.URI().Path()
	removeDialogFile(path)
	v.export(path)
}

// export renders the whole document to a WAV file at path.
func (v *readingView) export(path string) {
	if v.doc == nil || v.exporting {
		return
	}
	if v.ui.Speaker.Busy() {
		v.ui.showError(ErrBusy)
		return
	}
	v.ui.SaveSettings()
	total := len(v.doc.Text)
	v.progress.SetValue(0)
	err := v.ui.Speaker.Export(v.job(), v.doc.Text, path,
		func(done int) { v.ui.do(func() { v.progress.SetValue(float64(done) / float64(total)) }) },
		func(samples int64, err error) { v.ui.do(func() { v.exportEnded(path, samples, err) }) })
	if err != nil {
		v.ui.showError(err)
		return
	}
	v.exporting = true
	v.ui.notify(fmt.Sprintf("Exporting %s to %s…", v.doc.Name, path))
	v.ui.busy()
	v.show()
}

// exportEnded reports an export's outcome.
func (v *readingView) exportEnded(path string, samples int64, err error) {
	v.exporting = false
	v.show()
	switch {
	case err == nil:
		v.ui.notify(fmt.Sprintf("Exported %s of audio to %s.", clock(time.Duration(samples)*time.Second/engine.SampleRate), path))
	case errors.Is(err, context.Canceled):
		v.ui.notify(fmt.Sprintf("Export cancelled: nothing was written to %s.", path))
	case errors.Is(err, errExportIncomplete):
		v.ui.showError(fmt.Errorf("export to %s: %w", path, err))
	default:
		v.ui.showError(fmt.Errorf("export to %s failed, nothing was written there: %w", path, err))
	}
}
