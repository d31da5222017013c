package audio

import (
	"fmt"
	"strings"

	"github.com/gen2brain/malgo"
)

// Device is an output device as the CLI (`zonos say --device`) and the GUI
// list it.
type Device struct {
	// Name is the system's name for the device, e.g. "Built-in Audio
	// Analog Stereo".
	Name string
	// ID is miniaudio's device identifier as hex; stable for a device
	// within a backend, so it is the safest way to pick one.
	ID string
	// Default is set on the system's default output.
	Default bool

	id malgo.DeviceID
}

// ListDevices returns the playback devices miniaudio finds, with the
// system's default first. null lists the null backend's single device.
func ListDevices(null bool) ([]Device, error) {
	c, err := newAudioContext(null)
	if err != nil {
		return nil, err
	}
	defer c.close()
	return c.devices()
}

func (c *audioContext) devices() ([]Device, error) {
	infos, err := c.ctx.Devices(malgo.Playback)
	if err != nil {
		return nil, fmt.Errorf("audio: listing output devices: %w%s", err, c.log.last())
	}
	var ds []Device
	for _, in := range infos {
		d := Device{Name: in.Name(), ID: in.ID.String(), Default: in.IsDefault != 0, id: in.ID}
		if d.Default {
			ds = append([]Device{d}, ds...)
		} else {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// findDevice resolves a user's device choice: an exact ID, an exact name,
// or a case-insensitive part of exactly one name.
func findDevice(ds []Device, query string) (Device, error) {
	for _, d := range ds {
		if d.ID == query {
			return d, nil
		}
	}
	for _, d := range ds {
		if d.Name == query {
			return d, nil
		}
	}
	var hits []Device
	for _, d := range ds {
		if strings.Contains(strings.ToLower(d.Name), strings.ToLower(query)) {
			hits = append(hits, d)
		}
	}
	if len(hits) == 1 {
		return hits[0], nil
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = fmt.Sprintf("%q (id %s)", d.Name, d.ID)
	}
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	if len(hits) > 1 {
		return Device{}, fmt.Errorf("audio: device %q matches %d devices; give more of the name or the id; devices: %s", query, len(hits), list)
	}
	return Device{}, fmt.Errorf("audio: no output device matches %q; devices: %s", query, list)
}
