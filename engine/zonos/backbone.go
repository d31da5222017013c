package zonos

import (
	"fmt"

	"zonostream/engine/compute"
)

// norm is a LayerNorm's weight and bias.
type norm struct{ w, b compute.Tensor }

func loadNorm(bd *binder, name string, d int) norm {
	return norm{bd.tensor(name+".weight", d), bd.tensor(name+".bias", d)}
}

// attention is the attention mixer of both backbones: one fused in_proj to
// [q | k | v], rotary, causal GQA attention over the KV cache, out_proj.
type attention struct {
	inProj, outProj compute.Tensor
	spec            compute.AttentionSpec
}

// mamba2 is the Mamba2 mixer (mamba_ssm defaults: d_state 128, headdim 64,
// expand 2, d_conv 4, ngroups 1; gated RMSNorm with norm_before_gate=False).
type mamba2 struct {
	inProj, outProj compute.Tensor
	w               compute.Mamba2Weights
	spec            compute.Mamba2Spec
}

// gatedMLP is fc2(y · silu(gate)) with [y | gate] = fc1(x).
type gatedMLP struct{ fc1, fc2 compute.Tensor }

// up is the MLP's gated up-projection, SwiGLU(fc1·x): in one pass where
// the backend has one (compute.SwiGLULinear), else Linear then SwiGLU.
func (m *gatedMLP) up(b compute.Backend, x compute.Tensor) compute.Tensor {
	if g, ok := b.(compute.SwiGLULinear); ok {
		if y, ok := g.LinearSwiGLU(x, m.fc1, nil); ok {
			return y
		}
	}
	u := b.Linear(x, m.fc1, nil)
	y := b.SwiGLU(u)
	b.Free(u)
	return y
}

// layer is one residual block: norm → mixer, then (attention layers only)
// norm2 → gated MLP. The residual stream runs between blocks as in
// mamba_ssm's fused add-norm; Zonos' transformer block is the same
// arithmetic (x + mixer(norm(x)), then + mlp(norm2(x))).
type layer struct {
	norm, norm2 norm
	attn        *attention
	ssm         *mamba2
	mlp         *gatedMLP
}

// Mamba2 library defaults (mamba_ssm.modules.mamba2.Mamba2.__init__), which
// Zonos takes with ssm_cfg = {"layer": "Mamba2"}.
const (
	mambaDState  = 128
	mambaHeadDim = 64
	mambaExpand  = 2
	mambaDConv   = 4
	mambaGroups  = 1
)

func loadLayer(bd *binder, cfg *Config, i int) *layer {
	b := cfg.Backbone
	d := b.DModel
	p := fmt.Sprintf("backbone.layers.%d.", i)
	l := &layer{norm: loadNorm(bd, p+"norm", d)}
	if cfg.IsAttention(i) {
		a := b.AttnCfg
		hd := d / a.NumHeads
		spec := compute.AttentionSpec{Heads: a.NumHeads, KVHeads: a.NumHeadsKV, HeadDim: hd, RotaryBase: 10000}
		if cfg.Variant() == Transformer {
			spec.Rotary, spec.RotaryDim = compute.RotaryInterleaved, hd
		} else {
			spec.Rotary, spec.RotaryDim = compute.RotaryHalves, a.RotaryEmbDim
		}
		l.attn = &attention{
			inProj:  bd.tensor(p+"mixer.in_proj.weight", (a.NumHeads+2*a.NumHeadsKV)*hd, d),
			outProj: bd.tensor(p+"mixer.out_proj.weight", d, a.NumHeads*hd),
			spec:    spec,
		}
		l.loadMLP(bd, cfg, p, b.AttnMLPDIntermediat)
		return l
	}
	di := mambaExpand * d
	s := compute.Mamba2Spec{DInner: di, Heads: di / mambaHeadDim, HeadDim: mambaHeadDim, DState: mambaDState,
		Groups: mambaGroups, DConv: mambaDConv, Eps: 1e-5}
	convDim := di + 2*s.Groups*s.DState
	l.ssm = &mamba2{
		inProj:  bd.tensor(p+"mixer.in_proj.weight", 2*di+2*s.Groups*s.DState+s.Heads, d),
		outProj: bd.tensor(p+"mixer.out_proj.weight", d, di),
		w: compute.Mamba2Weights{
			ConvWeight: bd.tensor(p+"mixer.conv1d.weight", convDim, 1, s.DConv),
			ConvBias:   bd.tensor(p+"mixer.conv1d.bias", convDim),
			DtBias:     bd.tensor(p+"mixer.dt_bias", s.Heads),
			ALog:       bd.tensor(p+"mixer.A_log", s.Heads),
			D:          bd.tensor(p+"mixer.D", s.Heads),
			NormWeight: bd.tensor(p+"mixer.norm.weight", di),
		},
		spec: s,
	}
	l.loadMLP(bd, cfg, p, b.DIntermediate)
	return l
}

// mlpHidden is the gated MLP's hidden width for a configured size m:
// mamba_ssm's GatedMLP rounds it up to a multiple of 128 (its multiple_of
// default); Zonos' torch FeedForward uses m as is. 0 means no MLP.
func mlpHidden(cfg *Config, m int) int {
	if cfg.Variant() == Hybrid && m > 0 {
		return (m + 127) / 128 * 128
	}
	return m
}

// loadMLP binds norm2 and the gated MLP of a block. mamba_ssm builds them
// only for a non-zero size; Zonos' transformer block always has them, and
// with size 0 its MLP adds exactly zero, so it is bound but not run.
func (l *layer) loadMLP(bd *binder, cfg *Config, p string, m int) {
	h := mlpHidden(cfg, m)
	d := cfg.Backbone.DModel
	if h == 0 {
		if cfg.Variant() == Transformer {
			loadNorm(bd, p+"norm2", d)
			bd.raw(p+"mlp.fc1.weight", 0, d)
			bd.raw(p+"mlp.fc2.weight", d, 0)
		}
		return
	}
	l.norm2 = loadNorm(bd, p+"norm2", d)
	l.mlp = &gatedMLP{bd.tensor(p+"mlp.fc1.weight", 2*h, d), bd.tensor(p+"mlp.fc2.weight", d, h)}
}

// layerState is one layer's inference cache: the KV cache of an attention
// layer, or the conv and SSM states of a Mamba2 layer.
type layerState struct {
	k, v      compute.Tensor // [B, maxT, Hkv, Dh]
	conv, ssm compute.Tensor // [B, convDim, Kc], [B, H, P, N]
}

func (l *layer) newState(b compute.Backend, batch, maxT int) layerState {
	if l.attn != nil {
		s := l.attn.spec
		return layerState{k: b.Zeros(batch, maxT, s.KVHeads, s.HeadDim), v: b.Zeros(batch, maxT, s.KVHeads, s.HeadDim)}
	}
	s := l.ssm.spec
	return layerState{
		conv: b.Zeros(batch, s.DInner+2*s.Groups*s.DState, s.DConv),
		ssm:  b.Zeros(batch, s.Heads, s.HeadDim, s.DState),
	}
}

// forward runs the block on hidden [B, T, d] with the incoming residual
// stream (nil before the first block) and returns the new (hidden,
// residual) pair; the stream after the block is hidden + residual.
func (l *layer) forward(b compute.Backend, hidden, residual compute.Tensor, st layerState, pos compute.Positions, eps float32) (compute.Tensor, compute.Tensor) {
	x, residual := b.AddLayerNorm(hidden, residual, l.norm.w, l.norm.b, eps)
	if l.attn != nil {
		hidden = l.attn.forward(b, x, st, pos)
	} else {
		hidden = l.ssm.forward(b, x, st)
	}
	b.Free(x)
	if l.mlp != nil {
		mixed, stream := hidden, residual
		x, residual = b.AddLayerNorm(mixed, stream, l.norm2.w, l.norm2.b, eps)
		b.Free(mixed)
		b.Free(stream)
		act := l.mlp.up(b, x)
		b.Free(x)
		hidden = b.Linear(act, l.mlp.fc2, nil)
		b.Free(act)
	}
	return hidden, residual
}

func (a *attention) forward(b compute.Backend, x compute.Tensor, st layerState, pos compute.Positions) compute.Tensor {
	s := a.spec
	qkv := b.Linear(x, a.inProj, nil)
	o := b.Attention(qkv, st.k, st.v, pos, s)
	b.Free(qkv)
	out := b.Linear(o, a.outProj, nil)
	b.Free(o)
	return out
}

// runLength is how many blocks from layers[0] on a compute.Mamba2Run may
// take: consecutive Mamba2 blocks without an MLP.
func runLength(layers []*layer) int {
	n := 0
	for n < len(layers) && layers[n].ssm != nil && layers[n].mlp == nil {
		n++
	}
	return n
}

// runBlocks describes layers (all Mamba2 blocks without MLP) and their
// states for compute.Mamba2Run.
func runBlocks(layers []*layer, states []layerState) []compute.Mamba2RunBlock {
	blocks := make([]compute.Mamba2RunBlock, len(layers))
	for i, l := range layers {
		blocks[i] = compute.Mamba2RunBlock{
			NormW: l.norm.w, NormB: l.norm.b,
			InProj: l.ssm.inProj, OutProj: l.ssm.outProj, W: l.ssm.w,
			ConvState: states[i].conv, SSMState: states[i].ssm, Spec: l.ssm.spec,
		}
	}
	return blocks
}

func (m *mamba2) forward(b compute.Backend, x compute.Tensor, st layerState) compute.Tensor {
	if mb, ok := b.(compute.Mamba2Block); ok {
		if y, ok := mb.Mamba2Block(x, m.inProj, m.outProj, m.w, st.conv, st.ssm, m.spec); ok {
			return y
		}
	}
	zx := b.Linear(x, m.inProj, nil)
	y := b.Mamba2(zx, m.w, st.conv, st.ssm, m.spec)
	b.Free(zx)
	out := b.Linear(y, m.outProj, nil)
	b.Free(y)
	return out
}
