// Audio convolutions (reference: engine/cpu Conv1d, ConvTranspose1d) as
// implicit GEMMs: out[co, t] = bias[co] + Σ_r W[co, r]·X[r, t] with the
// reduction r = (ci, k). Every output runs the same sequence of operations
// wherever it lies (taps in the padding contribute exact zeros), so a
// window of a longer signal reproduces the long result, which the DAC
// streamer's exactness rests on. Weights are fp32 here (converted once).
#include "common.cuh"

#define CM 64
#define CN 64
#define CK 16

// conv_gemm: grid (⌈Tout/64⌉, ⌈opg/64⌉, B·groups), 256 threads.
// transposed = 0: x [B, Cin, T], w [Cout, Cin/groups, K];
// transposed = 1: groups 1, w [Cin, Cout, K], output o reads input
// t = (o + pad − k·dil)/stride when that division is exact.
extern "C" __global__ void __launch_bounds__(256) conv_gemm(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ bias, float* __restrict__ out,
                                     int Cin, int T, int Cout, int K, int Tout, int stride, int pad,
                                     int dil, int groups, int transposed) {
    pdl_begin();
    __shared__ float Ws[CK][CM + 4];
    __shared__ float Xs[CK][CN + 4];
    int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    int bg = blockIdx.z;
    int b = bg / groups, g = bg % groups;
    int Cg = Cin / groups, opg = Cout / groups;
    int co0 = blockIdx.y * CM, t0 = blockIdx.x * CN;
    int R = Cg * K;
    const float* xb = x + ((long long)b * Cin + (long long)g * Cg) * T;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
    for (int r0 = 0; r0 < R; r0 += CK) {
        for (int i = threadIdx.x; i < CM * CK; i += 256) {
            int rr = i % CK, m = i / CK;
            int r = r0 + rr, col = co0 + m;  // col: output channel within the group
            float wv = 0.f;
            if (r < R && col < opg) {
                int co = g * opg + col;
                if (!transposed) wv = w[(long long)co * R + r];
                else {
                    int ci = r / K, k = r % K;
                    wv = w[((long long)ci * Cout + co) * K + k];
                }
            }
            Ws[rr][m] = wv;
        }
        for (int i = threadIdx.x; i < CN * CK; i += 256) {
            int nn = i % CN, rr = i / CN;
            int r = r0 + rr, t = t0 + nn;
            float xv = 0.f;
            if (r < R && t < Tout) {
                int ci = r / K, k = r % K;
                if (!transposed) {
                    int p = t * stride + k * dil - pad;
                    if (p >= 0 && p < T) xv = xb[(long long)ci * T + p];
                } else {
                    int num = t + pad - k * dil;
                    if (num >= 0 && num % stride == 0) {
                        int p = num / stride;
                        if (p < T) xv = xb[(long long)ci * T + p];
                    }
                }
            }
            Xs[rr][nn] = xv;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < CK; kk++) {
            float a[4], c[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = Ws[kk][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; j++) c[j] = Xs[kk][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * c[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int col = co0 + ty * 4 + i;
        if (col >= opg) continue;
        int co = g * opg + col;
        float bv = bias ? bias[co] : 0.f;
        float* orow = out + ((long long)b * Cout + co) * Tout;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int t = t0 + tx * 4 + j;
            if (t < Tout) orow[t] = acc[i][j] + bv;
        }
    }
}

// conv_direct: one thread per output of a (non-transposed, groups 1)
// convolution with few output channels (the DAC's last conv has one),
// where a 64-row GEMM tile would be mostly empty. Reduction over (ci, k)
// in order, the same for every output wherever it lies.
//
// A block computes CD_T consecutive outputs of one (batch, channel) row.
// It stages the input window they read, CD_SMEM floats at a time, with
// zeros outside the input, and the row's weights, in shared memory, so
// each tap is two shared loads and an fma: fmaf(w, +0, acc) is acc
// exactly (acc starts at +0 and never becomes −0), so the taps that fall
// outside the input give what skipping them gave. One thread per output
// reading global memory directly, bounds test per tap, ran on 36 SMs at
// one warp per scheduler: the DAC's 96 → 1 convolution of a streamed
// 16-frame window took 82 µs (ncu, session 9 run 7). Windows or weight
// rows wider than the buffers read global memory as before.
#define CD_T 64
#define CD_SMEM 4096  // floats of staged input
#define CD_WMAX 1024  // floats of staged weights (Cin·K)
#define CD_B 8        // loads in flight per thread
extern "C" __global__ void __launch_bounds__(CD_T) conv_direct(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ out,
                                       int B, int Cin, int T, int Cout, int K, int Tout, int stride, int pad, int dil) {
    __shared__ float xs[CD_SMEM];
    __shared__ float ws[CD_WMAX];
    pdl_begin();
    const int co = blockIdx.y, b = blockIdx.z;
    const int t0 = blockIdx.x * CD_T, t = t0 + threadIdx.x;
    const float* xb = x + (long long)b * Cin * T;
    const float* wr = w + (long long)co * Cin * K;
    const int base = t0 * stride - pad;                      // input index of the window's first column
    const int W = (CD_T - 1) * stride + (K - 1) * dil + 1;  // the window's width
    const int cc = min(Cin, CD_SMEM / W);                   // channels staged at a time (0: none fit)
    float acc = 0.f;
    if (cc == 0 || Cin * K > CD_WMAX) {
        if (t < Tout)
            for (int ci = 0; ci < Cin; ci++)
                for (int k = 0; k < K; k++) {
                    int p = t * stride + k * dil - pad;
                    if (p >= 0 && p < T) acc = fmaf(wr[ci * K + k], xb[(long long)ci * T + p], acc);
                }
    } else {
        for (int i0 = threadIdx.x; i0 < Cin * K; i0 += CD_B * CD_T) {
            float v[CD_B];
#pragma unroll
            for (int u = 0; u < CD_B; u++) v[u] = i0 + u * CD_T < Cin * K ? wr[i0 + u * CD_T] : 0.f;
#pragma unroll
            for (int u = 0; u < CD_B; u++)
                if (i0 + u * CD_T < Cin * K) ws[i0 + u * CD_T] = v[u];
        }
        const int own = threadIdx.x * stride;  // this output's first tap in the window
        for (int c0 = 0; c0 < Cin; c0 += cc) {
            const int n = min(cc, Cin - c0), nW = n * W;
            __syncthreads();
            // CD_B loads in flight per thread, then their stores: a loop of
            // load-then-store ran every load's latency in turn.
            for (int i0 = threadIdx.x; i0 < nW; i0 += CD_B * CD_T) {
                float v[CD_B];
                int ci = i0 / W, j = i0 - ci * W;
#pragma unroll
                for (int u = 0; u < CD_B; u++) {
                    int p = base + j;
                    v[u] = i0 + u * CD_T < nW && p >= 0 && p < T ? xb[(long long)(c0 + ci) * T + p] : 0.f;
                    for (j += CD_T; j >= W; j -= W) ci++;
                }
#pragma unroll
                for (int u = 0; u < CD_B; u++)
                    if (i0 + u * CD_T < nW) xs[i0 + u * CD_T] = v[u];
            }
            __syncthreads();
            // The taps (ci, k) in order, CD_B shared loads at a time; a tap
            // past the last is fmaf(0, 0, acc) = acc.
            const int nK = n * K;
            const float* wk = ws + c0 * K;
            int ci = 0, k = 0;
            for (int q0 = 0; q0 < nK; q0 += CD_B) {
                float wv[CD_B], xv[CD_B];
#pragma unroll
                for (int u = 0; u < CD_B; u++) {
                    bool in = q0 + u < nK;
                    wv[u] = in ? wk[q0 + u] : 0.f;
                    xv[u] = in ? xs[ci * W + own + k * dil] : 0.f;
                    if (++k == K) k = 0, ci++;
                }
#pragma unroll
                for (int u = 0; u < CD_B; u++) acc = fmaf(wv[u], xv[u], acc);
            }
        }
    }
    if (t < Tout) out[((long long)b * Cout + co) * Tout + t] = acc + (bias ? bias[co] : 0.f);
}
