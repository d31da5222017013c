//go:build cuda

package gpu

import (
	"os"
	"strconv"

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

// tcOff is ZONOS_TC=0: the large products run on the older kernels
// (linear_gemm, conv_gemm: one block per 64×64 output tile, no split-K,
// transposed convolutions over every tap), for before/after measurements
// and bisecting.
var tcOff = os.Getenv("ZONOS_TC") == "0"

// tcWideSmem is tc_wide's dynamic shared memory (TW_SMEM in kernels/tc.cu).
const tcWideSmem = kernels.WideSmem

// tcWbfSmem is tc_wbf's (kernels.WbfSmem).
const tcWbfSmem = kernels.WbfSmem

// wbfOff is ZONOS_TC_BF16=0: BF16-weight Linear products on tc_wide's TF32
// path instead of tc_wbf's BF16 one (for before/after measurements).
var wbfOff = os.Getenv("ZONOS_TC_BF16") == "0"

// wbfThreeParts is ZONOS_TC_PARTS=3: tc_wbf3, the activation in three
// BF16 parts instead of two (x to about 24 bits instead of 16; half the
// conformance error on the transformer pack, 3.3e-6 against 7.6e-6, and
// 1.1 ms more prefill: kernels/tc.cu), for measurements.
var wbfThreeParts = os.Getenv("ZONOS_TC_PARTS") == "3"

// ZONOS_CONV=old runs the convolutions as before conv_simt (for
// before/after measurements): on simt_gemm's 64 × 64 tiles (convOld) with
// the coarser split-K (convOldSplits). The kernels alone give
// bit-identical results for the same splits (TestConvSimtMatchesGemmTile).
//
// ZONOS_CONV=simt runs them on conv_simt (fp32 FMA chains) instead of
// conv_tc (tensor cores, three TF32 products per k step summed in fp32):
// conv_tc's before/after switch.
var (
	convOld       = os.Getenv("ZONOS_CONV") == "old"
	convOldSplits = convOld
	convTC        = os.Getenv("ZONOS_CONV") == ""
)

// convSplitPer is the reduction length per split of a convolution (384;
// ZONOS_CONV_SPLIT=n for measurements). It depends on nothing but the
// layer, as tcSplits requires. It goes with the tile width (convTileMax):
// on 64 × 128 tiles finer was faster (H200, 2026-11-29, same-run A/Bs of
// the streamed vocoder, docs/gpu/2026-11-29-conv-tc: 192 → 512 per split
// 47.5× → 40.7×; 192 → 128 48.5× → 51.7×; 128 → 96 49.8× → 48.7×); on
// 64 × 64 tiles, which double the blocks, 192 and 256 tie and beat 128
// and 384 (steady 16-frame emissions, TestVocoderVariants, 2026-11-30 run
// 7: 1.919 / 1.920 / 1.960 / 1.969 ms). On conv_tcp's 32-wide tiles with
// the steady chunk at 32 frames, 384 beat 256 and 128 (session 19, run 7:
// 32-frame emissions 2.582 / 2.656 / 2.911 ms; 16-frame ones 1.581 /
// 1.597 / 1.713 ms). conv_tcq folds the splits of a long input into its
// blocks (convFold), so the split now only serves short inputs.
var convSplitPer = envInt("ZONOS_CONV_SPLIT", 384)

// convSplitMax is the most splits of a convolution (16;
// ZONOS_CONV_SPLIT_MAX=n for measurements): the layers whose reduction
// passes 16·convSplitPer split into longer pieces.
var convSplitMax = envInt("ZONOS_CONV_SPLIT_MAX", 16)

// convFold is the share of a wave of conv_tcq blocks (percent; 4 blocks an
// SM) that a split convolution's output tiles must fill for its splits to
// be folded into the blocks (kernels/tc.cu, conv_tcq_tile): same bits, no
// partials, no tc_reduce_rows. ZONOS_CONV_FOLD=n for measurements; 0
// never folds.
var convFold = envIntZero("ZONOS_CONV_FOLD", 100)

// convDeep is conv_tcq_n32_deep on for grids it holds in one wave
// (ZONOS_CONV_DEEP=0: conv_tcq_n32 always, for measurements; the same
// outputs).
var convDeep = os.Getenv("ZONOS_CONV_DEEP") != "0"

// convDeepResident is how many conv_tcq_n32_deep blocks an SM holds (its
// 84 KiB of shared memory; __launch_bounds__ 2).
const convDeepResident = 2

// convDeepWave is the most conv_tcq_n32_deep blocks an SM is given
// (convDeepResident, one wave; ZONOS_CONV_DEEP_WAVE=n for measurements).
var convDeepWave = envInt("ZONOS_CONV_DEEP_WAVE", convDeepResident)

// tcqDeepSmem is conv_tcq_n32_deep's dynamic shared memory.
const tcqDeepSmem = kernels.TcqDeepSmem

// convTCQResident is how many conv_tcq blocks an SM holds (its
// __launch_bounds__ on the default 32-wide tile).
const convTCQResident = 4

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

// envIntZero is the non-negative integer in environment variable name,
// else def.
func envIntZero(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// envInt is the positive integer in environment variable name, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// tcSplits chooses split-K for a reduction of length kr with m output
// rows (a Linear's rows vary, a convolution's m is its channel count):
// about one split per 512 of kr, at most 8; for convolutions with many
// channels (the DAC's early stages, whose streamed chunks are short) one
// per 256, at most 16. Chunks are a multiple of the 32-wide k step. A
// convolution's choice depends on the layer alone, never on the signal
// length, so every window of a signal reduces in the same order.
//
// Convolutions split finer, one split per convSplitPer of kr (at most 16): the
// DAC's tiles are few at every stage of a streamed window (one 64-channel
// row of tiles per 64 channels), and with coarse splits most layers filled
// a fraction of a wave of blocks or left a second wave nearly empty. The
// split partials cost one extra pass over the output (tc_reduce).
func tcSplits(mode, kr, m int) (splits, chunk int) {
	s := min(8, max(1, kr/512))
	switch {
	case mode != tcLinear && !convOldSplits:
		s = min(convSplitMax, max(1, (kr+convSplitPer-1)/convSplitPer))
	case mode != tcLinear && m >= 384:
		s = min(16, max(1, kr/256))
	}
	chunk = max(32, ((kr+s-1)/s+31)/32*32)
	return max(1, (kr+chunk-1)/chunk), chunk
}

// wideSplitsOff is ZONOS_TC_SPLITS=old: tc_wide splits K by tcSplits' rule
// (one split per 512, whatever the grid), for before/after measurements.
var wideSplitsOff = os.Getenv("ZONOS_TC_SPLITS") == "old"

// wideSplitsWaves is ZONOS_TC_SPLITS=waves: wideSplits picks the split
// with the fewest waves of blocks times k per block instead of rounding
// (for measurements: at 32 rows, batch 16, a 2.7 % faster step, the
// prefill unchanged; docs/gpu/2026-11-30-session11 run 7).
var wideSplitsWaves = os.Getenv("ZONOS_TC_SPLITS") == "waves"

// reduceRowsOff is ZONOS_REDUCE_ROWS=0: split-K partials summed by
// tc_reduce (one-dimensional grid) instead of tc_reduce_rows (for
// before/after measurements; the sums are the same).
var reduceRowsOff = os.Getenv("ZONOS_REDUCE_ROWS") == "0"

// tcWideResident is how many tc_wide (or tc_wbf) blocks an SM holds (their
// shared memory, tcWideSmem or tcWbfSmem, allows 3 of 228 KiB; tc_wbf's 164
// registers a thread allow 3 too).
const tcWideResident = 3

// wideSplits splits K for tc_wide so that the grid is about one wave of
// resident blocks: as many splits as the output tiles leave room for
// (rounded), each at least 256 long, at most 8. A wide output needs none
// (no partials written and summed again by tc_reduce); a narrow one is
// split as finely as before. The split depends on the shape and the GPU
// only, so a product is reduced in the same order every time.
func wideSplits(kr, m, n, sms int) (splits, chunk int) {
	tiles := ((n + 127) / 128) * ((m + 63) / 64)
	slots := sms * tcWideResident
	s := (2*slots + tiles) / (2 * tiles) // round(sms·resident / tiles)
	if wideSplitsWaves {
		best := 0
		for c := 1; c <= max(1, min(8, kr/256)); c++ {
			cost := (tiles*c + slots - 1) / slots * (((kr+c-1)/c + 31) / 32 * 32)
			if best == 0 || cost < best {
				best, s = cost, c
			}
		}
	}
	s = max(1, min(s, 8, kr/256))
	chunk = max(32, ((kr+s-1)/s+31)/32*32)
	return max(1, (kr+chunk-1)/chunk), chunk
}

// convTCKernels are conv_tc's compiled tile widths (time steps per tile).
var convTCKernels = map[int]string{128: "conv_tc_n128", 64: "conv_tc_n64", 32: "conv_tc_n32"}

// convTCPKernels are conv_tcp's tile widths: conv_tc with the weights
// prepared once by conv_prep_a (convPrepA).
var convTCPKernels = map[int]string{64: "conv_tcp_n64", 32: "conv_tcp_n32"}

// convTCQKernels are conv_tcp's tile widths with the operands several k
// steps deep in flight (conv_tcq_tile): the same outputs.
var convTCQKernels = map[int]string{64: "conv_tcq_n64", 32: "conv_tcq_n32"}

// convPipe is conv_tcq on in place of conv_tcp (ZONOS_CONV_PIPE=0 runs
// conv_tcp, which fetches one k step ahead, for measurements).
var convPipe = os.Getenv("ZONOS_CONV_PIPE") != "0"

// convPrep is conv_tcp on (ZONOS_CONV_PREP=0 runs conv_tc_nTN, which
// splits and gathers the weights at every k step, for measurements; the
// outputs are the same).
var convPrep = os.Getenv("ZONOS_CONV_PREP") != "0"

// convPrepA returns w (fp32, a convolution's weight) laid out as
// conv_tcp's A operand by conv_prep_a, made on first use and kept with the
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

// convTileForce is ZONOS_CONV_TILE=128 (or 64, 32): conv_tc always on that
// tile width (before/after measurements of convTile; 0: convTile chooses).
var convTileForce = envInt("ZONOS_CONV_TILE", 0)

// convTileMax is the widest conv_tc tile convTile chooses (32;
// ZONOS_CONV_TILE_MAX=64 or 128 for measurements). The 128-wide tile needs
// 168 registers a thread (3 blocks an SM) and makes half the blocks: on
// the streamed DAC's layers, whose grids are one to three waves, the
// 64-wide one was faster wherever it was chosen (steady 16-frame
// emissions, TestVocoderVariants, 2026-11-30 runs 6 and 7: 2.013 against
// 2.139 ms, 1.960 against 2.088 ms). With the weights prepared once
// (conv_tcp) the 32-wide tile is faster still (run 12: 1.633 against
// 1.679 ms); on conv_tc the two tied (run 9: 1.918 against 1.933 ms).
var convTileMax = envInt("ZONOS_CONV_TILE_MAX", 32)

// convTile is the widest conv_tc tile that leaves at most an eighth of its
// columns empty for n output columns (one phase's, for a transposed
// convolution), else the 32-wide one. A streamed emission's early stages
// are short: the first convolution sees 16 frames plus its context, and a
// transposed one 17 inputs per phase, on 128-wide tiles mostly padding
// (ncu, H200, 2026-11-29: that transposed convolution alone took 225 µs
// of a 3.1 ms emission). Every output is the same arithmetic whatever the
// width, so windows stay exact.
func convTile(n int) int {
	if convTCKernels[convTileForce] != "" {
		return convTileForce
	}
	for _, w := range []int{128, 64} {
		if w > convTileMax {
			continue
		}
		if (n+w-1)/w*w-n <= n/8 {
			return w
		}
	}
	return 32
}

// tcShape describes the convolution of a conv-mode GEMM.
type tcShape struct {
	batch, cin, t, cout, kw, tout, stride, pad, dil int
	epi                                             convEpilogue // tcConvMode on conv_tc or conv_simt only
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
// that applies a convEpilogue (conv, tcGemm); the others need the
// epilogue's ops run after it. ZONOS_CONV_EPILOGUE=0 runs the epilogues as
// ops of their own (for measurements).
func fusesEpilogue(c compute.Conv1dSpec, cout int) bool {
	return !convEpilogueOff && !tcOff && !convOld && c.Groups == 1 && cout > 8
}

var convEpilogueOff = os.Getenv("ZONOS_CONV_EPILOGUE") == "0"

// tcReduce sums the split-K partials in work into out, adding the bias and
// a convolution's epilogue (epi: convEpilogue.args), in split order: on
// tc_reduce_rows, or tc_reduce where ZONOS_REDUCE_ROWS=0 or the rows
// exceed its grid. n is the product's column count, c the convolution's
// shape (zero for Linear).
func (b *Backend) tcReduce(mode int, work, bias cu.DevicePtr, out *tensor, splits, n int, c tcShape, epi []any) {
	total := out.n()
	rows, cols := total/max(1, n), n // TC_LINEAR's out is [m, n]; a convolution's [batch, cout, tout]
	if mode != tcLinear {
		rows, cols = c.batch*c.cout, c.tout
	}
	if !reduceRowsOff && rows < 1<<16 {
		b.launch(b.k["tc_reduce_rows"], [3]int{(cols + 255) / 256, rows, 1}, block256,
			append([]any{work, bias, out.ptr(), total, splits, mode, cols, c.cout}, epi...)...)
	} else {
		b.launch(b.k["tc_reduce"], grid1(total), block256, append([]any{work, bias, out.ptr(), total, splits, mode, n, c.cout, c.tout}, epi...)...)
	}
}

// tcGemm launches tc_wg (wg.go), tc_wbf or tc_wide, conv_tcq_n* (conv_tcp_n* or conv_tc_n* when asked), conv_simt or simt_gemm (and tc_reduce_rows when split),
// computing the m × n product reduced over kr into out (owner goroutine).
// For tcConvT the grid also runs one slice per output phase (stride of
// them) and n bounds the columns of one phase.
func (b *Backend) tcGemm(mode int, x, w *tensor, bias cu.DevicePtr, out *tensor, m, n, kr int, c tcShape) {
	if mode == tcLinear && b.usesWg(w, m, kr) {
		b.tcWg(x, w, bias, out, m, n, kr)
		return
	}
	wide := mode == tcLinear && w.dt != compute.F32 && kr%8 == 0
	splits, chunk := tcSplits(mode, kr, m)
	if wide && !wideSplitsOff {
		splits, chunk = wideSplits(kr, m, n, b.sms)
	}
	phases, batch := 1, 1
	if mode != tcLinear {
		batch = c.batch
	}
	if mode == tcConvT {
		phases = c.stride
	}
	wp, wdt := w.ptr(), int(w.dt)
	kernel, tileN, smem := "simt_gemm", 64, 0 // fp32 FMAs: fp32 weights
	aprep := nullPtr                          // conv_tcp's prepared weights
	switch {
	case wide && w.dt == compute.BF16 && !wbfOff:
		kernel, tileN, smem = "tc_wbf", 128, tcWbfSmem // BF16 weights: BF16 products of the activation's two parts
		if wbfThreeParts {
			kernel = "tc_wbf3"
		}
	case wide:
		kernel, tileN, smem = "tc_wide", 128, tcWideSmem // BF16/F16 weights: exact in TF32; rows in 16-byte pieces
	case mode != tcLinear && !convOld && convTC:
		tileN = convTile(n) // convolutions on tensor cores: coalesced input gather
		kernel = convTCKernels[tileN]
		if convPrep && tileN <= 64 {
			kernel = convTCPKernels[tileN]
			if convPipe {
				kernel = convTCQKernels[tileN]
			}
			aprep = b.convPrepA(w, mode, m, kr, c).ptr()
		}
	case mode != tcLinear && !convOld:
		kernel, tileN = "conv_simt", 128 // convolutions on fp32 FMAs: coalesced input gather
	}
	if kernel == convTCQKernels[tileN] {
		tiles := (n + tileN - 1) / tileN * ((m + 63) / 64) * batch * phases
		splits = b.foldSplits(splits, tiles, convTCQResident)
		if tileN == 32 && convDeep && tiles*splits <= convDeepWave*b.sms {
			kernel, smem = "conv_tcq_n32_deep", tcqDeepSmem
		}
	}
	if c.epi != (convEpilogue{}) && (mode != tcConvMode || kernel == "simt_gemm") {
		panic("gpu: a convolution epilogue on a kernel without one")
	}
	epi := c.epi.args()
	work, total := nullPtr, out.n()
	var wk *tensor
	if splits > 1 {
		wk = b.newTensor(compute.F32, splits*total)
		work = wk.ptr()
	}
	b.launchSmem(b.k[kernel], [3]int{(n + tileN - 1) / tileN, (m + 63) / 64, batch * phases * splits}, [3]int{128, 1, 1}, smem,
		append(append([]any{x.ptr(), wp, bias, out.ptr(), work, mode, m, n, kr, wdt, splits, chunk,
			c.cin, c.t, c.cout, c.kw, c.tout, c.stride, c.pad, c.dil}, epi...), aprep)...)
	if wk != nil {
		b.tcReduce(mode, work, bias, out, splits, n, c, epi)
		wk.h.release()
	}
}
