// Package gpu is the CUDA compute.Backend (build tag cuda): every weight and
// every state tensor lives in device memory; kernels (gpu/kernels, PTX
// embedded) compute each op of engine/compute with bf16/f16/f32 weights,
// fp32 activations and state, and fp32 (or wider) accumulation. engine/cpu
// is the reference every kernel is tested against. Beyond compute.Backend
// it implements compute.SpeakerOps (the speaker model), compute.SamplerOps
// (CFG and the sampler on the device, token-identical to engine/sample),
// compute.GraphOps (stream capture into CUDA graphs, positions and sampler
// counters read from device memory, so engine/zonos replays a whole decode
// step with one launch; FeedAt, device-side token feedback, lets it queue
// the next step before reading this one's tokens, ReadI32Async), compute.PackedAttention,
// compute.Mamba2Block (a decode step's Mamba2 mixer in three kernels on
// Hopper: the conv in in_proj's epilogue, the gated norm in out_proj's
// load; sequence.go), compute.Mamba2Run (a decode step's run of Mamba2
// blocks, norms included, in one persistent kernel on Hopper, mamba_run:
// one block per SM, a producer warp streaming the block's weight rows and
// SSM state through a shared-memory ring ahead of 8 consumer warps that
// work between grid barriers, compiled for Zonos's Mamba2 shape (head dim
// 64, d_state 128, conv width 4; other shapes run the blocks one by one);
// mambarun.go), compute.Timer (CUDA
// events, bandwidth probes, device memory held) and compute.Laned (Lane: a
// second stream with its own memory pool, where the engine runs the
// vocoder beside decoding; of lower priority than decoding's where
// mamba_run is used, else higher; lane.go).
//
// Kernels by job (gpu/kernels/*.cu): the decode step's weight-read GEMV
// for one or two rows — on Hopper the chunk GEMV (gemv_chunk_k*, gemv.cu:
// one cp.async.bulk of 64 KiB of whole weight rows per block (32 KiB for
// its Mamba2 variants), requested before the PDL wait, many blocks
// balanced by the block scheduler; its _norm variant applies Mamba2's
// gated norm as it loads its input), else gemv_m2_* (core.cu, per-lane
// cp.async); for a batch's 3 to 32 rows (2 to 16 utterances) on Hopper
// the tensor-core GEMV (gemv_tc_m*, gemvtc.cu: 64 weight rows × 512 k a
// block by bulk copies, BF16 mmas of the activation's three BF16 parts,
// two at 17–32 rows, split-K summed by tc_reduce_rows), elsewhere up to 8
// rows gemv_m8; for BF16-weight Linear of 48 rows or
// more on Hopper (prefills), tc_wg (wgmma.cu, wg.go: the activation split
// once into two BF16 planes by bf16_parts, then 64 × 128 tiles over all of
// k on warpgroup tensor-core instructions, wgmma, from 128-byte-swizzled
// shared memory; its module is the only sm_90a one); tiled GEMMs with
// split-K for more rows elsewhere (tc.cu: tc_wbf for BF16-weight Linear, a cp.async-pipelined tile of
// BF16 tensor-core products of the activation's two BF16 parts (three:
// tc_wbf3, ZONOS_TC_PARTS=3), split once per staged tile into shared memory, with 32 × 64 warp tiles and
// ldmatrix fragments for both operands; tc_wide, the same tile with two
// TF32 parts, for F16 weights; both split along K only as far as the grid
// needs to fill the GPU; conv_tc for
// the DAC's convolutions, 64 × 32 tiles (64 and 128 wide by request)
// with a coalesced input gather on tensor cores and the weights split
// into their TF32 parts once, laid out in fragment order (conv_tcp,
// conv_prep_a), three TF32 products per 8-wide k step summed into fp32
// with IEEE adds, which keeps the precision that 3xTF32 accumulated in
// the tensor cores did not; conv_tcq, the default, is conv_tcp with both
// operands copied by cp.async four k steps deep (the input a k row per
// thread) and, where the output tiles alone fill the GPU, its split-K
// pieces folded into each block in tc_reduce_rows' order (same bits),
// and on grids of at most two blocks an SM (a short streamed chunk's)
// conv_tcq_n32_deep, eight k steps in flight (same bits); window_cols,
// the DAC streamer's window of a stage (carried columns, new ones,
// padding, the columns it carries, a residual unit's first Snake) in one
// kernel (compute.Core.Window, compute.SnakeWindows);
// conv_simt, the same tile on fp32 FMAs; both,
// and tc_reduce_rows after split-K, can apply the DAC residual unit's Snake or
// residual add as they store each output, compute.ConvEpilogues;
// conv_direct for convolutions with at most 8 output channels, each
// output's channels split over the warps of its block); row kernels that hold a
// row in registers (LayerNorm, gated RMSNorm); attention with a cache —
// for a decode step one kernel on Hopper (attn_step: a cluster of 8 blocks
// per KV head reads each cached row once for its query heads, rotates
// with angles computed before the PDL wait, and merges the blocks'
// partials through distributed shared memory; ZONOS_ATTN_STEP=0 runs the
// split over blocks and the merge kernel of other GPUs, =4 or 2 smaller
// clusters), and ZONOS_TWICE=name,… launches the named kernels twice to
// measure what one costs inside the step graph; the Mamba2 conv and scan — one kernel for a decode step
// (mamba_step: a block per head computes the conv outputs it needs, then
// scans, its state requested before the PDL wait and held in 4 slots a
// lane for d_state ≤ 128; the gated norm that follows rolls the shared
// B/C conv state;
// under Mamba2Block, mamba_step_gated scans from the conv outputs of
// in_proj's epilogue, four blocks per head with their state requested
// before the PDL wait, and leaves the norm's sums of squares per block),
// and for prefill the scan in chunked form (mamba_ssd_pre_cb: per 16
// positions, the outputs from C·B and the state before the chunk, the
// state updated once, C·B computed once per group by mamba_ssd_cb;
// mamba_scan_pre_nS, the sequential scan that matches
// the decode step bit for bit, under ZONOS_SCAN=seq); the fed column's nine
// embeddings summed in one kernel (compute.EmbeddingSummer).
//
// On Hopper the compute_90 modules are loaded and kernels are chained by
// programmatic dependent launch (launch.go): each waits for its
// predecessor in pdl_begin (kernels/common.cuh), so its blocks are resident
// and the GEMV's first weight copies in flight before the previous kernel
// ends. Asking the L2 for the next kernels' weights beyond that made the
// step slower with every byte asked for (docs/gpu/2026-11-30-session28):
// the step is bound by its chain of dependent latencies, which extra
// bytes in flight lengthen. `ZONOS_CUDA_GRAPH=0` (op by op), `ZONOS_PDL=0`,
// `ZONOS_GEMV_EARLY=0`, `ZONOS_TC=0` (the older GEMM kernels),
// `ZONOS_TC_SPLITS=old` (tc_wide split by tcSplits' fixed rule; `waves`,
// another rule), `ZONOS_TC_BF16=0` (BF16 weights on tc_wide),
// `ZONOS_CONV=simt` (the convolutions on conv_simt's fp32 FMAs),
// `ZONOS_CONV_TILE=128` (conv_tc on one tile width), `ZONOS_CONV_TILE_MAX=64`
// (the widest tile convTile may pick by the input's length; 32 by
// default), `ZONOS_CONV_PREP=0` (conv_tc gathering and splitting the
// weights at every k step), `ZONOS_CONV_PIPE=0` (conv_tcp, one k step in
// flight, instead of conv_tcq), `ZONOS_CONV_FOLD=n` (conv_tcq folds the
// splits where the tiles fill n % of a wave; 0 never),
// `ZONOS_CONV_SPLIT=n` (a convolution's reduction
// length per split, 384), `ZONOS_CONV_SPLIT_MAX=n` (the most splits, 16),
// `ZONOS_CONV_DEEP=0` (conv_tcq_n32 on every grid),
// `ZONOS_CONV_DEEP_WAVE=n` (conv_tcq_n32_deep on grids of up to n blocks
// an SM, 2), `ZONOS_DAC_WINDOW=0` (Window as Zeros, Concat and Slice),
// `ZONOS_DAC_WINDOW_SNAKE=0` (WindowSnake as Window and Snake), `ZONOS_REDUCE_ROWS=0` and `ZONOS_COPY_ROWS=0`
// (split-K sums and copies on one-dimensional grids),
// `ZONOS_CONV=old` (on simt_gemm with coarser split-K),
// `ZONOS_MAMBA_STEP=0` (the decode step's conv and scan as two kernels),
// `ZONOS_CONV_EPILOGUE=0` (Snake and the residual add as kernels of their own),
// `ZONOS_GEMV_CHUNK=0` (the cp.async GEMV instead of the chunk GEMV),
// `ZONOS_GEMV_CHUNK_EARLY=0` (the chunk requested after the wait),
// `ZONOS_GLU_PIECES=16` (the gated chunk GEMV with 64 KiB chunks),
// `ZONOS_MAMBA_BLOCK=0` (the Mamba2 mixer as in_proj, Mamba2, out_proj),
// `ZONOS_MAMBA_RUN=0` (Mamba2 blocks one by one, not as mamba_run),
// `ZONOS_RUN_BLOCKS=n`, `ZONOS_RUN_STAGES=n` and `ZONOS_RUN_BALANCE=0`
// (mamba_run's block count, ring depth and row split),
// `ZONOS_LANE_PRIORITY=decode|vocoder|equal` (which lane's stream is served first),
// `ZONOS_MAMBA_STEP_EARLY=0` (mamba_step_gated and mamba_step request
// their state after the wait), `ZONOS_MAMBA_STEP_NS=8` (mamba_step with 8
// state slots a lane), `ZONOS_GEMV_TC_ROWS=64` (batches of 9–16 utterances
// on gemv_tc blocks of 64 weight rows, not 128), `ZONOS_SCAN=seq` (the
// sequential prefill scan),
// `ZONOS_TC_PARTS=3` (tc_wbf3), `ZONOS_TC_WG=0` (prefill projections on
// tc_wbf instead of tc_wg),
// `ZONOS_GEMV=old` and `ZONOS_CUDA_RUNNER=0` switch the newer paths off for
// before/after measurements; docs/gpu/ holds the runs and profiles.
//
// One goroutine owns the CUDA context (runtime.LockOSThread) and executes
// every driver call, so the Backend is safe to call from any goroutine.
// Reading a tensor back does not hold that goroutine while the GPU works:
// the copy goes into pinned memory behind an event, and a thread of the
// lane's own waits for the event (lane.go), so the owner meanwhile
// launches the other lane's kernels.
// Device memory comes from a caching allocator: freed blocks (explicit Free,
// or the cleanup of an unreachable tensor) return to per-size free lists and
// are reused in stream order, so steady-state decoding allocates nothing
// from the driver. Tensors dropped without Free are found by garbage
// collections the pool starts on a goroutine of its own, so the owner
// never waits for one (memory.go); and a tensor made inside Run is put on
// the collector's books only if it is still live when the Run ends
// (scope.go), since registering a cleanup and a weak pointer costs about
// a microsecond a tensor.
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
