//go:build cuda

package gpu

import (
	"fmt"

	"zonostream/engine/compute"
)

// plan is the backend's choice of kernels for its device, made once when
// it opens (makePlan) and embedded in the device, so every op reads its
// field (b.hopper, b.clusterAttention, …) rather than the compute
// capability. There are two plans:
//
//   - hopper (compute capability 9.x): the compute_90 modules,
//     and the kernels built on what only Hopper has — bulk copies with
//     mbarrier transaction counts, thread-block clusters with distributed
//     shared memory, wgmma, 227 KiB of shared memory a block, and
//     programmatic dependent launch.
//   - generic (Ampere and Ada, e.g. an A100, A10G or RTX 4090; GPUs after
//     Hopper, which cannot run wgmma.cu's sm_90a-only PTX; or any GPU when
//     Options.Generic is set): the compute_80 modules and per-op kernels
//     that need nothing past sm_80.
//
// Both plans compute every op to engine/compute/cpu's tolerances; the test suite
// runs its exactness tests under both on a Hopper GPU (forEachPlan).
type plan struct {
	// hopper: the compute_90 modules are loaded. Every choice below
	// needs it.
	hopper bool
	// pdl: kernels whose compute_90 body waits for its predecessor
	// (pdl_begin) are launched with programmatic dependent launch, so
	// their blocks are resident and their first loads in flight before
	// the previous kernel ends (launch.go).
	pdl bool
	// persistentMamba: a decode step's consecutive Mamba2 blocks run as one
	// mamba_run (mambarun.go): a block per SM with a 192 KiB ring of bulk
	// copies. Otherwise the blocks run one by one.
	persistentMamba bool
	// fusedMamba: a decode step's Mamba2 mixer that mamba_run does not take
	// runs as Mamba2Block's three kernels on the chunk GEMV (sequence.go);
	// otherwise as in_proj, Mamba2 (mamba_step) and out_proj.
	fusedMamba bool
	// clusterAttention: a decode step's attention is attn_step, a cluster
	// of attnStepCluster blocks per KV head merging through distributed
	// shared memory (sequence.go); otherwise attn_split and attn_merge.
	clusterAttention bool
	// chunkGemv: a decode step's projections, one utterance's or a
	// batch's, are the chunk GEMV (bulk copies of whole weight rows, each
	// row computed as alone: gemv.go); otherwise the cp.async GEMV for one
	// or two rows and gemv_m8 and the tiled GEMM for a batch's.
	chunkGemv bool
	// tcGemv: other GEMVs of 3 to 32 rows (a short prefill's) are gemv_tc
	// (bulk copies and BF16 mmas, gemv.go); otherwise gemv_m8 and the
	// tiled GEMM.
	tcGemv bool
	// wgmmaPrefill: BF16 projections of 48 rows or more are tc_wg (wgmma,
	// wg.go); otherwise tc_wbf's mma tiles.
	wgmmaPrefill bool
}

// makePlan is the plan for a device of compute capability major.x opened
// with o.
func makePlan(major int, o Options) plan {
	h := major == 9 && !o.Generic // wgmma is sm_90a: it does not JIT to later GPUs
	return plan{hopper: h, pdl: h, persistentMamba: h, fusedMamba: h, clusterAttention: h, chunkGemv: h, tcGemv: h, wgmmaPrefill: h}
}

// decodeFirst reports whether the main lane's stream (decoding) gets the
// higher priority and the side lane's (the vocoder) the lower: where
// decode steps run mamba_run, whose blocks all wait at its barriers for
// the last to become resident (lane.go).
func (p plan) decodeFirst() bool { return p.persistentMamba }

// describe is the plan as compute reports it: its name and each choice.
func (p plan) describe() compute.Plan {
	name, parts := "generic", []string{"compute_80 modules"}
	if p.hopper {
		name, parts = "hopper", []string{"sm_90 modules"}
	}
	pick := func(on bool, yes, no string) {
		if on {
			parts = append(parts, yes)
		} else if no != "" {
			parts = append(parts, no)
		}
	}
	pick(p.persistentMamba, "persistent Mamba2 runs", "Mamba2 blocks one by one")
	pick(p.fusedMamba, "fused Mamba2 mixer", "")
	pick(p.clusterAttention, fmt.Sprintf("clustered attention step (%d)", attnStepCluster), "split attention step")
	pick(p.chunkGemv, "chunk GEMV (a batch's rows as alone)", "cp.async GEMV")
	pick(p.tcGemv, "tensor-core short-prefill GEMV", "")
	pick(p.wgmmaPrefill, "wgmma prefill", "mma prefill")
	pick(p.pdl, "programmatic dependent launch", "")
	pick(p.decodeFirst(), "decoding's stream first", "the vocoder's stream first")
	return compute.Plan{Name: name, Choices: parts}
}

// Plan says which kernels this backend chose when it opened
// (compute.Planner), e.g. "hopper: sm_90 modules; persistent Mamba2 runs;
// …" or "generic: compute_80 modules; …" as its String.
func (b *Backend) Plan() compute.Plan { return b.plan.describe() }
