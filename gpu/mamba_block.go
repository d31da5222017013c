//go:build cuda

package gpu

import (
	"os"
	"slices"
	"strconv"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// A Mamba2 residual block of a decode step in one kernel (compute.FusedMambaBlock,
// kernels/mamba_block.cu): LayerNorm, in_proj, conv and scan, gated norm and
// out_proj, with the weights of both projections streamed through one
// cp.async ring per warp across two grid-wide barriers. The grid is one
// block per SM; the blocks meet on a counter in device memory (gridBar),
// which every launch leaves as it found it, so launches in stream order
// (and graph replays) share it. Only the main lane runs it.
//
// ZONOS_MAMBA_BLOCK=0 runs the block op by op (before/after measurements).

var mambaBlockOff = os.Getenv("ZONOS_MAMBA_BLOCK") == "0"

// mbPrefetch bounds how much of the next op's first weight mamba_block
// fetches into L2 while its row phases leave memory idle
// (ZONOS_MB_PREFETCH, MiB; 0 turns it off).
var mbPrefetch = func() int {
	if v, err := strconv.Atoi(os.Getenv("ZONOS_MB_PREFETCH")); err == nil && v >= 0 {
		return v << 20
	}
	return 16 << 20
}()

// mambaBlockStamps, when set (TestMambaBlockPhases), receives mamba_block's
// phase stamps: mbStamps global-timer readings per block.
var mambaBlockStamps cu.DevicePtr

const mbStamps = 16 // MB_STAMPS

const (
	mbWarps   = 8
	mbRing    = 7                                // MB_RING in mamba_block.cu: stages per warp
	mbR       = 4                                // MB_R: weight rows per step
	mbRingB   = mbWarps * mbRing * mbR * 32 * 16 // the rings' shared memory
	mbSmemMax = 224 << 10                        // dynamic shared memory (the device's 227 KiB less static)
	mbState   = 32 << 10                         // MB_STATE_BYTES: a prefetched scan state at most
)

// initMambaBlock lets mamba_block use its shared memory and allocates the
// barrier counter (owner goroutine, at start-up). A device that cannot give
// a block that much shared memory runs the block op by op.
func (b *Backend) initMambaBlock() error {
	k := b.k["mamba_block"]
	if k == nil || mambaBlockOff {
		return nil
	}
	if allowSmemBytes(k, mbSmemMax) != nil {
		return nil
	}
	p, err := cu.MemAlloc(4)
	if err != nil {
		return err
	}
	if err := cu.MemsetD32(p, 0, 1); err != nil {
		_ = cu.MemFree(p)
		return err
	}
	b.gridBar = p
	return nil
}

// MambaBlock implements compute.FusedMambaBlock for one decode position of
// at most two rows (the CFG pair of one utterance) with BF16 projections.
func (b *Backend) MambaBlock(hidden, residual, normW, normB compute.Tensor, eps float32, inProj, outProj compute.Tensor,
	w compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec, next compute.Tensor) (compute.Tensor, compute.Tensor, bool) {
	if b.side || b.gridBar == 0 || mambaBlockOff {
		return nil, nil, false
	}
	ht, rt := cast(hidden), cast(residual)
	if ht.dt != compute.F32 || rt.dt != compute.F32 || len(ht.shape) != 3 || ht.shape[1] != 1 || ht.shape[0] > 2 ||
		!slices.Equal(ht.shape, rt.shape) {
		return nil, nil, false
	}
	M, D := ht.shape[0], ht.shape[2]
	Di, H, P, N, G, Kc := s.DInner, s.Heads, s.HeadDim, s.DState, s.Groups, s.DConv
	C := Di + 2*G*N
	E := Di + C + H
	wi, wo := cast(inProj), cast(outProj)
	if M == 0 || G <= 0 || H%G != 0 || H*P != Di || Di%G != 0 || (Di/G)%4 != 0 || D%8 != 0 || Di%8 != 0 || E%4 != 0 ||
		P > mambaStepRows || N > mambaMaxState || Kc < 1 || Kc > mambaMaxConv ||
		wi.dt != compute.BF16 || wo.dt != compute.BF16 || !slices.Equal(wi.shape, []int{E, D}) || !slices.Equal(wo.shape, []int{D, Di}) {
		return nil, nil, false
	}
	if _, ok := v4Threads(D); !ok {
		return nil, nil, false
	}
	if _, ok := v4Threads(Di / G); !ok {
		return nil, nil, false
	}
	// Activations (M rows), LayerNorm weight and bias, gated-norm weight,
	// and a (row, head)'s scan state when it fits.
	act := (M*max(D, Di) + 2*D + Di) * 4
	if P*N*4 <= mbState {
		act += P * N * 4
	}
	if mbRingB+act > mbSmemMax {
		return nil, nil, false
	}
	cst, sst := cast(convState), cast(ssmState)
	if cst.dt != compute.F32 || sst.dt != compute.F32 || cst.n() != M*C*Kc || sst.n() != M*H*P*N || normW == nil {
		return nil, nil, false
	}
	var out, sum *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, M, 1, D)
		sum = b.newTensor(compute.F32, M, 1, D)
		zx := b.newTensor(compute.F32, M, E)
		yg := b.newTensor(compute.F32, M, Di)
		lnb := nullPtr
		if normB != nil {
			lnb = b.asF32(cast(normB)).ptr()
		}
		ksIn, ksOut := b.gemvPlanFor(E, D).ks, b.gemvPlanFor(D, Di).ks
		pf, pfBytes := nullPtr, 0
		if next != nil && mbPrefetch > 0 {
			nt := cast(next)
			pf, pfBytes = nt.ptr(), min(nt.n()*nt.dt.Size(), mbPrefetch)
		}
		b.launchSmem(b.k["mamba_block"], [3]int{b.sms, 1, 1}, [3]int{mbWarps * 32, 1, 1}, mbRingB+act,
			ht.ptr(), rt.ptr(), b.asF32(cast(normW)).ptr(), lnb, sum.ptr(), wi.ptr(), zx.ptr(),
			b.asF32(cast(w.ConvWeight)).ptr(), b.asF32(cast(w.ConvBias)).ptr(), cst.ptr(),
			b.asF32(cast(w.DtBias)).ptr(), b.asF32(cast(w.ALog)).ptr(), b.asF32(cast(w.D)).ptr(), sst.ptr(), yg.ptr(),
			b.asF32(cast(w.NormWeight)).ptr(), wo.ptr(), out.ptr(), b.gridBar, mambaBlockStamps, pf, pfBytes,
			int32(M), int32(D), int32(Di), int32(H), int32(P), int32(N), int32(G), int32(Kc), int32(ksIn), int32(ksOut),
			eps, s.Eps)
		zx.h.release()
		yg.h.release()
	})
	return out, sum, true
}
