package app

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/weights"
	"zonostream/internal/voices"
)

// UIRate bounds how often the meters and waveform redraw while speaking.
const UIRate = 30

// Config is what main hands the window.
type Config struct {
	Models Models
	// Output plays speech; nil when no device could be opened, with
	// OutputErr saying why (speech then goes to the history only).
	Output    Output
	OutputErr error
	// Voice embeds speaker clips; nil when the speaker model is not
	// available (the window says so).
	Voice VoiceEncoder
	// Cache is the Hugging Face cache the Models tab downloads into; nil
	// hides the download controls (fixed --model-dir).
	Cache *weights.Cache
	// OnCacheChosen is called when the user picks another cache folder.
	OnCacheChosen func(weights.Cache)
	// NullMicrophone records from miniaudio's null backend (tests).
	NullMicrophone bool
	// Devices lists the sound outputs and OpenOutput opens one by ID (""
	// for the system default); both nil hide the output picker.
	Devices    func() ([]audio.Device, error)
	OpenOutput func(id string) (Output, error)
	// GPUPlans offers the GPU plan setting (CUDABuilt: only the CUDA
	// backend has a plan to choose); main opens the backend with it.
	GPUPlans bool
	// HistoryDir is where the history keeps long utterances
	// (DefaultHistoryDir); "" keeps them in memory.
	HistoryDir string
	// Voices is the named voice library shared with the CLI; nil hides
	// the saved-voice picker and "Save as voice…".
	Voices *voices.Library
	// ServeLog receives the in-app speech server's request log; nil
	// discards it.
	ServeLog *slog.Logger
}

// UI is the main window and its state. Fields are touched on the UI
// goroutine only; the Speaker's goroutines reach it through fyne.Do.
type UI struct {
	App     fyne.App
	Win     fyne.Window
	cfg     Config
	Speaker *Speaker
	// Serving is the speech server the serve setting runs on the
	// Speaker's engine.
	Serving *Service

	settings  Settings
	refreshes []func() // push settings into widgets (after Reset)

	compose *composeView
	knobs   *knobsView
	meters  *metersView
	wave    *waveformView
	history *historyView
	models  *weightsView
	reading *readingView
	tabs    *container.AppTabs
	readTab *container.TabItem

	speakBtn, stopBtn, saveBtn *widget.Button
	status                     *widget.Label
	ticking                    bool
	tickers                    sync.WaitGroup // meter tickers still running

	// do runs f on the UI goroutine: fyne.Do, or a serialising stand-in in
	// tests (the test driver runs fyne.Do on the calling goroutine).
	do func(f func())
	// OnEnded, if set, is called on the UI goroutine after an utterance
	// or playback has been shown as ended (tests wait on it).
	OnEnded func()
	// OnPreloaded, if set, is called (on the loading goroutine) when
	// Preload has ended, with its error (tests wait on it).
	OnPreloaded func(error)
}

// New builds the main window (not shown yet).
func New(a fyne.App, cfg Config) *UI {
	ui := &UI{App: a, cfg: cfg, settings: LoadSettings(a.Preferences()), do: fyne.Do}
	why := ""
	if cfg.OutputErr != nil {
		why = "no sound: " + cfg.OutputErr.Error()
	}
	ui.Speaker = NewSpeaker(cfg.Models, cfg.Output, why)
	ui.Speaker.Voice = cfg.Voice
	ui.Speaker.OnNotice = func(m string) { ui.do(func() { ui.notify(m) }) }
	ui.Speaker.OnEnd = func(u *Utterance) { ui.do(func() { ui.ended(u) }) }
	ui.Serving = NewService(ServiceOptions{
		Voices:     cfg.Voices,
		Speaker:    speakerModelOf(cfg.Voice),
		MaxSeconds: func() float64 { return ui.Speaker.MaxSeconds },
		Log:        cfg.ServeLog,
		OnState:    func(st ServeState) { ui.do(func() { ui.compose.serve.show(st) }) },
	})
	ui.Speaker.Engines = ui.Serving
	var historyErr error
	if cfg.HistoryDir != "" {
		historyErr = ui.Speaker.History.UseDisk(cfg.HistoryDir)
	}

	ui.Win = a.NewWindow("Zonos Stream")
	ui.status = widget.NewLabel("Ready. Type some text and press Speak (Ctrl+Enter).")
	ui.status.Wrapping = fyne.TextWrapWord
	ui.compose = newComposeView(ui)
	ui.knobs = newKnobsView(ui)
	ui.meters = newMetersView()
	ui.wave = newWaveformView(ui.Speaker.Wave)
	ui.history = newHistoryView(ui)
	ui.models = newWeightsView(ui)
	ui.reading = newReadingView(ui)
	ui.readTab = container.NewTabItemWithIcon("Read", theme.FileTextIcon(), ui.reading.obj)

	ui.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Compose", theme.DocumentCreateIcon(), ui.compose.obj),
		container.NewTabItemWithIcon("Knobs", theme.SettingsIcon(), ui.knobs.obj),
		container.NewTabItemWithIcon("Models", theme.DownloadIcon(), ui.models.obj),
		ui.readTab,
	)
	ui.tabs.OnSelected = func(*container.TabItem) { ui.Win.Canvas().Unfocus() } // keys go to the tab shown
	right := container.NewBorder(
		container.NewVBox(ui.meters.obj, widget.NewCard("", "Streamed audio", ui.wave.obj)),
		nil, nil, nil,
		widget.NewCard("", "History", ui.history.obj),
	)
	split := container.NewHSplit(ui.tabs, right)
	split.Offset = 0.5
	ui.Win.SetContent(container.NewBorder(ui.toolbar(), ui.status, nil, nil, split))
	ui.Win.Resize(fyne.NewSize(1180, 800))
	ui.installShortcuts()
	ui.Win.SetOnDropped(ui.dropped)
	ui.Win.SetCloseIntercept(func() {
		ui.Serving.Close() // main waits for it (Serving.Wait) before closing the backend
		ui.Speaker.Stop()
		ui.Speaker.History.Close() // a run still stopping loses only its file
		ui.SaveSettings()
		ui.Win.Close()
	})
	ui.refreshMeters()
	ui.refreshModels()
	ui.Serving.Set(ui.settings.Serve, ui.settings.ServeListen) // serves once the model is loaded
	if !ui.anyInstalled() {
		ui.tabs.SelectIndex(2)
		ui.notify("No model is installed yet: the Models tab explains what is needed and can download it.")
	} else if historyErr != nil {
		ui.notify(fmt.Sprintf("The history keeps every utterance in memory: %v", historyErr))
	}
	return ui
}

// toolbar is Speak / Stop / Save.
func (ui *UI) toolbar() fyne.CanvasObject {
	ui.speakBtn = widget.NewButtonWithIcon("Speak  (Ctrl+Enter)", theme.MediaPlayIcon(), ui.Speak)
	ui.speakBtn.Importance = widget.HighImportance
	ui.stopBtn = widget.NewButtonWithIcon("Stop  (Esc)", theme.MediaStopIcon(), ui.Stop)
	ui.stopBtn.Disable()
	ui.saveBtn = widget.NewButtonWithIcon("Save WAV  (Ctrl+S)", theme.DocumentSaveIcon(), ui.SaveLast)
	ui.saveBtn.Disable()
	return container.NewHBox(ui.speakBtn, ui.stopBtn, ui.saveBtn)
}

// Settings returns the current settings.
func (ui *UI) Settings() Settings { return ui.settings }

// SaveSettings remembers the settings in the app's preferences.
func (ui *UI) SaveSettings() {
	if ui.knobs != nil {
		ui.settings.SamplingOpen = ui.knobs.sampling.Items[0].Open
	}
	SaveSettings(ui.App.Preferences(), ui.settings)
}

// ResetKnobs puts every knob back to its default (text, language, model,
// sound output, GPU plan and the serve setting stay).
func (ui *UI) ResetKnobs() {
	d := DefaultSettings()
	d.Text, d.Language, d.Variant, d.SamplingOpen = ui.settings.Text, ui.settings.Language, ui.settings.Variant, ui.settings.SamplingOpen
	d.OutputDevice, d.GPUPlan = ui.settings.OutputDevice, ui.settings.GPUPlan // not knobs
	d.Serve, d.ServeListen = ui.settings.Serve, ui.settings.ServeListen
	ui.settings = d
	for _, r := range ui.refreshes {
		r()
	}
	ui.SaveSettings()
}

// Speak starts speaking the text (Ctrl+Enter).
func (ui *UI) Speak() {
	if ui.Speaker.Busy() {
		return
	}
	if ch, ok := ui.choice(ui.settings.Variant); !ok || !ch.Installed {
		ui.showError(fmt.Errorf("the %s model is not installed: download it in the Models tab, or pick an installed model", ui.settings.Variant))
		ui.tabs.SelectIndex(2)
		return
	}
	ui.SaveSettings()
	req, err := ui.Speaker.Speak(Job{Settings: ui.settings, Speaker: ui.compose.speaker.clip, Prefix: ui.compose.prefix.clip,
		SpeakerEmbedding: ui.compose.speaker.savedVoice()})
	if err != nil {
		ui.showError(err)
		return
	}
	if ui.settings.RandomSeed {
		ui.knobs.showSeed(req.Seed)
	}
	ui.notify(fmt.Sprintf("Speaking %d characters (seed %d)…", len([]rune(req.Text)), req.Seed))
	ui.busy()
}

// Preload loads and warms the selected model in the background when it is
// installed (Speaker.Preload): the app starts with the model resident, so
// the first Speak is as quick as the later ones. The warm-up request is
// built from the current settings (any text; the engine brings its own).
func (ui *UI) Preload() {
	ch, ok := ui.choice(ui.settings.Variant)
	if !ok || !ch.Installed {
		return
	}
	st := ui.settings
	st.Text = "warm-up"
	req, _, err := BuildRequest(st, Voice{}, func() uint64 { return 0 })
	if err != nil { // settings the first Speak will complain about: warm with the defaults
		req = engine.Request{Language: st.Language, Knobs: engine.DefaultKnobs()}
	}
	req.MaxSeconds = ui.Speaker.MaxSeconds
	ui.Speaker.Preload(st.Variant, req, ui.OnPreloaded)
}

// SpeakText puts text in the compose box and speaks it.
func (ui *UI) SpeakText(text string) {
	ui.compose.entry.SetText(text)
	ui.Speak()
}

// Stop stops speech or playback (Esc).
func (ui *UI) Stop() { ui.Speaker.Stop() }

// busy switches the buttons and starts the meter ticker.
func (ui *UI) busy() {
	ui.speakBtn.Disable()
	ui.stopBtn.Enable()
	if ui.ticking {
		return
	}
	done := ui.Speaker.Done()
	if done == nil {
		return // the run is already over (a cached voice): ended() is on its way
	}
	ui.ticking = true
	ui.tickers.Add(1)
	go func() {
		defer ui.tickers.Done()
		t := time.NewTicker(time.Second / UIRate)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				select {
				case <-done:
					return // ended() shows the final values
				default:
				}
				ui.do(ui.refreshMeters)
			case <-done:
				return
			}
		}
	}()
}

// ended runs on the UI goroutine after an utterance (u) or a playback
// (u nil).
func (ui *UI) ended(u *Utterance) {
	ui.ticking = false
	ui.speakBtn.Enable()
	ui.stopBtn.Disable()
	ui.refreshMeters()
	ui.history.refresh(ui.Speaker.History)
	if last := ui.Speaker.History.Last(); last != nil && last.Samples() > 0 {
		ui.saveBtn.Enable()
	}
	snap := ui.Speaker.Meters.Snapshot()
	switch {
	case u == nil:
	case u.Outcome == PhaseDone:
		ui.notify(fmt.Sprintf("Done: %.1f s of audio, TTFA %s, RTF %.2f×.", snap.AudioSeconds, ms(snap.TTFA), snap.RTF))
	case u.Outcome == PhaseStopped:
		ui.notify("Stopped.")
	}
	ui.reading.ended(u)
	if ui.OnEnded != nil {
		ui.OnEnded()
	}
}

func (ui *UI) refreshMeters() {
	ui.meters.show(ui.Speaker.Meters.Snapshot())
	ui.wave.refresh()
	ui.reading.tick()
}

// SaveLast saves the newest utterance (Ctrl+S).
func (ui *UI) SaveLast() {
	if u := ui.Speaker.History.Last(); u != nil {
		ui.saveDialog(u)
	}
}

func (ui *UI) notify(m string) { ui.status.SetText(m) }

func (ui *UI) showError(err error) {
	ui.notify("Error: " + err.Error())
	dialog.ShowError(err, ui.Win)
}

// choice finds a model choice by variant.
func (ui *UI) choice(variant string) (ModelChoice, bool) {
	if ui.cfg.Models == nil {
		return ModelChoice{}, false
	}
	for _, c := range ui.cfg.Models.Choices() {
		if c.Variant == variant {
			return c, true
		}
	}
	return ModelChoice{}, false
}

func (ui *UI) anyInstalled() bool {
	if ui.cfg.Models == nil {
		return false
	}
	for _, c := range ui.cfg.Models.Choices() {
		if c.Installed {
			return true
		}
	}
	return false
}

// refreshModels updates the model picker and the Models tab.
func (ui *UI) refreshModels() {
	ui.compose.refreshModels()
	ui.models.refresh()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
