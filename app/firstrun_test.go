package app

import (
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"zonostream/engine/weights"
)

// captureDir is where TestFirstRunShowsModelsPanel writes its tabs as PNGs.
var captureDir = flag.String("capture", "", "write the first-run window's tabs as PNGs into this folder")

// TestFirstRunShowsModelsPanel: with an empty cache the window opens on
// the Models tab with all six files listed and the download offered.
// -capture DIR writes each tab as a PNG there (layout checks).
func TestFirstRunShowsModelsPanel(t *testing.T) {
	a := test.NewTempApp(t)
	m := newTinyModels(t)
	m.installed = map[string]bool{}
	c := &weights.Cache{Dir: t.TempDir(), From: "test"}
	ui := New(a, Config{Models: m, Cache: c})
	ui.Win.Resize(fyne.NewSize(1180, 800))
	if ui.tabs.SelectedIndex() != 2 {
		t.Fatalf("opened on tab %d, want Models", ui.tabs.SelectedIndex())
	}
	if n := len(ui.models.rows); n != 6 {
		t.Fatalf("%d file rows", n)
	}
	if ui.models.dl.Disabled() || !strings.Contains(ui.models.state.Text, "6 of 6") {
		t.Fatalf("download offered: %v, state %q", !ui.models.dl.Disabled(), ui.models.state.Text)
	}
	if !strings.Contains(ui.status.Text, "Models tab") {
		t.Fatalf("status %q", ui.status.Text)
	}
	if _, err := cacheFromFolder(c.Dir); err == nil {
		t.Fatal("an empty folder was taken for a Hugging Face cache")
	}
	if dir := *captureDir; dir != "" {
		for i, name := range []string{"compose", "knobs", "models"} {
			ui.tabs.SelectIndex(i)
			f, err := os.Create(filepath.Join(dir, "tab-"+name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			png.Encode(f, ui.Win.Canvas().Capture())
			f.Close()
		}
	}
}
