package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// serveCheckLabel is the serve setting's check box.
const serveCheckLabel = "Serve on this computer (OpenAI-compatible API for other programs)"

// serveView is the serve setting: the check and a read-only line saying
// where the in-app server stands (UI.Serving).
type serveView struct {
	obj   fyne.CanvasObject
	check *widget.Check
	line  *widget.Label
}

func newServeView(ui *UI) *serveView {
	v := &serveView{line: widget.NewLabel("")}
	v.line.Wrapping = fyne.TextWrapWord
	v.check = widget.NewCheck(serveCheckLabel, nil)
	v.check.SetChecked(ui.settings.Serve)
	v.check.OnChanged = func(on bool) {
		if on == ui.settings.Serve {
			return
		}
		ui.settings.Serve = on
		ui.SaveSettings()
		ui.Serving.Set(on, ui.settings.ServeListen)
	}
	v.show(ui.Serving.State())
	v.obj = container.NewVBox(v.check, v.line)
	return v
}

// show puts the service's state on the line.
func (v *serveView) show(st ServeState) { v.line.SetText(serveLine(st)) }

// serveLine says where the server stands, with the addresses a client
// needs while it serves.
func serveLine(st ServeState) string {
	url := "http://" + st.Addr
	switch st.Phase {
	case ServeStopping:
		return "Stopping: requests in flight are finishing."
	case ServeWaiting:
		return "Waiting for the model to load (it loads at start, after a download, or at the next Speak)."
	case ServeStarting:
		return "Starting on " + url + ": warming up the model."
	case ServeServing:
		return "Serving on " + url + " — OpenAI base_url " + url + "/v1"
	case ServeFailed:
		return "Not serving: " + st.Err.Error()
	}
	return "Off: other programs cannot use the model."
}
