// Package zonos is the Zonos TTS model (Zyphra, v0.1) written against
// engine/compute: the prefix conditioner, the two backbones (the mamba_ssm
// hybrid of Mamba2 and attention layers, and Zonos' pure-torch
// transformer), the codebook embeddings and heads with classifier-free
// guidance, the delay pattern and the generate loop. Numbers and
// conventions come from the reference (Zyphra/Zonos bc40d98) and the golden
// packs (../shared/golden/README.md).
//
// How a decode step runs depends on what the backend offers: on a plain
// compute.Backend (the CPU) the logits come to the host and engine/sample
// draws the tokens; with compute.SamplerOps guidance and sampling stay on
// the device; with compute.GraphOps the whole step is recorded once per
// inference State as a device graph and replayed (stepgraph.go), and
// States are pooled per model so later utterances replay it too
// (states.go). A single utterance's graph ends with device-side token
// feedback (GraphOps.FeedAt: the next step's input written from the
// sampled tokens under EOSRule), so Generate queues step s+1 before it
// reads step s's tokens wherever the column is all unknown. Generate and
// Decoder choose; the results are token-identical (gpu
// TestStepGraphMatchesEager).
package zonos

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Config is config.json of a Zonos checkpoint (ZonosConfig.from_dict).
type Config struct {
	Backbone           BackboneConfig `json:"backbone"`
	PrefixConditioner  PrefixConfig   `json:"prefix_conditioner"`
	EOSTokenID         int            `json:"eos_token_id"`
	MaskedTokenID      int            `json:"masked_token_id"`
	PadVocabToMultiple int            `json:"pad_vocab_to_multiple_of"`
}

// BackboneConfig mirrors zonos.config.BackboneConfig.
type BackboneConfig struct {
	DModel              int            `json:"d_model"`
	DIntermediate       int            `json:"d_intermediate"`
	AttnMLPDIntermediat int            `json:"attn_mlp_d_intermediate"`
	NLayer              int            `json:"n_layer"`
	SSMCfg              map[string]any `json:"ssm_cfg"`
	AttnLayerIdx        []int          `json:"attn_layer_idx"`
	AttnCfg             AttnConfig     `json:"attn_cfg"`
	RMSNorm             bool           `json:"rms_norm"`
	ResidualInFP32      bool           `json:"residual_in_fp32"`
	NormEpsilon         float64        `json:"norm_epsilon"`
}

// AttnConfig is the attention part of the backbone config.
type AttnConfig struct {
	Causal       *bool `json:"causal"`
	NumHeads     int   `json:"num_heads"`
	NumHeadsKV   int   `json:"num_heads_kv"`
	RotaryEmbDim int   `json:"rotary_emb_dim"`
	QKVProjBias  bool  `json:"qkv_proj_bias"`
	OutProjBias  bool  `json:"out_proj_bias"`
}

// PrefixConfig is the prefix conditioner: conditioners in sequence order and
// the projection applied to their concatenation.
type PrefixConfig struct {
	Conditioners []ConditionerConfig `json:"conditioners"`
	Projection   string              `json:"projection"`
}

// ConditionerConfig is one entry of prefix_conditioner.conditioners.
type ConditionerConfig struct {
	Type       string   `json:"type"`
	Name       string   `json:"name"`
	CondDim    int      `json:"cond_dim"`
	UncondType string   `json:"uncond_type"`
	Projection string   `json:"projection"`
	InputDim   int      `json:"input_dim"`
	MinVal     *float64 `json:"min_val"`
	MaxVal     *float64 `json:"max_val"`
}

// Variant says which backbone a config selects. Zonos routes configs without
// ssm_cfg to its pure-torch transformer backbone, others to mamba_ssm.
type Variant string

const (
	Hybrid      Variant = "hybrid"
	Transformer Variant = "transformer"
)

// Variant of this config.
func (c *Config) Variant() Variant {
	if len(c.Backbone.SSMCfg) == 0 {
		return Transformer
	}
	return Hybrid
}

// IsAttention reports whether layer i is an attention layer.
func (c *Config) IsAttention(i int) bool {
	if c.Variant() == Transformer {
		return true
	}
	for _, j := range c.Backbone.AttnLayerIdx {
		if j == i {
			return true
		}
	}
	return false
}

// LoadConfig reads and validates a config.json.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("zonos config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("zonos config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes and validates config JSON, applying the reference's
// defaults for absent fields.
func ParseConfig(data []byte) (*Config, error) {
	c := &Config{
		EOSTokenID: 1024, MaskedTokenID: 1025, PadVocabToMultiple: 8,
		Backbone: BackboneConfig{DModel: 1024, NLayer: 16, NormEpsilon: 1e-5},
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	b := c.Backbone
	switch {
	case b.DModel <= 0 || b.DModel > 1<<16:
		return fmt.Errorf("backbone.d_model %d out of range", b.DModel)
	case b.NLayer <= 0 || b.NLayer > 1024:
		return fmt.Errorf("backbone.n_layer %d out of range", b.NLayer)
	case b.RMSNorm:
		return fmt.Errorf("backbone.rms_norm true is not supported (Zonos uses LayerNorm)")
	case b.AttnCfg.QKVProjBias || b.AttnCfg.OutProjBias:
		return fmt.Errorf("attention projection biases are not supported (Zonos has none)")
	case b.NormEpsilon <= 0:
		return fmt.Errorf("backbone.norm_epsilon %g must be > 0", b.NormEpsilon)
	}
	if c.EOSTokenID != 1024 || c.MaskedTokenID != 1025 {
		return fmt.Errorf("eos/masked token ids %d/%d: only Zonos' 1024/1025 are supported", c.EOSTokenID, c.MaskedTokenID)
	}
	if len(b.SSMCfg) > 0 {
		if l, _ := b.SSMCfg["layer"].(string); l != "Mamba2" {
			return fmt.Errorf("backbone.ssm_cfg.layer %v: only Mamba2 is supported", b.SSMCfg["layer"])
		}
		for k := range b.SSMCfg {
			if k != "layer" {
				return fmt.Errorf("backbone.ssm_cfg.%s: only the Mamba2 library defaults are supported", k)
			}
		}
		for _, i := range b.AttnLayerIdx {
			if i < 0 || i >= b.NLayer {
				return fmt.Errorf("backbone.attn_layer_idx %d outside [0, %d)", i, b.NLayer)
			}
		}
		if b.DIntermediate < 0 || b.DIntermediate > 1<<18 {
			return fmt.Errorf("backbone.d_intermediate %d out of range", b.DIntermediate)
		}
	}
	hasAttn := c.Variant() == Transformer || len(b.AttnLayerIdx) > 0
	if hasAttn {
		a := b.AttnCfg
		if a.NumHeads <= 0 || a.NumHeadsKV <= 0 || a.NumHeads%a.NumHeadsKV != 0 || b.DModel%a.NumHeads != 0 {
			return fmt.Errorf("attn_cfg heads %d / kv heads %d do not divide d_model %d", a.NumHeads, a.NumHeadsKV, b.DModel)
		}
		hd := b.DModel / a.NumHeads
		if c.Variant() == Hybrid && (a.RotaryEmbDim < 0 || a.RotaryEmbDim > hd || a.RotaryEmbDim%2 != 0) {
			return fmt.Errorf("attn_cfg.rotary_emb_dim %d must be even and ≤ head_dim %d", a.RotaryEmbDim, hd)
		}
		if hd%2 != 0 {
			return fmt.Errorf("head_dim %d must be even for rotary embedding", hd)
		}
		if a.Causal != nil && !*a.Causal {
			return fmt.Errorf("attn_cfg.causal false is not supported")
		}
		if b.AttnMLPDIntermediat < 0 || b.AttnMLPDIntermediat > 1<<18 {
			return fmt.Errorf("backbone.attn_mlp_d_intermediate %d out of range", b.AttnMLPDIntermediat)
		}
	}
	p := c.PrefixConditioner
	if p.Projection != "linear" && p.Projection != "none" {
		return fmt.Errorf("prefix_conditioner.projection %q: want \"linear\" or \"none\"", p.Projection)
	}
	seen := map[string]bool{}
	espeak := false
	for i, cc := range p.Conditioners {
		where := fmt.Sprintf("prefix_conditioner.conditioners[%d] (%s)", i, cc.Name)
		if cc.Name == "" || seen[cc.Name] {
			return fmt.Errorf("%s: missing or duplicate name", where)
		}
		seen[cc.Name] = true
		switch cc.Type {
		case "EspeakPhonemeConditioner":
			espeak = true
		case "PassthroughConditioner", "FourierConditioner", "IntegerConditioner":
		default:
			return fmt.Errorf("%s: unknown conditioner type %q (want EspeakPhonemeConditioner, PassthroughConditioner, FourierConditioner or IntegerConditioner)", where, cc.Type)
		}
		if cc.Projection != "" && cc.Projection != "none" && cc.Projection != "linear" {
			return fmt.Errorf("%s: projection %q not supported", where, cc.Projection)
		}
		if cc.UncondType != "" && cc.UncondType != "none" && cc.UncondType != "learned" {
			return fmt.Errorf("%s: uncond_type %q not supported", where, cc.UncondType)
		}
		if cc.Type == "FourierConditioner" && b.DModel%2 != 0 {
			return fmt.Errorf("%s: Fourier features need an even d_model", where)
		}
		if lo, hi := cc.bounds(); hi <= lo {
			return fmt.Errorf("%s: max_val %g must exceed min_val %g", where, hi, lo)
		}
	}
	if !espeak {
		return fmt.Errorf("prefix_conditioner has no EspeakPhonemeConditioner")
	}
	return nil
}

// bounds returns the conditioner's [min_val, max_val] with the reference
// defaults (Fourier 0..1, Integer 0..512).
func (cc ConditionerConfig) bounds() (lo, hi float64) {
	lo, hi = 0, 1
	if cc.Type == "IntegerConditioner" {
		hi = 512
	}
	if cc.MinVal != nil {
		lo = *cc.MinVal
	}
	if cc.MaxVal != nil {
		hi = *cc.MaxVal
	}
	return lo, hi
}

// inputDim is the conditioner's input width (Fourier default 1).
func (cc ConditionerConfig) inputDim() int {
	if cc.InputDim > 0 {
		return cc.InputDim
	}
	return 1
}

// realConditioners is the prefix conditioner list of both Zyphra
// checkpoints (the golden tiny packs copy it).
const realConditioners = `[
 {"type": "EspeakPhonemeConditioner", "name": "espeak"},
 {"cond_dim": 128, "uncond_type": "learned", "projection": "linear", "type": "PassthroughConditioner", "name": "speaker"},
 {"input_dim": 8, "uncond_type": "learned", "type": "FourierConditioner", "name": "emotion"},
 {"min_val": 0, "max_val": 24000, "uncond_type": "learned", "type": "FourierConditioner", "name": "fmax"},
 {"min_val": 0, "max_val": 400, "uncond_type": "learned", "type": "FourierConditioner", "name": "pitch_std"},
 {"min_val": 0, "max_val": 40, "uncond_type": "learned", "type": "FourierConditioner", "name": "speaking_rate"},
 {"min_val": -1, "max_val": 126, "uncond_type": "learned", "type": "IntegerConditioner", "name": "language_id"},
 {"input_dim": 8, "min_val": 0.5, "max_val": 0.8, "uncond_type": "learned", "type": "FourierConditioner", "name": "vqscore_8"},
 {"min_val": -1.0, "max_val": 1000, "uncond_type": "learned", "type": "FourierConditioner", "name": "ctc_loss"},
 {"min_val": 1, "max_val": 5, "uncond_type": "learned", "type": "FourierConditioner", "name": "dnsmos_ovrl"},
 {"min_val": 0, "max_val": 1, "uncond_type": "learned", "type": "IntegerConditioner", "name": "speaker_noised"}]`

// RealConfig returns the configuration of Zyphra's released checkpoints
// (Zonos-v0.1-hybrid: 46 layers, attention at every 4th; -transformer: 26
// attention layers), for benchmarks on randomly initialised models of the
// real shapes.
func RealConfig(v Variant) *Config {
	layers, attn, ssm := 46, "[0,4,8,12,16,20,24,28,32,36,40,44]", `{"layer": "Mamba2"}`
	if v == Transformer {
		idx := make([]string, 26)
		for i := range idx {
			idx[i] = fmt.Sprint(i)
		}
		layers, attn, ssm = 26, "["+strings.Join(idx, ",")+"]", "{}"
	}
	js := fmt.Sprintf(`{"backbone": {"d_model": 2048, "d_intermediate": 0, "attn_mlp_d_intermediate": 8192,
 "n_layer": %d, "ssm_cfg": %s, "attn_layer_idx": %s,
 "attn_cfg": {"causal": true, "num_heads": 16, "num_heads_kv": 4, "rotary_emb_dim": 128, "qkv_proj_bias": false, "out_proj_bias": false},
 "rms_norm": false, "residual_in_fp32": false, "norm_epsilon": 1e-05},
 "prefix_conditioner": {"conditioners": %s, "projection": "linear"},
 "eos_token_id": 1024, "masked_token_id": 1025, "pad_vocab_to_multiple_of": 8}`, layers, ssm, attn, realConditioners)
	c, err := ParseConfig([]byte(js))
	if err != nil {
		panic("zonos: built-in real config is invalid: " + err.Error())
	}
	return c
}

// ConfigJSON renders a config back to JSON.
func (c *Config) JSON() ([]byte, error) { return json.MarshalIndent(c, "", "  ") }
