package dac

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// Source is where the checkpoint tensors come from: a *weights.File (the
// model.safetensors of descript/dac_44khz or a golden pack) or any other
// named-tensor store with the same two methods.
type Source interface {
	Names() []string
	Tensor(name string) (*weights.Tensor, error)
}

// binder reads tensors by checkpoint name, checks their shapes, folds
// weight-normalised convolutions to plain weights, and uploads the result.
// It never stops at the first problem: every missing, mis-shaped or
// unreadable tensor is recorded, and the names nobody asked for are reported
// as unexpected, so one load error lists everything wrong with a checkpoint.
type binder struct {
	src      Source
	be       compute.Backend
	has      map[string]bool
	used     map[string]bool
	want     map[string][]int // every plain name asked for, with its shape
	problems []string
}

func newBinder(src Source, be compute.Backend) *binder {
	b := &binder{src: src, be: be, has: map[string]bool{}, used: map[string]bool{}, want: map[string][]int{}}
	for _, n := range src.Names() {
		b.has[n] = true
	}
	return b
}

func (b *binder) problem(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// read returns a tensor's values as float32 after checking its shape
// (want's element count and rank must match; size-1 dims are compared too).
func (b *binder) read(name string, want []int) []float32 {
	b.used[name] = true
	b.want[name] = want
	if !b.has[name] {
		b.problem("missing %s %v", name, want)
		return nil
	}
	t, err := b.src.Tensor(name)
	if err != nil {
		b.problem("%s: %v", name, err)
		return nil
	}
	if !slices.Equal(t.Shape, want) {
		b.problem("%s has shape %v, want %v", name, t.Shape, want)
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		b.problem("%s: %v", name, err)
		return nil
	}
	return v
}

// upload copies host values to the backend (nil when reading failed, in
// which case the load fails before anything runs).
func (b *binder) upload(v []float32, shape ...int) compute.Tensor {
	if v == nil {
		return nil
	}
	return b.be.FromF32(v, shape...)
}

// convWeight reads the weight of the convolution at prefix in whichever of
// the three stored forms is present:
//
//	prefix.weight                                  plain (save_pretrained)
//	prefix.weight_g, prefix.weight_v               torch.nn.utils.weight_norm
//	prefix.parametrizations.weight.original0/1     parametrizations.weight_norm
//
// and folds the normalised forms to w = g·v/‖v‖, the norm taken over all
// dims but 0 (torch's default weight_norm dim), so g has shape[0] elements:
// the output channel for Conv1d, the input channel for ConvTranspose1d,
// whose weight is [Cin, Cout, K].
func (b *binder) convWeight(prefix string, shape []int) []float32 {
	plain := prefix + ".weight"
	forms := [][2]string{
		{prefix + ".weight_g", prefix + ".weight_v"},
		{prefix + ".parametrizations.weight.original0", prefix + ".parametrizations.weight.original1"},
	}
	if b.has[plain] {
		for _, f := range forms {
			for _, n := range f {
				if b.has[n] {
					b.used[n] = true
					b.problem("%s and %s both present; keep one weight form", plain, n)
				}
			}
		}
		return b.read(plain, shape)
	}
	for _, f := range forms {
		if !b.has[f[0]] && !b.has[f[1]] {
			continue
		}
		gShape := make([]int, len(shape))
		gShape[0] = shape[0]
		for i := 1; i < len(gShape); i++ {
			gShape[i] = 1
		}
		g := b.read(f[0], gShape)
		v := b.read(f[1], shape)
		if g == nil || v == nil {
			return nil
		}
		return foldWeightNorm(g, v, shape[0])
	}
	b.used[plain] = true
	b.want[plain] = shape
	b.problem("missing %s %v (nor weight_g/weight_v, nor parametrizations.weight.original0/1)", plain, shape)
	return nil
}

// foldWeightNorm computes w[i,…] = g[i]·v[i,…]/‖v[i,…]‖₂ for rows i along
// dim 0 (torch._weight_norm with dim 0). The norm is accumulated in float64.
func foldWeightNorm(g, v []float32, rows int) []float32 {
	w := make([]float32, len(v))
	n := len(v) / rows
	for i := 0; i < rows; i++ {
		row := v[i*n : (i+1)*n]
		var ss float64
		for _, x := range row {
			ss += float64(x) * float64(x)
		}
		scale := float64(g[i]) / math.Sqrt(ss)
		for j, x := range row {
			w[i*n+j] = float32(float64(x) * scale)
		}
	}
	return w
}

// err reports every problem and every unexpected tensor, or nil.
func (b *binder) err() error {
	var unexpected []string
	for n := range b.has {
		if !b.used[n] {
			unexpected = append(unexpected, n)
		}
	}
	sort.Strings(unexpected)
	if len(b.problems) == 0 && len(unexpected) == 0 {
		return nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "dac weights do not match the config (%d problems, %d unexpected tensors); check that config.json and model.safetensors come from the same DAC checkpoint:",
		len(b.problems), len(unexpected))
	for _, p := range b.problems {
		sb.WriteString("\n  " + p)
	}
	for _, u := range unexpected {
		sb.WriteString("\n  unexpected " + u)
	}
	return fmt.Errorf("%s", sb.String())
}

// noTensors is an empty Source.
type noTensors struct{}

func (noTensors) Names() []string { return nil }
func (noTensors) Tensor(name string) (*weights.Tensor, error) {
	return nil, fmt.Errorf("no tensor %q", name)
}

// TensorShapes lists every tensor a checkpoint of configuration cfg holds,
// in the plain-weight form, with its shape (what New expects; used to build
// randomly initialised models of the real shapes).
func TensorShapes(cfg Config) (map[string][]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := newBinder(noTensors{}, nil)
	b.bindEncoder(cfg)
	b.bindCodebooks(cfg)
	b.bindDecoder(cfg)
	return b.want, nil
}
