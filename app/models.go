package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// CustomVariant names a model given by directories (--model-dir).
const CustomVariant = "custom"

// ModelChoice is one entry of the model picker.
type ModelChoice struct {
	Variant   string // hybrid, transformer or custom
	Installed bool
	Detail    string // where it is, or what is missing
}

// Label is the picker's text.
func (c ModelChoice) Label() string {
	if c.Installed {
		return c.Variant
	}
	return c.Variant + " (not installed)"
}

// Models finds and loads model bundles for the window.
type Models interface {
	Choices() []ModelChoice
	Load(ctx context.Context, variant string) (*engine.Engine, error)
	// Backend describes the backend, its device and its plan for the
	// meters.
	Backend() BackendInfo
}

// HubModels loads bundles from a Hugging Face cache (or fixed directories)
// onto one backend, keeping each loaded engine.
type HubModels struct {
	B compute.Backend
	// Cache is where bundles are looked up and downloaded to.
	Cache weights.Cache
	// ModelDir and DACDir, when set, replace the cache with fixed
	// directories (config.json + model.safetensors each).
	ModelDir, DACDir string

	mu sync.Mutex // guards Cache: held only briefly, so the window never waits on a load

	loadMu sync.Mutex     // serialises Load (seconds for a full-size model) and guards cur, eng
	cur    string         // the loaded variant
	eng    *engine.Engine // one model at a time: each full-size one is gigabytes
}

// Backend describes h's backend (DescribeBackend).
func (h *HubModels) Backend() BackendInfo { return DescribeBackend(h.B) }

// SetCache switches to another cache (a folder the user chose).
func (h *HubModels) SetCache(c weights.Cache) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Cache = c
}

// CurrentCache is the cache in use (for the speaker files).
func (h *HubModels) CurrentCache() weights.Cache { return h.cache() }

func (h *HubModels) cache() weights.Cache {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Cache
}

// Choices lists hybrid and transformer with what is installed, or the
// custom directories.
func (h *HubModels) Choices() []ModelChoice {
	if h.ModelDir != "" {
		return []ModelChoice{{Variant: CustomVariant, Installed: true, Detail: h.ModelDir}}
	}
	var out []ModelChoice
	c := h.cache()
	for _, v := range weights.Variants() {
		ch := ModelChoice{Variant: string(v)}
		if b, err := weights.FindBundle(c, v); err == nil {
			ch.Installed, ch.Detail = true, filepath.Dir(b.ModelWeights)
		} else {
			ch.Detail = notInstalled(v, err).Error()
		}
		out = append(out, ch)
	}
	return out
}

// Load returns the variant's engine, loading it the first time.
func (h *HubModels) Load(ctx context.Context, variant string) (*engine.Engine, error) {
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if h.eng != nil && h.cur == variant {
		return h.eng, nil
	}
	h.eng, h.cur = nil, "" // let the previous model go before loading the next
	var p engine.Paths
	switch {
	case h.ModelDir != "":
		dac := h.DACDir
		if dac == "" {
			return nil, fmt.Errorf("--model-dir needs --dac-dir too (the descript/dac_44khz directory)")
		}
		p = engine.PathsFromDirs(h.ModelDir, dac)
	default:
		v, err := weights.ParseVariant(variant)
		if err != nil {
			return nil, err
		}
		b, err := weights.FindBundle(h.cache(), v)
		if err != nil {
			return nil, notInstalled(v, err)
		}
		p = engine.PathsFromBundle(b)
		if h.DACDir != "" {
			d := engine.PathsFromDirs(h.ModelDir, h.DACDir)
			p.DACConfig, p.DACWeights = d.DACConfig, d.DACWeights
		}
	}
	e, err := engine.LoadContext(ctx, h.B, p)
	if err != nil {
		return nil, err
	}
	h.eng, h.cur = e, variant
	return e, nil
}

// notInstalled words FindBundle's error for the window: its
// *weights.MissingError tells a command-line user to run 'zonos pull'.
func notInstalled(v weights.Variant, err error) error {
	var me *weights.MissingError
	if !errors.As(err, &me) {
		return err
	}
	return fmt.Errorf("the %s model is not installed (%d of its files are not in the Hugging Face cache %s): download it in the Models tab, or choose a folder that has it there", v, len(me.Missing), me.Cache.Dir)
}
