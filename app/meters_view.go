package app

import (
	"fmt"
	"image"
	"image/color"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/data/binding"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/engine"
)

// metersView shows a MeterSnapshot: numbers through bindings, the frame
// latency bar and the p50/p90 sparkline as rasters.
type metersView struct {
	obj                            fyne.CanvasObject
	phase, ttfa, sound, rtf, frame binding.String
	steps, ring, under             binding.String
	backendRow, backendDetail      binding.String // backendRow and backendDetail of the snapshot's Backend
	output, device                 binding.String
	ringBar                        *levelBar
	snap                           MeterSnapshot
	bar, spark                     *canvas.Raster
	outputLbl                      *widget.Label
}

func newMetersView() *metersView {
	v := &metersView{}
	for _, b := range []*binding.String{&v.phase, &v.ttfa, &v.sound, &v.rtf, &v.frame, &v.steps, &v.ring, &v.under, &v.backendRow, &v.backendDetail, &v.output, &v.device} {
		*b = binding.NewString()
	}
	v.ringBar = newLevelBar()
	v.bar = canvas.NewRaster(func(w, h int) image.Image { return drawLatencyBar(w, h, v.snap) })
	v.bar.SetMinSize(fyne.NewSize(200, 18))
	v.spark = canvas.NewRaster(func(w, h int) image.Image { return drawSparkline(w, h, v.snap.Spark, latencyScale(v.snap)) })
	v.spark.SetMinSize(fyne.NewSize(200, 40))
	value := func(b binding.String) *widget.Label {
		l := widget.NewLabelWithData(b)
		l.TextStyle = fyne.TextStyle{Monospace: true}
		return l
	}
	// The plan's full line is long: the form shows the backend and the
	// plan's name on one line, and the device and the plan's choices wrap
	// below the form (a word-wrapped label inside a form row would not
	// grow its row and would draw over the next one).
	planLbl := widget.NewLabelWithData(v.backendDetail)
	planLbl.Wrapping = fyne.TextWrapWord
	planLbl.SizeName = theme.SizeNameCaptionText
	planLbl.Importance = widget.LowImportance
	v.outputLbl = widget.NewLabelWithData(v.output)
	v.outputLbl.Wrapping = fyne.TextWrapWord
	v.outputLbl.Importance = widget.WarningImportance
	legend := widget.NewLabel(fmt.Sprintf("bar: last frame · orange line: %s budget · ticks: p50 (top), p90 (bottom) · trace: rolling p50 and p90", msf(engine.FrameBudget)))
	legend.Wrapping = fyne.TextWrapWord
	legend.SizeName = theme.SizeNameCaptionText
	legend.Importance = widget.LowImportance
	form := widget.NewForm(
		widget.NewFormItem("State", value(v.phase)),
		widget.NewFormItem("TTFA / first sound", value(v.ttfa)),
		widget.NewFormItem("Frame latency", container.NewVBox(value(v.frame), v.bar, v.spark, legend)),
		widget.NewFormItem("Decode step", value(v.steps)),
		widget.NewFormItem("Real-time factor", value(v.rtf)),
		widget.NewFormItem("Ring fill", container.NewBorder(nil, nil, nil, value(v.ring), v.ringBar)),
		widget.NewFormItem("Underruns", value(v.under)),
		widget.NewFormItem("Backend", value(v.backendRow)),
		widget.NewFormItem("Output", value(v.device)),
	)
	v.obj = widget.NewCard("", "Meters", container.NewVBox(form, planLbl, v.outputLbl))
	return v
}

// show updates every meter; UI goroutine only.
func (v *metersView) show(s MeterSnapshot) {
	v.snap = s
	v.phase.Set(fmt.Sprintf("%s  %.2f s audio in %.1f s", s.Phase, s.AudioSeconds, s.Elapsed.Seconds()))
	t, snd := "—", "—"
	if s.HasTTFA {
		t = ms(s.TTFA)
	}
	if s.HasSound {
		snd = ms(s.FirstSound)
	}
	v.ttfa.Set(t + " / " + snd)
	v.frame.Set(fmt.Sprintf("last %s  p50 %s  p90 %s ms", num(s.LastFrame), num(s.FrameP50), num(s.FrameP90)))
	v.steps.Set(fmt.Sprintf("p50 %s  p90 %s", msf(s.StepP50), msf(s.StepP90)))
	v.rtf.Set(fmt.Sprintf("%.2f×", s.RTF))
	v.ring.Set(fmt.Sprintf("%3.0f%%  %.2f s", 100*s.RingFill, s.Buffered.Seconds()))
	v.ringBar.SetValue(s.RingFill)
	v.under.Set(fmt.Sprint(s.Underruns))
	v.backendRow.Set(backendRow(s.Backend))
	v.backendDetail.Set(backendDetail(s.Backend))
	v.output.Set(s.Output)
	if s.Device == "" {
		v.device.Set("none")
	} else {
		v.device.Set(s.Device)
	}
	if s.Output == "" {
		v.outputLbl.Hide()
	} else {
		v.outputLbl.Show()
	}
	v.bar.Refresh()
	v.spark.Refresh()
}

func msf(d time.Duration) string { return num(d) + " ms" }

// num is d in milliseconds with two decimals.
func num(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

// latencyScale is the charts' full scale: twice the frame budget, or more
// when the p90 is beyond it (a slow backend), so the trace stays visible.
func latencyScale(s MeterSnapshot) time.Duration {
	top := max(s.FrameP90, s.LastFrame)
	for _, p := range s.Spark {
		top = max(top, p.P90)
	}
	return max(2*engine.FrameBudget, top*5/4)
}

// drawLatencyBar draws the last frame latency as a bar (green within the
// budget, red over it), the budget as a line, and p50/p90 as ticks.
func drawLatencyBar(w, h int, s MeterSnapshot) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bg := theme.Color(theme.ColorNameInputBackground)
	fill(img, 0, w, 0, h, bg)
	scale := latencyScale(s)
	x := func(d time.Duration) int { return min(w-1, int(float64(w)*float64(d)/float64(scale))) }
	col := color.NRGBA{0x3c, 0xb3, 0x71, 0xff}
	if s.LastFrame > engine.FrameBudget {
		col = color.NRGBA{0xe0, 0x4b, 0x3a, 0xff}
	}
	if s.LastFrame > 0 {
		fill(img, 0, x(s.LastFrame)+1, h/4, h-h/4, col)
	}
	fg := theme.Color(theme.ColorNameForeground)
	if s.FrameP50 > 0 {
		fill(img, x(s.FrameP50), x(s.FrameP50)+2, 0, h/4, fg)
	}
	if s.FrameP90 > 0 {
		fill(img, x(s.FrameP90), x(s.FrameP90)+2, h-h/4, h, fg)
	}
	b := x(engine.FrameBudget)
	fill(img, b, b+2, 0, h, color.NRGBA{0xff, 0xa0, 0x00, 0xff})
	return img
}

// drawSparkline draws the rolling p50 (solid) and p90 (light) history on
// the same scale as the bar, with the budget as a line.
func drawSparkline(w, h int, pts []SparkPoint, scale time.Duration) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, 0, w, 0, h, theme.Color(theme.ColorNameInputBackground))
	y := func(d time.Duration) int {
		return max(0, min(h-1, h-1-int(float64(h-1)*float64(d)/float64(scale))))
	}
	by := y(engine.FrameBudget)
	fill(img, 0, w, by, by+1, color.NRGBA{0xff, 0xa0, 0x00, 0xff})
	if len(pts) == 0 {
		return img
	}
	p90c := color.NRGBA{0x80, 0x80, 0xff, 0xff}
	p50c := theme.Color(theme.ColorNamePrimary)
	for px := 0; px < w; px++ {
		// The newest point is at the right edge; SparkLen points span the width.
		i := len(pts) - SparkLen + px*SparkLen/w
		if i < 0 {
			continue
		}
		p := pts[i]
		fill(img, px, px+1, y(p.P90), y(p.P90)+2, p90c)
		fill(img, px, px+1, y(p.P50), y(p.P50)+2, p50c)
	}
	return img
}

func fill(img *image.RGBA, x0, x1, y0, y1 int, c color.Color) {
	r := img.Bounds()
	for yy := max(y0, r.Min.Y); yy < min(y1, r.Max.Y); yy++ {
		for xx := max(x0, r.Min.X); xx < min(x1, r.Max.X); xx++ {
			img.Set(xx, yy, c)
		}
	}
}

// backendRow is the meters form's short row: the backend and its plan's
// name ("cuda · hopper plan"), or the backend alone when its plan has no
// name.
func backendRow(b BackendInfo) string {
	if b.Plan.Name == "" {
		return b.Name
	}
	return b.Name + " · " + b.Plan.Name + " plan"
}

// backendDetail is what wraps below the form: the device and the plan's
// choices ("NVIDIA H200 (…); hopper plan: sm_90 modules; persistent Mamba2
// runs; …").
func backendDetail(b BackendInfo) string {
	var parts []string
	if b.Device != "" {
		parts = append(parts, b.Device)
	}
	if len(b.Plan.Choices) > 0 {
		plan := "plan: "
		if b.Plan.Name != "" {
			plan = b.Plan.Name + " plan: "
		}
		parts = append(parts, plan+strings.Join(b.Plan.Choices, "; "))
	}
	return strings.Join(parts, "; ")
}
