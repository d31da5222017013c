// Package app is the Zonos Stream desktop window (Fyne v2): compose text
// and a voice, turn Zonos' knobs, speak with audio starting while the
// model still generates, and watch the latency meters live.
//
// The logic lives in plain Go types that need no display (Settings,
// BuildRequest, Meters, Waveform, History, Speaker); the widgets only
// show them. Engine work runs on its own goroutines and reaches the UI
// through fyne.Do at a bounded rate (UIRate).
package app
