package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"zonostream/engine"
)

// longText is n short sentences, one part of the stream each on the test
// models (whose parts are cut at MaxSeconds).
func longText(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Sentence number %d is here. ", i+1)
	}
	return b.String()
}

// openText writes content to a file called name and opens it in the Read
// tab, as the Open dialog does.
func (u testUI) openText(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	u.on(func() {
		u.tabs.Select(u.readTab)
		u.reading.open(storage.NewFileURI(path))
	})
	return path
}

// key types k on the window with nothing focused.
func (u testUI) key(k fyne.KeyName) {
	u.on(func() { u.Win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: k}) })
}

// readingBase is where the reading in progress started (-1: none).
func (u testUI) readingBase() int {
	b := -1
	u.on(func() {
		if u.reading.track != nil {
			b = u.reading.track.base
		}
	})
	return b
}

func TestReadingOpensMarkdownAndRefusesBinary(t *testing.T) {
	ui := newTestUI(t, false)
	ui.openText(t, "notes.md", "# Title\n\nFirst *sentence* here. Second [one](http://x).\n")
	ui.on(func() {
		v := ui.reading
		if v.doc == nil || v.doc.Name != "notes.md" || len(v.doc.Sentences) != 3 || v.list.Length() != 3 {
			t.Fatalf("document %+v", v.doc)
		}
		if v.list.Hidden || !v.empty.Hidden || v.readBtn.Disabled() || v.exportBtn.Disabled() {
			t.Error("the document is not shown with its controls enabled")
		}
		if !strings.HasPrefix(v.position.Text, "Sentence 1 of 3 · 0:00 played · about") {
			t.Errorf("position %q", v.position.Text)
		}
	})
	ui.key(fyne.KeySpace) // this window has no sound output
	ui.on(func() {
		if ui.Speaker.Busy() || !strings.Contains(ui.status.Text, "no sound output") || !strings.Contains(ui.status.Text, "Export") {
			t.Errorf("reading without an output: busy %v, status %q", ui.Speaker.Busy(), ui.status.Text)
		}
	})
	bin := filepath.Join(t.TempDir(), "photo.md")
	if err := os.WriteFile(bin, []byte("\x89PNG\r\n\x1a\n\x00\x00binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	ui.on(func() {
		ui.reading.open(storage.NewFileURI(bin))
		if ui.Win.Canvas().Overlays().Top() == nil {
			t.Error("no error dialog for a binary file")
		}
		if !strings.Contains(ui.status.Text, "photo.md is not a text file") {
			t.Errorf("status %q does not name the file and say why", ui.status.Text)
		}
		if ui.reading.doc.Name != "notes.md" {
			t.Errorf("the open document was replaced by %q", ui.reading.doc.Name)
		}
		ui.reading.open(storage.NewFileURI(filepath.Join(t.TempDir(), "missing.txt")))
		if !strings.Contains(ui.status.Text, "missing.txt") {
			t.Errorf("status %q for a missing file", ui.status.Text)
		}
	})
}

// TestReadingHighlightFollowsPlayback drives the view with a track fed
// synthetic PartStart offsets and played counts: the highlight moves to
// the sentence heard and the list scrolls it into view.
func TestReadingHighlightFollowsPlayback(t *testing.T) {
	ui := newTestUI(t, false)
	ui.openText(t, "long.txt", longText(200))
	ui.on(func() {
		ui.Win.Resize(fyne.NewSize(1180, 800))
		v := ui.reading
		s := v.doc.Sentences
		tr := newReadTrack(0)
		pb := &fakePlayback{}
		tr.playing(pb)
		v.track = tr
		for i := range 150 {
			tr.part(s[i].Start, s[i+1].Start, int64(i)*10000)
		}
		pb.n = 12*10000 + 5000
		v.tick()
		if v.current != 12 {
			t.Fatalf("heard sentence %d, want 12", v.current)
		}
		row := newSentenceRow(nil)
		v.updateRow(12, row)
		if !row.highlighted() || !row.label.TextStyle.Bold {
			t.Error("the sentence heard is not highlighted")
		}
		v.updateRow(13, row)
		if row.highlighted() {
			t.Error("the next sentence is highlighted")
		}
		top := v.list.GetScrollOffset()
		pb.n = 140 * 10000
		v.tick()
		if v.current != 140 || v.list.GetScrollOffset() <= top {
			t.Fatalf("at sentence %d the list is scrolled to %g (from %g)", v.current, v.list.GetScrollOffset(), top)
		}
		if !strings.HasPrefix(v.position.Text, "Sentence 141 of 200 · 0:32 played · about") {
			t.Errorf("position %q", v.position.Text)
		}
		v.track = nil
	})
}

// TestReadingClickStartsAtTheSentence: a tap on a sentence reads the
// document from that sentence's offset; the history keeps that text.
func TestReadingClickStartsAtTheSentence(t *testing.T) {
	ui := newTestUI(t, true)
	ui.openText(t, "t.txt", "One comes first. Two is next. Three is here. Four ends it.")
	var want int
	ui.on(func() {
		want = ui.reading.doc.Sentences[2].Start
		row := newSentenceRow(ui.reading.startAt)
		ui.reading.updateRow(2, row)
		test.Tap(row)
		if ui.reading.current != 2 || !ui.Speaker.Busy() {
			t.Fatalf("after the tap: sentence %d, busy %v", ui.reading.current, ui.Speaker.Busy())
		}
	})
	if b := ui.readingBase(); b != want {
		t.Fatalf("reading starts at byte %d, want %d", b, want)
	}
	ui.waitEnded(t)
	u := ui.Speaker.History.Last()
	if u.Outcome != PhaseDone || u.Text != "Three is here. Four ends it." || u.Samples() == 0 {
		t.Fatalf("history: %s %q, %d samples", u.Outcome, u.Text, u.Samples())
	}
	ui.on(func() {
		if !ui.reading.finished || ui.reading.track != nil || !strings.Contains(ui.status.Text, "Finished reading t.txt") {
			t.Errorf("finished %v, status %q", ui.reading.finished, ui.status.Text)
		}
	})
}

// TestReadingSpacePausesAndArrowsSkip: Space starts, pauses (the player
// plays nothing meanwhile) and resumes; Right and Left restart from the
// next and the previous sentence; with a text box focused Space is typing.
func TestReadingSpacePausesAndArrowsSkip(t *testing.T) {
	ui := newTestUI(t, true)
	ui.openText(t, "long.txt", longText(40))
	ui.key(fyne.KeySpace)
	if ui.readingBase() != 0 {
		t.Fatal("Space did not start reading")
	}
	p := ui.out.P
	waitFor(t, "sound", func() bool { return p.Played() > 0 })
	ui.key(fyne.KeySpace)
	if !p.Paused() {
		t.Fatal("Space did not pause")
	}
	ui.on(func() {
		if !strings.HasPrefix(ui.reading.readBtn.Text, "Resume") {
			t.Errorf("button says %q while paused", ui.reading.readBtn.Text)
		}
	})
	held, c := p.Played(), p.Callbacks()
	waitFor(t, "device periods while paused", func() bool { return p.Callbacks() > c+5 })
	if p.Played() != held {
		t.Fatalf("played %d samples while paused", p.Played()-held)
	}
	entry := widget.NewEntry() // a text box in a dialog over the Read tab
	var pop *widget.PopUp
	ui.on(func() {
		pop = widget.NewModalPopUp(entry, ui.Win.Canvas())
		pop.Show()
		ui.Win.Canvas().Focus(entry)
	})
	ui.key(fyne.KeySpace)
	if !p.Paused() {
		t.Fatal("Space typed in a text box resumed the reading")
	}
	ui.on(pop.Hide)
	ui.key(fyne.KeySpace)
	if p.Paused() {
		t.Fatal("Space did not resume")
	}
	waitFor(t, "sound after resuming", func() bool { return p.Played() > held })

	// Read the sentence heard and press the key in one step of the UI
	// goroutine, so the reading cannot move on in between; then wait for
	// the new reading from the sentence wanted.
	skip := func(k fyne.KeyName, by int) {
		t.Helper()
		var want int
		var old *readTrack
		ui.on(func() {
			v := ui.reading
			old = v.track
			want = v.doc.Sentences[min(max(v.current+by, 0), len(v.doc.Sentences)-1)].Start
			ui.Win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: k})
		})
		waitFor(t, fmt.Sprintf("a reading from byte %d after %s", want, k), func() bool {
			var ok bool
			ui.on(func() { tr := ui.reading.track; ok = tr != nil && tr != old && tr.base == want })
			return ok
		})
	}
	skip(fyne.KeyRight, 1)
	skip(fyne.KeyLeft, -1)
	ui.on(ui.reading.stop)
	waitFor(t, "the reading to stop", func() bool { return !ui.Speaker.Busy() })
	ui.on(func() {})
	if p.Paused() {
		t.Fatal("the output stayed paused after the reading")
	}
	// What was heard of each reading is in the history, the stopped one too.
	if n := ui.Speaker.History.Len(); n < 3 {
		t.Fatalf("%d history entries after three readings", n)
	}
}

func TestReadingDropAndPaste(t *testing.T) {
	ui := newTestUI(t, false)
	path := filepath.Join(t.TempDir(), "dropped.md")
	os.WriteFile(path, []byte("# Dropped\n\nA dropped file."), 0o644)
	ui.on(func() {
		ui.dropped(fyne.NewPos(1, 1), []fyne.URI{storage.NewFileURI(path)})
		if ui.tabs.Selected() != ui.readTab || ui.reading.doc == nil || ui.reading.doc.Name != "dropped.md" {
			t.Fatalf("drop: tab %q, document %+v", ui.tabs.Selected().Text, ui.reading.doc)
		}
		ui.App.Clipboard().SetContent("Pasted words. More of them.")
		ui.Win.Canvas().(fyne.Shortcutable).TypedShortcut(&fyne.ShortcutPaste{Clipboard: ui.App.Clipboard()})
		if d := ui.reading.doc; d.Name != "pasted text" || len(d.Sentences) != 2 {
			t.Fatalf("paste: %+v", d)
		}
		if !ui.forReading(storage.NewFileURI("/x/notes.txt")) || ui.forReading(storage.NewFileURI("/x/voice.wav")) {
			t.Error("drop routing by extension")
		}
	})
}

// TestReadingRateSetsTheKnob: the Read tab's speaking rate is the request's,
// and so is a saved voice.
func TestReadingRateSetsTheKnob(t *testing.T) {
	ui := newTestUI(t, false)
	ui.on(func() {
		ui.reading.rate.SetValue(22)
		ui.reading.rate.OnChangeEnded(22)
		req, _, _, err := ui.Speaker.readRequest(ui.reading.job(), "Hello.")
		if err != nil {
			t.Fatal(err)
		}
		if req.Knobs.SpeakingRate != 22 || !req.DiscardCodes || LoadSettings(ui.App.Preferences()).SpeakingRate != 22 {
			t.Fatalf("rate %g, discard codes %v", req.Knobs.SpeakingRate, req.DiscardCodes)
		}
		job := ui.reading.job()
		job.SpeakerEmbedding = make([]float32, 128)
		job.SpeakerEmbedding[0] = 0.5
		if req, _, _, err = ui.Speaker.readRequest(job, "Hello."); err != nil || len(req.Speaker) != 128 || req.Speaker[0] != 0.5 {
			t.Fatalf("a saved voice is not the reading's speaker: %v", err)
		}
	})
}

// TestReadingExportWritesWAV: Export renders the whole document without
// playing; the WAV decodes and holds every committed sample, and nothing
// else is left in its folder.
func TestReadingExportWritesWAV(t *testing.T) {
	ui := newTestUI(t, true)
	ui.openText(t, "book.txt", "Export this text. It has two sentences.")
	dir := t.TempDir()
	path := filepath.Join(dir, "book.wav")
	played := ui.out.P.Played()
	ui.on(func() { ui.reading.export(path) })
	ui.waitEnded(t)
	ui.on(func() {})
	c := readWAV(t, path)
	if got := ui.Speaker.Meters.Snapshot().AudioSeconds; len(c.Samples) == 0 || float64(len(c.Samples))/engine.SampleRate != got {
		t.Fatalf("WAV holds %d samples, the engine committed %.4f s", len(c.Samples), got)
	}
	if ui.out.P.Played() != played {
		t.Fatal("export played audio")
	}
	ui.on(func() {
		if !strings.Contains(ui.status.Text, "Exported") || ui.reading.exporting || ui.reading.progress.Value != 1 {
			t.Errorf("status %q, exporting %v, progress %g", ui.status.Text, ui.reading.exporting, ui.reading.progress.Value)
		}
	})
	if files := filesUnder(t, dir); len(files) != 1 {
		t.Fatalf("export folder holds %q", files)
	}
}

// chooseExport answers the Export dialog with path as fyne's save dialog
// does: it creates the file (an existing one is emptied) and hands it over.
func (u testUI) chooseExport(t *testing.T, path string) {
	t.Helper()
	w, err := storage.Writer(storage.NewFileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	u.on(func() { u.reading.exportChosen(w, nil) })
}

// TestReadingExportCancel: Cancel stops an export chosen over an existing
// file; nothing is left at the path (the dialog emptied the file, the
// export removes it), nor beside it, and the next utterance works.
func TestReadingExportCancel(t *testing.T) {
	ui := newTestUI(t, true)
	ui.Speaker.MaxSeconds = 30
	ui.openText(t, "long.txt", longText(50))
	dir := t.TempDir()
	path := filepath.Join(dir, "long.wav")
	os.WriteFile(path, []byte("earlier"), 0o644)
	ui.chooseExport(t, path)
	waitFor(t, "audio", func() bool { return ui.Speaker.Meters.Snapshot().AudioSeconds > 0 })
	ui.on(func() {
		if ui.reading.exportBox.Hidden {
			t.Error("no progress while exporting")
		}
		ui.reading.stop()
	})
	ui.waitEnded(t)
	ui.on(func() {})
	if files := filesUnder(t, dir); len(files) != 0 {
		t.Fatalf("after the cancel the export folder holds %q", files)
	}
	ui.on(func() {
		if !strings.Contains(ui.status.Text, "Export cancelled") || !strings.Contains(ui.status.Text, "nothing") || ui.reading.exporting || !ui.reading.exportBox.Hidden {
			t.Errorf("status %q, exporting %v", ui.status.Text, ui.reading.exporting)
		}
	})
	ui.Speaker.MaxSeconds = 0.5
	ui.speak(t, "Next.")
	if u := ui.Speaker.History.Last(); u.Outcome != PhaseDone || u.Samples() == 0 {
		t.Fatalf("the utterance after the cancelled export: %s", u.Outcome)
	}
}

// TestReadingExportRefusedLeavesNoFile: an export refused at once (speech
// is running) leaves no empty file where the dialog created one.
func TestReadingExportRefusedLeavesNoFile(t *testing.T) {
	ui := newTestUI(t, true)
	ui.openText(t, "t.txt", "Export this text.")
	ui.Speaker.MaxSeconds = 30
	ui.on(func() { ui.SpeakText(longText(20)) })
	dir := t.TempDir()
	ui.chooseExport(t, filepath.Join(dir, "t.wav"))
	ui.on(func() {
		if ui.reading.exporting || !strings.Contains(ui.status.Text, "already speaking") {
			t.Errorf("exporting %v, status %q", ui.reading.exporting, ui.status.Text)
		}
		ui.Speaker.Stop()
	})
	ui.waitEnded(t)
	if files := filesUnder(t, dir); len(files) != 0 {
		t.Fatalf("the refused export left %q", files)
	}
}

// TestReadingHighlightFollowsARealReading reads a document to its end on
// the null output: the highlight moves forward only, through several
// sentences, and ends on the last one.
func TestReadingHighlightFollowsARealReading(t *testing.T) {
	ui := newTestUI(t, true)
	ui.openText(t, "twelve.txt", longText(12))
	var seen []int
	ui.on(func() { ui.reading.startAt(0) })
	for ui.Speaker.Busy() {
		ui.on(func() {
			if n := len(seen); n == 0 || seen[n-1] != ui.reading.current {
				seen = append(seen, ui.reading.current)
			}
		})
		time.Sleep(5 * time.Millisecond)
	}
	ui.waitEnded(t)
	ui.on(func() { seen = append(seen, ui.reading.current) })
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("the highlight went back: %v", seen)
		}
	}
	if len(seen) < 4 || seen[len(seen)-1] != 11 {
		t.Fatalf("highlight went through %v, want several sentences ending at 11", seen)
	}
	t.Logf("sentences highlighted in turn: %v", seen)
}

// TestPauseLeftWithoutAReadingIsNotKept: Space in the gap after a reading
// ended (before the window has seen it end) does not pause, and a pause
// left on the output with no reading neither silences the next Speak or
// Play nor keeps them from finishing.
func TestPauseLeftWithoutAReadingIsNotKept(t *testing.T) {
	ui := newTestUI(t, true)
	ui.openText(t, "t.txt", "One sentence here.")
	p := ui.out.P
	ui.on(func() {
		ui.reading.track = newReadTrack(0) // ended: the Speaker is idle, the view not told yet
		ui.reading.toggle()
		ui.reading.track = nil
	})
	if p.Paused() {
		t.Fatal("Space paused the output with no reading running")
	}

	p.Pause() // the state the gap used to leave
	played := p.Played()
	ui.speak(t, "Hello there.")
	u := ui.Speaker.History.Last()
	if u.Outcome != PhaseDone || p.Played() <= played || p.Paused() {
		t.Fatalf("Speak after a pause: %s, played %d more samples, paused %v", u.Outcome, p.Played()-played, p.Paused())
	}

	p.Pause()
	played = p.Played()
	if err := ui.Speaker.PlayUtterance(u); err != nil {
		t.Fatal(err)
	}
	ui.waitEnded(t)
	if got := p.Played() - played; got < int64(u.Samples()) {
		t.Fatalf("Play after a pause played %d of %d samples", got, u.Samples())
	}
}
