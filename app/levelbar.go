package app

import (
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// levelBar shows a fraction (0 to 1) as a bar filled in the theme's primary
// colour over a neutral track, so an empty bar reads as empty: the ring
// fill meter and each file's download progress. Fyne's ProgressBar is not
// used for these because it draws its track in the primary colour at half
// alpha, so at 0 % it shows a full-width blue bar, which reads as complete.
type levelBar struct {
	widget.BaseWidget
	value float64
}

func newLevelBar() *levelBar {
	b := &levelBar{}
	b.ExtendBaseWidget(b)
	return b
}

// SetValue sets the filled fraction, clamped to [0, 1] (NaN is 0).
func (b *levelBar) SetValue(v float64) {
	if math.IsNaN(v) {
		v = 0
	}
	v = max(0, min(1, v))
	if v == b.value {
		return
	}
	b.value = v
	b.Refresh()
}

// Value is the filled fraction.
func (b *levelBar) Value() float64 { return b.value }

func (b *levelBar) CreateRenderer() fyne.WidgetRenderer {
	r := &levelBarRenderer{b: b, track: canvas.NewRectangle(nil), fill: canvas.NewRectangle(nil)}
	r.applyTheme()
	return r
}

type levelBarRenderer struct {
	b           *levelBar
	track, fill *canvas.Rectangle
}

func (r *levelBarRenderer) applyTheme() {
	th := r.b.Theme()
	v := fyne.CurrentApp().Settings().ThemeVariant()
	radius := th.Size(theme.SizeNameInputRadius)
	r.track.FillColor = th.Color(theme.ColorNameInputBackground, v)
	r.track.CornerRadius = radius
	r.fill.FillColor = th.Color(theme.ColorNamePrimary, v)
	r.fill.CornerRadius = radius
}

func (r *levelBarRenderer) Layout(size fyne.Size) {
	r.track.Resize(size)
	r.fill.Resize(fyne.NewSize(size.Width*float32(r.b.value), size.Height))
	r.fill.Hidden = r.b.value == 0
}

// MinSize is as tall as a line of text with padding, like a ProgressBar.
func (r *levelBarRenderer) MinSize() fyne.Size {
	th := r.b.Theme()
	h := fyne.MeasureText("0", th.Size(theme.SizeNameText), fyne.TextStyle{}).Height
	return fyne.NewSize(4*th.Size(theme.SizeNameInnerPadding), h+2*th.Size(theme.SizeNameInnerPadding))
}

func (r *levelBarRenderer) Refresh() {
	r.applyTheme()
	r.Layout(r.b.Size())
	canvas.Refresh(r.b)
}

func (r *levelBarRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.track, r.fill}
}

func (r *levelBarRenderer) Destroy() {}
