//go:build cuda

package gpu

import (
	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// Modes of the tiled GEMMs (gpu/kernels/tc.cu).
const (
	tcLinear   = 0
	tcConvMode = 1
	tcConvT    = 2
)

// tcWideSmem is tc_wide's dynamic shared memory (TW_SMEM in kernels/tc.cu).
const tcWideSmem = kernels.WideSmem

// tcWbfSmem is tc_wbf's (kernels.WbfSmem).
const tcWbfSmem = kernels.WbfSmem

// convSplitPer is the reduction length per split of a convolution. It
// depends on nothing but the layer, as tcSplits requires. On the 32-wide
// conv_tcq tiles with the streamer's steady 32-frame chunk, 384 beat 256
// and 128 (H200, 2026-11-30: 32-frame emissions 2.582 / 2.656 / 2.911 ms,
// 16-frame ones 1.581 / 1.597 / 1.713 ms). A long input's splits are
// folded into the blocks (convFold), so the split serves short inputs.
const convSplitPer = 384

// convSplitMax is the most splits of a convolution: the layers whose
// reduction passes 16·convSplitPer split into longer pieces.
const convSplitMax = 16

// convFold is the share of a wave of conv_tcq blocks (percent;
// convTCQResident blocks an SM) that a split convolution's output tiles
// must fill for its splits to be folded into the blocks (kernels/tc.cu,
// conv_tcq_tile): the same bits, with no partials and no tc_reduce_rows.
// 0 never folds. It is a variable only so that tests can put one shape on
// either side of it.
var convFold = 100

// convDeepResident is how many conv_tcq_n32_deep blocks an SM holds (its
// 84 KiB of shared memory; __launch_bounds__ 2).
const convDeepResident = 2

// convDeepWave is the most conv_tcq_n32_deep blocks an SM is given: grids
// of at most one wave (convDeepResident blocks an SM) run on it, larger
// ones on conv_tcq_n32; the outputs are the same. 0 never takes it. A
// variable only so that tests can run a shape on either kernel.
var convDeepWave = convDeepResident

// tcqDeepSmem is conv_tcq_n32_deep's dynamic shared memory.
const tcqDeepSmem = kernels.TcqDeepSmem

// convTCQResident is how many conv_tcq_n32 blocks an SM holds (its
// __launch_bounds__).
const convTCQResident = 4

// convTileN is the width in time steps of a conv_tcq tile. The 32-wide
// tile is the fastest on the streamed DAC's layers, whose grids are one to
// three waves: on H200 (2026-11-30, steady 16-frame emissions) 64-wide
// tiles took 1.679 ms against 1.633 ms, and 128-wide ones (168 registers
// a thread, 3 blocks an SM, half the blocks) were slower still. Every
// output is the same arithmetic whatever the width, so windows stay exact.
const convTileN = 32

// foldSplits returns 1 where a split convolution's output tiles fill
// convFold % of a wave of its kernel's blocks (resident an SM), whose
// blocks then fold the split pieces in the same order (chunk stays the
// split length: kernels/tc.cu, conv_tcq_tile); else splits.
func (b *Backend) foldSplits(splits, tiles, resident int) int {
	if splits > 1 && convFold > 0 && tiles*100 >= convFold*b.sms*resident {
		return 1
	}
	return splits
}

// tcSplits chooses split-K for a reduction of length kr: for a Linear
// about one split per 512 of kr, at most 8; for a convolution one per
// convSplitPer, at most convSplitMax. Chunks are a multiple of the 32-wide
// k step. A convolution's choice depends on the layer alone, never on the
// signal length, so every window of a signal reduces in the same order.
//
// Convolutions split finely because the DAC's tiles are few at every stage
// of a streamed window (one 64-channel row of tiles per 64 channels): with
// coarse splits most layers filled a fraction of a wave of blocks or left
// a second wave nearly empty. The split partials cost one extra pass over
// the output (tc_reduce_rows), which conv_tcq avoids where the tiles alone
// fill the GPU (foldSplits).
func tcSplits(mode, kr int) (splits, chunk int) {
	s := min(8, max(1, kr/512))
	if mode != tcLinear {
		s = min(convSplitMax, max(1, (kr+convSplitPer-1)/convSplitPer))
	}
	chunk = max(32, ((kr+s-1)/s+31)/32*32)
	return max(1, (kr+chunk-1)/chunk), chunk
}

// tcWideResident is how many tc_wide (or tc_wbf) blocks an SM holds (their
// shared memory, tcWideSmem or tcWbfSmem, allows 3 of 228 KiB; tc_wbf's 164
// registers a thread allow 3 too).
const tcWideResident = 3

// wideSplits splits K for tc_wide and tc_wbf so that the grid is about one
// wave of resident blocks: as many splits as the output tiles leave room
// for (rounded), each at least 256 long, at most 8. A wide output needs
// none (no partials written and summed again); a narrow one is split
// finely. The split depends on the shape and the GPU only, so a product
// is reduced in the same order every time.
func wideSplits(kr, m, n, sms int) (splits, chunk int) {
	tiles := ((n + 127) / 128) * ((m + 63) / 64)
	slots := sms * tcWideResident
	s := (2*slots + tiles) / (2 * tiles) // round(sms·resident / tiles)
	s = max(1, min(s, 8, kr/256))
	chunk = max(32, ((kr+s-1)/s+31)/32*32)
	return max(1, (kr+chunk-1)/chunk), chunk
}

// convPrepA returns w (fp32, a convolution's weight) laid out as
// conv_tcq's A operand by conv_prep_a, made on first use and kept with the
// weight like asF32's copy: 8 bytes a value (its two TF32 parts), tiles
// padded to 64 rows and 16-wide k steps, per output phase for a
// transposed convolution.
func (b *Backend) convPrepA(w *tensor, mode, m, kr int, c tcShape) *tensor {
	phases := 1
	if mode == tcConvT {
		phases = c.stride
	}
	key := [2]int{mode, phases}
	if w.prep != nil && w.prepKey == key {
		return w.prep
	}
	mtiles, ksteps := (m+63)/64, (kr+15)/16
	pt := b.newTensor(compute.I32, phases*mtiles*ksteps*2048)
	b.launch(b.k["conv_prep_a"], grid1(phases*mtiles*ksteps*1024), block256, w.ptr(), pt.ptr(), mode, m, kr, c.cout, c.kw, c.stride, phases, mtiles, ksteps)
	b.pool.mu.Lock()
	capturing := b.pool.capturing != nil
	b.pool.mu.Unlock()
	if !capturing { // made inside a graph, it is only filled by the replays
		// The layout is kept for every lane, and another lane's stream
		// may read it next: it is complete before anyone else sees it.
		b.sync("laying out convolution weights")
		w.prep, w.prepKey = pt, key
	}
	return pt
}

// tcShape describes the convolution of a conv-mode GEMM.
type tcShape struct {
	batch, cin, t, cout, kw, tout, stride, pad, dil int
	epi                                             convEpilogue // tcConvMode only
}

// convEpilogue is the work a convolution does as it stores each output
// (kernels/tc.cu conv_epilogue): Snake with alpha per output channel, then
// adding res[b, co, resOff + t] (res [B, Cout, resT]). Zero: none.
type convEpilogue struct {
	alpha, res *tensor
	resOff     int
}

// args are the kernels' epilogue parameters.
func (e convEpilogue) args() []any {
	alpha, res, resT := nullPtr, nullPtr, 0
	if e.alpha != nil {
		alpha = e.alpha.ptr()
	}
	if e.res != nil {
		res, resT = e.res.ptr(), e.res.shape[2]
	}
	return []any{alpha, res, resT, e.resOff}
}

// fusesEpilogue reports whether Conv1d of this geometry runs on a kernel
// that applies a convEpilogue (conv_tcq through tcGemm, and tc_reduce_rows
// after it); the others need the epilogue's ops run after it.
func fusesEpilogue(c compute.Conv1dSpec, cout int) bool {
	return c.Groups == 1 && cout > 8
}

// tcReduce sums the split-K partials in work into out, adding the bias and
// a convolution's epilogue (epi: convEpilogue.args), in split order: on
// tc_reduce_rows, or tc_reduce where the rows exceed its grid's 65535. n
// is the product's column count, c the convolution's shape (zero for
// Linear).
func (b *Backend) tcReduce(mode int, work, bias cu.DevicePtr, out *tensor, splits, n int, c tcShape, epi []any) {
	total := out.n()
	rows, cols := total/max(1, n), n // TC_LINEAR's out is [m, n]; a convolution's [batch, cout, tout]
	if mode != tcLinear {
		rows, cols = c.batch*c.cout, c.tout
	}
	if rows < 1<<16 {
		b.launch(b.k["tc_reduce_rows"], [3]int{(cols + 255) / 256, rows, 1}, block256,
			append([]any{work, bias, out.ptr(), total, splits, mode, cols, c.cout}, epi...)...)
	} else {
		b.launch(b.k["tc_reduce"], grid1(total), block256, append([]any{work, bias, out.ptr(), total, splits, mode, n, c.cout, c.tout}, epi...)...)
	}
}

// tcGemm computes the m × n product reduced over kr into out (owner
// goroutine), choosing the kernel by the operands:
//
//   - Linear with a BF16 weight: tc_wg on Hopper from wgMinRows rows
//     (wg.go), else tc_wbf (BF16 products of the activation's two BF16
//     parts); with an F16 weight tc_wide (TF32 products); both need
//     K % 8 == 0 (16-byte rows) and split K by wideSplits;
//   - Linear with an fp32 weight (or K % 8 ≠ 0): simt_gemm's fp32 FMAs;
//   - a convolution (tcConvMode, tcConvT): conv_tcq_n32 on the weights
//     laid out once by conv_prep_a, or conv_tcq_n32_deep for grids of at
//     most one wave.
//
// For tcConvT the grid also runs one slice per output phase (stride of
// them) and n bounds the columns of one phase.
func (b *Backend) tcGemm(mode int, x, w *tensor, bias cu.DevicePtr, out *tensor, m, n, kr int, c tcShape) {
	if mode == tcLinear && b.usesWg(w, m, kr) {
		b.tcWg(x, w, bias, out, m, n, kr)
		return
	}
	p := tcPlan{kernel: "simt_gemm", tileN: 64}
	p.splits, p.chunk = tcSplits(mode, kr)
	switch {
	case mode != tcLinear:
		p.kernel, p.tileN = "conv_tcq_n32", convTileN
		p.aprep = b.convPrepA(w, mode, m, kr, c).ptr()
		tiles := (n + p.tileN - 1) / p.tileN * ((m + 63) / 64) * c.batch * c.phases(mode)
		p.splits = b.foldSplits(p.splits, tiles, convTCQResident)
		if tiles*p.splits <= convDeepWave*b.sms {
			p.kernel, p.smem = "conv_tcq_n32_deep", tcqDeepSmem
		}
	case w.dt == compute.F32 || kr%8 != 0: // fp32 FMAs
	case w.dt == compute.BF16:
		p.kernel, p.tileN, p.smem = "tc_wbf", 128, tcWbfSmem
		p.splits, p.chunk = wideSplits(kr, m, n, b.sms)
	default: // F16: exact in TF32
		p.kernel, p.tileN, p.smem = "tc_wide", 128, tcWideSmem
		p.splits, p.chunk = wideSplits(kr, m, n, b.sms)
	}
	b.tcRun(p, mode, x, w, bias, out, m, n, kr, c)
}

// tcPlan is how tcGemm runs a product: kernel over tileN-wide output tiles
// with smem bytes of dynamic shared memory, K in splits pieces of chunk,
// and a convolution's weights as conv_prep_a laid them out (aprep).
type tcPlan struct {
	kernel        string
	tileN, smem   int
	splits, chunk int
	aprep         cu.DevicePtr
}

// phases is the output phases a convolution's grid runs: its stride for
// tcConvT, else 1.
func (c tcShape) phases(mode int) int {
	if mode == tcConvT {
		return c.stride
	}
	return 1
}

// tcRun launches plan p over the product (grid: tiles of n, 64-row tiles
// of m, batch · phases · splits), then tcReduce when it is split (owner
// goroutine).
func (b *Backend) tcRun(p tcPlan, mode int, x, w *tensor, bias cu.DevicePtr, out *tensor, m, n, kr int, c tcShape) {
	if c.epi != (convEpilogue{}) && mode != tcConvMode {
		panic("gpu: a convolution epilogue on a kernel without one")
	}
	batch := 1
	if mode != tcLinear {
		batch = c.batch
	}
	epi := c.epi.args()
	work, total := nullPtr, out.n()
	var wk *tensor
	if p.splits > 1 {
		wk = b.newTensor(compute.F32, p.splits*total)
		work = wk.ptr()
	}
	b.launchSmem(b.k[p.kernel], [3]int{(n + p.tileN - 1) / p.tileN, (m + 63) / 64, batch * c.phases(mode) * p.splits}, [3]int{128, 1, 1}, p.smem,
		append(append([]any{x.ptr(), w.ptr(), bias, out.ptr(), work, mode, m, n, kr, int(w.dt), p.splits, p.chunk,
			c.cin, c.t, c.cout, c.kw, c.tout, c.stride, c.pad, c.dil}, epi...), p.aprep)...)
	if wk != nil {
		b.tcReduce(mode, work, bias, out, p.splits, n, c, epi)
		wk.h.release()
	}
}
