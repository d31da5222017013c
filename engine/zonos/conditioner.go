package zonos

import (
	"fmt"
	"math"

	"zonostream/engine/compute"
)

// Inputs are the values of one utterance's conditioners. A conditioner whose
// name is absent from Values is unconditional: it contributes its learned
// uncond_vector, as in the reference (make_cond_dict's unconditional_keys).
type Inputs struct {
	PhonemeIDs []int32              // espeak: BOS(2), symbol ids…, EOS(3)
	Values     map[string][]float32 // speaker (128), emotion (8), fmax (1), …
}

// conditioner is one entry of the prefix conditioner.
type conditioner struct {
	cfg    ConditionerConfig
	uncond compute.Tensor // [1, 1, d] learned unconditional vector, or nil

	table      compute.Tensor // espeak phoneme embedding / integer embedding
	fourierW   compute.Tensor // [d/2, input_dim]
	projW      compute.Tensor // own projection (speaker: Linear cond_dim → d)
	projB      compute.Tensor
	lo, hi     float64 // value range (min_val, max_val)
	inDim      int
	tableRows  int
	phonemeVoc int
}

// prefixConditioner turns Inputs into the [2, L, d] prefix (row 0
// conditional, row 1 unconditional for classifier-free guidance).
type prefixConditioner struct {
	conds  []*conditioner
	projW  compute.Tensor // prefix_conditioner.project (d → d), if linear
	projB  compute.Tensor
	normW  compute.Tensor
	normB  compute.Tensor
	d      int
	b      compute.Backend
	eps    float32
	unconf []string // names of conditioners that have no uncond vector (required)
}

func loadPrefixConditioner(bd *binder, cfg PrefixConfig, d int) *prefixConditioner {
	p := &prefixConditioner{d: d, b: bd.backend, eps: 1e-5}
	pre := "prefix_conditioner."
	if cfg.Projection == "linear" {
		p.projW = bd.tensor(pre+"project.weight", d, d)
		p.projB = bd.tensor(pre+"project.bias", d)
	}
	p.normW = bd.tensor(pre+"norm.weight", d)
	p.normB = bd.tensor(pre+"norm.bias", d)
	for i, cc := range cfg.Conditioners {
		c := &conditioner{cfg: cc, inDim: cc.inputDim()}
		c.lo, c.hi = cc.bounds()
		cp := fmt.Sprintf("%sconditioners.%d.", pre, i)
		if cc.UncondType == "learned" {
			if v := bd.floats(cp+"uncond_vector", d); v != nil {
				c.uncond = bd.backend.FromF32(v, 1, 1, d)
			}
		} else {
			p.unconf = append(p.unconf, cc.Name)
		}
		condDim := d
		if cc.CondDim > 0 {
			condDim = cc.CondDim
		}
		switch cc.Type {
		case "EspeakPhonemeConditioner":
			// 4 special tokens + 185 symbols; the table size comes from the
			// checkpoint so a different symbol set is reported, not misread.
			if t, err := bd.file.Tensor(cp + "phoneme_embedder.weight"); err == nil && len(t.Shape) == 2 {
				c.phonemeVoc = t.Shape[0]
			}
			c.table = bd.tensor(cp+"phoneme_embedder.weight", c.phonemeVoc, d)
		case "PassthroughConditioner":
			c.inDim = condDim
		case "FourierConditioner":
			c.fourierW = bd.tensor(cp+"weight", d/2, c.inDim)
		case "IntegerConditioner":
			c.tableRows = int(c.hi-c.lo) + 1
			c.table = bd.tensor(cp+"int_embedder.weight", c.tableRows, d)
		}
		if cc.Projection == "linear" {
			c.projW = bd.tensor(cp+"project.weight", d, condDim)
			c.projB = bd.tensor(cp+"project.bias", d)
		}
		p.conds = append(p.conds, c)
	}
	return p
}

// bf16Round rounds to the nearest bfloat16 (ties to even): the reference
// feeds the speaker embedding to the model as bf16.
func bf16Round(v float32) float32 {
	u := math.Float32bits(v)
	if u&0x7f800000 == 0x7f800000 {
		return v
	}
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u & 0xffff0000)
}

// apply returns the conditioner's [1, n, d] output for values (nil =
// unconditional) and any notice about clamped values.
func (c *conditioner) apply(b compute.Backend, ids []int32, vals []float32, given bool) (compute.Tensor, []string, error) {
	name := c.cfg.Name
	if !given {
		if c.uncond == nil {
			return nil, nil, fmt.Errorf("conditioner %q is required (it has no unconditional vector)", name)
		}
		return c.uncond, nil, nil
	}
	var notes []string
	var out compute.Tensor
	switch c.cfg.Type {
	case "EspeakPhonemeConditioner":
		if len(ids) < 3 {
			return nil, nil, fmt.Errorf("phoneme input is empty: nothing to say")
		}
		for _, id := range ids {
			if id < 0 || int(id) >= c.phonemeVoc {
				return nil, nil, fmt.Errorf("phoneme id %d outside the %d-symbol table", id, c.phonemeVoc)
			}
		}
		out = b.Embedding(c.table, b.FromI32(ids, 1, len(ids)))
	case "PassthroughConditioner":
		if len(vals) != c.inDim {
			return nil, nil, fmt.Errorf("conditioner %q wants %d values, got %d", name, c.inDim, len(vals))
		}
		v := make([]float32, len(vals))
		for i, x := range vals {
			if x != x || math.IsInf(float64(x), 0) {
				return nil, nil, fmt.Errorf("conditioner %q: value %d is %g", name, i, x)
			}
			v[i] = x
			if name == "speaker" {
				v[i] = bf16Round(x)
			}
		}
		out = b.FromF32(v, 1, 1, len(v))
	case "FourierConditioner":
		if len(vals) != c.inDim {
			return nil, nil, fmt.Errorf("conditioner %q wants %d values, got %d", name, c.inDim, len(vals))
		}
		x := make([]float32, len(vals))
		lo, span := float32(c.lo), float32(c.hi-c.lo)
		for i, v := range vals {
			if v != v {
				return nil, nil, fmt.Errorf("conditioner %q: value %d is NaN", name, i)
			}
			if float64(v) < c.lo || float64(v) > c.hi {
				cl := float32(math.Max(c.lo, math.Min(c.hi, float64(v))))
				notes = append(notes, fmt.Sprintf("%s %g is outside [%g, %g]; clamped to %g", name, v, c.lo, c.hi, cl))
				v = cl
			}
			// f = 2π·((x − min)/(max − min))·Wᵀ in float32, as the reference.
			x[i] = float32(2*math.Pi) * ((v - lo) / span)
		}
		f := b.Linear(b.FromF32(x, 1, 1, len(x)), c.fourierW, nil)
		out = b.CosSin(f)
	case "IntegerConditioner":
		if len(vals) != 1 {
			return nil, nil, fmt.Errorf("conditioner %q wants 1 value, got %d", name, len(vals))
		}
		v := float64(vals[0])
		if v != math.Trunc(v) || v < c.lo || v > c.hi {
			return nil, nil, fmt.Errorf("conditioner %q: %g is not an integer in [%g, %g]", name, v, c.lo, c.hi)
		}
		out = b.Embedding(c.table, b.FromI32([]int32{int32(v - c.lo)}, 1, 1))
	}
	if c.projW != nil {
		out = b.Linear(out, c.projW, c.projB)
	}
	return out, notes, nil
}

// row builds one row [1, L, d] of the prefix.
func (p *prefixConditioner) row(in Inputs, conditional bool) (compute.Tensor, []string, error) {
	var parts []compute.Tensor
	var notes []string
	for _, c := range p.conds {
		vals, given := in.Values[c.cfg.Name]
		if c.cfg.Type == "EspeakPhonemeConditioner" {
			given = true // the only key the unconditional row keeps
		} else if !conditional {
			given = false
		}
		t, n, err := c.apply(p.b, in.PhonemeIDs, vals, given)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, t)
		notes = append(notes, n...)
	}
	return p.b.Concat(1, parts...), notes, nil
}

// Prefix computes prepare_conditioning: [cond row; uncond row] → project →
// LayerNorm. The notes report values that were clamped into range.
func (p *prefixConditioner) Prefix(in Inputs) (compute.Tensor, []string, error) {
	for name := range in.Values {
		if !p.has(name) {
			return nil, nil, fmt.Errorf("unknown conditioner %q (this model has %v)", name, p.names())
		}
	}
	cond, notes, err := p.row(in, true)
	if err != nil {
		return nil, nil, err
	}
	uncond, _, err := p.row(in, false)
	if err != nil {
		return nil, nil, err
	}
	x := p.b.Concat(0, cond, uncond)
	if p.projW != nil {
		x = p.b.Linear(x, p.projW, p.projB)
	}
	return p.b.LayerNorm(x, p.normW, p.normB, p.eps), notes, nil
}

func (p *prefixConditioner) has(name string) bool {
	for _, c := range p.conds {
		if c.cfg.Name == name {
			return true
		}
	}
	return false
}

func (p *prefixConditioner) names() []string {
	var n []string
	for _, c := range p.conds {
		n = append(n, c.cfg.Name)
	}
	return n
}
