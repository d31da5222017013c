package app

import (
	"context"
	"errors"
	"image"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// noModels has nothing installed and loads nothing (no golden packs needed).
type noModels struct{}

func (noModels) Choices() []ModelChoice {
	return []ModelChoice{{Variant: "hybrid"}, {Variant: "transformer"}}
}

func (noModels) Load(context.Context, string) (*engine.Engine, error) {
	return nil, errors.New("no model")
}

func (noModels) Backend() BackendInfo { return testBackend }

// testBackend is what the test models report for the meters.
var testBackend = BackendInfo{Name: "cpu", Device: "test", Plan: compute.Plan{Choices: []string{"pure-Go reference ops on 1 threads"}}}

// accent counts the pixels of img inside obj's area (less a 3 px margin for
// the rounded corners) whose colour is saturated: the themes' track and
// backgrounds are grey, the primary colour is not (the test theme's is
// orange). From is the fraction of the width where the count starts and to
// where it ends.
func accent(t *testing.T, img image.Image, obj fyne.CanvasObject, from, to float32) (n, of int) {
	t.Helper()
	// The driver's position is relative to the canvas's interactive area;
	// Capture draws the whole canvas.
	inset, _ := fyne.CurrentApp().Driver().CanvasForObject(obj).InteractiveArea()
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(obj).Add(inset)
	size := obj.Size()
	if size.Width < 20 || size.Height < 8 {
		t.Fatalf("bar is %v, too small to see", size)
	}
	x0, x1 := int(pos.X+size.Width*from)+3, int(pos.X+size.Width*to)-3
	y0, y1 := int(pos.Y)+3, int(pos.Y+size.Height)-3
	if !image.Rect(x0, y0, x1, y1).In(img.Bounds()) {
		t.Fatalf("bar at %v %v lies outside the window's %v", pos, size, img.Bounds())
	}
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, b)>>8, min(r, g, b)>>8
			if hi-lo > 0x20 {
				n++
			}
			of++
		}
	}
	return n, of
}

// TestEmptyBarsLookEmpty: at 0 % the Ring fill meter and the Models tab's
// per-file bars show no fill colour at all (Fyne's ProgressBar drew a
// full-width half-alpha primary bar, which read as complete); at 50 % the
// left half is filled and the right half is not; at 100 % all of it is.
func TestEmptyBarsLookEmpty(t *testing.T) {
	a := test.NewTempApp(t)
	ui := New(a, Config{Models: noModels{}, Cache: &weights.Cache{Dir: t.TempDir(), From: "test"}})
	ui.Win.Resize(fyne.NewSize(1180, 1400)) // every file row in view
	if ui.tabs.SelectedIndex() != 2 || len(ui.models.rows) != 6 {
		t.Fatalf("want the Models tab with 6 file rows, got tab %d, %d rows", ui.tabs.SelectedIndex(), len(ui.models.rows))
	}

	img := ui.Win.Canvas().Capture()
	if n, of := accent(t, img, ui.meters.ringBar, 0, 1); n != 0 {
		t.Errorf("Ring fill at 0 %%: %d of %d pixels in the fill colour", n, of)
	}
	for f, r := range ui.models.rows {
		if r.bar.Value() != 0 {
			t.Fatalf("%s: missing file at %v", f, r.bar.Value())
		}
		if n, of := accent(t, img, r.bar, 0, 1); n != 0 {
			t.Errorf("%s, missing: %d of %d pixels of its bar in the fill colour", f, n, of)
		}
	}

	ui.meters.show(MeterSnapshot{RingFill: 0.5})
	var one weights.RepoFile
	for f := range ui.models.rows {
		one = f
		break
	}
	ui.models.progress(weights.Progress{File: one, Phase: weights.PhaseDone, Bytes: 10, Total: 10})
	img = ui.Win.Canvas().Capture()
	if n, of := accent(t, img, ui.meters.ringBar, 0, 0.45); n != of {
		t.Errorf("Ring fill at 50 %%: %d of %d pixels of the left half filled", n, of)
	}
	if n, of := accent(t, img, ui.meters.ringBar, 0.55, 1); n != 0 {
		t.Errorf("Ring fill at 50 %%: %d of %d pixels of the right half filled", n, of)
	}
	if n, of := accent(t, img, ui.models.rows[one].bar, 0, 1); n != of {
		t.Errorf("%s, done: %d of %d pixels of its bar filled", one, n, of)
	}
}
