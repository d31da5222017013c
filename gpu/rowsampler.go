//go:build cuda

package gpu

import (
	"fmt"

	"zonostream/engine/compute"
)

var _ compute.RowSamplerOps = (*Backend)(nil)

// GuideRows is Guide with each utterance's scale and padFrom read on the
// device from its params row (compute.RowSamplerOps): the guide kernel
// with its params pointer set, so a recorded step serves any mix.
func (b *Backend) GuideRows(heads, params compute.Tensor, eos int, eosBias bool) compute.Tensor {
	ht := f32Of(heads, "GuideRows")
	if len(ht.shape) != 3 || ht.shape[1]%9 != 0 {
		panic(fmt.Sprintf("gpu.GuideRows: heads %v, want [2, 9n, W]", ht.shape))
	}
	return b.guide("GuideRows", heads, 0, 0, eos, eosBias, rowParamsOf(params, ht.shape[1], "GuideRows"))
}

// SampleRows is Sample with each utterance's knobs, window, seed and
// counter read on the device from its params row (compute.RowSamplerOps):
// sample_rows with its params pointer set, which also indexes the noise
// within each utterance's own [9, W] grid and skips inactive rows.
func (b *Backend) SampleRows(logits, history, params compute.Tensor) compute.Tensor {
	lt := f32Of(logits, "SampleRows")
	if len(lt.shape) != 2 || lt.shape[0]%9 != 0 || lt.shape[1] < 1 {
		panic(fmt.Sprintf("gpu.SampleRows: logits %v, want [9n, W] with W ≥ 1", lt.shape))
	}
	R := lt.shape[0]
	pt := rowParamsOf(params, R, "SampleRows")
	var ht *tensor
	H := 0
	if history != nil {
		ht = cast(history)
		if ht.dt != compute.I32 || len(ht.shape) != 2 || ht.shape[0] != R {
			panic(fmt.Sprintf("gpu.SampleRows: history %v %v for %d rows", ht.shape, ht.dt, R))
		}
		if H = ht.shape[1]; H == 0 {
			ht = nil
		}
	}
	var out *tensor
	b.do(func() {
		hp := nullPtr
		if ht != nil {
			hp = ht.ptr()
		}
		out = b.sampleRows(lt, hp, H, 0, compute.SampleSpec{}, nullPtr, 0, 0, nullPtr, pt.ptr())
	})
	return out
}

// rowParamsOf checks that params is I32 holding one RowParamWords row
// per utterance of R rows (nine each).
func rowParamsOf(params compute.Tensor, R int, op string) *tensor {
	pt := cast(params)
	if pt.dt != compute.I32 || pt.n() != R/9*compute.RowParamWords {
		panic(fmt.Sprintf("gpu.%s: params %v %v for %d utterances, want I32 [%d, %d]",
			op, pt.dt, pt.shape, R/9, R/9, compute.RowParamWords))
	}
	return pt
}
