package app

import (
	"fmt"

	"fyne.io/fyne/v2/widget"

	"zonostream/audio"
)

// systemDefault labels the system's default sound output in the picker.
const systemDefault = "System default"

// newOutputPicker lists the sound outputs and switches to the one chosen
// (between utterances), remembering it; nil when the configuration has no
// device access (tests, --null-audio).
func newOutputPicker(ui *UI) *widget.Select {
	cfg := ui.cfg
	if cfg.Devices == nil || cfg.OpenOutput == nil {
		return nil
	}
	var devices []audio.Device
	sel := widget.NewSelect(nil, nil)
	labels := func() []string {
		out := []string{systemDefault}
		for _, d := range devices {
			out = append(out, d.Name)
		}
		return out
	}
	current := func() string {
		for _, d := range devices {
			if d.ID == ui.settings.OutputDevice {
				return d.Name
			}
		}
		return systemDefault
	}
	refresh := func() {
		ds, err := cfg.Devices()
		if err != nil {
			ui.notify(fmt.Sprintf("listing sound outputs failed: %v", err))
		}
		devices = ds
		sel.SetOptions(labels())
		sel.SetSelected(current())
	}
	refresh()
	sel.OnChanged = func(name string) {
		id := ""
		for _, d := range devices {
			if d.Name == name {
				id = d.ID
			}
		}
		if id == ui.settings.OutputDevice {
			return
		}
		if ui.Speaker.Busy() {
			ui.notify("stop the current speech before changing the sound output")
			sel.SetSelected(current())
			return
		}
		out, err := cfg.OpenOutput(id)
		if err != nil {
			ui.notify(fmt.Sprintf("sound output %q: %v", name, err))
			sel.SetSelected(current())
			return
		}
		if err := ui.Speaker.SetOutput(out); err != nil {
			if c, ok := out.(interface{ Close() error }); ok {
				c.Close()
			}
			ui.notify(err.Error())
			sel.SetSelected(current())
			return
		}
		ui.settings.OutputDevice = id
		ui.SaveSettings()
	}
	return sel
}
