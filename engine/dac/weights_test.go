package dac_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/engine/weights"
	"zonostream/internal/golden"
)

// mapSource is an in-memory Source.
type mapSource map[string]*weights.Tensor

func (m mapSource) Names() []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	return n
}

func (m mapSource) Tensor(name string) (*weights.Tensor, error) { return m[name], nil }

// weightNormed rewrites every conv weight of the tiny pack into a
// weight-normalised pair (g, v) with v = w·(random positive scale per
// dim-0 row), named by form ("old": weight_g/weight_v, "param":
// parametrizations.weight.original0/1).
func weightNormed(t *testing.T, f *weights.File, form string) mapSource {
	src := mapSource{}
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range f.Names() {
		tn, _ := f.Tensor(n)
		isConv := strings.HasSuffix(n, ".weight") && !strings.HasSuffix(n, "codebook.weight")
		if !isConv {
			src[n] = tn
			continue
		}
		w, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		rows := tn.Shape[0]
		per := len(w) / rows
		g := make([]float32, rows)
		v := make([]float32, len(w))
		for i := 0; i < rows; i++ {
			scale := 0.5 + 2*r.Float64()
			var ss float64
			for j := 0; j < per; j++ {
				v[i*per+j] = float32(float64(w[i*per+j]) * scale)
				ss += float64(w[i*per+j]) * float64(w[i*per+j])
			}
			g[i] = float32(math.Sqrt(ss))
		}
		gShape := []int{rows, 1, 1}
		base := strings.TrimSuffix(n, ".weight")
		gName, vName := base+".weight_g", base+".weight_v"
		if form == "param" {
			gName, vName = base+".parametrizations.weight.original0", base+".parametrizations.weight.original1"
		}
		src[gName] = weights.F32Tensor(gName, gShape, g)
		src[vName] = weights.F32Tensor(vName, tn.Shape, v)
	}
	return src
}

// TestWeightForms loads the tiny pack's weights in the three stored forms
// and checks that they decode the same audio (to fold rounding).
func TestWeightForms(t *testing.T) {
	dir := golden.Pack(t, "dac-tiny")
	f := golden.Open(t, "dac-tiny", "model.safetensors")
	cfg, err := dac.LoadConfig(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(0)
	plain, err := dac.New(cfg, f, be)
	if err != nil {
		t.Fatal(err)
	}
	codes := randomCodes(cfg, 12, 4)
	ref, _ := plain.Decode(codes)
	for _, form := range []string{"old", "param"} {
		m, err := dac.New(cfg, weightNormed(t, f, form), be)
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		got, _ := m.Decode(codes)
		var d float64
		for i := range ref {
			d = max(d, math.Abs(float64(got[i]-ref[i])))
		}
		t.Logf("%s form: max |Δ| %.3g against plain weights", form, d)
		if d > 1e-4 {
			t.Errorf("%s form decodes %.3g away from the plain weights", form, d)
		}
	}
}

// TestLoadErrorsListEverything removes, reshapes and adds tensors and
// checks that one error names all of them; a config that does not match the
// weights fails the same way.
func TestLoadErrorsListEverything(t *testing.T) {
	dir := golden.Pack(t, "dac-tiny")
	f := golden.Open(t, "dac-tiny", "model.safetensors")
	cfg, _ := dac.LoadConfig(dir + "/config.json")
	src := mapSource{}
	for _, n := range f.Names() {
		src[n], _ = f.Tensor(n)
	}
	delete(src, "decoder.conv1.bias")
	delete(src, "quantizer.quantizers.3.codebook.weight")
	src["decoder.snake1.alpha"] = weights.F32Tensor("decoder.snake1.alpha", []int{1, 5, 1}, make([]float32, 5))
	src["decoder.extra.weight"] = weights.F32Tensor("decoder.extra.weight", []int{1}, []float32{0})
	_, err := dac.New(cfg, src, cpu.New(0))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"missing decoder.conv1.bias", "missing quantizer.quantizers.3.codebook.weight",
		"decoder.snake1.alpha has shape [1 5 1], want [1 4 1]", "unexpected decoder.extra.weight"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	_, err = dac.New(dac.Dac44kHz(), f, cpu.New(0))
	if err == nil || !strings.Contains(err.Error(), "same DAC checkpoint") {
		t.Errorf("dac_44khz config with tiny weights: %v", err)
	} else {
		t.Logf("mismatched config: %.300s…", err)
	}
}

// TestParseConfig covers transformers' defaults and the explicit
// hidden_size rule.
func TestParseConfig(t *testing.T) {
	c, err := dac.LoadConfig(golden.Pack(t, "dac-tiny") + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.HiddenSize != 64 || c.HopLength != 512 || c.DecoderHiddenSize != 64 || c.EncoderHiddenSize != 16 {
		t.Errorf("tiny config %+v", c)
	}
	d, err := dac.ParseConfig([]byte(`{"encoder_hidden_size": 16, "downsampling_ratios": [2, 4, 8, 8]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.HiddenSize != 256 || d.UpsamplingRatios[0] != 8 || d.UpsamplingRatios[3] != 2 || d.SamplingRate != 16000 {
		t.Errorf("derived config %+v", d)
	}
	for _, bad := range []string{`{"hop_length": 320}`, `{"model_type": "encodec"}`, `{"upsampling_ratios": [8, 8, 4]}`,
		`{"downsampling_ratios": [3, 4, 8, 8]}`, `{"n_codebooks": 0}`, `not json`} {
		if _, err := dac.ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if got := dac.Dac44kHz().FLOPsPerFrame(); got < 1.5e9 || got > 1.7e9 {
		t.Errorf("dac_44khz decoder FLOPs per frame %.3g", got)
	}
}
