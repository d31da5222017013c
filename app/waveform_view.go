package app

import (
	"image"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
)

// waveformView draws the Waveform's peaks, newest at the right, scrolling
// left as audio streams in.
type waveformView struct {
	obj *canvas.Raster
	w   *Waveform
}

func newWaveformView(w *Waveform) *waveformView {
	v := &waveformView{w: w}
	v.obj = canvas.NewRaster(func(width, height int) image.Image { return drawWaveform(width, height, v.w.Peaks(), v.w.Columns()) })
	v.obj.SetMinSize(fyne.NewSize(300, 90))
	return v
}

func (v *waveformView) refresh() { v.obj.Refresh() }

// drawWaveform maps columns onto the width: the view always spans
// `columns` columns, so the trace enters from the right.
func drawWaveform(w, h int, peaks []Peak, columns int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, 0, w, 0, h, theme.Color(theme.ColorNameInputBackground))
	mid := h / 2
	fill(img, 0, w, mid, mid+1, theme.Color(theme.ColorNameSeparator))
	if len(peaks) == 0 || columns == 0 {
		return img
	}
	fg := theme.Color(theme.ColorNamePrimary)
	off := columns - len(peaks)
	for px := 0; px < w; px++ {
		c := px*columns/w - off
		if c < 0 || c >= len(peaks) {
			continue
		}
		p := peaks[c]
		top := mid - int(float32(h/2)*min(1, max(-1, p.Max)))
		bot := mid - int(float32(h/2)*min(1, max(-1, p.Min)))
		fill(img, px, px+1, top, bot+1, fg)
	}
	return img
}
