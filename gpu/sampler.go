//go:build cuda

package gpu

import (
	"fmt"
	"slices"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

var _ compute.SamplerOps = (*Backend)(nil)

// Guide is classifier-free guidance on the device (compute.SamplerOps).
func (b *Backend) Guide(heads compute.Tensor, scale float32, padFrom, eos int, eosBias bool) compute.Tensor {
	return b.guide("Guide", heads, scale, padFrom, eos, eosBias, nil)
}

// guide launches the guide kernel over heads [2, R, W]: with one scale
// and pad column for every row, or, with params (GuideRows), each
// utterance's own.
func (b *Backend) guide(op string, heads compute.Tensor, scale float32, padFrom, eos int, eosBias bool, params *tensor) compute.Tensor {
	ht := f32Of(heads, op)
	if len(ht.shape) != 3 || ht.shape[0] != 2 {
		panic(fmt.Sprintf("gpu.%s: heads %v, want [2, R, W]", op, ht.shape))
	}
	R, W := ht.shape[1], ht.shape[2]
	if eosBias && (eos < 0 || eos >= W) {
		panic(fmt.Sprintf("gpu.%s: eos column %d outside [0, %d)", op, eos, W))
	}
	eb := 0
	if eosBias {
		eb = 1
	}
	pp := nullPtr
	if params != nil {
		pp = params.ptr()
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, R, W)
		if n := R * W; n > 0 {
			b.launch(b.k["guide"], grid1(n), block256, ht.ptr(), out.ptr(), R, W, scale, padFrom, eos, eb, pp)
		}
	})
	return out
}

// Sample runs Zonos' sampler on the device, one block per row
// (compute.SamplerOps documents the stages and the noise layout).
func (b *Backend) Sample(logits, history, q compute.Tensor, s compute.SampleSpec, seed, counter uint64) compute.Tensor {
	return b.sample(logits, history, q, s, seed, counter, nil)
}

// SampleAt reads seed and counter from rng, I32 [4] (compute.GraphOps).
func (b *Backend) SampleAt(logits, history compute.Tensor, s compute.SampleSpec, rng compute.Tensor) compute.Tensor {
	rt := cast(rng)
	if rt.dt != compute.I32 || rt.n() != 4 {
		panic(fmt.Sprintf("gpu.SampleAt: rng tensor %v %v, want I32 [4]", rt.dt, rt.shape))
	}
	return b.sample(logits, history, nil, s, 0, 0, rt)
}

func (b *Backend) sample(logits, history, q compute.Tensor, s compute.SampleSpec, seed, counter uint64, rt *tensor) compute.Tensor {
	lt := f32Of(logits, "Sample")
	if len(lt.shape) != 2 {
		panic(fmt.Sprintf("gpu.Sample: logits %v, want [R, W]", lt.shape))
	}
	R, W := lt.shape[0], lt.shape[1]
	if W < 1 {
		panic(fmt.Sprintf("gpu.Sample: logits %v have no columns", lt.shape))
	}
	if s.TopK < 0 || s.Window < 0 {
		panic(fmt.Sprintf("gpu.Sample: top_k %d, window %d", s.TopK, s.Window))
	}
	var ht *tensor
	H, hstart := 0, 0
	if history != nil && s.Penalty != 1 {
		ht = cast(history)
		if ht.dt != compute.I32 || len(ht.shape) != 2 || ht.shape[0] != R {
			panic(fmt.Sprintf("gpu.Sample: history %v %v for %d rows", ht.shape, ht.dt, R))
		}
		H = ht.shape[1]
		if s.Window > 0 && H > s.Window {
			hstart = H - s.Window
		}
		if H == 0 {
			ht = nil
		}
	}
	var qt *tensor
	if q != nil && s.Temperature > 0 {
		qt = f32Of(q, "Sample")
		if !slices.Equal(qt.shape, lt.shape) {
			panic(fmt.Sprintf("gpu.Sample: noise %v for logits %v", qt.shape, lt.shape))
		}
	}
	var out *tensor
	b.do(func() {
		hp, qp, rp := nullPtr, nullPtr, nullPtr
		if rt != nil {
			rp = rt.ptr()
		}
		if ht != nil {
			hp = ht.ptr()
		}
		if qt != nil {
			qp = qt.ptr()
		}
		out = b.sampleRows(lt, hp, H, hstart, s, qp, seed, counter, rp, nullPtr)
	})
	return out
}

// sampleRows launches sample_rows over logits lt [R, W], one block per
// row, into a new I32 [R] (owner thread); hist, noise, rng and prm are
// the kernel's optional pointers (sampler.cu says what each overrides).
func (b *Backend) sampleRows(lt *tensor, hist cu.DevicePtr, H, hstart int, s compute.SampleSpec, noise cu.DevicePtr,
	seed, counter uint64, rng, prm cu.DevicePtr) *tensor {
	R, W := lt.shape[0], lt.shape[1]
	out := b.newTensor(compute.I32, R)
	if R == 0 {
		return out
	}
	probs := b.newTensor(compute.F32, R, W)
	order := b.newTensor(compute.I32, R, W)
	b.launch(b.k["sample_rows"], [3]int{R, 1, 1}, block256, lt.ptr(), hist, H, hstart, probs.ptr(), order.ptr(), out.ptr(),
		W, s.Temperature, s.TopP, s.TopK, s.MinP, s.Linear, s.Conf, s.Quad, s.Penalty, noise, seed, counter, rng, prm)
	probs.h.release()
	order.h.release()
	return out
}

// FeedAt launches step_feed (compute.GraphOps): the next decode step's
// input from this step's tokens, on the device.
func (b *Backend) FeedAt(tok, in compute.Tensor, f compute.StepFeed) compute.Tensor {
	tt, it := cast(tok), cast(in)
	if tt.dt != compute.I32 || it.dt != compute.I32 || tt.n() != 9*f.N || f.N < 1 || f.N > 256 ||
		f.State+compute.LoopWords*f.N > it.n() || f.Hist+9*f.N*f.Window > it.n() || f.RNG+4 > it.n() || f.Pos >= it.n() {
		panic(fmt.Sprintf("gpu.FeedAt: tokens %v %v, input %v %v for %+v", tt.dt, tt.shape, it.dt, it.shape, f))
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.I32, f.N, compute.FeedOut)
		th := (f.N + 31) / 32 * 32
		b.launch(b.k["step_feed"], [3]int{1, 1, 1}, [3]int{th, 1, 1}, tt.ptr(), it.ptr(), out.ptr(), f.N,
			f.Pos, f.RNG, f.Inc, f.Hist, f.Window, f.State, f.EOS, f.MASK)
	})
	return out
}
