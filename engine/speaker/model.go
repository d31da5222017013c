package speaker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"

	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// Reference constants (speaker_cloning.py).
const (
	simamLambda = 1e-4 // SimAMBasicBlock.SimAM lambda_p
	aspEps      = 1e-5 // ASP: σ = sqrt(clamp(·, min=1e-5))
	bnEps       = 1e-5 // nn.BatchNorm default
	// MinSamples is the shortest clip embedded: 0.5 s at 16 kHz. Shorter
	// clips carry too little voice to be useful (and the centred STFT needs
	// more than 256 samples).
	MinSamples = SampleRate / 2
	// SilencePeak: a clip whose peak |sample| is below this (−80 dBFS) is
	// refused as silent.
	SilencePeak = 1e-4
)

// Config is the geometry read from the checkpoint: the real model is
// InPlanes 64, Blocks [10 20 64 3]; the golden tiny one 8, [2 2 2 1].
type Config struct {
	InPlanes int    // stem width
	Blocks   [4]int // SimAM basic blocks per stage
	Widths   [4]int // stage widths (InPlanes × 1, 2, 4, 8)
	PoolIn   int    // channels × mel rows entering pooling (Widths[3] · 80/8)
	Embed    int    // bottleneck output (256)
	LDA      int    // LDA output (128)
}

type conv struct {
	w, b compute.Tensor
	spec compute.Conv2dSpec
}

type block struct {
	c1, c2 conv
	down   *conv // nil: identity shortcut
}

// Model is the speaker-embedding network (ResNet293-SimAM-ASP + LDA) with
// BatchNorm folded into its convolutions. A Model is used by one goroutine
// at a time (the backend's owner).
type Model struct {
	Config Config
	b      compute.SpeakerBackend
	stem   conv
	stages [4][]block
	att1   conv // pooling.attention.0 + ReLU (1×1)
	att2   conv // BatchNorm1d(attention.2) folded into attention.3 (1×1)
	bnW    compute.Tensor
	bnB    compute.Tensor
	ldaW   compute.Tensor
	ldaB   compute.Tensor
	// ID is a hash of both model files' contents: the cache key's model part.
	ID string
}

// Load reads the ResNet checkpoint (ResNet293_SimAM_ASP_base.pt) and the
// LDA checkpoint (ResNet293_SimAM_ASP_base_LDA-128.pt) onto b.
func Load(weightsPath, ldaPath string, b compute.SpeakerBackend) (*Model, error) {
	h := sha256.New()
	for _, p := range []string{weightsPath, ldaPath} {
		if err := hashFile(h, p); err != nil {
			return nil, fmt.Errorf("speaker model: %w", err)
		}
	}
	wf, err := weights.OpenTorch(weightsPath)
	if err != nil {
		return nil, fmt.Errorf("speaker model: %w", err)
	}
	lf, err := weights.OpenTorch(ldaPath)
	if err != nil {
		return nil, fmt.Errorf("speaker LDA: %w", err)
	}
	m, err := build(wf, lf, lf.Path, b)
	if err != nil {
		return nil, err
	}
	m.ID = hex.EncodeToString(h.Sum(nil))
	return m, nil
}

// RealBlocks is the released ResNet293's stage depths (InPlanes 64).
var RealBlocks = [4]int{10, 20, 64, 3}

// Checkpoint is where a model's tensors come from, by their names in the
// released state dicts: a *weights.TorchFile, or any store with the same
// three reads (Float32s checks the shape when want is given, −1 matching
// any size).
type Checkpoint interface {
	Has(name string) bool
	Tensor(name string) (*weights.Tensor, error)
	Float32s(name string, want ...int) ([]float32, []int, error)
}

// New builds a model from the ResNet checkpoint w and the LDA checkpoint
// lda wherever they come from, for example made in memory with the
// released shapes for benchmarks; Load is New for the files on disk. A
// model from New has an empty ID: set one before caching its embeddings
// (EmbedCached keys on it).
func New(w, lda Checkpoint, b compute.SpeakerBackend) (*Model, error) {
	return build(w, lda, "checkpoint", b)
}

func hashFile(h io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

// loader binds checkpoint tensors, remembering the first error.
type loader struct {
	f   Checkpoint
	b   compute.SpeakerBackend
	err error
}

func (l *loader) get(name string, shape ...int) []float32 {
	if l.err != nil {
		return nil
	}
	v, _, err := l.f.Float32s(name, shape...)
	if err != nil {
		l.err = fmt.Errorf("speaker model: %w (is this the ResNet293_SimAM_ASP_base checkpoint?)", err)
		return nil
	}
	return v
}

func (l *loader) dims(name string) []int {
	if l.err != nil {
		return nil
	}
	t, err := l.f.Tensor(name)
	if err != nil {
		l.err = fmt.Errorf("speaker model: %w (is this the ResNet293_SimAM_ASP_base checkpoint?)", err)
		return nil
	}
	return t.Shape
}

// bn returns the per-channel scale and shift of an eval-mode BatchNorm:
// y = a·x + c with a = γ/√(var+eps), c = β − mean·a.
func (l *loader) bn(prefix string, n int) (a, c []float64) {
	g, be := l.get(prefix+".weight", n), l.get(prefix+".bias", n)
	mu, v := l.get(prefix+".running_mean", n), l.get(prefix+".running_var", n)
	if l.err != nil {
		return nil, nil
	}
	a, c = make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		if !(v[i] >= 0) {
			l.err = fmt.Errorf("speaker model: %s.running_var[%d] = %g is not a variance", prefix, i, v[i])
			return nil, nil
		}
		a[i] = float64(g[i]) / math.Sqrt(float64(v[i])+bnEps)
		c[i] = float64(be[i]) - float64(mu[i])*a[i]
	}
	return a, c
}

// convBN folds BatchNorm prefix bn into the bias-free conv weight name.
func (l *loader) convBN(name, bn string, cout, cin, k int, spec compute.Conv2dSpec) conv {
	w := l.get(name, cout, cin, k, k)
	a, c := l.bn(bn, cout)
	if l.err != nil {
		return conv{}
	}
	per := cin * k * k
	fw := make([]float32, len(w))
	fb := make([]float32, cout)
	for o := 0; o < cout; o++ {
		for i := 0; i < per; i++ {
			fw[o*per+i] = float32(float64(w[o*per+i]) * a[o])
		}
		fb[o] = float32(c[o])
	}
	return conv{l.b.FromF32(fw, cout, cin, k, k), l.b.FromF32(fb, cout), spec}
}

// build binds the ResNet checkpoint wf and the LDA checkpoint lf (named
// ldaName in errors).
func build(wf, lf Checkpoint, ldaName string, b compute.SpeakerBackend) (*Model, error) {
	l := &loader{f: wf, b: b}
	m := &Model{b: b}
	cfg := &m.Config
	if d := l.dims("front.conv1.weight"); l.err == nil {
		if len(d) != 4 || d[1] != 1 || d[2] != 3 || d[3] != 3 || d[0] <= 0 {
			return nil, fmt.Errorf("speaker model: front.conv1.weight has shape %v, want [planes 1 3 3]", d)
		}
		cfg.InPlanes = d[0]
	}
	if l.err != nil {
		return nil, l.err
	}
	m.stem = l.convBN("front.conv1.weight", "front.bn1", cfg.InPlanes, 1, 3, compute.Conv2dSpec{Padding: 1, ReLU: true})
	cin := cfg.InPlanes
	for s := 0; s < 4; s++ {
		cfg.Widths[s] = cfg.InPlanes << s
		for wf.Has(fmt.Sprintf("front.layer%d.%d.conv1.weight", s+1, cfg.Blocks[s])) {
			cfg.Blocks[s]++
		}
		if cfg.Blocks[s] == 0 {
			return nil, fmt.Errorf("speaker model: no blocks in front.layer%d (checkpoint incomplete?)", s+1)
		}
		width := cfg.Widths[s]
		for i := 0; i < cfg.Blocks[s]; i++ {
			p := fmt.Sprintf("front.layer%d.%d.", s+1, i)
			stride := 1
			if s > 0 && i == 0 {
				stride = 2
			}
			blk := block{
				c1: l.convBN(p+"conv1.weight", p+"bn1", width, cin, 3, compute.Conv2dSpec{Stride: stride, Padding: 1, ReLU: true}),
				c2: l.convBN(p+"conv2.weight", p+"bn2", width, width, 3, compute.Conv2dSpec{Padding: 1}),
			}
			needDown := stride != 1 || cin != width
			if needDown != wf.Has(p+"downsample.0.weight") {
				return nil, fmt.Errorf("speaker model: %sdownsample present=%v, but the architecture needs it=%v", p, !needDown, needDown)
			}
			if needDown {
				d := l.convBN(p+"downsample.0.weight", p+"downsample.1", width, cin, 1, compute.Conv2dSpec{Stride: stride})
				blk.down = &d
			}
			m.stages[s] = append(m.stages[s], blk)
			cin = width
			if l.err != nil {
				return nil, l.err
			}
		}
	}
	// Attentive statistics pooling: Conv1d(PoolIn→A) ReLU BN Conv1d(A→PoolIn).
	cfg.PoolIn = cfg.Widths[3] * (NMels / 8)
	d := l.dims("pooling.attention.0.weight")
	if l.err != nil {
		return nil, l.err
	}
	if len(d) != 3 || d[1] != cfg.PoolIn || d[2] != 1 {
		return nil, fmt.Errorf("speaker model: pooling.attention.0.weight has shape %v, want [A %d 1]", d, cfg.PoolIn)
	}
	A := d[0]
	w0 := l.get("pooling.attention.0.weight", A, cfg.PoolIn, 1)
	b0 := l.get("pooling.attention.0.bias", A)
	a, c := l.bn("pooling.attention.2", A)
	w3 := l.get("pooling.attention.3.weight", cfg.PoolIn, A, 1)
	b3 := l.get("pooling.attention.3.bias", cfg.PoolIn)
	if l.err != nil {
		return nil, l.err
	}
	m.att1 = conv{b.FromF32(w0, A, cfg.PoolIn, 1, 1), b.FromF32(b0, A), compute.Conv2dSpec{ReLU: true}}
	// W3·(a⊙y + c) + b3 = (W3·diag a)·y + (W3·c + b3)
	fw := make([]float32, len(w3))
	fb := make([]float32, cfg.PoolIn)
	for o := 0; o < cfg.PoolIn; o++ {
		acc := float64(b3[o])
		for i := 0; i < A; i++ {
			fw[o*A+i] = float32(float64(w3[o*A+i]) * a[i])
			acc += float64(w3[o*A+i]) * c[i]
		}
		fb[o] = float32(acc)
	}
	m.att2 = conv{b.FromF32(fw, cfg.PoolIn, A, 1, 1), b.FromF32(fb, cfg.PoolIn), compute.Conv2dSpec{}}
	d = l.dims("bottleneck.weight")
	if l.err != nil {
		return nil, l.err
	}
	if len(d) != 2 || d[1] != 2*cfg.PoolIn {
		return nil, fmt.Errorf("speaker model: bottleneck.weight has shape %v, want [E %d]", d, 2*cfg.PoolIn)
	}
	cfg.Embed = d[0]
	bw, bb := l.get("bottleneck.weight", cfg.Embed, 2*cfg.PoolIn), l.get("bottleneck.bias", cfg.Embed)
	if l.err != nil {
		return nil, l.err
	}
	m.bnW, m.bnB = b.FromF32(bw, cfg.Embed, 2*cfg.PoolIn), b.FromF32(bb, cfg.Embed)

	ll := &loader{f: lf, b: b}
	d = ll.dims("weight")
	if ll.err != nil {
		return nil, fmt.Errorf("speaker LDA %s: %w", ldaName, ll.err)
	}
	if len(d) != 2 || d[1] != cfg.Embed {
		return nil, fmt.Errorf("speaker LDA %s: weight has shape %v, want [D %d]", ldaName, d, cfg.Embed)
	}
	cfg.LDA = d[0]
	lw, lb := ll.get("weight", cfg.LDA, cfg.Embed), ll.get("bias", cfg.LDA)
	if ll.err != nil {
		return nil, fmt.Errorf("speaker LDA %s: %w", ldaName, ll.err)
	}
	m.ldaW, m.ldaB = b.FromF32(lw, cfg.LDA, cfg.Embed), b.FromF32(lb, cfg.LDA)
	return m, nil
}

// Vectors are the model's two outputs for one clip.
type Vectors struct {
	Embedding []float32 // bottleneck output (Config.Embed, 256)
	LDA       []float32 // LDA projection (Config.LDA, 128): what Zonos conditions on
}

// CheckSamples validates a 16 kHz mono clip before embedding.
func CheckSamples(samples []float32) error {
	if len(samples) < MinSamples {
		return fmt.Errorf("speaker clip: %.2f s of audio is too short; give at least %.1f s of speech (5–30 s works best)",
			float64(len(samples))/SampleRate, float64(MinSamples)/SampleRate)
	}
	var peak float64
	for i, v := range samples {
		a := math.Abs(float64(v))
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("speaker clip: sample %d is %v; the decoded audio is corrupt", i, v)
		}
		peak = max(peak, a)
	}
	if peak < SilencePeak {
		return fmt.Errorf("speaker clip: the audio is silent (peak %.2g, below −80 dBFS); record someone speaking", peak)
	}
	return nil
}

// Embed returns the 128-d LDA vector Zonos conditions on for 16 kHz mono
// samples.
func (m *Model) Embed(ctx context.Context, samples16k []float32) ([]float32, error) {
	v, err := m.Vectors(ctx, samples16k)
	if err != nil {
		return nil, err
	}
	return v.LDA, nil
}

// Vectors runs the whole model: log-mel features, ResNet, pooling,
// bottleneck and LDA.
func (m *Model) Vectors(ctx context.Context, samples16k []float32) (Vectors, error) {
	if err := CheckSamples(samples16k); err != nil {
		return Vectors{}, err
	}
	feat, F, err := LogMel(samples16k)
	if err != nil {
		return Vectors{}, err
	}
	return m.FromFeatures(ctx, feat, F)
}

// FromFeatures runs the network on log-mel features [NMels][frames].
func (m *Model) FromFeatures(ctx context.Context, feat []float32, frames int) (Vectors, error) {
	if len(feat) != NMels*frames || frames < 1 {
		return Vectors{}, fmt.Errorf("speaker features: %d values for %d frames of %d mels", len(feat), frames, NMels)
	}
	b := m.b
	x := b.FromF32(feat, 1, 1, NMels, frames)
	step := func(next compute.Tensor) { b.Free(x); x = next }
	step(b.Conv2d(x, m.stem.w, m.stem.b, m.stem.spec))
	for s := range m.stages {
		for _, blk := range m.stages[s] {
			if err := ctx.Err(); err != nil {
				b.Free(x)
				return Vectors{}, err
			}
			h := b.Conv2d(x, blk.c1.w, blk.c1.b, blk.c1.spec)
			h2 := b.Conv2d(h, blk.c2.w, blk.c2.b, blk.c2.spec)
			b.Free(h)
			res := x
			if blk.down != nil {
				res = b.Conv2d(x, blk.down.w, blk.down.b, blk.down.spec)
			}
			y := b.SimAMAddReLU(h2, res, simamLambda)
			b.Free(h2)
			if blk.down != nil {
				b.Free(res)
			}
			step(y)
		}
	}
	sh := x.Shape() // [1, C, H, W]
	if sh[1]*sh[2] != m.Config.PoolIn {
		b.Free(x)
		return Vectors{}, fmt.Errorf("speaker model: feature map %v does not give %d pooling channels", sh, m.Config.PoolIn)
	}
	T := sh[3]
	flat := b.Reshape(x, 1, m.Config.PoolIn, 1, T)
	a1 := b.Conv2d(flat, m.att1.w, m.att1.b, m.att1.spec)
	logits := b.Conv2d(a1, m.att2.w, m.att2.b, m.att2.spec)
	b.Free(a1)
	pooled := b.AttentiveStatsPool(b.Reshape(x, 1, m.Config.PoolIn, T), b.Reshape(logits, 1, m.Config.PoolIn, T), aspEps)
	b.Free(logits)
	b.Free(x)
	emb := b.Linear(pooled, m.bnW, m.bnB)
	b.Free(pooled)
	lda := b.Linear(emb, m.ldaW, m.ldaB)
	v := Vectors{Embedding: b.ReadF32(emb), LDA: b.ReadF32(lda)}
	b.Free(emb)
	b.Free(lda)
	return v, nil
}

// Close releases the model's weights on its backend.
func (m *Model) Close() {
	free := func(ts ...compute.Tensor) {
		for _, t := range ts {
			if t != nil {
				m.b.Free(t)
			}
		}
	}
	free(m.stem.w, m.stem.b, m.att1.w, m.att1.b, m.att2.w, m.att2.b, m.bnW, m.bnB, m.ldaW, m.ldaB)
	for s := range m.stages {
		for _, blk := range m.stages[s] {
			free(blk.c1.w, blk.c1.b, blk.c2.w, blk.c2.b)
			if blk.down != nil {
				free(blk.down.w, blk.down.b)
			}
		}
	}
	m.stages = [4][]block{}
}
