package zonos

import (
	"path/filepath"
	"slices"
	"testing"

	"zonostream/internal/golden"
)

// TestTensorShapesMatchGolden: TensorShapes of each tiny pack's config
// lists exactly the tensors of its model.safetensors, each at its shape
// and once, and the pack binds.
func TestTensorShapesMatchGolden(t *testing.T) {
	for _, v := range []string{"hybrid", "transformer"} {
		pack := "zonos-" + v + "-tiny"
		cfg, err := LoadConfig(filepath.Join(golden.Pack(t, pack), "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		f := golden.Open(t, pack, "model.safetensors")
		listed := map[string]bool{}
		for _, s := range TensorShapes(cfg) {
			if listed[s.Name] {
				t.Errorf("%s: %s listed twice", pack, s.Name)
			}
			listed[s.Name] = true
			got, err := f.Tensor(s.Name)
			if err != nil {
				t.Errorf("%s: TensorShapes lists %s %v, the pack has no such tensor", pack, s.Name, s.Shape)
				continue
			}
			if !slices.Equal(got.Shape, s.Shape) {
				t.Errorf("%s: %s is %v in the pack, TensorShapes says %v", pack, s.Name, got.Shape, s.Shape)
			}
		}
		for _, n := range f.Names() {
			if !listed[n] {
				t.Errorf("%s: the pack's %s is missing from TensorShapes", pack, n)
			}
		}
	}
}
