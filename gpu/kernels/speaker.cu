// Speaker-model kernels (compute.SpeakerOps; reference engine/compute/cpu/speaker.go):
// Conv2d as an implicit GEMM with fused bias and ReLU (fp32 weights,
// converted once, fp32 accumulation), the SimAM block tail and attentive
// statistics pooling (per-plane / per-row statistics in double, as the CPU).
#include "common.cuh"
#include "tile.cuh"

// conv2d_gemm: simt_tile's fp32 FMAs, grid (⌈Ho·Wo/64⌉, ⌈Cout/64⌉, B),
// 256 threads. out[b, co, p] = bias[co] + Σ_r w[co, r]·x[b, r(p)],
// r = (ci, kh, kw).
extern "C" __global__ void __launch_bounds__(256) conv2d_gemm(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ out,
                                       int Cin, int H, int W, int Cout, int KH, int KW, int Ho, int Wo,
                                       int stride, int pad, int relu) {
    pdl_begin();
    int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    int b = blockIdx.z;
    int co0 = blockIdx.y * ST_M, p0 = blockIdx.x * ST_N;
    int KK = KH * KW, R = Cin * KK, P = Ho * Wo;
    const float* xb = x + (long long)b * Cin * H * W;
    auto w_at = [&](int r, int m) {
        int co = co0 + m;
        return (r < R && co < Cout) ? w[(long long)co * R + r] : 0.f;
    };
    auto x_at = [&](int r, int nn) {
        int p = p0 + nn;
        float xv = 0.f;
        if (r < R && p < P) {
            int ci = r / KK, k = r % KK;
            int kh = k / KW, kw = k % KW;
            int ho = p / Wo, wo = p % Wo;
            int y = ho * stride + kh - pad, xx = wo * stride + kw - pad;
            if (y >= 0 && y < H && xx >= 0 && xx < W) xv = xb[((long long)ci * H + y) * W + xx];
        }
        return xv;
    };
    float acc[4][4];
    simt_tile(R, w_at, x_at, acc);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int co = co0 + ty * 4 + i;
        if (co >= Cout) continue;
        float bv = bias ? bias[co] : 0.f;
        float* orow = out + ((long long)b * Cout + co) * P;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int p = p0 + tx * 4 + j;
            if (p < P) {
                float v = acc[i][j] + bv;
                if (relu && v < 0.f) v = 0.f;
                orow[p] = v;
            }
        }
    }
}

// simam_add_relu: one block (256 threads) per (b, c) plane of hw values.
extern "C" __global__ void simam_add_relu(const float* __restrict__ x, const float* __restrict__ res,
                                          float* __restrict__ out, int hw, float lambda) {
    pdl_begin();
    __shared__ double scratch[32];
    long long base = (long long)blockIdx.x * hw;
    double s = 0;
    for (int i = threadIdx.x; i < hw; i += blockDim.x) s += (double)x[base + i];
    double mean = block_sum_d(s, scratch) / (double)hw;
    double ss = 0;
    for (int i = threadIdx.x; i < hw; i += blockDim.x) {
        double d = (double)x[base + i] - mean;
        ss += d * d;
    }
    __syncthreads();
    double v = block_sum_d(ss, scratch) / (double)(hw - 1);
    double inv = 1.0 / (4.0 * (v + (double)lambda));
    for (int i = threadIdx.x; i < hw; i += blockDim.x) {
        double xv = (double)x[base + i];
        double d = xv - mean;
        double e = d * d * inv + 0.5;
        double y = xv / (1.0 + exp(-e)) + (double)res[base + i];
        out[base + i] = (float)fmax(y, 0.0);
    }
}

// attentive_stats_pool: one block (256 threads) per (b, c) row of T values;
// out [B, 2C] = [μ | σ].
extern "C" __global__ void attentive_stats_pool(const float* __restrict__ x, const float* __restrict__ lg,
                                                float* __restrict__ out, int C, int T, float eps) {
    pdl_begin();
    __shared__ double scratch[32];
    __shared__ float mx[32];
    int row = blockIdx.x, b = row / C, ch = row % C;
    long long base = (long long)row * T;
    float m = __int_as_float(0xff800000);
    for (int i = threadIdx.x; i < T; i += blockDim.x) m = fmaxf(m, lg[base + i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) mx[threadIdx.x >> 5] = m;
    __syncthreads();
    m = mx[0];
    for (int i = 1; i < (int)(blockDim.x >> 5); i++) m = fmaxf(m, mx[i]);
    double z = 0, s1 = 0, s2 = 0;
    for (int i = threadIdx.x; i < T; i += blockDim.x) {
        double e = exp((double)lg[base + i] - (double)m);
        double xv = (double)x[base + i];
        z += e;
        s1 += e * xv;
        s2 += e * xv * xv;
    }
    z = block_sum_d(z, scratch);
    __syncthreads();
    s1 = block_sum_d(s1, scratch);
    __syncthreads();
    s2 = block_sum_d(s2, scratch);
    double mu = s1 / z;
    if (threadIdx.x == 0) {
        out[(long long)b * 2 * C + ch] = (float)mu;
        out[(long long)b * 2 * C + C + ch] = (float)sqrt(fmax(s2 / z - mu * mu, (double)eps));
    }
}
