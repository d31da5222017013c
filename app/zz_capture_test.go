package app

import (
	"image/png"
	"os"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"zonostream/engine/weights"
)

func TestZZCapture(t *testing.T) {
	if os.Getenv("CAPTURE") == "" {
		t.Skip()
	}
	a := test.NewTempApp(t)
	m := newTinyModels(t)
	m.installed = map[string]bool{}
	c := &weights.Cache{Dir: t.TempDir(), From: "test"}
	ui := New(a, Config{Models: m, Cache: c})
	ui.Win.Resize(fyne.NewSize(1180, 800))
	for i, name := range []string{"compose", "knobs", "models"} {
		ui.tabs.SelectIndex(i)
		if i == 1 {
			ui.knobs.sampling.Open(0)
			ui.Win.Resize(fyne.NewSize(1181, 800))
		}
		img := ui.Win.Canvas().Capture()
		f, _ := os.Create("/tmp/tab-" + name + ".png")
		png.Encode(f, img)
		f.Close()
	}
}
