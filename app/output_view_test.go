package app

import (
	"os"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"

	"zonostream/audio"
)

// TestOutputPicker: the Compose tab lists the sound outputs, switching
// opens the chosen one (between utterances), the speaker plays through it
// and the choice is remembered; a device that fails to open keeps the
// previous choice and says why.
func TestOutputPicker(t *testing.T) {
	a := test.NewTempApp(t)
	var mu sync.Mutex
	var opened []string
	cfg := Config{Models: newTinyModels(t), NullMicrophone: true, OutputErr: os.ErrNotExist,
		Devices: func() ([]audio.Device, error) {
			return []audio.Device{{ID: "a", Name: "Speakers A", Default: true}, {ID: "b", Name: "Headphones B"}, {ID: "broken", Name: "Broken C"}}, nil
		},
		OpenOutput: func(id string) (Output, error) {
			mu.Lock()
			opened = append(opened, id)
			mu.Unlock()
			if id == "broken" {
				return nil, os.ErrPermission
			}
			o, err := OpenOutput("", true)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { o.Close() })
			return o, nil
		},
	}
	ui := New(a, cfg)
	sel := ui.compose.output
	if sel == nil {
		t.Fatal("no output picker")
	}
	if got := sel.Options; len(got) != 4 || got[0] != systemDefault || got[2] != "Headphones B" {
		t.Fatalf("options %v", got)
	}
	sel.SetSelected("Headphones B")
	if ui.Speaker.Output() == nil || ui.Settings().OutputDevice != "b" {
		t.Fatalf("after choosing B: output %v, saved %q", ui.Speaker.Output(), ui.Settings().OutputDevice)
	}
	sel.SetSelected("Broken C")
	if ui.Settings().OutputDevice != "b" || sel.Selected != "Headphones B" {
		t.Fatalf("after a failing device: saved %q, shown %q", ui.Settings().OutputDevice, sel.Selected)
	}
	sel.SetSelected(systemDefault)
	if ui.Settings().OutputDevice != "" {
		t.Fatalf("system default saved as %q", ui.Settings().OutputDevice)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(opened) != 3 || opened[0] != "b" || opened[1] != "broken" || opened[2] != "" {
		t.Fatalf("opened %q", opened)
	}
	if again := LoadSettings(a.Preferences()).OutputDevice; again != "" {
		t.Fatalf("remembered %q", again)
	}
}
