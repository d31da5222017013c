package app

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
	"zonostream/internal/golden"
)

// TestSpeakerEncoderTiny embeds a 44.1 kHz clip with the golden tiny
// speaker model (resampled to 16 kHz, checked, cached on disk).
func TestSpeakerEncoderTiny(t *testing.T) {
	dir := golden.Pack(t, "speaker-tiny")
	enc := &SpeakerEncoder{
		Backend: cpu.New(0),
		Files: func() (string, string, error) {
			return filepath.Join(dir, speaker.WeightsFile), filepath.Join(dir, speaker.LDAFile), nil
		},
		Cache: &speaker.Cache{Dir: t.TempDir()},
	}
	clip := make([]float32, 44100*2)
	for i := range clip {
		clip[i] = 0.3 * float32(math.Sin(2*math.Pi*220*float64(i)/44100))
	}
	if id := enc.ModelID(); id != "" {
		t.Fatalf("model hash %q before any model was loaded", id)
	}
	v, err := enc.Embed(context.Background(), clip, 44100)
	if err != nil {
		t.Fatal(err)
	}
	if id := enc.ModelID(); len(id) != 64 { // a saved voice records it
		t.Fatalf("model hash %q after embedding; want the SHA-256 of the two checkpoints", id)
	}
	if len(v) == 0 {
		t.Fatal("empty embedding")
	}
	again, err := enc.Embed(context.Background(), clip, 44100)
	if err != nil || len(again) != len(v) || again[0] != v[0] {
		t.Fatalf("second embedding differs: %v", err)
	}
	if _, err := enc.Embed(context.Background(), make([]float32, 44100), 44100); err == nil {
		t.Fatal("a silent clip was embedded")
	}
}

func TestSpeakerEncoderMissingFiles(t *testing.T) {
	enc := &SpeakerEncoder{Backend: cpu.New(0), Files: SpeakerFilesIn(func() weights.Cache { return weights.Cache{Dir: t.TempDir()} })}
	_, err := enc.Embed(context.Background(), make([]float32, 44100), 44100)
	if !errors.Is(err, ErrSpeakerModelMissing) {
		t.Fatalf("err %v", err)
	}
}
