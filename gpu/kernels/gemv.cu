// Bulk-copy GEMV for Hopper: y[m, n] = x[m, :]·w[n, :] (+ b[n])
// for the rows of a decode step — one utterance's CFG pair, or a batch's
// rows, each computed as it would be alone — and BF16 weights with
// K = 2048, 4096 or 8192 (every decode projection).
//
// Why: the weight is the whole cost of a decode projection, and the
// cp.async GEMV (gemv_m2_* in core.cu) reaches 40–80 % of the read
// bandwidth: every lane issues its own 16-byte copies, at most two stages
// of 2 KiB per warp in flight. Here block (g, c) owns the RC = P/KT weight
// rows from c·RC (KT = K/2048; P·4 KiB of weight, one contiguous piece), which
// thread 0 requests with a single cp.async.bulk (the SM's copy engine)
// as the block starts — before the wait for the predecessor kernel when
// asked (the weights are never written while kernels run) — and the 8
// warps multiply once it has landed (an mbarrier counts the bytes).
// Several blocks per SM keep their copies in flight together, and many
// small blocks leave the balancing to the block scheduler: an SM busy
// with another kernel (a row kernel's blocks, the vocoder's lane) takes
// fewer of them.
//
// Measured on an H200 (2026-11-30) against this design: one persistent
// block per SM streaming an even share of the rows through a ring of
// 16 KiB stages was faster alone but 8 % slower in the decode step, where
// the SM that starts last holds up the projection; the L2's evict-first
// policy on the copies was slower in the step. Unlike mamba_run, whose
// latency-bound steps share the memory with its stream, these pure
// streams want many bytes in flight: at half the blocks an SM (72 KiB of
// shared memory asked each) the step graph took 1.482 against 1.463 ms,
// and with each chunk requested after the wait for the predecessor
// 1.449 against 1.441 ms.
//
// Layout: piece t + 256·p of the chunk (16 bytes) is k8 = t + 256·(p % KT)
// of row p / KT, so thread t multiplies the same activation slice in every
// piece and keeps it in registers (16·KT floats per CFG row). Each thread
// accumulates 2·RC partial sums (row, CFG row); a warp reduce-scatters them
// and the 8 warps' totals are summed in index order: deterministic.
//
// The sm_90 PTX of this module is marked PTX ISA 8.0 by gen.sh (bulk copies
// and mbarrier transaction counts); the compute_80 build has no bulk copy,
// so there the kernels trap, and the backend launches them only on Hopper.
#include "common.cuh"

#define GC_PIECES 8 // P: 4 KiB pieces per block (32 KiB of dynamic shared memory) of the fused variants
// GC_PLAIN: the plain GEMV's P (64 KiB of dynamic shared memory, 16/KT rows
// a block). Step graph with 8 → 16 pieces (H200, 2026-11-30, same run):
// hybrid 1.367 → 1.356 ms, transformer backbone 1.335 → 1.302 ms, most of
// it at K = 8192 (the MLP's fc2: each block of 8 pieces loaded 64 KiB of
// activation from L2 for its 32 KiB of weight, in 80 registers a thread,
// so three blocks an SM). The gated GEMV (_glu) takes GC_PLAIN pieces too:
// transformer step graph 1.314 → 1.304 ms, hybrid 1.360 → 1.359 ms (a
// repeat of the comparison had it the other way, 1.317 against 1.304 ms).
#define GC_PLAIN 16
// GC_BATCH: the pieces of a batch's chunk (gemv_chunk*_rows: 128 KiB).
// GC_PAIRS: the pairs of rows of x one block multiplies its chunk by.
#define GC_BATCH 32
#define GC_PAIRS 8


// ChunkSide is what the fused Mamba2 mixer (gpu.Mamba2Block) adds to a
// chunk GEMV: in_proj's conv epilogue (CHUNK_CONV) or out_proj's gated
// norm on load (CHUNK_NORM). Unused fields are zero.
struct ChunkSide {
    // CHUNK_CONV: outputs n ∈ [lo, lo + C) are xBC channel c = n − lo; the
    // thread that writes y[m, n] also runs the causal depthwise conv of
    // channel c (weights cw [C, Kc], bias cb, state cst [M, C, Kc], which
    // it rolls by one column) and writes silu(conv) to xbc [M, C] — what
    // mamba_step computes, in the same order, so the scan that follows
    // reads it instead of computing it per head.
    const float* cw;
    const float* cb;
    float* cst;
    float* xbc;
    int lo, C, Kc;
    // CHUNK_NORM: x holds y·silu(z) (mamba_step_gated) and part [M, H]
    // the sums of its squares per head; x is multiplied by the gated
    // RMSNorm's 1/rms (over gs = K values: one group) and by wn [K] as it
    // is loaded, as mamba_norm_v4 computes it.
    const double* part;
    int H;
    const float* wn;
    float eps;
};
#define CHUNK_PLAIN 0
#define CHUNK_CONV 1
#define CHUNK_NORM 2
// CHUNK_GLU: y [M, N] = SwiGLU of the projection onto the weight's 2N rows,
// (x·w[n])·silu(x·w[N + n]) (+ biases b[n], b[N + n] before it), as the
// swiglu kernel computes it from the projection: a block takes RC/2 rows
// of each half (two bulk copies into the two halves of its chunk), so its
// products are the plain GEMV's and the MLP's up-projection needs no
// kernel of its own for the gate.
#define CHUNK_GLU 3

// WarpTotals<V>::run sums each of a lane's V partial sums over the warp
// and stores value v's total to out[v] (v < V): reduce_scatter for up to
// 32 values, in runs of 32 above (the same tree for every value either
// way).
template <int V, bool WIDE = (V > 32)>
struct WarpTotals {
    static __device__ __forceinline__ void run(float (&a)[V], int lane, float* out) {
        const float s = reduce_scatter<V>(a, lane);
        if (lane < V) out[lane] = s;
    }
};
template <int V>
struct WarpTotals<V, true> {
    static_assert(V % 32 == 0, "wide partial sums come in runs of 32");
    static __device__ __forceinline__ void run(float (&a)[V], int lane, float* out) {
#pragma unroll
        for (int j = 0; j < V / 32; j++) {
            float b[32];
#pragma unroll
            for (int i = 0; i < 32; i++) b[i] = a[32 * j + i];
            out[32 * j + lane] = reduce_scatter<32>(b, lane);
        }
    }
};

// flags: bit 0 requests the chunk before the wait for the predecessor.
//
// Rows are taken two at a time: rows 2j and 2j + 1 of x, a lone
// utterance's CFG pair, or two rows of a batch's [2n] (its conditional
// rows first). Block (g, c) multiplies weight chunk c by the pairs
// [GC_PAIRS·g, GC_PAIRS·(g + 1)): it requests the chunk once and
// multiplies SG pairs at a time with the code the one-utterance step
// runs, and every row is computed on its own, so a row's output is the
// same bits whatever M, SG and the block's rows are (reduce_scatter's
// tree is the same for any count of values) — a batch of utterances
// computes each one exactly as it would be computed alone (the batch's
// tiers, and a lone utterance adopted into it). A block's threads read
// the whole of each pair's x, so a batch's kernels (gemv_chunk*_rows)
// take chunks of GC_BATCH pieces, more weight rows for each read of x
// than the lone step's, and at K = 2048 two pairs a pass (SG = 2: a
// weight piece unpacked once for four rows); the lone step's take one.
// A chunk's blocks for successive groups of pairs are launched side by
// side (g varies fastest), so all but the first find its bytes in L2. The passes' partial sums
// alternate between two halves of part, so one barrier a pass keeps a
// pass's writes from overtaking the last pass's reads. Rows past M (an
// odd M) multiply the last row and are not stored.
template <int KT, int P, int SIDE, int SG>
__device__ __forceinline__ void gemv_chunk_body(const float* __restrict__ x, const unsigned short* __restrict__ w,
                                                const float* __restrict__ bias, float* __restrict__ y, int M, int N,
                                                int K, int flags, ChunkSide side) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int RC = P / KT; // rows per block
    constexpr int V = 2 * RC;  // partial sums per thread: (row, CFG row)
    extern __shared__ __align__(128) uint4 chunk[]; // P·256 pieces (P·4 KiB of dynamic shared memory)
    __shared__ float part[2][SG][8][V];
    __shared__ unsigned long long bar;
    constexpr int HALF = SIDE == CHUNK_GLU ? RC / 2 : RC; // rows of each half (CHUNK_GLU) or of the block
    const int r0 = blockIdx.y * HALF, rows = min(HALF, N - r0);
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    const unsigned bytes = (unsigned)rows * (unsigned)K * 2u;
    auto request = [&]() {
        if (SIDE == CHUNK_GLU) {
            mbar_expect_tx(&bar, 2 * bytes);
            bulk_g2s(chunk, w + (long long)r0 * K, bytes, &bar);
            bulk_g2s(chunk + HALF * K / 8, w + (long long)(N + r0) * K, bytes, &bar);
        } else {
            mbar_expect_tx(&bar, bytes);
            bulk_g2s(chunk, w + (long long)r0 * K, bytes, &bar);
        }
    };
    if (t == 0) {
        mbar_init(&bar, 1);
        mbar_fence_init();
        if (flags & 1) request();
    }
    __syncthreads();
    pdl_begin();
    if (t == 0 && !(flags & 1)) request();
    const int first = blockIdx.x * 2 * GC_PAIRS, end = min(M, first + 2 * GC_PAIRS);
    // Each pass's x is requested while the pass before it multiplies
    // (xn), so its L2 latency is hidden behind the products.
    float xn[SG][KT][2][8];
    auto load_x = [&](int u) {
#pragma unroll
        for (int g = 0; g < SG; g++) {
            const int mr[2] = {min(u + 2 * g, M - 1), min(u + 2 * g + 1, M - 1)}; // the pair's rows of x
#pragma unroll
            for (int kt = 0; kt < KT; kt++) {
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    const float4* xm = (const float4*)(x + (long long)mr[m] * K) + 2 * (t + 256 * kt);
                    float4 p = xm[0], q = xm[1];
                    float* xv = xn[g][kt][m];
                    xv[0] = p.x, xv[1] = p.y, xv[2] = p.z, xv[3] = p.w;
                    xv[4] = q.x, xv[5] = q.y, xv[6] = q.z, xv[7] = q.w;
                }
            }
        }
    };
    if (first < end) load_x(first);
    for (int u0 = first, half = 0; u0 < end; u0 += 2 * SG, half ^= 1) {
        float xa[SG][KT][2][8];
#pragma unroll
        for (int g = 0; g < SG; g++)
#pragma unroll
            for (int kt = 0; kt < KT; kt++)
#pragma unroll
                for (int m = 0; m < 2; m++)
#pragma unroll
                    for (int i = 0; i < 8; i++) xa[g][kt][m][i] = xn[g][kt][m][i];
        if (u0 + 2 * SG < end) load_x(u0 + 2 * SG);
        if (SIDE == CHUNK_NORM) {
#pragma unroll
            for (int g = 0; g < SG; g++) {
                const int mr[2] = {min(u0 + 2 * g, M - 1), min(u0 + 2 * g + 1, M - 1)};
                float r[2]; // the gated norm's 1/rms per CFG row
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    // Every warp sums the H partials in the same order: the
                    // same r in every block.
                    const double* pm = side.part + (long long)mr[m] * side.H;
                    double ms = 0;
                    for (int h = lane; h < side.H; h += 32) ms += pm[h];
                    ms = warp_sum_d(ms);
                    r[m] = (float)(1.0 / sqrt(ms / K + (double)side.eps));
                }
#pragma unroll
                for (int kt = 0; kt < KT; kt++) {
                    const float4* wm = (const float4*)side.wn + 2 * (t + 256 * kt);
                    const float4 wa = wm[0], wb = wm[1];
                    const float wv[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
                    for (int m = 0; m < 2; m++)
#pragma unroll
                        for (int i = 0; i < 8; i++) xa[g][kt][m][i] = __fmul_rn(__fmul_rn(xa[g][kt][m][i], r[m]), wv[i]);
                }
            }
        }
        float acc[SG][V];
#pragma unroll
        for (int g = 0; g < SG; g++)
#pragma unroll
            for (int v = 0; v < V; v++) acc[g][v] = 0.f;
        if (u0 == first) mbar_wait(&bar, 0);
        // Piece t + 256·p is k8 = t + 256·(p % KT) of row p / KT; rows past
        // the last (a ragged final block) hold stale data and are not stored.
#pragma unroll
        for (int p = 0; p < P; p++) {
            const uint4 v = chunk[p * 256 + t];
#pragma unroll
            for (int g = 0; g < SG; g++) {
                dot8(acc[g][2 * (p / KT)], v, xa[g][p % KT][0]);
                dot8(acc[g][2 * (p / KT) + 1], v, xa[g][p % KT][1]);
            }
        }
#pragma unroll
        for (int g = 0; g < SG; g++) WarpTotals<V>::run(acc[g], lane, part[half][g][warp]);
        __syncthreads();
#pragma unroll
        for (int g = 0; g < SG; g++) {
            float(*pt)[V] = part[half][g];
            const int u = u0 + 2 * g; // the pair's first row
            if (SIDE == CHUNK_GLU) {
                const int i = t >> 1, row = u + (t & 1);
                if (t < 2 * HALF && i < rows && row < M) {
                    float sy = 0.f, sg = 0.f;
#pragma unroll
                    for (int q = 0; q < 8; q++) sy += pt[q][t];
#pragma unroll
                    for (int q = 0; q < 8; q++) sg += pt[q][2 * HALF + t];
                    const int n = r0 + i;
                    const float yv = bias ? sy + bias[n] : sy, gv = bias ? sg + bias[N + n] : sg;
                    y[(long long)row * N + n] = yv * silu_ref(gv);
                }
            } else if (t < V) {
                const int i = t >> 1, row = u + (t & 1);
                if (i < rows && row < M) {
                    float s = 0.f;
#pragma unroll
                    for (int q = 0; q < 8; q++) s += pt[q][t];
                    const int n = r0 + i;
                    const float out = bias ? s + bias[n] : s;
                    y[(long long)row * N + n] = out;
                    if (SIDE == CHUNK_CONV && n >= side.lo && n < side.lo + side.C) {
                        const int c = n - side.lo, Kc = side.Kc;
                        float* sp = side.cst + ((long long)row * side.C + c) * Kc;
                        float a = side.cb[c];
#pragma unroll
                        for (int j = 0; j < CONV_MAXK; j++) {
                            if (j < Kc) {
                                float v = j + 1 < Kc ? sp[j + 1] : out;
                                a = __fadd_rn(a, __fmul_rn(v, side.cw[c * Kc + j]));
                                sp[j] = v;
                            }
                        }
                        side.xbc[(long long)row * side.C + c] = silu_ref(a);
                    }
                }
            }
        }
    }
#else
    __trap(); // never launched below sm_90 (the backend checks)
#endif
}

// gemv_chunk_kKT: K = 2048·KT. Launch: grid (⌈M / (2·GC_PAIRS)⌉,
// ⌈N / (GC_PLAIN/KT)⌉), 256 threads, GC_PLAIN·4096 bytes of dynamic shared
// memory; _glu (CHUNK_GLU) takes the weight's 2N rows and has grid.y
// ⌈N / (GC_PLAIN/KT/2)⌉. The _conv and _norm variants (GC_PIECES: grid.y
// ⌈N / (GC_PIECES/KT)⌉, GC_PIECES·4096 bytes) take ChunkSide's fields
// after flags. NAME_rows is each with GC_BATCH pieces, for a batch's rows.
#define GEMV_CHUNK_P(KT, PP, PF, SG, SUF)                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                                             \
        gemv_chunk_k##KT##SUF(const float* __restrict__ x, const unsigned short* __restrict__ w,                  \
                              const float* __restrict__ b, float* __restrict__ y, int M, int N, int K, int flags) { \
        gemv_chunk_body<KT, PP, CHUNK_PLAIN, SG>(x, w, b, y, M, N, K, flags, ChunkSide{});                          \
    }                                                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                                             \
        gemv_chunk_conv_k##KT##SUF(const float* __restrict__ x, const unsigned short* __restrict__ w,             \
                                   const float* __restrict__ b, float* __restrict__ y, int M, int N, int K,       \
                                   int flags, const float* cw, const float* cb, float* cst, float* xbc, int lo,   \
                                   int C, int Kc) {                                                               \
        ChunkSide side{};                                                                                         \
        side.cw = cw, side.cb = cb, side.cst = cst, side.xbc = xbc, side.lo = lo, side.C = C, side.Kc = Kc;       \
        gemv_chunk_body<KT, PF, CHUNK_CONV, SG>(x, w, b, y, M, N, K, flags, side);                                   \
    }                                                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                                             \
        gemv_chunk_norm_k##KT##SUF(const float* __restrict__ x, const unsigned short* __restrict__ w,             \
                                   const float* __restrict__ b, float* __restrict__ y, int M, int N, int K,       \
                                   int flags, const double* part, int H, const float* wn, float eps) {            \
        ChunkSide side{};                                                                                         \
        side.part = part, side.H = H, side.wn = wn, side.eps = eps;                                               \
        gemv_chunk_body<KT, PF, CHUNK_NORM, SG>(x, w, b, y, M, N, K, flags, side);                                   \
    }                                                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                                             \
        gemv_chunk_glu_k##KT##SUF(const float* __restrict__ x, const unsigned short* __restrict__ w,              \
                                  const float* __restrict__ b, float* __restrict__ y, int M, int N, int K,        \
                                  int flags) {                                                                    \
        gemv_chunk_body<KT, PP, CHUNK_GLU, SG>(x, w, b, y, M, N, K, flags, ChunkSide{});                            \
    }
// A batch's kernels take two pairs a pass at K = 2048; at larger K one (x
// of two pairs, and its prefetch, would not fit the registers).
#define GC_BATCH_SG(KT) ((KT) == 1 ? 2 : 1)
#define GEMV_CHUNK(KT) GEMV_CHUNK_P(KT, GC_PLAIN, GC_PIECES, 1, ) GEMV_CHUNK_P(KT, GC_BATCH, GC_BATCH, GC_BATCH_SG(KT), _rows)
GEMV_CHUNK(1)
GEMV_CHUNK(2)
GEMV_CHUNK(4)
