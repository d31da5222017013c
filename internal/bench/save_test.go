package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/weights"
	"zonostream/engine/zonos"
	"zonostream/internal/randmodel"
)

// TestSaveModel: the bundle SaveModel writes (the tiny shapes, 2 of the
// 5 layers) is what the bench builds, tensor for tensor; engine.Load reads
// it from the two directories and it speaks; a directory that holds a
// model or anything else is refused.
func TestSaveModel(t *testing.T) {
	zc, dc := tinyConfigs(t)
	o := Options{Variant: zonos.Hybrid, Seed: 3, Model: zc, DAC: &dc, Layers: 2}
	dir := filepath.Join(t.TempDir(), "bundle")
	var phases []string
	if err := SaveModel(context.Background(), dir, o, func(s string) { phases = append(phases, s) }); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(phases, "\n")
	for _, want := range []string{"with 2 of its 5 layers", "seed 3", filepath.Join(dir, "zonos", "model.safetensors"), filepath.Join(dir, "dac", "model.safetensors")} {
		if !strings.Contains(all, want) {
			t.Errorf("progress lacks %q:\n%s", want, all)
		}
	}
	es, _ := os.ReadDir(filepath.Join(dir, "zonos"))
	if len(es) != 2 {
		t.Errorf("zonos directory holds %d entries, want config.json and model.safetensors only", len(es))
	}

	cfg, err := zonos.LoadConfig(filepath.Join(dir, "zonos", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backbone.NLayer != 2 || len(cfg.Backbone.AttnLayerIdx) != 1 {
		t.Errorf("saved config: %d layers, attention at %v; want 2 layers, attention at [0]", cfg.Backbone.NLayer, cfg.Backbone.AttnLayerIdx)
	}
	want, err := randmodel.Zonos(cfg, o.Seed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := weights.Open(filepath.Join(dir, "zonos", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if len(got.Names()) != len(want.Names()) {
		t.Errorf("%d tensors saved, the bench builds %d", len(got.Names()), len(want.Names()))
	}
	for _, n := range want.Names() {
		a, _ := want.Tensor(n)
		b, err := got.Tensor(n)
		if err != nil || b.DType != weights.BF16 || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("tensor %s differs from the bench's (err %v)", n, err)
		}
	}

	e, err := engine.Load(cpu.New(0), engine.PathsFromDirs(filepath.Join(dir, "zonos"), filepath.Join(dir, "dac")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Synthesize(context.Background(), engine.Request{Text: "Hello there.", Language: "en-us", Knobs: engine.DefaultKnobs(), Seed: 7, FixedFrames: 12})
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	for ev := range s.Events() {
		if ev.Kind == engine.Audio {
			pcm = append(pcm, ev.PCM...)
		}
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	var energy float64
	for _, x := range pcm {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatal("non-finite sample")
		}
		energy += float64(x) * float64(x)
	}
	if len(pcm) == 0 || energy == 0 {
		t.Fatalf("the saved model spoke %d samples of energy %g", len(pcm), energy)
	}

	if err := SaveModel(context.Background(), dir, o, nil); err == nil || !strings.Contains(err.Error(), "already holds a model") {
		t.Errorf("saving over a model: %v", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if err := SaveModel(context.Background(), other, o, nil); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("saving into a directory with a file: %v", err)
	}
}

// TestSaveModelStops: a save stopped by its context leaves nothing behind,
// not even the directory it made.
func TestSaveModelStops(t *testing.T) {
	zc, dc := tinyConfigs(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "bundle")
	err := SaveModel(ctx, dir, Options{Variant: zonos.Hybrid, Seed: 1, Model: zc, DAC: &dc}, nil)
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("a stopped save: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		es, _ := os.ReadDir(dir)
		t.Errorf("a stopped save left %s behind (%d entries)", dir, len(es))
	}
}
