package app

import (
	"context"
	"time"

	"zonostream/audio"
	"zonostream/engine"
)

// Output is where speech is played: audio.Player in the app, its null
// backend in tests, nil when there is no output device (speech still goes
// to the history and can be saved).
type Output interface {
	Begin() Playback
	WriteAll(ctx context.Context, pcm []float32) error
	End()
	Cancel()
	Fill() (buffered, capacity int)
	Err() error
	Name() string
}

// Playback is one utterance as the output plays it (audio.Utterance).
type Playback interface {
	FirstSound() (time.Time, bool)
	Underruns() int64
	Played() int64
	Done() bool
}

// PlayerOutput adapts an audio.Player.
type PlayerOutput struct{ P *audio.Player }

// OpenOutput opens the output device (null: the null backend).
func OpenOutput(device string, null bool) (*PlayerOutput, error) {
	p, err := audio.NewPlayer(audio.PlayerConfig{Device: device, Null: null})
	if err != nil {
		return nil, err
	}
	return &PlayerOutput{P: p}, nil
}

func (o *PlayerOutput) Begin() Playback { return o.P.BeginUtterance() }
func (o *PlayerOutput) WriteAll(ctx context.Context, pcm []float32) error {
	return o.P.WriteAll(ctx, pcm)
}
func (o *PlayerOutput) End()       { o.P.EndUtterance() }
func (o *PlayerOutput) Cancel()    { o.P.Cancel() }
func (o *PlayerOutput) Err() error { return o.P.Err() }
func (o *PlayerOutput) Name() string {
	return o.P.Device().Name
}
func (o *PlayerOutput) Fill() (int, int) {
	return o.P.Buffered(), int(o.P.Config().Buffer * engine.SampleRate / time.Second)
}

// Pause, Resume and Paused hold and release playback (audio.Player).
func (o *PlayerOutput) Pause()       { o.P.Pause() }
func (o *PlayerOutput) Resume()      { o.P.Resume() }
func (o *PlayerOutput) Paused() bool { return o.P.Paused() }

// Close releases the device.
func (o *PlayerOutput) Close() error { return o.P.Close() }
