// Tensor-core GEMMs for the large products: prefill projections (Linear
// with many rows) and the DAC's convolutions as implicit GEMMs.
//
// Precision: fp32 operands are split into two TF32 parts, x = big + small
// (big = tf32(x), small = tf32(x − big)), and the product is
// big·big + big·small + small·big with fp32 accumulation ("3xTF32"), which
// keeps about 21 bits of every product: close to fp32 SIMT arithmetic and
// far inside the conformance bars, at tensor-core speed. A BF16 or F16
// weight is exact in TF32, so only its activation is split (two products).
//
// Order: each output is reduced over k in the same sequence of
// 32-wide steps wherever its tile lies, and split-K partials are summed in
// split order by tc_reduce; the split count depends only on the reduction
// length. So a window of a longer signal reproduces the long result bit
// for bit, which the DAC streamer's exactness rests on.
#include <mma.h>
#include "common.cuh"
using namespace nvcuda;

#define TC_M 64
#define TC_N 64
#define TC_K 32
#define TC_LD (TC_K + 4)   // smem row stride of the A and B tiles (floats)
#define TC_LDC (TC_N + 4)  // smem row stride of the output tile

// Modes: how A (M × K) and B (K × N, stored in shared memory as [n][k]) are
// gathered and where C lands.
#define TC_LINEAR 0  // A = x [M, K]; B(k, n) = w[n, k] (any float dtype); C = y [M, N] + bias[n]
#define TC_CONV 1    // A = w [Cout, Cin·Kw] (fp32); B(k, t) = x[ci, t·stride + kw·dil − pad]; C = out[b, co, t] + bias[co]
#define TC_CONVT 2   // transposed conv, dil 1, Kw % stride == 0, one output phase per grid slice (see tc_gemm)

// tc_gemm: grid (⌈N/64⌉, ⌈M/64⌉, batch·phases·splits), 128 threads (2×2
// warps of 32×32). Split s reduces k in [s·kchunk, min(Kr, (s+1)·kchunk));
// with splits > 1 it writes raw partials to work[s·total + index] for
// tc_reduce, else the output with its bias.
//
// TC_CONVT computes out[co, t] = Σ_{ci, k} w[ci, co, k]·x[ci, (t + pad − k)/stride]
// over the taps where the division is exact. For t with (t + pad) ≡ ρ
// (mod stride) those are k = ρ + j·stride, j < J = Kw/stride, so each
// phase ρ is a GEMM over Kr = Cin·J (index r = ci·J + j) instead of
// Cin·Kw mostly-zero taps: t = t0 + n·stride, input n + c − j with
// t0 = (ρ − pad) mod stride and c = (t0 + pad − ρ)/stride.
extern "C" __global__ void __launch_bounds__(128) tc_gemm(
    const float* __restrict__ x, const void* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ out, float* __restrict__ work, int mode, int M, int N, int Kr, int wdt,
    int splits, int kchunk, int Cin, int T, int Cout, int Kw, int Tout, int stride, int pad, int dil) {
    __shared__ __align__(128) float smem[TC_M * TC_LD + TC_N * TC_LD];
    float* As = smem;                // [64][TC_LD]: A(m, k)
    float* Bs = smem + TC_M * TC_LD;  // [64][TC_LD]: B(k, n) at [n][k]
    float* Cs = smem;                // [64][TC_LDC], after the main loop

    int phases = mode == TC_CONVT ? stride : 1;
    int z = blockIdx.z;
    int s = z % splits;
    int rho = (z / splits) % phases;
    int bat = z / (splits * phases);
    int m0 = blockIdx.y * TC_M, n0 = blockIdx.x * TC_N;
    int k_lo = s * kchunk, k_hi = min(Kr, k_lo + kchunk);

    int J = mode == TC_CONVT ? Kw / stride : 1;
    int t0 = 0, cph = 0, Nph = N;
    if (mode == TC_CONVT) {
        t0 = ((rho - pad) % stride + stride) % stride;
        cph = (t0 + pad - rho) / stride;
        Nph = t0 < Tout ? (Tout - t0 + stride - 1) / stride : 0;
        if (n0 >= Nph) return;
    }
    const float* xb = mode == TC_LINEAR ? x : x + (long long)bat * Cin * T;
    bool splitB = mode != TC_LINEAR || wdt == 0;  // B is an activation, or an fp32 weight
    // In TC_LINEAR, A is the activation (always split); in the conv modes
    // A is the fp32 weight (split too).

    int warp = threadIdx.x >> 5;
    int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.f);

    for (int k0 = k_lo; k0 < k_hi; k0 += TC_K) {
        // A tile: 64 × 32, consecutive threads along k.
#pragma unroll 4
        for (int i = threadIdx.x; i < TC_M * TC_K; i += 128) {
            int r = i / TC_K, c = i % TC_K;
            int gm = m0 + r, gk = k0 + c;
            float v = 0.f;
            if (gm < M && gk < k_hi) {
                if (mode == TC_LINEAR) v = x[(long long)gm * Kr + gk];
                else if (mode == TC_CONV) v = ((const float*)w)[(long long)gm * Kr + gk];
                else {
                    int ci = gk / J, j = gk % J;
                    v = ((const float*)w)[((long long)ci * Cout + gm) * Kw + rho + j * stride];
                }
            }
            As[r * TC_LD + c] = v;
        }
        // B tile: 64 (n) × 32 (k), stored [n][k].
#pragma unroll 4
        for (int i = threadIdx.x; i < TC_N * TC_K; i += 128) {
            int n = i / TC_K, c = i % TC_K;
            int gn = n0 + n, gk = k0 + c;
            float v = 0.f;
            if (gk < k_hi) {
                if (mode == TC_LINEAR) {
                    if (gn < N) v = ldw(w, (long long)gn * Kr + gk, wdt);
                } else if (mode == TC_CONV) {
                    if (gn < Tout) {
                        int ci = gk / Kw, kw = gk % Kw;
                        int p = gn * stride + kw * dil - pad;
                        if (p >= 0 && p < T) v = xb[(long long)ci * T + p];
                    }
                } else if (gn < Nph) {
                    int ci = gk / J, j = gk % J;
                    int p = gn + cph - j;
                    if (p >= 0 && p < T) v = xb[(long long)ci * T + p];
                }
            }
            Bs[n * TC_LD + c] = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TC_K; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ab[2], as[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> bb[2], bs[2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                wmma::load_matrix_sync(ab[i], As + (wm + 16 * i) * TC_LD + kk, TC_LD);
#pragma unroll
                for (int e = 0; e < ab[i].num_elements; e++) {
                    float v = ab[i].x[e];
                    float big = wmma::__float_to_tf32(v);
                    ab[i].x[e] = big;
                    as[i].x[e] = wmma::__float_to_tf32(v - big);
                }
            }
#pragma unroll
            for (int j = 0; j < 2; j++) {
                wmma::load_matrix_sync(bb[j], Bs + (wn + 16 * j) * TC_LD + kk, TC_LD);
#pragma unroll
                for (int e = 0; e < bb[j].num_elements; e++) {
                    float v = bb[j].x[e];
                    float big = wmma::__float_to_tf32(v);
                    bb[j].x[e] = big;
                    bs[j].x[e] = wmma::__float_to_tf32(v - big);
                }
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    wmma::mma_sync(acc[i][j], as[i], bb[j], acc[i][j]);
                    if (splitB) wmma::mma_sync(acc[i][j], ab[i], bs[j], acc[i][j]);
                    wmma::mma_sync(acc[i][j], ab[i], bb[j], acc[i][j]);
                }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(Cs + (wm + 16 * i) * TC_LDC + wn + 16 * j, acc[i][j], TC_LDC, wmma::mem_row_major);
    __syncthreads();
    long long total = mode == TC_LINEAR ? (long long)M * N : 0;
    if (mode != TC_LINEAR) total = (long long)(gridDim.z / (splits * phases)) * Cout * Tout;
    for (int i = threadIdx.x; i < TC_M * TC_N; i += 128) {
        int r = i / TC_N, c = i % TC_N;
        int gm = m0 + r, gn = n0 + c;
        if (gm >= M) continue;
        long long idx;
        float bv;
        if (mode == TC_LINEAR) {
            if (gn >= N) continue;
            idx = (long long)gm * N + gn;
            bv = bias ? bias[gn] : 0.f;
        } else {
            int t = mode == TC_CONV ? gn : t0 + gn * stride;
            if (mode == TC_CONV ? gn >= Tout : gn >= Nph) continue;
            idx = ((long long)bat * Cout + gm) * Tout + t;
            bv = bias ? bias[gm] : 0.f;
        }
        float v = Cs[r * TC_LDC + c];
        if (splits > 1) work[(long long)s * total + idx] = v;
        else out[idx] = v + bv;
    }
}

// tc_reduce sums tc_gemm's split partials in split order and adds the bias
// (per column n for TC_LINEAR with N columns, per channel for the convs).
extern "C" __global__ void tc_reduce(const float* __restrict__ work, const float* __restrict__ bias,
                                     float* __restrict__ out, long long total, int splits, int mode,
                                     int N, int Cout, int Tout) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        float v = 0.f;
        for (int s = 0; s < splits; s++) v += work[(long long)s * total + i];
        if (bias) v += mode == TC_LINEAR ? bias[i % N] : bias[(i / Tout) % Cout];
        out[i] = v;
    }
}
