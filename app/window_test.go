package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"

	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

// tinyModels serves the golden tiny packs (random weights, real code
// paths) as the hybrid and transformer models.
type tinyModels struct {
	t         testing.TB
	installed map[string]bool
	mu        sync.Mutex
	eng       map[string]*engine.Engine
	loads     int // engines actually loaded (not served from eng)
}

func newTinyModels(t testing.TB) *tinyModels {
	golden.Pack(t, "dac-tiny") // skips without the packs
	return &tinyModels{t: t, installed: map[string]bool{"hybrid": true, "transformer": true}, eng: map[string]*engine.Engine{}}
}

func (m *tinyModels) Choices() []ModelChoice {
	return []ModelChoice{{Variant: "hybrid", Installed: m.installed["hybrid"]}, {Variant: "transformer", Installed: m.installed["transformer"]}}
}

func (m *tinyModels) Load(_ context.Context, v string) (*engine.Engine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.eng[v]; e != nil {
		return e, nil
	}
	e, err := engine.Load(cpu.New(0), engine.PathsFromDirs(golden.Pack(m.t, "zonos-"+v+"-tiny"), golden.Pack(m.t, "dac-tiny")))
	if err != nil {
		return nil, err
	}
	m.eng[v] = e
	m.loads++
	return e, nil
}

func (m *tinyModels) Backend() BackendInfo { return testBackend }

type testUI struct {
	*UI
	out   *PlayerOutput
	mu    *sync.Mutex
	ended chan struct{}
}

// on runs f as the UI goroutine would: the test driver runs fyne.Do on
// the caller's goroutine, so the tests serialise UI work with a mutex.
func (u testUI) on(f func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f()
}

// speak types text and speaks it, then waits until the window has shown
// the end (history, buttons) and its meter ticker stopped.
func (u testUI) speak(t *testing.T, text string) {
	t.Helper()
	u.on(func() { u.SpeakText(text) })
	u.waitEnded(t)
}

func (u testUI) waitEnded(t *testing.T) {
	t.Helper()
	select {
	case <-u.ended:
	case <-time.After(90 * time.Second):
		t.Fatal("the utterance did not end within 90 s")
	}
	u.tickers.Wait()
}

// newTestUI builds the main window on the test driver; null plays through
// miniaudio's null backend, else there is no output at all. opts change
// the configuration before the window is built.
func newTestUI(t *testing.T, null bool, opts ...func(*Config)) testUI {
	t.Helper()
	a := test.NewTempApp(t)
	cfg := Config{Models: newTinyModels(t), NullMicrophone: true}
	for _, o := range opts {
		o(&cfg)
	}
	var out *PlayerOutput
	if null {
		var err error
		if out, err = OpenOutput("", true); err != nil {
			t.Fatalf("null output: %v", err)
		}
		t.Cleanup(func() { out.Close() })
		cfg.Output = out
	} else {
		cfg.OutputErr = os.ErrNotExist
	}
	ui := New(a, cfg)
	ui.Speaker.MaxSeconds = 0.5
	tu := testUI{UI: ui, out: out, mu: &sync.Mutex{}, ended: make(chan struct{}, 16)}
	ui.do = tu.on
	ui.OnEnded = func() { tu.ended <- struct{}{} }
	t.Cleanup(func() {
		ui.Speaker.Stop()
		ui.Speaker.Wait()
		ui.tickers.Wait()
		ui.Serving.Close()
		ui.Serving.Wait()
		tu.on(func() {}) // let a pending UI update finish
	})
	return tu
}

// waitFor polls cond for up to 60 s (the CPU is shared with other tests).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMainWindowSmoke(t *testing.T) {
	ui := newTestUI(t, false)
	if ui.Win.Title() != "Zonos Stream" || ui.Win.Content() == nil {
		t.Fatal("no window content")
	}
	if got := len(ui.tabs.Items); got != 4 {
		t.Fatalf("%d tabs", got)
	}
	if len(ui.compose.model.Options) != 2 || ui.compose.model.Selected != "hybrid" {
		t.Fatalf("model picker %v %q", ui.compose.model.Options, ui.compose.model.Selected)
	}
	if !strings.Contains(ui.compose.language.Selected, "en-us") {
		t.Fatalf("language %q", ui.compose.language.Selected)
	}
	if ui.Speaker.Meters.Snapshot().Output == "" {
		t.Fatal("no-output reason not shown")
	}
	ui.Win.Resize(fyne.NewSize(1180, 800))
}

func TestSpeakFillsMetersAndHistory(t *testing.T) {
	ui := newTestUI(t, true)
	ui.speak(t, "Hello there.")
	s := ui.Speaker.Meters.Snapshot()
	if s.Phase != PhaseDone || !s.HasTTFA || s.RTF <= 0 || s.AudioSeconds <= 0 || s.Frames == 0 {
		t.Fatalf("meters after speaking: %+v", s)
	}
	if !s.HasSound || s.FirstSound < s.TTFA {
		t.Fatalf("first sound %v (has %v) vs TTFA %v", s.FirstSound, s.HasSound, s.TTFA)
	}
	u := ui.Speaker.History.Last()
	if u.Outcome != PhaseDone || len(u.PCM) == 0 || u.Text != "Hello there." {
		t.Fatalf("history: %+v", u)
	}
	if float64(len(u.PCM))/engine.SampleRate != s.AudioSeconds {
		t.Fatalf("history holds %d samples, meters say %.3f s", len(u.PCM), s.AudioSeconds)
	}
	ui.on(func() {
		if ui.speakBtn.Disabled() || ui.saveBtn.Disabled() || !ui.stopBtn.Disabled() {
			t.Error("buttons not back to idle")
		}
		if len(ui.history.items) != 1 {
			t.Errorf("history list shows %d rows", len(ui.history.items))
		}
	})
	if len(ui.Speaker.Wave.Peaks()) == 0 {
		t.Fatal("waveform empty")
	}
	t.Logf("TTFA %v, first sound %v, RTF %.2f, %d frames", s.TTFA, s.FirstSound, s.RTF, s.Frames)
}

func TestSpeakWithoutOutputKeepsAudio(t *testing.T) {
	ui := newTestUI(t, false)
	ui.settings.Variant = "transformer"
	ui.speak(t, "No speakers here.")
	if u := ui.Speaker.History.Last(); u.Outcome != PhaseDone || len(u.PCM) == 0 {
		t.Fatalf("utterance %+v", u)
	}
}

func TestStopStops(t *testing.T) {
	ui := newTestUI(t, true)
	ui.Speaker.MaxSeconds = 30
	ui.on(func() { ui.SpeakText("This sentence would take a long while to say on the random tiny model.") })
	waitFor(t, "first audio", func() bool { return ui.Speaker.Meters.Snapshot().AudioSeconds > 0 })
	start := time.Now()
	ui.on(ui.Stop)
	ui.waitEnded(t)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stop took %v", d)
	}
	u := ui.Speaker.History.Last()
	if u.Outcome != PhaseStopped {
		t.Fatalf("outcome %s (%s)", u.Outcome, u.Err)
	}
	if u.Duration() > 29*time.Second {
		t.Fatalf("kept %v after stop", u.Duration())
	}
}

func TestSaveWritesStreamedWAV(t *testing.T) {
	ui := newTestUI(t, false)
	ui.speak(t, "Save me.")
	u := ui.Speaker.History.Last()
	path := filepath.Join(t.TempDir(), "u.wav")
	w, err := storage.Writer(storage.NewFileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeUtterance(w, u); err != nil {
		t.Fatal(err)
	}
	c := readWAV(t, path)
	if len(c.Samples) != len(u.PCM) {
		t.Fatalf("WAV has %d samples, streamed %d", len(c.Samples), len(u.PCM))
	}
	for i := range c.Samples {
		if c.Samples[i] != u.PCM[i] {
			t.Fatalf("sample %d: %g in WAV, %g streamed", i, c.Samples[i], u.PCM[i])
		}
	}
}

func TestBadClipShowsErrorDialog(t *testing.T) {
	ui := newTestUI(t, false)
	path := filepath.Join(t.TempDir(), "voice.wav")
	if err := os.WriteFile(path, []byte("ID3 this is an mp3 pretending"), 0o644); err != nil {
		t.Fatal(err)
	}
	ui.on(func() { ui.compose.speaker.load(storage.NewFileURI(path)) })
	waitFor(t, "error dialog", func() bool {
		var shown bool
		ui.on(func() { shown = ui.Win.Canvas().Overlays().Top() != nil })
		return shown
	})
	ui.on(func() {
		if ui.compose.speaker.clip != nil {
			t.Error("bad clip was accepted")
		}
		if !strings.Contains(strings.ToLower(ui.status.Text), "mp3") {
			t.Errorf("status %q does not name the format", ui.status.Text)
		}
	})
}

type countingEncoder struct{ calls atomic.Int32 }

func (c *countingEncoder) Embed(_ context.Context, s []float32, rate int) ([]float32, error) {
	c.calls.Add(1)
	e := make([]float32, 128)
	e[0] = 0.1
	return e, nil
}

func TestSpeakerClipUsesEncoderOnce(t *testing.T) {
	ui := newTestUI(t, false)
	enc := &countingEncoder{}
	ui.Speaker.Voice = enc
	ui.compose.speaker.set(&Clip{Name: "v.wav", Samples: make([]float32, 16000*4), Rate: 16000})
	for i := 0; i < 2; i++ {
		ui.speak(t, "Voice.")
	}
	if n := enc.calls.Load(); n != 1 {
		t.Fatalf("encoder called %d times for one clip", n)
	}
}

func TestNoEncoderSaysSo(t *testing.T) {
	ui := newTestUI(t, false)
	ui.compose.speaker.set(&Clip{Name: "v.wav", Samples: make([]float32, 16000*4), Rate: 16000})
	ui.speak(t, "Voice.")
	u := ui.Speaker.History.Last()
	if len(u.Notices) == 0 || !strings.Contains(u.Notices[0], "not available") {
		t.Fatalf("notices %q", u.Notices)
	}
}

func TestShortcutsAndUninstalledModel(t *testing.T) {
	ui := newTestUI(t, false)
	ui.on(func() {
		ui.compose.entry.SetText("Shortcut.")
		ui.compose.entry.TypedShortcut(speakShortcut)
		if !ui.Speaker.Busy() {
			t.Error("Ctrl+Enter in the text box did not speak")
		}
		ui.compose.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	})
	ui.waitEnded(t)
	if u := ui.Speaker.History.Last(); u == nil || u.Outcome != PhaseStopped {
		t.Fatalf("Esc did not stop: %+v", u)
	}
	ui.on(func() {
		ui.Win.Canvas().(fyne.Shortcutable).TypedShortcut(speakShortcut) // nothing focused: the canvas shortcut
	})
	ui.waitEnded(t)
	if n := ui.Speaker.History.Len(); n != 2 {
		t.Fatalf("canvas Ctrl+Enter: %d utterances", n)
	}

	m := ui.cfg.Models.(*tinyModels)
	m.installed["transformer"] = false
	ui.on(func() {
		ui.refreshModels()
		ui.settings.Variant = "transformer"
		ui.Speak()
		if ui.Speaker.Busy() || ui.tabs.SelectedIndex() != 2 {
			t.Error("speaking with an uninstalled model")
		}
		if top := ui.Win.Canvas().Overlays().Top(); top == nil {
			t.Error("no error dialog for the missing model")
		}
	})
}

func TestKnobsResetAndRemembered(t *testing.T) {
	a := test.NewTempApp(t)
	ui := New(a, Config{Models: newTinyModels(t)})
	ui.settings.CFGScale = 4.2
	ui.settings.Language = "de"
	ui.SaveSettings()
	ui2 := New(a, Config{Models: newTinyModels(t)})
	if ui2.settings.CFGScale != 4.2 || !strings.Contains(ui2.compose.language.Selected, "(de)") && !strings.HasSuffix(ui2.compose.language.Selected, "— de") {
		t.Fatalf("not remembered: cfg %g language %q", ui2.settings.CFGScale, ui2.compose.language.Selected)
	}
	ui2.ResetKnobs()
	if ui2.settings.CFGScale != DefaultSettings().CFGScale || ui2.settings.Language != "de" {
		t.Fatalf("reset: %+v", ui2.settings)
	}
	if LoadSettings(a.Preferences()).CFGScale != DefaultSettings().CFGScale {
		t.Fatal("reset not saved")
	}
}

func TestRecorderNullBackend(t *testing.T) {
	r, err := StartRecording(true)
	if err != nil {
		t.Skipf("null capture unavailable: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := r.Stop(); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("short recording: %v", err)
	}
}

// lossyOutput accepts the first write, then fails as a device that was
// unplugged mid-utterance does.
type lossyOutput struct {
	writes atomic.Int32
}

type nopPlayback struct{}

func (nopPlayback) FirstSound() (time.Time, bool) { return time.Time{}, false }
func (nopPlayback) Underruns() int64              { return 0 }
func (nopPlayback) Played() int64                 { return 0 }
func (nopPlayback) Done() bool                    { return true }

func (o *lossyOutput) Begin() Playback { return nopPlayback{} }
func (o *lossyOutput) WriteAll(context.Context, []float32) error {
	if o.writes.Add(1) > 1 {
		return errors.New("device unplugged")
	}
	return nil
}
func (o *lossyOutput) End()             {}
func (o *lossyOutput) Cancel()          {}
func (o *lossyOutput) Fill() (int, int) { return 0, 1 }
func (o *lossyOutput) Err() error       { return nil }
func (o *lossyOutput) Name() string     { return "lossy" }

// TestPlaybackFailureKeepsAudio: when the device fails mid-utterance the
// engine keeps generating; the history holds every sample and the window
// says what happened.
func TestPlaybackFailureKeepsAudio(t *testing.T) {
	ui := newTestUI(t, false)
	ui.Speaker.mu.Lock()
	ui.Speaker.out = &lossyOutput{}
	ui.Speaker.mu.Unlock()
	ui.speak(t, "The speakers fall off the desk.")
	u := ui.Speaker.History.Last()
	s := ui.Speaker.Meters.Snapshot()
	if u.Outcome != PhaseDone || float64(len(u.PCM))/engine.SampleRate != s.AudioSeconds {
		t.Fatalf("outcome %s, %d samples kept, %.3f s generated", u.Outcome, len(u.PCM), s.AudioSeconds)
	}
	if !strings.Contains(s.Output, "device unplugged") || ui.Speaker.Output() != nil {
		t.Fatalf("output note %q", s.Output)
	}
	ui.on(func() {
		if !strings.Contains(ui.status.Text, "playback failed") && !strings.Contains(ui.status.Text, "Done") {
			t.Errorf("status %q", ui.status.Text)
		}
	})
}

// TestDropSetsSpeakerClip: a WAV dropped on the window becomes the speaker
// clip.
func TestDropSetsSpeakerClip(t *testing.T) {
	ui := newTestUI(t, false)
	path := filepath.Join(t.TempDir(), "voice.wav")
	if err := SaveWAV(path, make([]float32, 4*engine.SampleRate)); err != nil {
		t.Fatal(err)
	}
	ui.on(func() { ui.dropped(fyne.NewPos(1, 1), []fyne.URI{storage.NewFileURI(path)}) })
	waitFor(t, "clip", func() bool {
		var ok bool
		ui.on(func() { ok = ui.compose.speaker.clip != nil })
		return ok
	})
	ui.on(func() {
		c := ui.compose.speaker.clip
		if c.Rate != engine.SampleRate || c.Duration() != 4*time.Second || ui.compose.speaker.playBtn.Disabled() {
			t.Errorf("clip %s %d Hz %v", c.Name, c.Rate, c.Duration())
		}
		if !strings.Contains(ui.compose.speaker.info.Text, "voice.wav") {
			t.Errorf("info %q", ui.compose.speaker.info.Text)
		}
	})
}

// TestNoMicrophoneShowsError: on a machine without a capture device,
// Record shows an error instead of failing silently.
func TestNoMicrophoneShowsError(t *testing.T) {
	if r, err := StartRecording(false); err == nil {
		r.Stop()
		t.Skip("this machine has a microphone")
	}
	ui := newTestUI(t, false)
	ui.cfg.NullMicrophone = false
	ui.on(func() {
		ui.compose.speaker.toggleRecord()
		if ui.compose.speaker.rec != nil {
			t.Error("recording without a microphone")
		}
		if ui.Win.Canvas().Overlays().Top() == nil || !strings.Contains(ui.status.Text, "microphone") {
			t.Errorf("no error shown; status %q", ui.status.Text)
		}
	})
}
