//go:build cuda

package gpu

import (
	"os"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// The DAC's convolutions on Hopper's TF32 wgmmas (conv_wg,
// kernels/wgmma.cu): conv_tcq's arithmetic — per 8-wide k step three TF32
// products from zero, then one IEEE add — with the products issued as
// m64n64k8 wgmmas that read both operands from shared memory, in place of
// conv_tcq's chains of dependent mma.sync products (its large layers held
// the tensor pipe at 37 %: docs/gpu/2026-11-30-session23). The weights are
// laid out once per weight by conv_prep_wg (convPrepWg). When on, it
// serves every length of every convolution, so a streamed window is still
// reduced as the whole signal is.
//
// conv_wg was written in session 23 after the device time was spent: it
// has not run on a GPU. Its module (kernels/convwg.cu) is therefore loaded
// only with ZONOS_CONV_WG=1 on Hopper, where a module that failed to load
// could stop the backend only for someone who asked for it. Run on an
// H200 with ZONOS_CONV_WG=1: TestConvWgMatches (its outputs against
// conv_tcq's, and whether they are the same bits), TestConvWindowExact,
// TestDACRealShape, TestVocoderVariants and conformance.

// convWgModule is conv_wg's PTX module.
const convWgModule = "convwg"

// convWgOn is ZONOS_CONV_WG=1.
var convWgOn = os.Getenv("ZONOS_CONV_WG") == "1"

// convWgSmem is conv_wg's dynamic shared memory (kernels.ConvWgSmem).
const convWgSmem = kernels.ConvWgSmem

// convWgResident is how many conv_wg blocks an SM holds: its 97 KiB of
// shared memory allow two of 228 KiB.
const convWgResident = 2

// usesConvWg reports whether the convolutions run on conv_wg (its module
// loaded, and asked for).
func (b *Backend) usesConvWg() bool {
	return b.k["conv_wg"] != nil && convWgOn && !tcOff && !convOld && convTC
}

// convPrepWg returns w (fp32, a convolution's weight) laid out for conv_wg
// by conv_prep_wg (convLayout): tiles of 64 rows and 32-wide k steps.
func (b *Backend) convPrepWg(w *tensor, mode, m, kr int, c tcShape) *tensor {
	return b.convLayout(w, weightLayout{"conv_prep_wg", 32, &w.prepWg, &w.prepWgKey}, mode, m, kr, c)
}

// convWgGemm is tcGemm's convolution (mode tcConvMode or tcConvT) on
// conv_wg: the same split-K pieces (tcSplits), folded into the blocks
// where the output tiles fill a wave of them (convFold), else summed by
// tcReduce.
func (b *Backend) convWgGemm(mode int, x, w *tensor, bias cu.DevicePtr, out *tensor, m, n, kr int, c tcShape) {
	splits, chunk := tcSplits(mode, kr, m)
	phases := 1
	if mode == tcConvT {
		phases = c.stride
	}
	splits = b.foldSplits(splits, (n+63)/64*((m+63)/64)*c.batch*phases, convWgResident)
	aprep := b.convPrepWg(w, mode, m, kr, c)
	work, total := nullPtr, out.n()
	var wk *tensor
	if splits > 1 {
		wk = b.newTensor(compute.F32, splits*total)
		work = wk.ptr()
	}
	epi := c.epi.args()
	b.launchSmem(b.k["conv_wg"], [3]int{(n + 63) / 64, (m + 63) / 64, c.batch * phases * splits}, [3]int{128, 1, 1}, convWgSmem,
		append([]any{x.ptr(), aprep.ptr(), bias, out.ptr(), work, mode, m, kr, splits, chunk,
			c.cin, c.t, c.cout, c.kw, c.tout, c.stride, c.pad, c.dil}, epi...)...)
	if wk != nil {
		b.tcReduce(mode, work, bias, out, splits, n, c, epi)
		wk.h.release()
	}
}
