// Package engine is the public API of Zonos Stream that the app and the CLI
// use: load a model bundle on a backend, then Synthesize requests into
// Streams of events carrying committed PCM and live meters.
//
// Many utterances run at once on one Engine (a server's streams): their
// decode steps share the model through a zonos.Scheduler (continuous
// batching). An utterance that arrives while nothing else runs decodes
// alone, at the single utterance's latency; later ones join a batch
// between its steps and leave it the moment they end, each with its own
// knobs, seed and position. Capacity is how many decode at once; more
// wait their turn, first come, first served.
//
// Decoding and vocoding run apart: each utterance's frames go through a
// queue to the engine's vocoder pool (vocode.go, vocoderpool.go), one
// goroutine that vocodes the streams' queued frames in turns, several
// streams in one dac.PushMany, so a vocoder window never delays a decode
// step, and on a backend with a side lane
// (compute.Laned: the CUDA backend's second stream) the codec's kernels
// also run beside the decode steps on the device. Audio events therefore
// trail the FrameDone events they belong to; their PCM is unchanged. The
// one exception is the first emission on a laned backend: the decoder
// holds once, after the frame that completes it, until its audio is
// committed, so that it runs alone on the device (holdFirstEmission).
//
// A freshly loaded engine's first utterance would also pay one-time costs
// (espeak-ng loading its data; on the GPU recording the decode step and
// the allocator's first growth); Warmup pays them beforehand, and the app
// calls it while it still shows the model as loading.
package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/weights"
	"zonostream/engine/zonos"
)

// SampleRate of the PCM the engine produces.
const SampleRate = 44100

// Paths locate the files of a model bundle.
type Paths struct {
	ModelConfig, ModelWeights string // Zonos config.json, model.safetensors
	DACConfig, DACWeights     string // descript/dac_44khz config.json, model.safetensors
}

// PathsFromBundle takes the paths from a resolved Hugging Face bundle.
func PathsFromBundle(b *weights.Bundle) Paths {
	return Paths{ModelConfig: b.ModelConfig, ModelWeights: b.ModelWeights, DACConfig: b.DACConfig, DACWeights: b.DACWeights}
}

// PathsFromDirs takes config.json and model.safetensors from a Zonos
// directory and a DAC directory.
func PathsFromDirs(zonosDir, dacDir string) Paths {
	return Paths{
		ModelConfig:  filepath.Join(zonosDir, "config.json"),
		ModelWeights: filepath.Join(zonosDir, "model.safetensors"),
		DACConfig:    filepath.Join(dacDir, "config.json"),
		DACWeights:   filepath.Join(dacDir, "model.safetensors"),
	}
}

// Engine holds a loaded Zonos model and DAC codec on one backend.
type Engine struct {
	backend  compute.Backend
	model    *zonos.Model
	codec    *dac.Model
	sched    *zonos.Scheduler
	vocoders *vocoderPool // every stream's DAC stage (vocoderpool.go)
	warmMu   sync.Mutex   // one Warmup at a time
	warmed   bool         // Warmup has run (warmup.go)
	// generate is sched.Generate; tests wrap it to see what each part of
	// a long text is generated from.
	generate func(context.Context, zonos.Inputs, zonos.GenerateOptions, func(zonos.Frame) error) (*zonos.Result, error)
}

// Load reads the bundle onto backend b. A backend that panics while the
// weights go onto it (the CUDA allocator does when the device is out of
// memory) makes Load return that as an error.
func Load(b compute.Backend, p Paths) (*Engine, error) {
	return LoadContext(context.Background(), b, p)
}

// LoadContext is Load that gives up once ctx is done (between the
// backbone's layers), returning ctx's error.
func LoadContext(ctx context.Context, b compute.Backend, p Paths) (e *Engine, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("loading %s and %s on %s: %v", p.ModelWeights, p.DACWeights, b.Device(), r)
		}
	}()
	m, err := zonos.LoadContext(ctx, b, p.ModelConfig, p.ModelWeights)
	if err != nil {
		return nil, err
	}
	// The codec goes on the backend's side lane where it has one, so
	// vocoding runs beside decoding (vocode.go).
	c, err := loadDAC(compute.LaneOf(b), p)
	if err != nil {
		return nil, err
	}
	if c.Config().SamplingRate != SampleRate || c.Config().HopLength != 512 {
		return nil, fmt.Errorf("DAC in %s runs at %d Hz with hop %d; Zonos needs descript/dac_44khz (44100 Hz, hop 512)",
			p.DACConfig, c.Config().SamplingRate, c.Config().HopLength)
	}
	return New(b, m, c), nil
}

// New wraps models already loaded on backend b (benchmarks build random
// models of the real shapes in memory).
func New(b compute.Backend, m *zonos.Model, c *dac.Model) *Engine {
	e := &Engine{backend: b, model: m, codec: c}
	e.vocoders = newVocoderPool(e)
	if err := e.SetCapacity(DefaultCapacity); err != nil {
		panic(err) // DefaultCapacity is in range
	}
	return e
}

// DefaultCapacity is how many utterances an engine decodes at once unless
// SetCapacity says otherwise: enough for the app and a few programs
// sharing it. zonos serve sets the capacity its device sustains.
const DefaultCapacity = 4

// batchPositions is the positions each batch slot holds: a part of up to
// 30 s after 20 s of long-form context and its phonemes (an utterance that
// needs more decodes alone when that place is free).
const batchPositions = 5120

// SetCapacity sets how many utterances decode at once (1 to
// zonos.MaxBatch: a batch of that many slots, the first utterance decoding
// alone until another arrives; 1 is one at a time, each decoded alone).
// Call it while nothing is speaking (before serving): the batch's state is
// made anew.
func (e *Engine) SetCapacity(n int) error {
	if n < 1 || n > zonos.MaxBatch {
		return fmt.Errorf("capacity of %d streams: 1 to %d", n, zonos.MaxBatch)
	}
	slots := n
	if n == 1 {
		slots = 0 // no batch
	}
	s, err := e.model.NewScheduler(slots, batchPositions)
	if err != nil {
		return err
	}
	if e.sched != nil {
		e.sched.Close()
	}
	e.sched, e.generate = s, s.Generate
	return nil
}

// Capacity is how many utterances decode at once.
func (e *Engine) Capacity() int { return e.sched.Capacity() }

// Load is the engine's counts now: utterances decoding and waiting.
func (e *Engine) Load() zonos.SchedulerStats { return e.sched.Stats() }

// Model is the loaded Zonos model.
func (e *Engine) Model() *zonos.Model { return e.model }

// Backend is the compute backend the engine runs on.
func (e *Engine) Backend() compute.Backend { return e.backend }

// Variant is the loaded backbone (hybrid or transformer).
func (e *Engine) Variant() zonos.Variant { return e.model.Config.Variant() }

// Codec is the loaded DAC (for encoding audio prefixes).
func (e *Engine) Codec() *dac.Model { return e.codec }

func loadDAC(b compute.Backend, p Paths) (*dac.Model, error) {
	cfg, err := dac.LoadConfig(p.DACConfig)
	if err != nil {
		return nil, err
	}
	f, err := weights.Open(p.DACWeights)
	if err != nil {
		return nil, fmt.Errorf("dac weights: %w", err)
	}
	defer f.Close()
	return dac.New(cfg, f, b)
}
