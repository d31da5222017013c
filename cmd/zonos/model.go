package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"zonostream/engine"
	"zonostream/engine/weights"
)

// modelFlags choose the model bundle: a variant from the Hugging Face cache,
// or explicit directories.
type modelFlags struct {
	variant  string
	modelDir string
	dacDir   string
	backend  *backendFlags
}

func addModelFlags(fs *flag.FlagSet) *modelFlags {
	mf := &modelFlags{}
	fs.StringVar(&mf.variant, "model", "hybrid", "model variant from the Hugging Face cache: hybrid or transformer")
	fs.StringVar(&mf.modelDir, "zonos-dir", "", "directory with a Zonos config.json and model.safetensors (overrides --model)")
	fs.StringVar(&mf.modelDir, "model-dir", "", "same as --zonos-dir")
	fs.StringVar(&mf.dacDir, "dac-dir", "", "directory with the DAC config.json and model.safetensors (with --zonos-dir)")
	mf.backend = addBackendFlags(fs, "auto")
	return mf
}

// paths resolves the bundle, explaining what is missing and how to get it.
func (mf *modelFlags) paths() (engine.Paths, error) {
	if mf.modelDir != "" || mf.dacDir != "" {
		if mf.modelDir == "" || mf.dacDir == "" {
			return engine.Paths{}, fmt.Errorf("--zonos-dir and --dac-dir go together")
		}
		return engine.PathsFromDirs(mf.modelDir, mf.dacDir), nil
	}
	v, err := weights.ParseVariant(mf.variant)
	if err != nil {
		return engine.Paths{}, err
	}
	b, err := weights.LocateBundle(v)
	if err != nil {
		var miss *weights.MissingError
		if errors.As(err, &miss) {
			return engine.Paths{}, &noWeightsError{fmt.Errorf("%v\nrun 'zonos pull %s' to download them, or point --zonos-dir and --dac-dir at model folders", err, v)}
		}
		return engine.Paths{}, err
	}
	return engine.PathsFromBundle(b), nil
}

// load opens the backend and the engine, telling the user what takes time.
func (mf *modelFlags) load(quiet bool) (*engine.Engine, error) {
	p, err := mf.paths()
	if err != nil {
		return nil, err
	}
	b, err := openBackend(*mf.backend)
	if err != nil {
		return nil, err
	}
	if !quiet {
		fmt.Fprintf(os.Stderr, "loading %s on %s…\n", p.ModelWeights, b.Device())
	}
	e, err := engine.Load(b, p)
	if err != nil {
		b.Close()
		return nil, err
	}
	return e, nil
}

// noWeightsError marks a missing model bundle (exit code 2).
type noWeightsError struct{ error }

func (e *noWeightsError) Unwrap() error { return e.error }
