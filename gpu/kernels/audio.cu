// Audio convolutions (reference: engine/compute/cpu Conv1d, ConvTranspose1d) that
// the tensor-core tiles (tc.cu's conv_tcq) do not take, as implicit GEMMs:
// out[co, t] = bias[co] + Σ_r W[co, r]·X[r, t] with the reduction
// r = (ci, k). Every output runs the same sequence of operations
// wherever it lies (taps in the padding contribute exact zeros), so a
// window of a longer signal reproduces the long result, which the DAC
// streamer's exactness rests on. Weights are fp32 here (converted once).
#include "common.cuh"
#include "tile.cuh"

// conv_gemm: grouped convolutions, and transposed ones of dilation > 1 or
// whose kernel is not a multiple of the stride, on simt_tile's fp32 FMAs:
// grid (⌈Tout/64⌉, ⌈opg/64⌉, B·groups), 256 threads.
// transposed = 0: x [B, Cin, T], w [Cout, Cin/groups, K];
// transposed = 1: groups 1, w [Cin, Cout, K], output o reads input
// t = (o + pad − k·dil)/stride when that division is exact.
extern "C" __global__ void __launch_bounds__(256) conv_gemm(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ bias, float* __restrict__ out,
                                     int Cin, int T, int Cout, int K, int Tout, int stride, int pad,
                                     int dil, int groups, int transposed) {
    pdl_begin();
    int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    int bg = blockIdx.z;
    int b = bg / groups, g = bg % groups;
    int Cg = Cin / groups, opg = Cout / groups;
    int co0 = blockIdx.y * ST_M, t0 = blockIdx.x * ST_N;
    int R = Cg * K;
    const float* xb = x + ((long long)b * Cin + (long long)g * Cg) * T;
    auto w_at = [&](int r, int m) {
        int col = co0 + m;  // output channel within the group
        float wv = 0.f;
        if (r < R && col < opg) {
            int co = g * opg + col;
            if (!transposed) wv = w[(long long)co * R + r];
            else {
                int ci = r / K, k = r % K;
                wv = w[((long long)ci * Cout + co) * K + k];
            }
        }
        return wv;
    };
    auto x_at = [&](int r, int nn) {
        int t = t0 + nn;
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
        return xv;
    };
    float acc[4][4];
    simt_tile(R, w_at, x_at, acc);
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

// conv_direct: a (non-transposed, groups 1) convolution with few output
// channels (the DAC's last conv has one), where a 64-row GEMM tile would
// be mostly empty.
//
// A block of CD_W warps computes 32 consecutive outputs of one (batch,
// channel) row, one per lane: warp w sums the taps (ci, k) of its share of
// the input channels, [w·Cin/CD_W, (w+1)·Cin/CD_W), in order, CD_B loads in
// flight at a time, and lane j then adds the CD_W partial sums in warp
// order. The order depends on the layer only, never on where the output
// lies, so a window of a longer signal gives the same bits. One thread per
// output summing all Cin·K taps in turn kept two warps per SM, each
// running its loads' latencies one after another (ncu, H200: the DAC's
// 96 → 1 convolution over a streamed 16-frame window took 82 µs so,
// 2026-11-29, and 41 µs with the window staged in shared memory,
// 2026-11-30).
#define CD_W 8  // warps per block
#define CD_B 8  // loads in flight per lane
extern "C" __global__ void __launch_bounds__(32 * CD_W) conv_direct(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ out,
                                       int B, int Cin, int T, int Cout, int K, int Tout, int stride, int pad, int dil) {
    __shared__ float part[CD_W][32];
    pdl_begin();
    const int co = blockIdx.y, b = blockIdx.z, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int t = blockIdx.x * 32 + lane;
    const float* xb = x + (long long)b * Cin * T;
    const float* wr = w + (long long)co * Cin * K;
    const int c_lo = (int)((long long)warp * Cin / CD_W), c_hi = (int)((long long)(warp + 1) * Cin / CD_W);
    const int q_hi = c_hi * K;
    float acc = 0.f;
    int ci = c_lo, k = 0;
    for (int q0 = c_lo * K; q0 < q_hi; q0 += CD_B) {
        float wv[CD_B], xv[CD_B];
#pragma unroll
        for (int u = 0; u < CD_B; u++) {
            int p = t * stride + k * dil - pad;
            bool in = q0 + u < q_hi && t < Tout && p >= 0 && p < T;
            wv[u] = q0 + u < q_hi ? wr[q0 + u] : 0.f;
            xv[u] = in ? xb[(long long)ci * T + p] : 0.f;
            if (++k == K) k = 0, ci++;
        }
        // A tap outside the input (or past the share) adds w·0: acc
        // exactly, since acc starts at +0 and never becomes −0.
#pragma unroll
        for (int u = 0; u < CD_B; u++) acc = fmaf(wv[u], xv[u], acc);
    }
    part[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && t < Tout) {
        float v = part[0][lane];
        for (int i = 1; i < CD_W; i++) v += part[i][lane];
        out[((long long)b * Cout + co) * Tout + t] = v + (bias ? bias[co] : 0.f);
    }
}
