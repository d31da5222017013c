// Package gpu is the CUDA compute.Backend (build tag cuda). Every weight
// and every state tensor lives in device memory; the kernels (gpu/kernels,
// PTX embedded, no compiler needed at run time) compute each op of
// engine/compute with bf16, f16 or f32 weights, fp32 activations and
// state, and fp32 or wider accumulation. engine/compute/cpu is the reference: each
// kernel has a test that compares it with the CPU op on random data of
// the real and of odd shapes. Beyond compute.Backend the package
// implements compute.SpeakerOps (the speaker model), compute.SamplerOps
// (guidance and the sampler, token-identical to engine/sample),
// compute.RowSamplerOps (the same with each utterance's own knobs and
// noise, read from device memory),
// compute.GraphOps (CUDA graphs, with positions, sampler counters and the
// next step's input kept in device memory), compute.Mamba2Block,
// compute.Mamba2Run, compute.Timer, compute.Laned and compute.Planner.
//
// # The plan
//
// Which kernel runs an op depends on the GPU class, and is decided once,
// when the backend opens, from the device's compute capability and
// Options (plan.go): the Hopper plan on compute capability 9.x, the
// generic plan on Ampere and Ada (A100, A10G, RTX 4090), on GPUs after
// Hopper (wgmma's sm_90a PTX does not run there) or wherever
// Options.Generic asks for it (tests; `--gpu-plan generic`). Each module
// is embedded twice: compute_80 PTX, which every GPU from Ampere on
// compiles, for the generic plan, and compute_90 PTX for the Hopper plan,
// whose kernels use what only Hopper has: bulk copies completing on
// mbarrier transaction counts, thread-block clusters with distributed
// shared memory, warpgroup MMA (wgmma, the one sm_90a module), up to 227
// KiB of shared memory a block, and programmatic dependent launch. Ops
// read the plan's fields (b.hopper, b.clusterAttention, …), never the
// compute capability; Plan prints it in one line for `zonos bench`,
// `zonos doctor` and the app. Both plans meet engine/compute/cpu's tolerances, and
// on a Hopper GPU the exactness tests run under both.
//
// # The decode step
//
// A decode step (one position, the two CFG rows of an utterance) reads
// every weight once and does little arithmetic on it, so it is bound by
// memory and, more, by its chain of dependent latencies: a few hundred
// kernels, each waiting for the last. The design removes waits.
//
//   - The whole step — embedding, backbone, heads, guidance, sampling and
//     the next step's input (FeedAt) — is one CUDA graph, replayed with one
//     launch (engine/zonos stepgraph.go). The host queues step s+1 before
//     it reads step s's tokens.
//   - On Hopper the kernels are chained by programmatic dependent launch
//     (launch.go): each kernel's blocks become resident, request their
//     first weights or state (cp.async.bulk) and compute what does not
//     depend on the previous kernel (attention's rotary angles) before
//     pdl_begin waits for it. Asking the L2 for later kernels' weights
//     beyond that made the step slower with every byte asked for: extra
//     bytes in flight lengthen the dependent latencies.
//   - The Mamba2 blocks between two attention layers run as one
//     persistent kernel on Hopper, mamba_run (mambarun.go, kernels/
//     mamba2.cu): one block per SM, a producer warp streaming every weight
//     and state row the block will read through a 6-stage ring of 32 KiB
//     bulk copies (one stage in flight, two for the in_proj stages past
//     the ring's depth), 8 consumer warps doing the norm, in_proj with the
//     causal conv, the scan and out_proj with the gated norm between grid
//     barriers, so the weight stream does not stop at kernel boundaries. It
//     is compiled for Zonos's shape (d_model 2048, head dim 64, d_state
//     128, conv width 4, one or two rows); other shapes and a batch's rows
//     run Mamba2Block (with mamba_run's order of sums: the same bits),
//     three kernels on the chunk GEMV (in_proj with the conv in its
//     epilogue, mamba_step_gated, out_proj applying the gated norm as it
//     loads its input). The generic plan runs in_proj, Mamba2 (mamba_step:
//     a block per head computes the conv outputs it needs, then scans, its
//     state held in 4 slots a lane for d_state ≤ 128, 8 up to 256) and
//     out_proj.
//   - A decode step's attention is one kernel on Hopper, attn_step: a
//     cluster of 8 blocks per (row, KV head) reads each cached row once
//     for its query heads, and the blocks merge their partial softmaxes
//     through distributed shared memory. The generic plan spreads a head's
//     cache over 32 blocks (attn_split, which also writes the new cache
//     row) and merges their partials in attn_merge.
//   - The one- and two-row projections are the chunk GEMV on Hopper (one
//     bulk copy of 64 KiB of whole weight rows a block, requested before
//     the PDL wait, many blocks balanced by the block scheduler) and the
//     cp.async GEMV (gemv_m2) on the generic plan (gemv.go).
//   - Guidance, the sampler (top-k, top-p, min-p, repetition penalty over
//     a fixed window, Philox noise) and the feedback into the next step's
//     input run on the device (sampler.go), with engine/sample's float32
//     roundings, so the same logits give the same tokens.
//
// # Prefill, batches, the vocoder and the speaker model
//
// A prefill has tens to hundreds of rows. Its BF16 projections of 48 rows
// or more run on tc_wg on Hopper (wgmma over the activation split once
// into two BF16 planes) and on tc_wbf's mma tiles elsewhere; F16 weights
// on tc_wide (two TF32 parts); all split along k only as far as the grid
// needs to fill the GPU (tc.go, wg.go). Attention writes the cache with
// the rotary angles of one table per prefill (rot_table, shared by every
// layer) and attends on attn_pre (a block per KV head and up to 8 query
// positions, 32 cached rows at a time through shared memory, a row scored
// per lane), or attn for heads it does not take. Mamba2's conv and dt are
// parallel over positions; the scan runs in chunked (state space dual)
// form for head dims that are multiples of 32 and d_state 64 or 128
// (mamba_ssd_cb computes each chunk's C·Bᵀ once per group, mamba_ssd_pre_cb
// the outputs and the state per 16 positions), and sequentially
// (mamba_scan_pre_nS, the decode step's arithmetic bit for bit) for other
// shapes.
//
// A batch of 2 to 16 utterances decodes 3 to 32 rows: on Hopper the
// tensor-core GEMV (gemv_tc: bulk copies and BF16 mmas of the activation's
// three BF16 parts, split-K summed by tc_reduce_rows), elsewhere gemv_m8
// up to 8 rows and the tiled GEMM beyond.
//
// The DAC's convolutions run on conv_tcq (tensor cores, the weights split
// once into their TF32 parts and laid out in fragment order, three TF32
// products per k step summed in fp32 with IEEE adds, both operands copied
// four k steps deep), with the residual unit's Snake and residual add in
// their epilogue; the streamer's window of a stage is one kernel
// (window_cols). The speaker model's convolutions and pooling are in
// speaker.go.
//
// # The runtime
//
// One goroutine owns the CUDA context (runtime.LockOSThread) and issues
// every driver call, so the Backend is safe to call from any goroutine;
// Run hands a whole function to it at once (the engine runs a decode step
// or a prefill that way), so its ops cost no hand-off each. Reading a
// tensor back does not hold that goroutine while the GPU works: the copy
// goes into pinned memory behind an event, and a thread of the lane's own
// waits for the event (lane.go). Lane gives the vocoder a second stream
// with its own memory pool, so its kernels run beside decoding; where
// decode steps run mamba_run, whose blocks wait at barriers for every
// block to be resident, decoding's stream has the higher priority, else
// the vocoder's. Device memory comes from a caching allocator: freed
// blocks (Free, or the cleanup of an unreachable tensor) return to
// per-size free lists and are reused in stream order, so steady decoding
// allocates nothing from the driver; collections of dropped tensors run
// on a goroutine of their own (memory.go), and a tensor made inside Run is
// put on the collector's books only if it is still live when the Run ends
// (scope.go), since registering a cleanup costs about a microsecond.
//
// # Machines without a usable GPU
//
// gorgonia.org/cu calls cuInit in its package init and calls os.Exit(1)
// when it fails, which would end any cuda build on a machine whose driver
// finds no GPU. This package defines cuInit in the executable (cuinit.go):
// the dynamic linker resolves cu's call to it, it forwards to the driver's
// cuInit (dlsym RTLD_NEXT) and records the result, and New returns that
// result as an error ("use --backend cpu") while the process goes on with
// the CPU backend. What it cannot avoid: a cuda build links libcuda.so.1,
// so on a machine without the NVIDIA driver library the program does not
// start at all (the dynamic loader refuses it before Go runs). Hence
// `make run` builds with CUDA only when `nvidia-smi -L` lists a GPU (the
// headers come from `make cuda-deps`), and the release archives ship a CPU
// build beside the CUDA one.
//
// Without the cuda tag the package holds only this documentation; the
// default build needs no CUDA.
package gpu
