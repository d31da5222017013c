package zonos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/weights"
	"zonostream/internal/golden"
)

func tinyConfig(t *testing.T) map[string]any {
	data, err := os.ReadFile(filepath.Join(golden.Pack(t, "zonos-hybrid-tiny"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConfigRejects(t *testing.T) {
	cases := []struct {
		name string
		mod  func(m map[string]any)
		want string
	}{
		{"ssm layer", func(m map[string]any) { m["backbone"].(map[string]any)["ssm_cfg"] = map[string]any{"layer": "Mamba3"} }, "Mamba3"},
		{"conditioner type", func(m map[string]any) {
			cs := m["prefix_conditioner"].(map[string]any)["conditioners"].([]any)
			cs[2].(map[string]any)["type"] = "MysteryConditioner"
		}, "MysteryConditioner"},
		{"heads", func(m map[string]any) {
			m["backbone"].(map[string]any)["attn_cfg"].(map[string]any)["num_heads_kv"] = 3
		}, "kv heads"},
		{"layer index", func(m map[string]any) { m["backbone"].(map[string]any)["attn_layer_idx"] = []any{0, 99} }, "99"},
		{"projection", func(m map[string]any) { m["prefix_conditioner"].(map[string]any)["projection"] = "mlp2" }, "mlp2"},
		{"not json", nil, "JSON"},
	}
	for _, c := range cases {
		var data []byte
		if c.mod != nil {
			m := tinyConfig(t)
			c.mod(m)
			data, _ = json.Marshal(m)
		} else {
			data = []byte("{not json")
		}
		_, err := ParseConfig(data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

// TestWrongWeights: a checkpoint whose shapes do not match the config is
// refused with one error listing every problem.
func TestWrongWeights(t *testing.T) {
	dir := golden.Pack(t, "zonos-hybrid-tiny")
	f, err := weights.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []*weights.Tensor
	for _, n := range f.Names() {
		tt, _ := f.Tensor(n)
		switch n {
		case "backbone.layers.1.mixer.A_log": // drop
			continue
		case "backbone.norm_f.weight": // wrong shape
			tt = &weights.Tensor{Name: n, DType: tt.DType, Shape: []int{128}, Data: tt.Data[:256]}
		}
		ts = append(ts, tt)
	}
	ts = append(ts, &weights.Tensor{Name: "surprise.weight", DType: weights.F32, Shape: []int{1}, Data: make([]byte, 4)})
	p := filepath.Join(t.TempDir(), "model.safetensors")
	if err := weights.Write(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	_, err = Load(cpu.New(1), filepath.Join(dir, "config.json"), p)
	if err == nil {
		t.Fatal("mismatched checkpoint loaded")
	}
	for _, want := range []string{"missing backbone.layers.1.mixer.A_log", "backbone.norm_f.weight has shape [128]", "unexpected surprise.weight", "3 problems"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestTruncatedWeights(t *testing.T) {
	dir := golden.Pack(t, "zonos-hybrid-tiny")
	data, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "model.safetensors")
	os.WriteFile(p, data[:len(data)/2], 0o644)
	if _, err := Load(cpu.New(1), filepath.Join(dir, "config.json"), p); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("truncated checkpoint: %v", err)
	}
}

func loadTiny(t *testing.T) *Model { return loadTinyVariant(t, "hybrid") }

// loadTinyVariant loads the golden tiny model of a backbone variant
// ("hybrid" or "transformer") on the CPU backend.
func loadTinyVariant(t *testing.T, variant string) *Model {
	t.Helper()
	dir := golden.Pack(t, "zonos-"+variant+"-tiny")
	m, err := Load(cpu.New(0), filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConditioningInput: empty phonemes and invalid integer inputs are
// errors; Fourier inputs out of range are clamped and reported.
func TestConditioningInput(t *testing.T) {
	m := loadTiny(t)
	if _, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 3}}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty phonemes: %v", err)
	}
	if _, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 500, 3}}); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("phoneme id out of table: %v", err)
	}
	ids := []int32{2, 50, 51, 3}
	if _, _, err := m.Prefix(Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {500}}}); err == nil || !strings.Contains(err.Error(), "language_id") {
		t.Errorf("language id out of range: %v", err)
	}
	if _, _, err := m.Prefix(Inputs{PhonemeIDs: ids, Values: map[string][]float32{"bogus": {1}}}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown conditioner: %v", err)
	}
	_, notes, err := m.Prefix(Inputs{PhonemeIDs: ids, Values: map[string][]float32{"pitch_std": {1000}}})
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "clamped to 400") {
		t.Errorf("pitch_std 1000: notes %v err %v", notes, err)
	}
	clamped, _, _ := m.Prefix(Inputs{PhonemeIDs: ids, Values: map[string][]float32{"pitch_std": {1000}}})
	atMax, _, _ := m.Prefix(Inputs{PhonemeIDs: ids, Values: map[string][]float32{"pitch_std": {400}}})
	a, b := m.b.ReadF32(clamped), m.b.ReadF32(atMax)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("clamped prefix differs from the prefix at the range maximum")
		}
	}
}

func TestGenerateOptionsRejects(t *testing.T) {
	for _, o := range []GenerateOptions{
		{MaxNewTokens: 0, CFGScale: 2},
		{MaxNewTokens: MaxFrames + 1, CFGScale: 2},
		{MaxNewTokens: 10, CFGScale: 1},
		{MaxNewTokens: 10, CFGScale: 2, AudioPrefix: [][NumCodebooks]int32{{1024}}},
	} {
		o.Sampling.RepetitionPenalty = 1
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
