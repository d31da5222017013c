package speaker

import (
	"context"
	"path/filepath"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

func TestLoadTinyConfig(t *testing.T) {
	p := golden.Pack(t, "speaker-tiny")
	m, err := Load(filepath.Join(p, WeightsFile), filepath.Join(p, LDAFile), cpu.New(2))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := Config{InPlanes: 8, Blocks: [4]int{2, 2, 2, 1}, Widths: [4]int{8, 16, 32, 64}, PoolIn: 640, Embed: 256, LDA: 128}
	if m.Config != want {
		t.Errorf("config %+v, want %+v", m.Config, want)
	}
	if _, err := m.Embed(context.Background(), make([]float32, 16000)); err == nil {
		t.Error("silent clip: no error")
	}
	if _, err := m.Embed(context.Background(), []float32{0.5, -0.5}); err == nil {
		t.Error("2-sample clip: no error")
	}
}
