// Package dac is the Descript Audio Codec as Zonos uses it
// (descript/dac_44khz through transformers' DacModel): the codebook lookup
// and decoder that turn Zonos' 9-codebook frames into 44.1 kHz audio, the
// encoder with residual vector quantization that turns a clip into codes
// (Zonos' audio prefix), and Streamer, which decodes frames as they arrive
// and commits exactly the samples one-shot decoding would produce.
//
// The model is written against compute.Backend only. Weights are folded to
// plain float32 convolutions at load, whichever of the three checkpoint
// forms they are stored in.
package dac

import (
	"fmt"
	"math"
	"path/filepath"

	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// Model is a loaded DAC: encoder, quantizer codebooks and decoder on one
// backend. It is not safe for concurrent use (a backend has one owning
// goroutine); a Streamer uses its Model exclusively while it runs.
type Model struct {
	cfg       Config
	be        compute.Backend
	encoder   Encoder
	codebooks []codebook
	outAll    conv // every codebook's out_proj as one convolution (fromCodes)
	decoder   Decoder
	field     Field
	graphs    pushGraphs // recorded first pushes and the push lock (pushgraph.go)
}

// Load reads dir/config.json and dir/model.safetensors (the layout of the
// descript/dac_44khz hub snapshot and of the dac-* golden packs).
func Load(dir string, be compute.Backend) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	f, err := weights.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("dac weights: %w", err)
	}
	defer f.Close()
	return New(cfg, f, be)
}

// New builds a model of configuration cfg from the tensors of src (which
// may be closed afterwards: everything is copied to the backend). Every
// missing, unexpected or mis-shaped tensor is listed in one error.
func New(cfg Config, src Source, be compute.Backend) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := newBinder(src, be)
	m := &Model{cfg: cfg, be: be}
	m.encoder = b.bindEncoder(cfg)
	m.codebooks, m.outAll = b.bindCodebooks(cfg)
	m.decoder = b.bindDecoder(cfg)
	if err := b.err(); err != nil {
		return nil, err
	}
	m.field = m.decoder.field(cfg.HopLength)
	return m, nil
}

// Config is the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Field is the decoder's receptive field, derived from its layers.
func (m *Model) Field() Field { return m.field }

// ValidateCodes checks codes laid out [n_codebooks][frames] as Zonos and
// transformers hold them ([1, 9, T] without the batch): the codebook count,
// equal non-zero lengths, and every code inside 0..codebook_size−1. Zonos'
// generator maps its special tokens (EOS 1024, MASK 1025) to 0 before
// vocoding; they are rejected here rather than silently remapped.
func (m *Model) ValidateCodes(codes [][]int32) error {
	if len(codes) != m.cfg.NCodebooks {
		return fmt.Errorf("dac codes: %d codebooks, this DAC has %d", len(codes), m.cfg.NCodebooks)
	}
	T := len(codes[0])
	if T == 0 {
		return fmt.Errorf("dac codes: zero frames; decode at least one frame")
	}
	for k, row := range codes {
		if len(row) != T {
			return fmt.Errorf("dac codes: codebook %d has %d frames, codebook 0 has %d", k, len(row), T)
		}
		for t, c := range row {
			if c < 0 || int(c) >= m.cfg.CodebookSize {
				return fmt.Errorf("dac codes: codebook %d frame %d holds %d, outside 0..%d (map Zonos' EOS/MASK tokens to 0 before vocoding, as Zonos does)", k, t, c, m.cfg.CodebookSize-1)
			}
		}
	}
	return nil
}

// FromCodes is quantizer.from_codes: the latent [hidden][frames] (row-major,
// the [1, hidden, T] of the reference without the batch).
func (m *Model) FromCodes(codes [][]int32) ([]float32, error) {
	if err := m.ValidateCodes(codes); err != nil {
		return nil, err
	}
	l := m.fromCodes(codes)
	defer m.be.Free(l)
	return m.be.ReadF32(l), nil
}

// Decode is DacModel.decode(audio_codes=codes) in float32: frames·hop
// samples at the sampling rate, in [-1, 1] (the decoder ends in tanh).
func (m *Model) Decode(codes [][]int32) ([]float32, error) {
	if err := m.ValidateCodes(codes); err != nil {
		return nil, err
	}
	return m.decodeValid(codes), nil
}

func (m *Model) decodeValid(codes [][]int32) []float32 {
	// The ops go to the backend in one hand-off (compute.Runner); the
	// read waits outside it, so on the CUDA backend the owner thread is
	// free to launch decode steps while the window runs.
	var a compute.Tensor
	compute.Run(m.be, func() {
		l := m.fromCodes(codes)
		a = m.decoder.forward(m.be, l)
		m.be.Free(l)
	})
	defer m.be.Free(a)
	return m.be.ReadF32(a)
}

// Encoded is what Encode returns, each laid out like the reference tensors
// without the batch dimension.
type Encoded struct {
	Frames     int
	Codes      [][]int32 // [n_codebooks][Frames]: encode().audio_codes
	EncoderOut []float32 // [hidden][Frames]: encoder(audio)
	Quantized  []float32 // [hidden][Frames]: encode().quantized_representation
}

// maxEncodeSamples bounds Encode's input (10 minutes at 44.1 kHz) so a
// hostile clip cannot exhaust memory; Zonos' audio prefixes are seconds.
const maxEncodeSamples = 600 * 44100

// Encode is DacModel.encode on mono audio at the model's sampling rate. The
// audio is right-padded with zeros to a multiple of the hop first, as Zonos'
// DACAutoencoder.preprocess does (zonos/autoencoder.py).
func (m *Model) Encode(audio []float32) (*Encoded, error) {
	if len(audio) == 0 {
		return nil, fmt.Errorf("dac encode: empty audio; pass at least one sample at %d Hz", m.cfg.SamplingRate)
	}
	if len(audio) > maxEncodeSamples {
		return nil, fmt.Errorf("dac encode: %d samples exceed the %d-sample limit; trim the clip", len(audio), maxEncodeSamples)
	}
	for i, v := range audio {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("dac encode: sample %d is %v; the clip must be finite", i, v)
		}
	}
	hop := m.cfg.HopLength
	n := (len(audio) + hop - 1) / hop * hop
	padded := make([]float32, n)
	copy(padded, audio)
	be := m.be
	x := be.FromF32(padded, 1, 1, n)
	z := m.encoder.forward(be, x)
	be.Free(x)
	codes, q := m.quantize(z)
	e := &Encoded{Frames: n / hop, Codes: codes, EncoderOut: be.ReadF32(z), Quantized: be.ReadF32(q)}
	be.Free(z)
	be.Free(q)
	return e, nil
}

func sqrt64(x float64) float64 { return math.Sqrt(x) }
