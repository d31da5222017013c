package bench

import (
	"fmt"

	"zonostream/engine/dac"
	"zonostream/engine/zonos"
)

// shapes are the models Options ask for, as Run builds them and SaveModel
// writes them.
type shapes struct {
	zonos       *zonos.Config // with only its first Layers layers where o.Layers cuts the backbone
	dac         dac.Config
	layers      int    // backbone layers built
	modelLayers int    // the model's own
	what        string // for progress lines: "of the real shapes", or the layers kept
}

// shapesOf resolves o: the real config of o.Variant (or o.Model), its
// first o.Layers layers when that is fewer than it has, and the 44 kHz DAC
// (or o.DAC).
func shapesOf(o Options) (shapes, error) {
	cfg := zonos.RealConfig(o.Variant)
	if o.Model != nil {
		cfg = o.Model
	}
	s := shapes{zonos: cfg, dac: dac.Dac44kHz(), layers: cfg.Backbone.NLayer, modelLayers: cfg.Backbone.NLayer, what: "of the real shapes"}
	if o.DAC != nil {
		s.dac = *o.DAC
	}
	switch {
	case o.Layers < 0:
		return shapes{}, fmt.Errorf("bench: layers %d must be ≥ 0", o.Layers)
	case o.Layers > 0 && o.Layers < cfg.Backbone.NLayer:
		var err error
		if s.zonos, err = firstLayers(cfg, o.Layers); err != nil {
			return shapes{}, err
		}
		s.layers = o.Layers
		s.what = fmt.Sprintf("of the real widths with %d of its %d layers", s.layers, s.modelLayers)
	}
	return s, nil
}

// firstLayers is cfg with only its first n backbone layers, attention where
// cfg has it among them.
func firstLayers(cfg *zonos.Config, n int) (*zonos.Config, error) {
	c := *cfg
	c.Backbone.NLayer = n
	c.Backbone.AttnLayerIdx = nil
	for _, i := range cfg.Backbone.AttnLayerIdx {
		if i < n {
			c.Backbone.AttnLayerIdx = append(c.Backbone.AttnLayerIdx, i)
		}
	}
	js, err := c.JSON()
	if err != nil {
		return nil, err
	}
	return zonos.ParseConfig(js)
}
