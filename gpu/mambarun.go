//go:build cuda

package gpu

import (
	"encoding/binary"
	"math"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// The persistent Mamba2 run (mamba_run in kernels/mamba2.cu, Hopper): a
// decode step's consecutive Mamba2 blocks in one kernel of one block per
// SM, whose producer warp streams every weight row and state row the block
// will read through a shared-memory ring while its consumer warps do the
// row work and wait at grid barriers. The constants mirror the kernel's.
const (
	runStages   = kernels.MambaRunStages
	runStage    = kernels.MambaRunStage
	runMaxL     = kernels.MambaRunMaxL
	runMaxRows  = kernels.MambaRunMaxRows
	runKc       = kernels.MambaRunKc
	runHeadDim  = kernels.MambaRunHeadDim
	runDState   = kernels.MambaRunDState
	runStamps   = kernels.MambaRunTrace
	runArgBytes = kernels.MambaRunArgBytes
	runThreads  = 8*32 + 32 // 8 consumer warps and the producer's
	runModel    = 2048      // the kernel's d_model
	runSmem     = runStages * runStage
	runLayerPtr = 12 // pointers in a MambaRunLayer
)

// runRing and runInflight are the ring's depth and the producer's cap on
// stages requested and not yet arrived: all 6 stages, one in flight.
// Uncapped, every block put its whole free ring in flight as each phase
// began (16–24 MB at once), and the latency-bound parts of the layer (the
// norm's loads, the barriers, the scan's operands) waited in the memory
// queues behind it, so a deeper ring was slower. With one 32 KiB stage in
// flight a block (4 MB in all) the stream still keeps up and the ring can
// be deep. Measured on an H200, 2026-11-30: mamba_run over 3 blocks 87.0
// µs against 93.3 uncapped; the step graph 1.446 against 1.524 ms.
//
// The in_proj stages past the ring's depth stream while the consumers wait
// for them: for those, two in flight (runInflight2; the step graph 1.425
// ms against 1.441 with one and 1.430 with three, same machine and day).
const (
	runRing      = 6
	runInflight  = 1
	runInflight2 = 2
)

// runSpareSMs are the SMs mamba_run leaves to other kernels (the
// vocoder's lane): its blocks fill an SM's shared memory, and every block
// must be resident before its first barrier completes.
const runSpareSMs = 4

// runGrid is mamba_run's block count.
func (b *Backend) runGrid() int { return max(1, b.sms-runSpareSMs) }

var _ compute.Mamba2Run = (*Backend)(nil)

// runFits reports whether mamba_run takes blocks of spec s over d-wide rows
// for batch rows B on this device.
func (b *Backend) runFits(s compute.Mamba2Spec, d, B int) bool {
	E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
	G := b.runGrid()
	rows := (E + G - 1) / G // in_proj rows a block holds conv operands for: an even share
	return b.persistentMamba && b.runSync != 0 && d == runModel && s.DInner == 4096 && s.Groups == 1 &&
		s.Heads*s.HeadDim == s.DInner && s.HeadDim == runHeadDim && s.DState == runDState &&
		s.DConv == runKc && B >= 1 && B <= 2 && rows <= runMaxRows
}

// Mamba2Run (compute.Mamba2Run) runs the blocks in launches of up to
// runMaxL layers. It declines (ok false) off Hopper, for prefill, for more
// than one utterance, and for shapes the kernel is not compiled for.
func (b *Backend) Mamba2Run(hidden, residual compute.Tensor, blocks []compute.Mamba2RunBlock, eps float32) (compute.Tensor, compute.Tensor, bool) {
	ht := f32Of(hidden, "Mamba2Run")
	if len(ht.shape) != 3 || ht.shape[1] != 1 || len(blocks) == 0 {
		return nil, nil, false
	}
	B, d := ht.shape[0], ht.shape[2]
	s := blocks[0].Spec
	if !b.runFits(s, d, B) {
		return nil, nil, false
	}
	for _, bl := range blocks {
		wi, wo := cast(bl.InProj), cast(bl.OutProj)
		E := 2*s.DInner + 2*s.DState + s.Heads
		C := s.DInner + 2*s.DState
		if bl.Spec != s || wi.dt != compute.BF16 || wo.dt != compute.BF16 || len(wi.shape) != 2 || len(wo.shape) != 2 ||
			wi.shape[0] != E || wi.shape[1] != d || wo.shape[0] != d || wo.shape[1] != s.DInner ||
			cast(bl.ConvState).n() != B*C*s.DConv || cast(bl.SSMState).n() != B*s.Heads*s.HeadDim*s.DState ||
			cast(bl.NormW).n() != d || (bl.NormB != nil && cast(bl.NormB).n() != d) {
			return nil, nil, false
		}
	}
	var rt *tensor
	if residual != nil {
		rt = f32Of(residual, "Mamba2Run")
		if rt.n() != ht.n() {
			return nil, nil, false
		}
	}
	var hout, rout *tensor
	b.do(func() {
		in, res := ht, rt
		for len(blocks) > 0 {
			n := min(len(blocks), runMaxL)
			hout = b.newTensor(compute.F32, B, 1, d)
			rout = b.newTensor(compute.F32, B, 1, d)
			b.mambaRun(in, res, hout, rout, blocks[:n], s, B, eps)
			if in != ht {
				in.h.release()
				res.h.release()
			}
			in, res, blocks = hout, rout, blocks[n:]
		}
	})
	return hout, rout, true
}

// mambaRun launches mamba_run over up to runMaxL blocks (owner goroutine).
func (b *Backend) mambaRun(hin, rin, hout, rout *tensor, blocks []compute.Mamba2RunBlock, s compute.Mamba2Spec, B int, eps float32) {
	Di, H, P, N, Kc := s.DInner, s.Heads, s.HeadDim, s.DState, s.DConv
	C := Di + 2*N
	E := Di + C + H
	zx := b.newTensor(compute.F32, B, E)
	xbc := b.newTensor(compute.F32, B, C)
	yg := b.newTensor(compute.F32, B, Di)
	part := b.newTensor(compute.F32, B*H, 2) // doubles
	args := make([]byte, runArgBytes)
	put := func(off int, p cu.DevicePtr) { binary.LittleEndian.PutUint64(args[off:], uint64(p)) }
	ptrOf := func(t compute.Tensor) cu.DevicePtr {
		if t == nil {
			return nullPtr
		}
		return b.asF32(cast(t)).ptr()
	}
	for i, bl := range blocks {
		o := i * runLayerPtr * 8
		for k, p := range []cu.DevicePtr{
			cast(bl.InProj).ptr(), cast(bl.OutProj).ptr(), ptrOf(bl.NormW), ptrOf(bl.NormB),
			ptrOf(bl.W.ConvWeight), ptrOf(bl.W.ConvBias), f32Of(bl.ConvState, "Mamba2Run").ptr(),
			ptrOf(bl.W.DtBias), ptrOf(bl.W.ALog), ptrOf(bl.W.D), ptrOf(bl.W.NormWeight), f32Of(bl.SSMState, "Mamba2Run").ptr(),
		} {
			put(o+8*k, p)
		}
	}
	o := runMaxL * runLayerPtr * 8
	rp := nullPtr
	if rin != nil {
		rp = rin.ptr()
	}
	for k, p := range []cu.DevicePtr{hin.ptr(), rp, hout.ptr(), rout.ptr(), zx.ptr(), xbc.ptr(), yg.ptr(), part.ptr(), b.runSync, b.runTrace} {
		put(o+8*k, p)
	}
	o += 10 * 8
	for k, v := range []int{len(blocks), B, E, Di, C, H, P, N, Kc} {
		binary.LittleEndian.PutUint32(args[o+4*k:], uint32(v))
	}
	o += 9 * 4
	binary.LittleEndian.PutUint32(args[o:], math.Float32bits(eps))
	binary.LittleEndian.PutUint32(args[o+4:], math.Float32bits(s.Eps))
	binary.LittleEndian.PutUint32(args[o+8:], runRing)
	binary.LittleEndian.PutUint32(args[o+12:], 1) // balance: each block an even share of the projections' rows
	binary.LittleEndian.PutUint32(args[o+16:], runInflight)
	binary.LittleEndian.PutUint32(args[o+20:], runInflight2)
	kernel := "mamba_run"
	if b.runTrace != 0 {
		kernel = "mamba_run_trace" // the same kernel with the trace's stamps compiled in
	}
	b.launchSmem(b.k[kernel], [3]int{b.runGrid(), 1, 1}, [3]int{runThreads, 1, 1}, runRing*runStage, args)
	for _, t := range []*tensor{zx, xbc, yg, part} {
		t.h.release()
	}
}

// allocRunSync makes the lane's two mamba_run barrier counters, zeroed
// (the kernel leaves them zero): outside any recording, since a graph
// may be recorded on the first decode step.
func (b *Backend) allocRunSync() error {
	p, err := cu.MemAlloc(8)
	if err != nil {
		return err
	}
	if err := cu.MemsetD32(p, 0, 2); err != nil {
		_ = cu.MemFree(p)
		return err
	}
	b.runSync = p
	return nil
}
