//go:build cuda

package app

import (
	"context"
	"flag"
	"image/png"
	"os"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/speaker"
	"zonostream/engine/zonos"
	"zonostream/internal/backend"
	"zonostream/internal/randmodel"
)

// screenshot is where TestScreenshotRealShape writes the README's picture
// of the window (docs/screenshots/main.png); empty skips the test.
var screenshot = flag.String("screenshot", "", "write a PNG of the window after one utterance on the GPU with the full-size random-weight model")

// realModels serves one engine: the hybrid of the real shapes with random
// weights on the CUDA backend, so the meters show what the GPU does.
type realModels struct{ e *engine.Engine }

func (m realModels) Choices() []ModelChoice {
	return []ModelChoice{{Variant: "hybrid", Installed: true}}
}
func (m realModels) Load(context.Context, string) (*engine.Engine, error) { return m.e, nil }
func (m realModels) Backend() BackendInfo                                 { return DescribeBackend(m.e.Backend()) }

// randomVoice is the full-size speaker encoder with random weights on the
// GPU, so the window offers voice cloning as a real install does.
type randomVoice struct{ m *speaker.Model }

func (v randomVoice) Embed(ctx context.Context, samples []float32, rate int) ([]float32, error) {
	return v.m.EmbedAt(ctx, samples, rate)
}

// TestScreenshotRealShape draws the window with Fyne's software renderer
// (no display needed) after speaking a sentence on the GPU through the
// null audio device: real TTFA, frame and buffer meters.
func TestScreenshotRealShape(t *testing.T) {
	if *screenshot == "" {
		t.Skip("pass -screenshot out.png")
	}
	b, _, err := backend.Open("cuda")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := zonos.RealConfig(zonos.Hybrid)
	zf, err := randmodel.Zonos(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := zonos.New(b, cfg, zf)
	if err != nil {
		t.Fatal(err)
	}
	dcfg := dac.Dac44kHz()
	df, err := randmodel.DAC(dcfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := dac.New(dcfg, df, compute.LaneOf(b))
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(b, m, codec)
	if err := e.Warmup(context.Background(), engine.Request{Text: "Warm up.", Language: "en-us", Knobs: engine.DefaultKnobs()}); err != nil {
		t.Fatal(err)
	}

	a := test.NewTempApp(t)
	a.Settings().SetTheme(theme.DefaultTheme())
	out, err := OpenOutput("", true)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	voice := randomVoice{randmodel.Speaker(b.(compute.SpeakerBackend), 64, speaker.RealBlocks, 1)}
	ui := New(a, Config{Models: realModels{e}, Output: out, Voice: voice, NullMicrophone: true})
	ui.Speaker.MaxSeconds = 6
	tu := testUI{UI: ui, out: out, mu: &sync.Mutex{}, ended: make(chan struct{}, 4)}
	ui.do = tu.on
	ui.OnEnded = func() { tu.ended <- struct{}{} }
	ui.Win.Resize(fyne.NewSize(1180, 800))
	tu.speak(t, "Hello from Zonos Stream. Audio starts while the model is still generating.")
	s := ui.Speaker.Meters.Snapshot()
	t.Logf("TTFA %v, first sound %v, RTF %.2f, %d frames, underruns %d", s.TTFA, s.FirstSound, s.RTF, s.Frames, s.Underruns)
	f, err := os.Create(*screenshot)
	if err != nil {
		t.Fatal(err)
	}
	tu.on(func() { err = png.Encode(f, ui.Win.Canvas().Capture()) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
