// Command zonos-stream is the Zonos Stream desktop app: type text, hear it
// spoken while the model is still generating, and watch the latency.
//
//	zonos-stream [--backend cpu|cuda] [--model-dir DIR --dac-dir DIR] [--device NAME] [--say TEXT]
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"zonostream/app"
	"zonostream/assets"
	"zonostream/audio"
	"zonostream/engine/compute"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
	"zonostream/internal/voices"
)

// version is stamped by the build (-ldflags "-X main.version=…").
var version = "dev"

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	backend := flag.String("backend", app.DefaultBackend(), "compute backend: auto (CUDA when built in and a GPU answers, else CPU), cpu, or cuda")
	modelDir := flag.String("model-dir", "", "use the Zonos config.json and model.safetensors in this folder instead of the Hugging Face cache")
	dacDir := flag.String("dac-dir", "", "use the DAC (descript/dac_44khz) config.json and model.safetensors in this folder")
	device := flag.String("device", "", "audio output device: a name, part of one, or an id (default: the system's)")
	null := flag.Bool("null-audio", false, "play into miniaudio's null device: no sound card needed, the playback meters still run")
	say := flag.String("say", "", "speak this text once the window is up (demos, screenshots)")
	maxSeconds := flag.Float64("max-seconds", 0, "bound each sentence group's audio to this many seconds (0: the engine's 30 s)")
	flag.Parse()
	if *showVersion {
		fmt.Println("zonos-stream", version)
		return
	}
	if err := run(*backend, *modelDir, *dacDir, *device, *null, *say, *maxSeconds); err != nil {
		fmt.Fprintln(os.Stderr, "zonos-stream:", err)
		os.Exit(1)
	}
}

func run(backend, modelDir, dacDir, device string, null bool, say string, maxSeconds float64) error {
	a := fyneapp.NewWithID("io.zonosstream.app")
	a.SetIcon(fyne.NewStaticResource("icon.png", assets.Icon))
	settings := app.LoadSettings(a.Preferences())
	b, note, err := app.OpenBackend(backend, settings) // with the GPU plan the window last chose
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "zonos-stream:", note)
	}
	defer b.Close()
	models := &app.HubModels{B: b, ModelDir: modelDir, DACDir: dacDir}
	cfg := app.Config{Models: models, GPUPlans: app.CUDABuilt(), HistoryDir: app.DefaultHistoryDir(),
		ServeLog: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if modelDir == "" {
		c, err := weights.DefaultCache()
		if err != nil {
			return err
		}
		models.Cache = c
		cfg.Cache = &c
		cfg.OnCacheChosen = models.SetCache
	}
	if device == "" && !null {
		device = settings.OutputDevice // the picker's last choice
	}
	if !null {
		cfg.Devices = func() ([]audio.Device, error) { return audio.ListDevices(false) }
		cfg.OpenOutput = func(id string) (app.Output, error) {
			o, err := app.OpenOutput(id, false)
			if err != nil {
				return nil, err // never a typed nil inside the interface
			}
			return o, nil
		}
	}
	out, err := app.OpenOutput(device, null)
	if err != nil {
		cfg.OutputErr = err
		fmt.Fprintln(os.Stderr, "zonos-stream:", err, "(speech goes to the history; save it as WAV)")
	} else {
		defer out.Close()
		cfg.Output = out
	}
	if sb, ok := b.(compute.SpeakerBackend); ok {
		enc := &app.SpeakerEncoder{Backend: sb, Files: app.SpeakerFilesIn(models.CurrentCache)}
		if models.Cache.Dir == "" { // --model-dir: look in the default cache
			c, _ := weights.DefaultCache()
			enc.Files = app.SpeakerFilesIn(func() weights.Cache { return c })
		}
		if sc, err := speaker.DefaultCache(); err == nil {
			enc.Cache = sc
		}
		cfg.Voice = enc
	} // else the window says plainly that voice cloning is unavailable
	if lib, err := voices.Open(); err == nil {
		cfg.Voices = lib
	} else {
		fmt.Fprintln(os.Stderr, "zonos-stream:", err, "(saved voices are unavailable)")
	}

	ui := app.New(a, cfg)
	ui.Speaker.MaxSeconds = maxSeconds
	ui.Preload() // the selected model, when installed, loads while the window opens
	if say != "" {
		// Scripts (screenshot.sh) wait for this line before capturing.
		ui.OnEnded = func() { fmt.Fprintln(os.Stderr, "zonos-stream: utterance ended") }
	}
	if say != "" {
		go func() {
			time.Sleep(500 * time.Millisecond)
			fyne.Do(func() { ui.SpeakText(say) })
		}()
	}
	ui.Win.ShowAndRun()
	// The in-app server's last request ends before the backend closes.
	ui.Serving.Close()
	ui.Serving.Wait()
	return nil
}
