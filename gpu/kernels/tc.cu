// Tiled GEMMs for the large products (gpu/tc.go chooses among them):
//   - tc_wbf and tc_wide: Linear with a BF16 / F16 weight and many rows on
//     tensor cores, 64 × 128 tiles (tc_wide_tile, tc_wbf_tile);
//   - simt_gemm: Linear with an fp32 weight on fp32 FMAs, 64 × 64 tiles
//     (gemm_tile, which takes every mode);
//   - conv_tcq_n32 and conv_tcq_n32_deep: the DAC's convolutions as
//     implicit GEMMs on tensor cores, 64 × 32 tiles (conv_tcq_tile), their
//     weights laid out once by conv_prep_a;
//   - tc_reduce_rows and tc_reduce: split-K partials summed in split order.
// All use 32-wide (or 16-wide) k steps, split-K and the same output
// placement; they differ in how operands reach shared memory and in the
// inner product.
//
// Tensor cores: tc_wide splits the fp32 activation into two TF32 parts,
// x = big + small, and multiplies them by the BF16/F16 weight, which TF32
// holds exactly: big·w + small·w with fp32 accumulation keeps about 21
// bits of every product; tc_wbf multiplies BF16 parts of the activation on
// the BF16 path. The convolutions' weights are fp32, so both operands are
// split and every k step takes three products; since the tensor cores'
// accumulation is not IEEE (accumulated over all of k, such products came
// to only ~60 dB against the CPU on the DAC), each 8-wide k step's
// fragment is added into fp32 registers with IEEE adds (TcqFrag).
//
// Order: each output is reduced over k in the same sequence of steps
// wherever its tile lies, and split-K partials are summed in split order;
// the split count depends only on the reduction length. So a window of a
// longer signal reproduces the long result bit for bit, which the DAC
// streamer's exactness rests on.
#include "common.cuh"

#define TC_M 64
#define TC_N 64
#define TC_K 32
#define SI_LD (TC_M + 4)   // SIMT smem tiles: [TC_K][SI_LD], m or n contiguous
#define TC_THREADS 128
#define TC_PER (TC_M * TC_K / TC_THREADS)  // tile elements each thread gathers (16)

// Modes: how A (M × K) and B (K × N) are gathered and where C lands.
#define TC_LINEAR 0  // A = x [M, K]; B(k, n) = w[n, k] (any float dtype); C = y [M, N] + bias[n]
#define TC_CONV 1    // A = w [Cout, Cin·Kw] (fp32); B(k, t) = x[ci, t·stride + kw·dil − pad]; C = out[b, co, t] + bias[co]
#define TC_CONVT 2   // transposed conv, dil 1, Kw % stride == 0, one output phase per grid slice (see below)

// Problem is everything the gather and the placement need.
struct Problem {
    const float* x;
    const void* w;
    int mode, M, N, Kr, wdt;
    int Cin, T, Cout, Kw, Tout, stride, pad, dil;
    // per block
    int rho, bat, t0, cph, Nph, J;
    const float* xb;
    // TC_CONV epilogue (conv_tc_store and the reductions; null: none): Snake with α
    // per output channel, then the residual add res[bat, co, resOff + t]
    // (rows of resT) — the DAC residual unit's snake2 after conv1 and its
    // add after conv2, done as each output is stored.
    const float* ealpha;
    const float* eres;
    int eresT, eresOff;
    // conv_tcq: the weights as conv_prep_a laid them out (null elsewhere).
    const unsigned* aprep;
};

// conv_epilogue: output (bat, co, t)'s value v (bias included) after the
// epilogue, the arithmetic of the snake kernel and of add_f32(res, v).
__device__ __forceinline__ float conv_epilogue(const float* ealpha, const float* eres, int eresT, int eresOff,
                                               int Cout, long long bat, int co, int t, float v) {
    if (ealpha) v = snake_ref(v, ealpha[co]);
    if (eres) v = eres[(bat * Cout + co) * eresT + eresOff + t] + v;
    return v;
}

// TC_CONVT computes out[co, t] = Σ_{ci, k} w[ci, co, k]·x[ci, (t + pad − k)/stride]
// over the taps where the division is exact. For t with (t + pad) ≡ ρ
// (mod stride) those are k = ρ + j·stride, j < J = Kw/stride, so each
// phase ρ is a GEMM over Kr = Cin·J (index r = ci·J + j) instead of
// Cin·Kw mostly-zero taps: t = t0 + n·stride reads input n + c − j with
// t0 = (ρ − pad) mod stride and c = (t0 + pad − ρ)/stride.
__device__ __forceinline__ float gather_a(const Problem& p, int gm, int gk, int k_hi) {
    if (gm >= p.M || gk >= k_hi) return 0.f;
    if (p.mode == TC_LINEAR) return p.x[(long long)gm * p.Kr + gk];
    if (p.mode == TC_CONV) return ((const float*)p.w)[(long long)gm * p.Kr + gk];
    int ci = gk / p.J, j = gk % p.J;
    return ((const float*)p.w)[((long long)ci * p.Cout + gm) * p.Kw + p.rho + j * p.stride];
}

__device__ __forceinline__ float gather_b(const Problem& p, int gn, int gk, int k_hi) {
    if (gk >= k_hi) return 0.f;
    if (p.mode == TC_LINEAR) return gn < p.N ? ldw(p.w, (long long)gn * p.Kr + gk, p.wdt) : 0.f;
    if (p.mode == TC_CONV) {
        if (gn >= p.Tout) return 0.f;
        int ci = gk / p.Kw, kw = gk % p.Kw;
        int q = gn * p.stride + kw * p.dil - p.pad;
        return q >= 0 && q < p.T ? p.xb[(long long)ci * p.T + q] : 0.f;
    }
    if (gn >= p.Nph) return 0.f;
    int ci = gk / p.J, j = gk % p.J;
    int q = gn + p.cph - j;
    return q >= 0 && q < p.T ? p.xb[(long long)ci * p.T + q] : 0.f;
}

// place writes output (gm, gn): the value with its bias, or the raw split
// partial into work.
__device__ __forceinline__ void place(const Problem& p, const float* bias, float* out, float* work, int splits, int s,
                                      long long total, int gm, int gn, float v) {
    if (gm >= p.M) return;
    long long idx;
    float bv;
    if (p.mode == TC_LINEAR) {
        if (gn >= p.N) return;
        idx = (long long)gm * p.N + gn;
        bv = bias ? bias[gn] : 0.f;
    } else {
        if (p.mode == TC_CONV ? gn >= p.Tout : gn >= p.Nph) return;
        int t = p.mode == TC_CONV ? gn : p.t0 + gn * p.stride;
        idx = ((long long)p.bat * p.Cout + gm) * p.Tout + t;
        bv = bias ? bias[gm] : 0.f;
    }
    if (splits > 1) work[(long long)s * total + idx] = v;
    else out[idx] = v + bv;
}

// block_tile_z sets the block's per-tile fields of p (phase ρ, batch item,
// the transposed conv's phase geometry) for a grid whose z index is
// (batch item · phases + ρ) · splits + split. It returns false when phase
// ρ has no output column at n0: the block then has nothing to do.
__host__ __device__ __forceinline__ bool block_tile_z(Problem& p, int splits, int n0, int z) {
    int phases = p.mode == TC_CONVT ? p.stride : 1;
    p.rho = (z / splits) % phases;
    p.bat = z / (splits * phases);
    p.J = p.mode == TC_CONVT ? p.Kw / p.stride : 1;
    p.t0 = 0, p.cph = 0, p.Nph = p.N;
    if (p.mode == TC_CONVT) {
        p.t0 = ((p.rho - p.pad) % p.stride + p.stride) % p.stride;
        p.cph = (p.t0 + p.pad - p.rho) / p.stride;
        p.Nph = p.t0 < p.Tout ? (p.Tout - p.t0 + p.stride - 1) / p.stride : 0;
        if (n0 >= p.Nph) return false;
    }
    return true;
}

// BlockK is a block's share of the reduction, k in [k_lo, k_hi), and its
// split s.
struct BlockK {
    int s, k_lo, k_hi;
};

// block_k: split s = z mod splits of a grid whose z index ends in the split
// reduces k in [s·kchunk, min(Kr, (s+1)·kchunk)); with fold and splits = 1
// the block takes the whole reduction (conv_tcq_tile sums its kchunk
// pieces itself). Every tile's prologue.
__host__ __device__ __forceinline__ BlockK block_k(int Kr, int splits, int kchunk, unsigned z, bool fold) {
    BlockK k;
    k.s = z % splits;
    k.k_lo = k.s * kchunk;
    k.k_hi = fold && splits == 1 ? Kr : min(Kr, k.k_lo + kchunk);
    return k;
}

// block_span is the rest of gemm_tile's and conv_tcq_tile's prologue after
// block_tile_z (check/gather_check.cu runs conv_tcq_tile's for every
// block): block z of a grid of zdim slices along z reduces block_k's range,
// reads its batch item's input p.xb, and writes its outputs among total,
// the grid's output count (a split's stride in the partials). tcq selects
// conv_tcq_tile's: convolutions only, and an unsplit grid folds the whole
// reduction into each block; gemm_tile's takes TC_LINEAR too.
__host__ __device__ __forceinline__ BlockK block_span(Problem& p, int splits, int kchunk, bool tcq, unsigned z,
                                                      unsigned zdim, long long& total) {
    int phases = p.mode == TC_CONVT ? p.stride : 1;
    bool linear = !tcq && p.mode == TC_LINEAR;
    p.xb = linear ? p.x : p.x + (long long)p.bat * p.Cin * p.T;
    total = linear ? (long long)p.M * p.N : (long long)(zdim / (splits * phases)) * p.Cout * p.Tout;
    return block_k(p.Kr, splits, kchunk, z, tcq);
}

// gemm_tile: grid (⌈N/64⌉, ⌈M/64⌉, batch·phases·splits), 128 threads.
// Split s reduces k in [s·kchunk, min(Kr, (s+1)·kchunk)); with splits > 1
// it writes raw partials to work[s·total + index] for tc_reduce. The next
// k step's operands are fetched into registers while the current one is
// multiplied.
__device__ __forceinline__ void gemm_tile(Problem p, const float* __restrict__ bias, float* __restrict__ out,
                                          float* __restrict__ work, int splits, int kchunk) {
    __shared__ __align__(128) float smem[2 * TC_K * SI_LD];
    float* As = smem;
    float* Bs = smem + TC_K * SI_LD;

    int m0 = blockIdx.y * TC_M, n0 = blockIdx.x * TC_N;
    if (!block_tile_z(p, splits, n0, blockIdx.z)) return;
    long long total;
    const BlockK kr = block_span(p, splits, kchunk, false, blockIdx.z, gridDim.z, total);
    const int s = kr.s, k_lo = kr.k_lo, k_hi = kr.k_hi;

    // Each thread gathers TC_PER elements of each tile: element e of the
    // 64 × 32 tile is (row e / 32, k e % 32), consecutive threads along k.
    float ra[TC_PER], rb[TC_PER];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int i = 0; i < TC_PER; i++) {
            int e = threadIdx.x + i * TC_THREADS;
            int r = e / TC_K, c = e % TC_K;
            ra[i] = gather_a(p, m0 + r, k0 + c, k_hi);
            rb[i] = gather_b(p, n0 + r, k0 + c, k_hi);
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int i = 0; i < TC_PER; i++) {
            int e = threadIdx.x + i * TC_THREADS;
            int r = e / TC_K, c = e % TC_K;
            As[c * SI_LD + r] = ra[i];
            Bs[c * SI_LD + r] = rb[i];
        }
    };

    // SIMT: thread (tx, ty) owns rows ty·8 … ty·8+7 and columns tx·4 … tx·4+3.
    int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    float acc[8][4];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
    if (k_lo < k_hi) fetch(k_lo);
    for (int k0 = k_lo; k0 < k_hi; k0 += TC_K) {
        stash();
        __syncthreads();
        if (k0 + TC_K < k_hi) fetch(k0 + TC_K);
#pragma unroll 8
        for (int kk = 0; kk < TC_K; kk++) {
            float4 a0 = *(const float4*)(As + kk * SI_LD + ty * 8);
            float4 a1 = *(const float4*)(As + kk * SI_LD + ty * 8 + 4);
            float4 b4 = *(const float4*)(Bs + kk * SI_LD + tx * 4);
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) place(p, bias, out, work, splits, s, total, m0 + ty * 8 + i, n0 + tx * 4 + j, acc[i][j]);
}

// ---- Tensor-core helpers -------------------------------------------------
// mma_tf32: c += a·b for one m16n8k8 TF32 fragment (fp32 accumulation).
__device__ __forceinline__ void mma_tf32(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- Tensor-core Linear (tc_wide) ------------------------------------------
// Linear with BF16/F16 weights as raw mma.sync.m16n8k8 TF32 products whose
// operands are streamed into shared memory by cp.async two k steps ahead.
// A warp owns 32 × 64 outputs, so each activation split serves 8 weight
// fragments: a 32 × 32 warp tile with fragments loaded element by element
// was bound by instruction issue (ncu, H200, 2026-11-29, fc1 at 142 rows:
// 60 % of issue slots busy, the tensor pipe at 42 %), a warp spending ~48
// other instructions per 16 products on splitting the activation into its
// two TF32 parts, loading fragments and widening the weight. The weight
// fragments come from shared memory by ldmatrix (four 8 × 8 fragments per
// instruction, the BF16 weight staying 16-bit in shared memory) and the
// activation's as pairs (64-bit loads): both read k in the order 2t,
// 2t + 1 that ldmatrix delivers, so mma slot t holds k = 2t and slot t + 4
// k = 2t + 1 in A and B alike. Block tile 64 × 128, 32-wide k steps in a
// 3-stage ring (dynamic shared memory), split-K and placement as
// gemm_tile; each product is done twice, the small then the big TF32 part
// of the activation. Every output's k order is the tile-local one,
// wherever the tile lies.
#define TW_M 64
#define TW_N 128
#define TW_K 32
#define TW_STAGES 3
#define TW_LDA (TW_K + 8)  // fp32 words: 64-bit fragment loads conflict-free per half-warp
#define TW_LDB (TW_K + 8)  // halfwords: 80-byte rows, ldmatrix conflict-free
#define TW_STAGE_A (TW_M * TW_LDA)      // floats
#define TW_STAGE_B (TW_N * TW_LDB)      // halfwords
#define TW_SMEM (TW_STAGES * (TW_STAGE_A * 4 + TW_STAGE_B * 2))

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// wide_load requests one k step of tc_wide's or tc_wbf's operands: A,
// the 64 × 32 fp32 activation tile at rows m0.., k0.. (rows lda floats
// apart), and Bt, the 128 × 32 halfword weight tile at rows n0.. (rows
// TW_LDB apart); 512 16-byte pieces each (4 per thread), zero-filled
// outside M, N or [.., k_hi).
__device__ __forceinline__ void wide_load(const Problem& p, float* A, int lda, unsigned short* Bt, int m0, int n0,
                                          int k0, int k_hi) {
    const unsigned short* w = (const unsigned short*)p.w;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int e = threadIdx.x + i * TC_THREADS;
        int r = e >> 3, c = (e & 7) * 4;
        int gm = m0 + r, gk = k0 + c;
        bool in = gm < p.M && gk < k_hi;
        cp_async16z(&A[r * lda + c], p.x + (in ? (long long)gm * p.Kr + gk : 0), in);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int e = threadIdx.x + i * TC_THREADS;
        int r = e >> 2, c = (e & 3) * 8;
        int gn = n0 + r, gk = k0 + c;
        bool in = gn < p.N && gk < k_hi;
        cp_async16z(&Bt[r * TW_LDB + c], w + (in ? (long long)gn * p.Kr + gk : 0), in);
    }
}

// wide_store places a warp's 32 × 64 outputs at rows m0 + wm.., columns
// n0 + wn..: fragment (i, j) holds c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8,
// 2t), c3 (g + 8, 2t + 1), for m16n8k8 TF32 and m16n8k16 BF16 alike.
__device__ __forceinline__ void wide_store(const Problem& p, const float* __restrict__ bias, float* __restrict__ out,
                                           float* __restrict__ work, int splits, int s, long long total, int m0,
                                           int n0, int wm, int wn, int lane, const float (&acc)[2][8][4]) {
    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int gm = m0 + wm + 16 * i + g + (e >> 1) * 8;
                int gn = n0 + wn + 8 * j + 2 * t + (e & 1);
                place(p, bias, out, work, splits, s, total, gm, gn, acc[i][j][e]);
            }
}

__device__ __forceinline__ void tc_wide_tile(const Problem& p, const float* __restrict__ bias, float* __restrict__ out,
                                             float* __restrict__ work, int splits, int kchunk) {
    extern __shared__ __align__(16) unsigned char tw_smem[];
    float* As = (float*)tw_smem;                                          // [stage][TW_M][TW_LDA]
    unsigned short* Bs = (unsigned short*)(As + TW_STAGES * TW_STAGE_A); // [stage][TW_N][TW_LDB]
    const BlockK kr = block_k(p.Kr, splits, kchunk, blockIdx.z, false);
    int m0 = blockIdx.y * TW_M, n0 = blockIdx.x * TW_N;
    const int s = kr.s, k_lo = kr.k_lo, k_hi = kr.k_hi;
    long long total = (long long)p.M * p.N;
    int nk = k_hi > k_lo ? (k_hi - k_lo + TW_K - 1) / TW_K : 0;
    auto load = [&](int st, int k0) {
        wide_load(p, As + st * TW_STAGE_A, TW_LDA, Bs + st * TW_STAGE_B, m0, n0, k0, k_hi);
    };
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int wm = (warp >> 1) * 32, wn = (warp & 1) * 64;
    int g = lane >> 2, t = lane & 3;
    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
#pragma unroll
    for (int st = 0; st < TW_STAGES - 1; st++) {
        if (st < nk) load(st, k_lo + st * TW_K);
        cp_async_commit();
    }
    // ldmatrix row addresses: lanes 8q..8q+7 give the rows of fragment q.
    int brow = wn + 8 * (lane >> 3) + (lane & 7);
    for (int kt = 0; kt < nk; kt++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(TW_STAGES - 2));
        __syncthreads();  // stage kt landed for every thread; stage kt − 1 is no longer read
        if (kt + TW_STAGES - 1 < nk) load((kt + TW_STAGES - 1) % TW_STAGES, k_lo + (kt + TW_STAGES - 1) * TW_K);
        cp_async_commit();
        const float* A = As + (kt % TW_STAGES) * TW_STAGE_A;
        const unsigned short* Bt = Bs + (kt % TW_STAGES) * TW_STAGE_B;
#pragma unroll
        for (int kk = 0; kk < TW_K; kk += 8) {
            unsigned big[2][4], small[2][4], bq[2][4];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const float* a = A + (wm + 16 * i + g) * TW_LDA + kk + 2 * t;
                float2 lo = *(const float2*)a, hi = *(const float2*)(a + 8 * TW_LDA);
                float v[4] = {lo.x, hi.x, lo.y, hi.y}; // slots (g, t), (g+8, t), (g, t+4), (g+8, t+4)
#pragma unroll
                for (int e = 0; e < 4; e++) tf32_split(v[e], big[i][e], small[i][e]);
            }
#pragma unroll
            for (int h = 0; h < 2; h++) ldmatrix_x4(bq[h], Bt + (brow + 32 * h) * TW_LDB + kk);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                unsigned pair = bq[j >> 2][j & 3]; // k = 2t (low half), 2t + 1 (high half)
                unsigned b0 = p.wdt == 1 ? pair << 16 : __float_as_uint(f16_to_f32((unsigned short)pair));
                unsigned b1 = p.wdt == 1 ? pair & 0xffff0000u : __float_as_uint(f16_to_f32((unsigned short)(pair >> 16)));
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    mma_tf32(acc[i][j], small[i], b0, b1);
                    mma_tf32(acc[i][j], big[i], b0, b1);
                }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;");
    wide_store(p, bias, out, work, splits, s, total, m0, n0, wm, wn, lane, acc);
}

// ---- Tensor-core Linear on BF16 products (tc_wbf) -------------------------
// tc_wide for BF16 weights on the BF16 tensor path (m16n8k16): the
// activation is split into PARTS BF16 parts, x = hi + mid (+ lo) (8
// significant bits each), and each part is multiplied by the BF16 weight
// as it is, so each product is exact in fp32. One m16n8k16 BF16 mma costs
// the tensor cores what one m16n8k8 TF32 mma does, so a 16-wide k step is
// PARTS products per fragment here against tc_wide's 4, and neither the
// activation's split nor the weight's widening sits in the k loop: each
// staged activation tile (fp32, by cp.async as in tc_wide) is split once
// per block into BF16 planes in shared memory, and both operands reach the
// mma by ldmatrix. Tiles, stages, split-K and placement are tc_wide's;
// each output's k order is the tile-local one, wherever the tile lies, and
// the parts are multiplied smallest first.
//
// tc_wbf multiplies two parts (PARTS = 2: about 16 bits of x), which
// leaves the error on random products the fp32 accumulation's, as
// tc_wide's (TestWbfAccuracy). Three parts (about 24 bits) halved the
// transformer golden pack's prefill logit error (7.6e-6 to 3.3e-6,
// tolerance 9e-4) but took the 80-position prefill from 11.92 to 13.10 ms
// (H200, 2026-11-30).
#define WB_LDA 36  // fp32 words per staged activation row (144 bytes: 16-byte aligned)
#define WB_LDP 40  // halfwords per plane row (80 bytes: ldmatrix conflict-free)

template <int PARTS>
__device__ __forceinline__ void tc_wbf_tile(const Problem& p, const float* __restrict__ bias, float* __restrict__ out,
                                            float* __restrict__ work, int splits, int kchunk) {
    extern __shared__ __align__(16) unsigned char wb_smem[];
    float* As = (float*)wb_smem;                                                        // [stage][TW_M][WB_LDA]
    unsigned short* Bs = (unsigned short*)(As + TW_STAGES * TW_M * WB_LDA);             // [stage][TW_N][TW_LDB]
    unsigned short* Ps = Bs + TW_STAGES * TW_STAGE_B;                                   // [3][TW_M][WB_LDP]
    const BlockK kr = block_k(p.Kr, splits, kchunk, blockIdx.z, false);
    int m0 = blockIdx.y * TW_M, n0 = blockIdx.x * TW_N;
    const int s = kr.s, k_lo = kr.k_lo, k_hi = kr.k_hi;
    long long total = (long long)p.M * p.N;
    int nk = k_hi > k_lo ? (k_hi - k_lo + TW_K - 1) / TW_K : 0;
    auto load = [&](int st, int k0) {
        wide_load(p, As + st * TW_M * WB_LDA, WB_LDA, Bs + st * TW_STAGE_B, m0, n0, k0, k_hi);
    };
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int wm = (warp >> 1) * 32, wn = (warp & 1) * 64;
    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
#pragma unroll
    for (int st = 0; st < TW_STAGES - 1; st++) {
        if (st < nk) load(st, k_lo + st * TW_K);
        cp_async_commit();
    }
    // ldmatrix rows: A's four 8 × 8 matrices are (rows 0–7, k 0–7), (8–15,
    // 0–7), (0–7, 8–15), (8–15, 8–15), the m16n8k16 A fragment's order; B's
    // are (n 0–7, k 0–7), (0–7, 8–15), (8–15, 0–7), (8–15, 8–15): b0, b1 of
    // two neighbouring n8 fragments. Lanes 8q..8q+7 give matrix q's rows.
    int arow = (lane & 7) + ((lane >> 3) & 1) * 8, acol = (lane >> 4) * 8;
    int brow = (lane & 7) + (lane >> 4) * 8, bcol = ((lane >> 3) & 1) * 8;
    // The split: thread e converts 16 consecutive k of activation row e / 2.
    int sr = threadIdx.x >> 1, sc = (threadIdx.x & 1) * 16;
    for (int kt = 0; kt < nk; kt++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(TW_STAGES - 2));
        __syncthreads();  // stage kt landed for every thread; the planes and stage kt − 1 are no longer read
        if (kt + TW_STAGES - 1 < nk) load((kt + TW_STAGES - 1) % TW_STAGES, k_lo + (kt + TW_STAGES - 1) * TW_K);
        cp_async_commit();
        {
            const float4* a = (const float4*)(As + (kt % TW_STAGES) * TW_M * WB_LDA + sr * WB_LDA + sc);
            unsigned part[3][8];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float4 v = a[q];
                bf16_split3(v.x, v.y, part[0][2 * q], part[1][2 * q], part[2][2 * q]);
                bf16_split3(v.z, v.w, part[0][2 * q + 1], part[1][2 * q + 1], part[2][2 * q + 1]);
            }
#pragma unroll
            for (int pl = 0; pl < PARTS; pl++) {
                uint4* d = (uint4*)(Ps + pl * TW_M * WB_LDP + sr * WB_LDP + sc);
                d[0] = make_uint4(part[pl][0], part[pl][1], part[pl][2], part[pl][3]);
                d[1] = make_uint4(part[pl][4], part[pl][5], part[pl][6], part[pl][7]);
            }
        }
        __syncthreads();  // the planes of stage kt are written
        const unsigned short* Bt = Bs + (kt % TW_STAGES) * TW_STAGE_B;
#pragma unroll
        for (int kk = 0; kk < TW_K; kk += 16) {
            unsigned af[3][2][4], bf[4][4];
#pragma unroll
            for (int pl = 0; pl < PARTS; pl++)
#pragma unroll
                for (int i = 0; i < 2; i++)
                    ldmatrix_x4(af[pl][i], Ps + pl * TW_M * WB_LDP + (wm + 16 * i + arow) * WB_LDP + kk + acol);
#pragma unroll
            for (int jj = 0; jj < 4; jj++) ldmatrix_x4(bf[jj], Bt + (wn + 16 * jj + brow) * TW_LDB + kk + bcol);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                unsigned b0 = bf[j >> 1][(j & 1) * 2], b1 = bf[j >> 1][(j & 1) * 2 + 1];
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    if (PARTS == 3) mma_bf16(acc[i][j], af[2][i], b0, b1);
                    mma_bf16(acc[i][j], af[1][i], b0, b1);
                    mma_bf16(acc[i][j], af[0][i], b0, b1);
                }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;");
    wide_store(p, bias, out, work, splits, s, total, m0, n0, wm, wn, lane, acc);
}

// ---- Convolutions (conv_tcq) ----------------------------------------------
// The DAC's convolutions as implicit GEMMs (modes TC_CONV and TC_CONVT):
// 64 output channels × TN time steps a block, 16-wide k steps; warp w owns
// rows wm + [0, 32) and columns wn + [0, TN/2) of the tile as m16n8k8 TF32
// fragments, fragment (i, j) (rows wm + 16i, columns wn + 8j) in
// acc[4(NF·i + j) + e] with e = 0..3 at (g, 2t), (g, 2t + 1), (g + 8, 2t),
// (g + 8, 2t + 1). Both operands are split into TF32 parts (v = big +
// small, about 21 bits together: tf32_split), the weights once by
// conv_prep_a, and every 8-wide k step is three products, small·big,
// big·small, then big·big, into a fragment that starts at zero; that
// fragment is then added to the fp32 accumulator with an IEEE add. The
// tensor cores' own accumulation (not IEEE: it truncates while aligning)
// thus only ever sums 8 terms. Every output is reduced in the same order
// wherever its tile lies (k steps, then split-K in split order), so
// streamed windows stay exact.
#define CV_M 64
#define CV_K 16

// conv_tc_store writes a warp's accumulators (the layout above) of
// the tile at (m0, n0): output (gm, col) is dst[bat, gm, t] with t = col
// (TC_CONV) or t0 + col·stride (one phase of TC_CONVT). Unsplit, the bias
// and the epilogue are applied to every accumulator first and stored
// after: the epilogue's inputs (eres, ealpha) are plain pointers that may
// alias out, so with each store between them every output waited for its
// own epilogue load in turn (the DAC's last 1×1 convolutions, whose
// 96-long reduction is never split, took 51 µs each, about 4× their
// products; ncu, H200, 2026-11-29). Split, dst is the split's partials.
template <int TN>
__device__ __forceinline__ void conv_tc_store(const Problem& p, const float* __restrict__ bias, float* __restrict__ dst,
                                              int splits, float* acc, int m0, int n0, int wm, int wn, int g, int t) {
    constexpr int NF = TN / 16, NACC = 8 * NF;
    const bool convt = p.mode == TC_CONVT;
    const int ncols = convt ? p.Nph : p.Tout;
    const int tstep = convt ? p.stride : 1;
    // at: fragment accumulator o's output row and column.
    auto at = [&](int o, int& gm, int& col) {
        int f = o >> 2, e = o & 3;
        gm = m0 + wm + 16 * (f / NF) + g + 8 * (e >> 1);
        col = n0 + wn + 8 * (f % NF) + 2 * t + (e & 1);
    };
    if (splits == 1) {
#pragma unroll
        for (int o = 0; o < NACC; o++) {
            int gm, col;
            at(o, gm, col);
            if (gm >= p.M || col >= ncols) continue;
            float v = acc[o] + (bias ? bias[gm] : 0.f);
            if (!convt) v = conv_epilogue(p.ealpha, p.eres, p.eresT, p.eresOff, p.Cout, p.bat, gm, col, v);
            acc[o] = v;
        }
    }
#pragma unroll
    for (int o = 0; o < NACC; o++) {
        int gm, col;
        at(o, gm, col);
        if (gm >= p.M || col >= ncols) continue;
        dst[((long long)p.bat * p.Cout + gm) * p.Tout + p.t0 + (long long)col * tstep] = acc[o];
    }
}

// ConvRowGather is one thread's share of conv_tcq_tile's input (B)
// gather: one k row of the 16 of a k step (row = tid / 8) at NPER columns
// of the tile, c0 + 8c (c0 = tid mod 8), copied by 4-byte cp.async with
// zero fill. The row's (channel, tap) steps incrementally, once per k step
// for all its columns, and consecutive columns are consecutive input
// samples (the DAC's convolutions have stride 1; transposed ones are
// gathered per phase, also consecutive), so each copy costs an add, a
// bounds test and its address (a thread that owns one column at several k
// rows steps (channel, tap) per value: with its predicates and 64-bit
// addresses, integer work was over half the kernel's instructions; ncu,
// H200, 2026-11-30). Columns 8 apart put a warp's copies of one column
// step in distinct banks and 32-byte pieces. The values are gather_b's:
// zeros outside the output columns, [k_lo, k_hi) and the input
// (check/gather_check.cu checks them on the host).
template <int NPER>
struct ConvRowGather {
    const float* xb;
    int k, k_hi, ci, tap, taps, tstep, d16, r16;  // the row's k = ci·taps + tap
    int T, tbase, cs8, ncol;  // input length; input index of column c0 at tap 0; index step per 8 columns; valid columns

    __host__ __device__ void init(const Problem& p, int n0, int row, int c0, int k_lo, int khi) {
        const bool convt = p.mode == TC_CONVT;
        xb = p.xb, T = p.T, k_hi = khi;
        taps = convt ? p.J : p.Kw;
        tstep = convt ? -1 : p.dil;
        k = k_lo + row;
        ci = k / taps, tap = k - ci * taps;
        d16 = CV_K / taps, r16 = CV_K - d16 * taps;
        int gn = n0 + c0;
        tbase = convt ? gn + p.cph : gn * p.stride - p.pad;
        cs8 = 8 * (convt ? 1 : p.stride);
        int ncols = convt ? p.Nph : p.Tout;
        ncol = gn < ncols ? min(NPER, (ncols - gn + 7) / 8) : 0;
    }

    // The current k step: rin says whether its row lies in [k_lo, k_hi),
    // q0 is column c0's input index and src(q0) the input there; column c
    // (c0 + 8c of the tile) is src(q0)[c·cs8] where inside(rin, q0, c),
    // else zero.
    __host__ __device__ __forceinline__ bool rin() const { return k < k_hi; }
    __host__ __device__ __forceinline__ int q0() const { return tbase + tap * tstep; }
    __host__ __device__ __forceinline__ const float* src(int q0) const { return xb + (long long)ci * T + q0; }
    __host__ __device__ __forceinline__ bool inside(bool rin, int q0, int c) const {
        int q = q0 + c * cs8;
        return rin && c < ncol && (unsigned)q < (unsigned)T;
    }

    // next moves on to the next k step.
    __host__ __device__ __forceinline__ void next() {
        k += CV_K, tap += r16, ci += d16;
        if (tap >= taps) tap -= taps, ci++;
    }

    // issue copies the current k step's values to sdst + 32c bytes (a
    // shared-space address) and moves on to the next step.
    __device__ void issue(unsigned sdst) {
        const bool in_k = rin();
        const int q = q0();
        const float* s = src(q);
#pragma unroll
        for (int c = 0; c < NPER; c++) {
            bool in = inside(in_k, q, c);
            // zero fill reads nothing: the address of a value outside the
            // input is never dereferenced
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(sdst + 32u * c), "l"(s + c * cs8),
                         "r"(in ? 4 : 0));
        }
        next();
    }
};

// TcqFrag holds a warp's operands of one 8-wide k step (kk = 0 or 8 of a
// 16-wide step): A's prepared TF32 parts for its two 16-row blocks and B's
// two values per 8-column fragment, which mma splits into TF32 parts and
// multiplies, three products into a fragment from zero, added to the
// accumulators with IEEE adds.
template <int NF>
struct TcqFrag {
    uint4 big[2], small[2];
    float b[NF][2];

    __device__ __forceinline__ void load(const unsigned* Ap, const float* B, int kk, int wm, int wn, int lane, int g,
                                         int t) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int f = (((wm >> 5) * 2 + i) * 2 + (kk >> 3)) * 32 + lane;
            big[i] = *(const uint4*)&Ap[f * 4], small[i] = *(const uint4*)&Ap[1024 + f * 4];
        }
#pragma unroll
        for (int j = 0; j < NF; j++) {
            const float* bp = B + (kk + t) * (16 * NF + 8) + wn + 8 * j + g;
            b[j][0] = bp[0], b[j][1] = bp[4 * (16 * NF + 8)];
        }
    }

    __device__ __forceinline__ void mma(float* acc) const {
#pragma unroll
        for (int j = 0; j < NF; j++) {
            unsigned bb0, bb1, bs0, bs1;
            tf32_split(b[j][0], bb0, bs0);
            tf32_split(b[j][1], bb1, bs1);
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const unsigned bg[4] = {big[i].x, big[i].y, big[i].z, big[i].w};
                const unsigned sm[4] = {small[i].x, small[i].y, small[i].z, small[i].w};
                float d[4] = {0.f, 0.f, 0.f, 0.f};
                mma_tf32(d, sm, bb0, bb1);
                mma_tf32(d, bg, bs0, bs1);
                mma_tf32(d, bg, bb0, bb1);
#pragma unroll
                for (int e = 0; e < 4; e++) acc[4 * (NF * i + j) + e] += d[e];
            }
        }
    }

};

// conv_tcq_tile computes a block's 64 × TN outputs with its operands S k
// steps deep in flight: A (conv_prep_a's layout, 16-byte copies) and B
// (ConvRowGather's 4-byte copies with zero fill) both go to shared memory
// by cp.async, nothing through registers, so S − 1 steps load while one
// computes. Fetching one step ahead with B through registers, and 4 warps a
// scheduler to cover the L2 latency, was latency-bound at 34 % of the
// tensor pipe and 55 % of the issue slots (ncu, H200, 2026-11-30).
//
// Split-K pieces folded in the block: kchunk is the layer's split length
// (tcSplits), which fixes each output's order of sums, and a split grid
// writes each piece's sum for tc_reduce_rows to add in split order. A grid
// of splits = 1 instead runs the whole reduction in each block, summing
// each kchunk piece from zero and adding it to a running total (from
// zero, in piece order), which is tc_reduce_rows' arithmetic: the same
// bits with no partials and no second kernel. The backend folds where the
// output tiles alone fill the GPU (tcGemm); splitting only buys
// parallelism, which a short streamed chunk needs and a long one does not.
//
// Ap and Bs are the S stages of the operands in shared memory: static
// arrays in conv_tcq_n32, dynamic shared memory in conv_tcq_n32_deep.
template <int TN, int S>
__device__ __forceinline__ void conv_tcq_tile(Problem p, const float* __restrict__ bias, float* __restrict__ out,
                                              float* __restrict__ work, int splits, int kchunk,
                                              unsigned (*Ap)[2048], float (*Bs)[CV_K * (TN + 8)]) {
    constexpr int LDB = TN + 8;
    constexpr int NACC = TN / 2;
    int m0 = blockIdx.y * CV_M, n0 = blockIdx.x * TN;
    // Unsplit (splits = 1) the block folds the whole reduction in kchunk
    // pieces (see the comment above).
    if (!block_tile_z(p, splits, n0, blockIdx.z)) return;
    long long total;
    const BlockK kr = block_span(p, splits, kchunk, true, blockIdx.z, gridDim.z, total);
    const int s = kr.s, k_lo = kr.k_lo, k_hi = kr.k_hi;
    const int tid = threadIdx.x;
    ConvRowGather<TN / 8> gather;
    gather.init(p, n0, tid >> 3, tid & 7, k_lo, k_hi);
    const int mtiles = (p.M + CV_M - 1) / CV_M, ksteps = (p.Kr + CV_K - 1) / CV_K;
    const unsigned* asrc =
        p.aprep + (((long long)p.rho * mtiles + blockIdx.y) * ksteps + k_lo / CV_K) * 2048 + tid * 4;
    const unsigned sA = (unsigned)__cvta_generic_to_shared(&Ap[0][tid * 4]);
    const unsigned sB = (unsigned)__cvta_generic_to_shared(&Bs[0][(tid >> 3) * LDB + (tid & 7)]);
    const int steps = k_lo < k_hi ? (k_hi - k_lo + CV_K - 1) / CV_K : 0;
    // issue starts k step i's copies into buffer i mod S (one commit group
    // per step, empty past the last, so that wait_group counts steps).
    auto issue = [&](int i) {
        if (i < steps) {
            int buf = i % S;
#pragma unroll
            for (int r = 0; r < 4; r++)
                asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(sA + buf * 8192 + r * 2048),
                             "l"(asrc + r * 512));
            asrc += 2048;
            gather.issue(sB + buf * (CV_K * LDB * 4));
        }
        cp_async_commit();
    };
    const int lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int wm = (tid >> 6) * 32, wn = ((tid >> 5) & 1) * (TN / 2);
    // A warp whose 32 rows lie past M (the second half of the last tile of
    // a 96-channel convolution, the DAC's last stage) has only zeros to
    // multiply: it copies and waits with the block but skips its products.
    const bool busy = m0 + wm < p.M;
    float acc[NACC], tot[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = tot[i] = 0.f;
#pragma unroll
    for (int i = 0; i < S - 1; i++) issue(i);
    const int csteps = kchunk / CV_K; // k steps per piece (kchunk is a multiple of 32)
    int left = csteps;
    for (int i = 0; i < steps; i++) {
        cp_async_wait<S - 2>(); // step i's group is complete (this thread's copies)
        __syncthreads();        // everyone's; and step i − 1's buffer is free
        issue(i + S - 1);
        int buf = i % S;
        if (busy) {
            TcqFrag<TN / 16> lo, hi;
            lo.load(Ap[buf], Bs[buf], 0, wm, wn, lane, g, t);
            hi.load(Ap[buf], Bs[buf], 8, wm, wn, lane, g, t);
            lo.mma(acc);
            hi.mma(acc);
        }
        if (splits == 1 && (--left == 0 || i + 1 == steps)) { // a piece ends: add it as tc_reduce adds a split
#pragma unroll
            for (int o = 0; o < NACC; o++) tot[o] += acc[o], acc[o] = 0.f;
            left = csteps;
        }
    }
    cp_async_wait<0>();
    if (splits == 1) {
#pragma unroll
        for (int o = 0; o < NACC; o++) acc[o] = tot[o];
    }
    float* dst = splits > 1 ? work + (long long)s * total : out;
    conv_tc_store<TN>(p, bias, dst, splits, acc, m0, n0, wm, wn, g, t);
}

#define GEMM_PARAMS                                                                                                \
    const float *__restrict__ x, const void *__restrict__ w, const float *__restrict__ bias, float *__restrict__ out, \
        float *__restrict__ work, int mode, int M, int N, int Kr, int wdt, int splits, int kchunk, int Cin, int T,  \
        int Cout, int Kw, int Tout, int stride, int pad, int dil, const float *__restrict__ ealpha,                 \
        const float *__restrict__ eres, int eresT, int eresOff, const unsigned *__restrict__ aprep

#define GEMM_PROBLEM                                                                                    \
    Problem p;                                                                                          \
    p.x = x, p.w = w, p.mode = mode, p.M = M, p.N = N, p.Kr = Kr, p.wdt = wdt, p.Cin = Cin, p.T = T;   \
    p.Cout = Cout, p.Kw = Kw, p.Tout = Tout, p.stride = stride, p.pad = pad, p.dil = dil;              \
    p.ealpha = ealpha, p.eres = eres, p.eresT = eresT, p.eresOff = eresOff, p.aprep = aprep;

// tc_wide: TC_LINEAR on tensor cores with 32 × 64 warp tiles, for BF16/F16
// weights (an fp32 weight would need a third product) and K % 8 == 0
// (16-byte loads); grid (⌈N/128⌉, ⌈M/64⌉, splits), 128 threads,
// TW_SMEM bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tc_wide(GEMM_PARAMS) {
    pdl_begin();
    GEMM_PROBLEM
    tc_wide_tile(p, bias, out, work, splits, kchunk);
}

// tc_wbf: tc_wide's TC_LINEAR for BF16 weights on BF16 products of two
// parts of the activation (see tc_wbf_tile); K % 8 == 0, grid (⌈N/128⌉,
// ⌈M/64⌉, splits), 128 threads, WbfSmem bytes of dynamic shared memory
// (kernels.go).
extern "C" __global__ void __launch_bounds__(TC_THREADS) tc_wbf(GEMM_PARAMS) {
    pdl_begin();
    GEMM_PROBLEM
    tc_wbf_tile<2>(p, bias, out, work, splits, kchunk);
}

// simt_gemm: Linear with an fp32 weight (or K % 8 ≠ 0) on fp32 FMAs, any
// mode: grid (⌈N/64⌉, ⌈M/64⌉, batch·phases·splits), 128 threads.
extern "C" __global__ void __launch_bounds__(TC_THREADS) simt_gemm(GEMM_PARAMS) {
    pdl_begin();
    GEMM_PROBLEM
    gemm_tile(p, bias, out, work, splits, kchunk);
}

// conv_tcq_n32: TC_CONV and TC_CONVT on 32-wide tiles with four k steps
// in flight (conv_tcq_tile) and aprep from conv_prep_a: grid (⌈N/32⌉,
// ⌈M/64⌉, batch·phases·splits), 128 threads. The 32-wide tile is the
// backend's for every length (tc.go's convTileN): each output is the same
// arithmetic whatever the width.
extern "C" __global__ void __launch_bounds__(TC_THREADS, 4) conv_tcq_n32(GEMM_PARAMS) {
    __shared__ __align__(16) unsigned Ap[4][2048];
    __shared__ __align__(16) float Bs[4][CV_K * (32 + 8)];
    pdl_begin();
    GEMM_PROBLEM
    conv_tcq_tile<32, 4>(p, bias, out, work, splits, kchunk, Ap, Bs);
}

// conv_tcq_n32_deep: conv_tcq_n32 with TCQ_DEEP_S k steps in flight, in
// dynamic shared memory (TcqDeepSmem bytes), for grids of at most two
// blocks an SM. A short streamed chunk's convolution is a few dozen blocks,
// each streaming its rows of weights through a serial k loop: with three
// steps ahead a block read 12–20 GB/s and the kernel took 15–50 µs for a
// few MB (ncu, H200, 2026-11-30, a 2-frame emission). The same
// products in the same order: the outputs are conv_tcq_n32's.
#define TCQ_DEEP_S 8
extern "C" __global__ void __launch_bounds__(TC_THREADS, 2) conv_tcq_n32_deep(GEMM_PARAMS) {
    extern __shared__ __align__(16) unsigned char tcq_deep_smem[];
    pdl_begin();
    GEMM_PROBLEM
    conv_tcq_tile<32, TCQ_DEEP_S>(p, bias, out, work, splits, kchunk, (unsigned(*)[2048])tcq_deep_smem,
                                  (float(*)[CV_K * 40])(tcq_deep_smem + TCQ_DEEP_S * 2048 * 4));
}

// conv_prep_a lays a convolution's weights out as conv_tcq's A operand:
// for each phase ρ (TC_CONVT; one for TC_CONV), 64-row tile mt and 16-wide
// k step ks, a block of 2048 words: the big TF32 parts (tf32_split) of its
// 64 × 16 values in fragment order, then their small parts. Word
// (f·32 + lane)·4 + e of a part is fragment f = (w·2 + i)·2 + q (warp row
// half w, 16-row block i, 8-wide k step q), slot e = h + 2v of lane 4g + c:
// row 32w + 16i + 8h + g, k 8q + 4v + c, as TcqFrag::load reads them. Rows past M and k past Kr are zero, as the gather's are.
// conv_prep_value is the value of word pos (< 1024) of tile (ρ, mt, ks)
// (gpu/kernels/check/gather_check.cu checks it against the definition).
__host__ __device__ __forceinline__ float conv_prep_value(const float* w, int mode, int M, int Kr, int Cout, int Kw,
                                                          int stride, int rho, int mt, int ks, int pos) {
    int e = pos & 3, lane = (pos >> 2) & 31, f = pos >> 7;
    int m = mt * CV_M + (f >> 2) * 32 + ((f >> 1) & 1) * 16 + (e & 1) * 8 + (lane >> 2);
    int k = ks * CV_K + (f & 1) * 8 + (e >> 1) * 4 + (lane & 3);
    if (m >= M || k >= Kr) return 0.f;
    if (mode == TC_CONVT) {
        int J = Kw / stride, ci = k / J, j = k - ci * J;
        return w[((long long)ci * Cout + m) * Kw + rho + j * stride];
    }
    return w[(long long)m * Kr + k];
}

extern "C" __global__ void conv_prep_a(const float* __restrict__ w, unsigned* __restrict__ out, int mode, int M,
                                       int Kr, int Cout, int Kw, int stride, int phases, int mtiles, int ksteps) {
    pdl_begin();
    long long total = (long long)phases * mtiles * ksteps * 1024;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        int pos = (int)(idx & 1023);
        long long tile = idx >> 10;  // (ρ·mtiles + mt)·ksteps + ks
        int ks = (int)(tile % ksteps), mt = (int)(tile / ksteps % mtiles), rho = (int)(tile / ksteps / mtiles);
        float v = conv_prep_value(w, mode, M, Kr, Cout, Kw, stride, rho, mt, ks, pos);
        unsigned big, small;
        tf32_split(v, big, small);
        out[tile * 2048 + pos] = big;
        out[tile * 2048 + 1024 + pos] = small;
    }
}

// tc_reduce sums the split partials in split order and adds the bias (per
// column n for TC_LINEAR with N columns, per channel for the convs), then
// applies TC_CONV's epilogue (conv_epilogue).
extern "C" __global__ void tc_reduce(const float* __restrict__ work, const float* __restrict__ bias,
                                     float* __restrict__ out, long long total, int splits, int mode,
                                     int N, int Cout, int Tout, const float* __restrict__ ealpha,
                                     const float* __restrict__ eres, int eresT, int eresOff) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        float v = 0.f;
        for (int s = 0; s < splits; s++) v += work[(long long)s * total + i];
        if (bias) v += mode == TC_LINEAR ? bias[i % N] : bias[(i / Tout) % Cout];
        if (mode == TC_CONV)
            v = conv_epilogue(ealpha, eres, eresT, eresOff, Cout, i / ((long long)Tout * Cout), (int)((i / Tout) % Cout),
                              (int)(i % Tout), v);
        out[i] = v;
    }
}

// tc_reduce_rows: tc_reduce on a two-dimensional grid, blockIdx.y the
// output row (m of TC_LINEAR's [M, N]; b·Cout + co of a convolution's
// [B, Cout, Tout]) and x the column, so no element divides its 64-bit
// index three times. The same sums in the same order: bit-identical.
extern "C" __global__ void tc_reduce_rows(const float* __restrict__ work, const float* __restrict__ bias,
                                          float* __restrict__ out, long long total, int splits, int mode, int cols,
                                          int Cout, const float* __restrict__ ealpha, const float* __restrict__ eres,
                                          int eresT, int eresOff) {
    pdl_begin();
    const int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    const long long i = (long long)row * cols + col;
    float v = 0.f;
#pragma unroll 4
    for (int s = 0; s < splits; s++) v += work[(long long)s * total + i];
    const int co = mode == TC_LINEAR ? 0 : row % Cout;
    if (bias) v += mode == TC_LINEAR ? bias[col] : bias[co];
    if (mode == TC_CONV) v = conv_epilogue(ealpha, eres, eresT, eresOff, Cout, row / Cout, co, col, v);
    out[i] = v;
}
