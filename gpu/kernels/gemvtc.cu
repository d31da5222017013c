// Tensor-core GEMV for a batch's decode step on Hopper: y[m, n] =
// x[m, :]·w[n, :] (+ b[n]) for 3 ≤ M ≤ 32 rows (2 to 16 utterances, two
// CFG rows each) and BF16 weights with K % 256 == 0.
//
// Why: at these rows the weight-read GEMV (gemv_m8: eight fp32 FMAs and
// the BF16 widening per weight element) is issue-bound, and tc_wbf's
// 64 × 128 tiles and 8 KiB stages are built for the prefill's many rows;
// both read the weights at 0.65–1.06 TB/s in the batched step (ncu, H200,
// 2026-11-30: 4.40 of a batch-4 step's 5.74 ms of kernels in gemv_m8,
// 3.64 + 0.51 of batch 16's 7.38 ms in tc_wbf and its split-K sums). Here
// the weight streams as the chunk GEMV's does (bulk copies requested
// before the wait for the predecessor, many small blocks) and the products
// are m16n8k16 BF16 mmas with the activation as the 8-column operand: one
// mma multiplies 16 weight rows by 8 batch rows.
//
// Block: ROWS weight rows × a KR-wide slice of k (KR = 512: 64 KiB of
// weight at 64 rows; 256 where 512 does not divide K), one bulk copy a
// row, grid (⌈N/ROWS⌉, K/KR). The block splits its activation slice into
// PARTS BF16 planes once (x = hi + mid + lo, each part the rounded
// remainder of the ones before: three parts keep about 24 bits of x, two
// about 16), so every product is exact in fp32 and the mma accumulates
// them in fp32, smallest part first. With 64 rows, warp w takes rows
// 32·(w % 2) .. + 32 (two 16-row tiles) over k KR/4·(w / 2) .. + KR/4, 64
// at a time; lane (g, q) = (lane / 4, lane % 4) holds k 16q .. 16q + 15 of
// those 64 for weight rows g and g + 8 and batch row g, and mma step s
// multiplies k 16q + 4s + {0, 1} in the fragment slots 2q, 2q + 1 and k
// 16q + 4s + {2, 3} in slots 2q + 8, 2q + 9: the same permutation of k in
// both operands, so each 16-byte shared-memory load serves four steps.
// The k warps' sums are added in warp order, and the splits' by
// tc_reduce_rows in split order (the backend launches it): deterministic.
//
// The sm_90 PTX of this module is marked PTX ISA 8.0 by gen.sh (bulk
// copies); the compute_80 build traps, and the backend launches these
// kernels only on Hopper.
#include "common.cuh"

// A block multiplies ROWS = 64 (or 128) weight rows over its slice of k,
// KR = 256 or 512 (the split); a staged row takes KR + 8 halfwords
// (16-byte aligned, conflict-free 16-byte loads).

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// gt_word is 32-bit word j (k 2j, 2j + 1) of a lane's 16 halfwords.
__device__ __forceinline__ unsigned gt_word(const uint4 (&v)[2], int j) {
    const uint4 u = v[j >> 2];
    return (j & 3) == 0 ? u.x : (j & 3) == 1 ? u.y : (j & 3) == 2 ? u.z : u.w;
}
#endif

// MT: 8-row tiles of the batch (M ≤ 8·MT); KR: the k of a block's slice;
// PARTS: the activation's BF16 parts multiplied, 3 (hi, mid, lo) or 2 (hi,
// mid: about 16 bits of x, as tc_wbf); ROWS: weight rows a block
// multiplies, 64 (two warps of 32 rows over four k ranges) or 128 (four
// over two: the activation planes shared by twice the rows).
template <int MT, int KR, int PARTS, int ROWS>
__device__ __forceinline__ void gemv_tc_body(const float* __restrict__ x, const unsigned short* __restrict__ w,
                                             const float* __restrict__ bias, float* __restrict__ y,
                                             float* __restrict__ work, int M, int N, int K, int flags) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int LD = KR + 8, WR = ROWS / 32, WK = 8 / WR; // WR × WK warps: 32 rows × KR/WK k each
    constexpr int GW = KR / (64 * WK);                      // 64-wide granules a warp multiplies
    extern __shared__ __align__(128) unsigned short gt_smem[];
    unsigned short* Ws = gt_smem;        // [ROWS][LD] the weight slice
    unsigned short* Ps = Ws + ROWS * LD; // [PARTS][8·MT][LD] the activation's planes: hi, mid, lo
    float* red = (float*)gt_smem;        // [WK][WR][32][8·MT] the k warps' sums (over Ws once it is read)
    __shared__ unsigned long long bar;
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    const int n0 = blockIdx.x * ROWS, split = blockIdx.y, k0 = split * KR;
    const int rows = min(ROWS, N - n0);
    if (t == 0) {
        mbar_init(&bar, 1);
        mbar_fence_init();
        mbar_expect_tx(&bar, (unsigned)rows * KR * 2u);
    }
    __syncthreads();
    auto request = [&]() {
        if (t < rows) bulk_g2s(Ws + t * LD, w + (long long)(n0 + t) * K + k0, KR * 2, &bar);
    };
    if (flags & 1) request();
    pdl_begin();
    if (!(flags & 1)) request();
    // The split: thread t converts 8 consecutive k of one batch row per
    // round (zeros past M).
#pragma unroll
    for (int i = 0; i < MT * KR / 256; i++) { // 8·MT rows × KR/8 groups of 8 k
        const int c = t + 256 * i, m = c / (KR / 8), kk = 8 * (c % (KR / 8));
        float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        if (m < M) {
            const float4* xm = (const float4*)(x + (long long)m * K + k0 + kk);
            const float4 a = xm[0], b = xm[1];
            v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        }
        unsigned part[3][4];
#pragma unroll
        for (int j = 0; j < 4; j++) bf16_split3(v[2 * j], v[2 * j + 1], part[0][j], part[1][j], part[2][j]);
#pragma unroll
        for (int p = 0; p < PARTS; p++)
            *(uint4*)(Ps + (p * 8 * MT + m) * LD + kk) = make_uint4(part[p][0], part[p][1], part[p][2], part[p][3]);
    }
    __syncthreads();
    mbar_wait(&bar, 0);
    // Rows past N (a ragged last block) hold stale shared memory; their
    // outputs are not stored, and an mma row reaches only its own outputs.
    const int wr = warp % WR, wk = warp / WR, g = lane >> 2, q = lane & 3;
    float acc[2][MT][4];
#pragma unroll
    for (int at = 0; at < 2; at++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++) acc[at][mt][0] = acc[at][mt][1] = acc[at][mt][2] = acc[at][mt][3] = 0.f;
#pragma unroll
    for (int gi = 0; gi < GW; gi++) {
        const int kb = 64 * (wk * GW + gi) + 16 * q;
        uint4 wa[2][2][2]; // [tile][row g, g + 8][16 halfwords]
#pragma unroll
        for (int at = 0; at < 2; at++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint4* src = (const uint4*)(Ws + (32 * wr + 16 * at + 8 * h + g) * LD + kb);
                wa[at][h][0] = src[0], wa[at][h][1] = src[1];
            }
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            uint4 xb[PARTS][2];
#pragma unroll
            for (int p = 0; p < PARTS; p++) {
                const uint4* src = (const uint4*)(Ps + (p * 8 * MT + 8 * mt + g) * LD + kb);
                xb[p][0] = src[0], xb[p][1] = src[1];
            }
#pragma unroll
            for (int at = 0; at < 2; at++)
#pragma unroll
                for (int s = 0; s < 4; s++)
#pragma unroll
                    for (int p = PARTS - 1; p >= 0; p--) {
                        const unsigned a[4] = {gt_word(wa[at][0], 2 * s), gt_word(wa[at][1], 2 * s),
                                               gt_word(wa[at][0], 2 * s + 1), gt_word(wa[at][1], 2 * s + 1)};
                        mma_bf16(acc[at][mt], a, gt_word(xb[p], 2 * s), gt_word(xb[p], 2 * s + 1));
                    }
        }
    }
    __syncthreads(); // every warp has read Ws: red may reuse it
    constexpr int V = 8 * MT; // a lane's sums: [tile][mt][4]
#pragma unroll
    for (int at = 0; at < 2; at++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int e = 0; e < 4; e++) red[((wk * WR + wr) * 32 + lane) * V + (at * MT + mt) * 4 + e] = acc[at][mt][e];
    __syncthreads();
    // Thread t adds WR·MT of the block's WR·32·V sums over the WK k warps.
    for (int i = t; i < WR * 32 * V; i += 256) {
        const int j = i % V, l = (i / V) % 32, r2 = i / (32 * V);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < WK; k++) s += red[((k * WR + r2) * 32 + l) * V + j];
        const int e = j & 3, mt = (j >> 2) % MT, at = (j >> 2) / MT;
        const int row = 32 * r2 + 16 * at + (l >> 2) + 8 * (e >> 1), m = 8 * mt + 2 * (l & 3) + (e & 1);
        const int n = n0 + row;
        if (row < rows && m < M) {
            if (gridDim.y > 1) work[((long long)split * M + m) * N + n] = s;
            else y[(long long)m * N + n] = bias ? s + bias[n] : s;
        }
    }
#else
    __trap(); // never launched below sm_90 (the backend checks)
#endif
}

// gemv_tc_m8, gemv_tc_m16 (three parts, 64 weight rows a block) and
// gemv_tc_m32_r128_p2 (two parts, 128 rows), for M ≤ 8, 16 and 32 rows;
// KR = 256, or 512 with _k512. Launch: grid (⌈N / ROWS⌉, K / KR), 256
// threads, (ROWS + PARTS·R)·(KR + 8)·2 bytes of dynamic shared memory;
// with more than one split it writes each split's sums to work
// [splits][M][N] for tc_reduce_rows, else y (+ b). flags bit 0 requests
// the weight before the wait.
//
// 17 to 32 rows multiply two parts in blocks of 128 weight rows: two parts
// take a third less shared memory, so an SM holds more blocks, and the
// activation planes, as large as the weight slice at 64 rows, serve twice
// the rows (H200, 2026-11-30, batch-16 step: three parts at 64 rows
// 6.58–6.64 ms, two 6.35–6.37 ms; two at 128 rows 6.17–6.21 ms against
// 6.39–6.46 ms at 64 in another run).
#define GEMV_TC(NAME, MT, KR, PARTS, ROWS)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256)                                                              \
        NAME(const float* __restrict__ x, const unsigned short* __restrict__ w, const float* __restrict__ b,         \
             float* __restrict__ y, float* __restrict__ work, int M, int N, int K, int flags) {                     \
        gemv_tc_body<MT, KR, PARTS, ROWS>(x, w, b, y, work, M, N, K, flags);                                                    \
    }
GEMV_TC(gemv_tc_m8, 1, 256, 3, 64)
GEMV_TC(gemv_tc_m16, 2, 256, 3, 64)
GEMV_TC(gemv_tc_m8_k512, 1, 512, 3, 64)
GEMV_TC(gemv_tc_m16_k512, 2, 512, 3, 64)
GEMV_TC(gemv_tc_m32_r128_p2, 4, 256, 2, 128)
GEMV_TC(gemv_tc_m32_r128_k512_p2, 4, 512, 2, 128)
