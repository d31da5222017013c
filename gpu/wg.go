//go:build cuda

package gpu

import (
	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// The prefill projections on Hopper run on tc_wg (kernels/wgmma.cu): the
// activation split once into two BF16 planes by bf16_parts, then 64 × 128
// output tiles over all of k on warpgroup tensor-core instructions. The
// products are tc_wbf's (the same two parts, each product exact in fp32);
// only the order of the fp32 additions differs.

// wgMinRows is the fewest rows tc_wg takes (a prefix of 24 positions, CFG
// doubled). Fewer rows (a batched decode step's) go to gemv_tc up to 32
// (gemv.go) and to tc_wbf above, whose 3 resident blocks an SM and finer
// split-K suit short products.
const wgMinRows = 48

// wgResident is how many tc_wg blocks an SM holds: kernels.WgSmem (97 KiB)
// allows two of its 228 KiB.
const wgResident = 2

// tcWgSmem is tc_wg's dynamic shared memory (kernels.WgSmem).
const tcWgSmem = kernels.WgSmem

// usesWg reports whether Linear of m rows over kr on w runs on tc_wg.
func (b *Backend) usesWg(w *tensor, m, kr int) bool {
	return b.wgmmaPrefill && w.dt == compute.BF16 && kr%8 == 0 && m >= wgMinRows
}

// wgSplits splits k only when the output tiles fill less than half the
// resident blocks: as many splits as the tiles leave room for, each at
// least 512 long, at most 8, in whole 64-wide k steps. It depends on the
// shape and the GPU only, so a product is reduced in the same order every
// time.
func wgSplits(kr, m, n, sms int) (splits, chunk int) {
	tiles := ((n + 127) / 128) * ((m + 63) / 64)
	s := max(1, min((sms*wgResident)/tiles, kr/512, 8)) // 1 once the tiles fill over half the slots
	chunk = ((kr+s-1)/s + 63) / 64 * 64
	return (kr + chunk - 1) / chunk, chunk
}

// tcWg computes out[m, n] = x·wᵀ + bias for BF16 w on tc_wg (owner
// goroutine), summing split-K partials with tcReduce.
func (b *Backend) tcWg(x, w *tensor, bias cu.DevicePtr, out *tensor, m, n, kr int) {
	planes := b.newTensor(compute.BF16, 2, m, kr)
	b.launch(b.k["bf16_parts"], [3]int{(m*kr/4 + 255) / 256, 1, 1}, block256, x.ptr(), planes.ptr(), m*kr)
	splits, chunk := wgSplits(kr, m, n, b.sms)
	work := nullPtr
	var wk *tensor
	if splits > 1 {
		wk = b.newTensor(compute.F32, splits*m*n)
		work = wk.ptr()
	}
	b.launchSmem(b.k["tc_wg"], [3]int{(n + 127) / 128, (m + 63) / 64, splits}, [3]int{128, 1, 1}, tcWgSmem,
		planes.ptr(), w.ptr(), bias, out.ptr(), work, m, n, kr, splits, chunk)
	planes.h.release()
	if wk != nil {
		b.tcReduce(tcLinear, work, bias, out, splits, n, tcShape{}, convEpilogue{}.args())
		wk.h.release()
	}
}
