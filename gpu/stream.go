//go:build cuda

package gpu

import (
	"fmt"
	"os"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// The residual stream between the backbone's blocks (compute.ResidualStream,
// compute.Mamba2Stream) on the chunk GEMV: the projection that ends a block
// adds the residual in its epilogue and computes the new stream's LayerNorm
// statistics once (its blocks write partial sums, the last one adds them
// up), and the next block's first projection normalizes its input as it
// loads it. The layernorm kernel between them goes from the decode step.
// The statistics travel with the stream tensor (tensor.stats); a stream
// without them (the embeddings before the first block) takes the
// layernorm kernel.
//
// lnFoldOff (ZONOS_LN_FOLD=0) declines both, for measurements.
var lnFoldOff = os.Getenv("ZONOS_LN_FOLD") == "0"

// ticketSlots is how many election counters a lane has.
const ticketSlots = 4096

// allocTickets gives the lane its zeroed counters (owner goroutine, not
// while capturing: the memset is synchronous).
func (b *Backend) allocTickets() error {
	p, err := cu.MemAlloc(4 * ticketSlots)
	if err != nil {
		return fmt.Errorf("cuda: allocating %d tickets: %w", ticketSlots, err)
	}
	if err := cu.MemsetD32(p, 0, ticketSlots); err != nil {
		_ = cu.MemFree(p)
		return fmt.Errorf("cuda: zeroing tickets: %w", err)
	}
	b.tickets = p
	return nil
}

// ticket hands out the next counter (owner goroutine). Launches on one
// stream run their elections one after another, so reuse is safe; round
// robin keeps a captured graph's counters apart from later launches anyway.
func (b *Backend) ticket() cu.DevicePtr {
	p := b.tickets + cu.DevicePtr(4*(b.ticketNext%ticketSlots))
	b.ticketNext++
	return p
}

// streamRows is the row count of an activation [rows…, k] the residual
// stream ops take (≤ 2: the CFG pair of one utterance), else 0.
func (b *Backend) streamRows(x *tensor, k int) int {
	if lnFoldOff || !b.useGemvChunk(k) || len(x.shape) == 0 || x.shape[len(x.shape)-1] != k {
		return 0
	}
	m := x.n() / k
	if m < 1 || m > 2 {
		return 0
	}
	return m
}

// bf16Weight is w as a 2-D BF16 weight the chunk GEMV takes, else nil.
func bf16Weight(w compute.Tensor) *tensor {
	wt := cast(w)
	if len(wt.shape) != 2 || wt.dt != compute.BF16 {
		return nil
	}
	return wt
}

// resArgs are the CHUNK_RESOUT arguments for a stream of m rows into out
// (owner goroutine): out gets its statistics tensor; the partials are
// released (stream order keeps them until the kernel has run).
func (b *Backend) resArgs(out, res *tensor, m, n, k int) ([]any, func()) {
	rows := gemvChunkRows(k)
	grid := (n + rows - 1) / rows
	partials := b.newTensor(compute.F32, grid, 2, 2, 2) // doubles [grid][2][2]
	out.stats = b.newTensor(compute.F32, 2, 2, 2)       // doubles [2][2]
	args := []any{res.ptr(), partials.ptr(), b.ticket(), out.stats.ptr()}
	return args, partials.h.release
}

// lnArgs are the CHUNK_LNIN arguments for a stream x with statistics.
func (b *Backend) lnArgs(x *tensor, pre compute.Norm) []any {
	bp := nullPtr
	if pre.B != nil {
		bp = b.asF32(cast(pre.B)).ptr()
	}
	return []any{x.stats.ptr(), b.asF32(cast(pre.W)).ptr(), bp, pre.Eps}
}

// normOK checks a pre-norm's parameters for rows of d.
func normOK(pre compute.Norm, d int) bool {
	return pre.W != nil && cast(pre.W).n() == d && (pre.B == nil || cast(pre.B).n() == d)
}

var (
	gemvChunkResKernel     = [5]string{1: "gemv_chunk_res_k1", 2: "gemv_chunk_res_k2", 4: "gemv_chunk_res_k4"}
	gemvChunkLNKernel      = [5]string{1: "gemv_chunk_ln_k1", 2: "gemv_chunk_ln_k2", 4: "gemv_chunk_ln_k4"}
	gemvChunkLNConvKernel  = [5]string{1: "gemv_chunk_lnconv_k1", 2: "gemv_chunk_lnconv_k2", 4: "gemv_chunk_lnconv_k4"}
	gemvChunkNormResKernel = [5]string{1: "gemv_chunk_normres_k1", 2: "gemv_chunk_normres_k2", 4: "gemv_chunk_normres_k4"}
)

// LinearAdd (compute.ResidualStream) is Linear(x, w) + residual for one or
// two rows on the chunk GEMV, with the sum's row statistics.
func (b *Backend) LinearAdd(x, w, residual compute.Tensor) (compute.Tensor, bool) {
	xt, rt, wt := f32Of(x, "LinearAdd"), f32Of(residual, "LinearAdd"), bf16Weight(w)
	if wt == nil {
		return nil, false
	}
	n, k := wt.shape[0], wt.shape[1]
	m := b.streamRows(xt, k)
	if m == 0 || rt.n() != m*n || rt.shape[len(rt.shape)-1] != n {
		return nil, false
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, rt.shape...)
		args, done := b.resArgs(out, rt, m, n, k)
		b.launchChunk(gemvChunkResKernel, xt.ptr(), wt.ptr(), nullPtr, out.ptr(), m, n, k, gemvChunkEarly, args...)
		done()
	})
	return out, true
}

// AddNormLinear (compute.ResidualStream) is Linear(LayerNorm(x), w) for a
// stream x that a LinearAdd wrote (its statistics at hand; residual nil);
// it declines anything else.
func (b *Backend) AddNormLinear(x, residual compute.Tensor, pre compute.Norm, w compute.Tensor) (compute.Tensor, compute.Tensor, bool) {
	xt, wt := f32Of(x, "AddNormLinear"), bf16Weight(w)
	if residual != nil || xt.stats == nil || wt == nil {
		return nil, nil, false
	}
	n, k := wt.shape[0], wt.shape[1]
	m := b.streamRows(xt, k)
	if m == 0 || !normOK(pre, k) {
		return nil, nil, false
	}
	shape := append(append([]int(nil), xt.shape[:len(xt.shape)-1]...), n)
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		b.launchChunk(gemvChunkLNKernel, xt.ptr(), wt.ptr(), nullPtr, out.ptr(), m, n, k, gemvChunkEarly, b.lnArgs(xt, pre)...)
	})
	return out, x, true
}

// Mamba2Stream (compute.Mamba2Stream) is Mamba2Block on the residual
// stream: in_proj normalizes with the statistics of hidden (a LinearAdd's
// or a Mamba2Stream's output; otherwise the layernorm kernel runs first,
// as before the first block), and out_proj adds the stream and computes
// the new statistics.
func (b *Backend) Mamba2Stream(hidden, residual compute.Tensor, pre compute.Norm, inProj, outProj compute.Tensor, w compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec) (compute.Tensor, bool) {
	ht := f32Of(hidden, "Mamba2Stream")
	if lnFoldOff || len(ht.shape) != 3 || ht.shape[1] != 1 || !normOK(pre, ht.shape[2]) {
		return nil, false
	}
	if residual != nil && !sameShape(f32Of(residual, "Mamba2Stream").shape, ht.shape) {
		return nil, false
	}
	mix, ok := b.mamba2Mixer(ht, inProj, outProj, w, convState, ssmState, s)
	if !ok || b.streamRows(ht, ht.shape[2]) == 0 {
		return nil, false
	}
	var out *tensor
	b.do(func() {
		stream, in := ht, []any(nil)
		if residual == nil && ht.stats != nil {
			in = b.lnArgs(ht, pre)
		} else { // no statistics yet: the layernorm kernel, then in_proj as Mamba2Block runs it
			normed := b.newTensor(compute.F32, ht.shape...)
			if residual != nil {
				stream = b.newTensor(compute.F32, ht.shape...)
				b.layerNorm(ht, cast(residual), cast(pre.W), optTensor(pre.B), normed, stream, pre.Eps)
			} else {
				b.layerNorm(ht, nil, cast(pre.W), optTensor(pre.B), normed, nil, pre.Eps)
			}
			ht = normed
		}
		out = b.newTensor(compute.F32, stream.shape...)
		mix.run(ht, in, stream, out)
	})
	return out, true
}

// optTensor is t as a CUDA tensor, nil for nil.
func optTensor(t compute.Tensor) *tensor {
	if t == nil {
		return nil
	}
	return cast(t)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
