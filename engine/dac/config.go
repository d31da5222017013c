package dac

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is the Hugging Face DacConfig as stored in config.json next to the
// weights (descript/dac_44khz, or a golden pack). Only the fields that shape
// the network are kept; the loss weights and quantizer dropout are training
// knobs and are ignored.
type Config struct {
	EncoderHiddenSize  int   // channels after the encoder's first conv (64 in dac_44khz)
	DownsamplingRatios []int // encoder strides ([2, 4, 8, 8])
	UpsamplingRatios   []int // decoder strides ([8, 8, 4, 2])
	DecoderHiddenSize  int   // channels after the decoder's first conv (1536)
	HiddenSize         int   // latent channels between encoder, quantizer and decoder (1024)
	NCodebooks         int   // residual codebooks (9)
	CodebookSize       int   // entries per codebook (1024)
	CodebookDim        int   // entry dimension (8)
	SamplingRate       int   // Hz (44100)
	HopLength          int   // samples per frame = product of the ratios (512)
}

// Dac44kHz is descript/dac_44khz's configuration (its config.json on the
// hub): the decoder Zonos vocodes with.
func Dac44kHz() Config {
	return Config{
		EncoderHiddenSize:  64,
		DownsamplingRatios: []int{2, 4, 8, 8},
		UpsamplingRatios:   []int{8, 8, 4, 2},
		DecoderHiddenSize:  1536,
		HiddenSize:         1024,
		NCodebooks:         9,
		CodebookSize:       1024,
		CodebookDim:        8,
		SamplingRate:       44100,
		HopLength:          512,
	}
}

// rawConfig mirrors config.json; pointers tell "absent" from zero.
type rawConfig struct {
	EncoderHiddenSize  *int   `json:"encoder_hidden_size"`
	DownsamplingRatios []int  `json:"downsampling_ratios"`
	UpsamplingRatios   []int  `json:"upsampling_ratios"`
	DecoderHiddenSize  *int   `json:"decoder_hidden_size"`
	HiddenSize         *int   `json:"hidden_size"`
	NCodebooks         *int   `json:"n_codebooks"`
	CodebookSize       *int   `json:"codebook_size"`
	CodebookDim        *int   `json:"codebook_dim"`
	SamplingRate       *int   `json:"sampling_rate"`
	HopLength          *int   `json:"hop_length"`
	ModelType          string `json:"model_type"`
}

// maxConfigBytes bounds config.json before it is read (the real one is
// ~1 KB).
const maxConfigBytes = 1 << 20

// LoadConfig reads a DacConfig JSON file.
func LoadConfig(path string) (Config, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Config{}, fmt.Errorf("dac config: %w", err)
	}
	if st.Size() > maxConfigBytes {
		return Config{}, fmt.Errorf("dac config %s: %d bytes is not a DacConfig (limit %d)", path, st.Size(), maxConfigBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("dac config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("dac config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a DacConfig JSON document with transformers'
// semantics (configuration_dac.py): absent fields take DacConfig's defaults
// (the dac_16khz shapes: encoder 64, ratios [2, 4, 8, 8], decoder 1536, 9 ×
// 1024 × 8, 16 kHz), upsampling_ratios defaults to the reversed downsampling
// ratios, and hidden_size defaults to encoder_hidden_size·2^len(ratios) but
// an explicit hidden_size wins (transformers 5.17 applies the kwarg after
// __post_init__; the dac-tiny golden relies on it: 16·2⁴ = 256 derived, 64
// stored).
func ParseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("not a DacConfig JSON: %w", err)
	}
	if r.ModelType != "" && r.ModelType != "dac" {
		return Config{}, fmt.Errorf("model_type %q is not \"dac\"; point the loader at the DAC's config.json", r.ModelType)
	}
	c := Config{
		EncoderHiddenSize: 64, DecoderHiddenSize: 1536, NCodebooks: 9,
		CodebookSize: 1024, CodebookDim: 8, SamplingRate: 16000,
		DownsamplingRatios: []int{2, 4, 8, 8},
	}
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	set(&c.EncoderHiddenSize, r.EncoderHiddenSize)
	set(&c.DecoderHiddenSize, r.DecoderHiddenSize)
	set(&c.NCodebooks, r.NCodebooks)
	set(&c.CodebookSize, r.CodebookSize)
	set(&c.CodebookDim, r.CodebookDim)
	set(&c.SamplingRate, r.SamplingRate)
	if r.DownsamplingRatios != nil {
		c.DownsamplingRatios = append([]int(nil), r.DownsamplingRatios...)
	}
	if r.UpsamplingRatios != nil {
		c.UpsamplingRatios = append([]int(nil), r.UpsamplingRatios...)
	} else {
		for i := len(c.DownsamplingRatios) - 1; i >= 0; i-- {
			c.UpsamplingRatios = append(c.UpsamplingRatios, c.DownsamplingRatios[i])
		}
	}
	c.HiddenSize = c.EncoderHiddenSize << len(c.DownsamplingRatios)
	set(&c.HiddenSize, r.HiddenSize)
	c.HopLength = product(c.DownsamplingRatios)
	if r.HopLength != nil && *r.HopLength != c.HopLength {
		return Config{}, fmt.Errorf("hop_length %d disagrees with the product of downsampling_ratios %v (%d); fix config.json", *r.HopLength, c.DownsamplingRatios, c.HopLength)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func product(xs []int) int {
	p := 1
	for _, x := range xs {
		p *= x
	}
	return p
}

// maxDim bounds every size in a config so that products cannot overflow and
// a hostile file cannot ask for absurd allocations (dac_44khz's largest
// channel count is 1536).
const maxDim = 1 << 16

// Validate checks the sizes the network is built from.
func (c Config) Validate() error {
	pos := func(name string, v int) error {
		if v <= 0 || v > maxDim {
			return fmt.Errorf("dac config: %s = %d outside 1..%d", name, v, maxDim)
		}
		return nil
	}
	for _, f := range []struct {
		n string
		v int
	}{
		{"encoder_hidden_size", c.EncoderHiddenSize}, {"decoder_hidden_size", c.DecoderHiddenSize},
		{"hidden_size", c.HiddenSize}, {"n_codebooks", c.NCodebooks}, {"codebook_size", c.CodebookSize},
		{"codebook_dim", c.CodebookDim}, {"sampling_rate", c.SamplingRate},
	} {
		if err := pos(f.n, f.v); err != nil {
			return err
		}
	}
	if len(c.UpsamplingRatios) == 0 || len(c.UpsamplingRatios) > 8 || len(c.DownsamplingRatios) == 0 || len(c.DownsamplingRatios) > 8 {
		return fmt.Errorf("dac config: %d downsampling and %d upsampling ratios; want 1..8 each", len(c.DownsamplingRatios), len(c.UpsamplingRatios))
	}
	for _, r := range append(append([]int(nil), c.DownsamplingRatios...), c.UpsamplingRatios...) {
		if r < 2 || r > 64 || r%2 != 0 {
			// Odd strides make ConvTranspose1d(2s, s, ⌈s/2⌉) emit T·s−1
			// samples, which breaks the frame ↔ hop alignment the streamer
			// relies on; no released DAC uses them.
			return fmt.Errorf("dac config: stride %d unsupported; strides must be even, 2..64", r)
		}
	}
	if p := product(c.UpsamplingRatios); p != c.HopLength {
		return fmt.Errorf("dac config: upsampling_ratios %v give %d samples per frame but the encoder hop is %d; fix config.json", c.UpsamplingRatios, p, c.HopLength)
	}
	if c.DecoderHiddenSize>>len(c.UpsamplingRatios) == 0 {
		return fmt.Errorf("dac config: decoder_hidden_size %d cannot be halved %d times", c.DecoderHiddenSize, len(c.UpsamplingRatios))
	}
	return nil
}

// FrameRate is frames per second (86.13 for dac_44khz: 44100 / 512).
func (c Config) FrameRate() float64 { return float64(c.SamplingRate) / float64(c.HopLength) }

// hubConfig is config.json as transformers writes a DacConfig, with the
// fields descript/dac_44khz's holds (alphabetical, as save_pretrained
// sorts them).
type hubConfig struct {
	Architectures        []string `json:"architectures"`
	CodebookDim          int      `json:"codebook_dim"`
	CodebookLossWeight   float64  `json:"codebook_loss_weight"`
	CodebookSize         int      `json:"codebook_size"`
	CommitmentLossWeight float64  `json:"commitment_loss_weight"`
	DecoderHiddenSize    int      `json:"decoder_hidden_size"`
	DownsamplingRatios   []int    `json:"downsampling_ratios"`
	EncoderHiddenSize    int      `json:"encoder_hidden_size"`
	HiddenSize           int      `json:"hidden_size"`
	HopLength            int      `json:"hop_length"`
	ModelType            string   `json:"model_type"`
	NCodebooks           int      `json:"n_codebooks"`
	QuantizerDropout     float64  `json:"quantizer_dropout"`
	SamplingRate         int      `json:"sampling_rate"`
	TorchDtype           string   `json:"torch_dtype"`
	UpsamplingRatios     []int    `json:"upsampling_ratios"`
}

// JSON renders c as the config.json of a DAC checkpoint with float32
// weights, as Hugging Face's DacConfig writes it (the shapes, model_type
// "dac", and DacConfig's defaults for the training-only loss weights and
// dropout), which ParseConfig reads back to c. Random models written to
// disk (`zonos bench --save-model`) carry it so that every loader of the
// real checkpoint reads them.
func (c Config) JSON() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	h := hubConfig{
		Architectures: []string{"DacModel"}, CodebookDim: c.CodebookDim, CodebookLossWeight: 1, CodebookSize: c.CodebookSize,
		CommitmentLossWeight: 0.25, DecoderHiddenSize: c.DecoderHiddenSize, DownsamplingRatios: c.DownsamplingRatios,
		EncoderHiddenSize: c.EncoderHiddenSize, HiddenSize: c.HiddenSize, HopLength: c.HopLength, ModelType: "dac",
		NCodebooks: c.NCodebooks, SamplingRate: c.SamplingRate, TorchDtype: "float32", UpsamplingRatios: c.UpsamplingRatios,
	}
	return json.MarshalIndent(h, "", "  ")
}
