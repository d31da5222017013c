// Core kernels: Linear's GEMVs for few rows (the tiled GEMMs are tc.cu's),
// Embedding, elementwise ops, LayerNorm and copies along an axis. Activations are fp32;
// weights F32/BF16/F16 (dtype codes of common.cuh); accumulation fp32. The
// engine/compute/cpu ops are the reference (gpu/*_test.go compares them).
#include "common.cuh"

#define GEMV_MAX_M 8
#define GEMV_WARPS 8

// linear_gemv: y[m, n] = x[m, :]·w[n, :] + b[n] for M ≤ 8 rows of a weight
// the weight-read GEMV below does not take (fp32 or F16, or K % 8 ≠ 0):
// one warp per output column n, the weight row streamed once for all M
// activation rows. BF16 weights with K % 8 == 0 take 16-byte vector loads.
extern "C" __global__ void linear_gemv(const float* __restrict__ x, const void* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ y,
                                       int M, int N, int K, int wdt) {
    pdl_begin();
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n = blockIdx.x * GEMV_WARPS + warp;
    if (n >= N) return;
    float acc[GEMV_MAX_M];
#pragma unroll
    for (int m = 0; m < GEMV_MAX_M; m++) acc[m] = 0.f;
    if (wdt == 1 && (K & 7) == 0) {
        const uint4* wr = (const uint4*)((const unsigned short*)w + (long long)n * K);
        int K8 = K >> 3;
        for (int k8 = lane; k8 < K8; k8 += 32) {
            uint4 v = wr[k8];
            float wf[8];
            unsigned int u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                wf[2 * j] = __uint_as_float(u[j] << 16);
                wf[2 * j + 1] = __uint_as_float(u[j] & 0xffff0000u);
            }
#pragma unroll
            for (int m = 0; m < GEMV_MAX_M; m++) {
                if (m < M) {
                    const float4* xr = (const float4*)(x + (long long)m * K) + 2 * k8;
                    float4 a = xr[0], b = xr[1];
                    acc[m] += a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] +
                              b.x * wf[4] + b.y * wf[5] + b.z * wf[6] + b.w * wf[7];
                }
            }
        }
    } else {
        long long base = (long long)n * K;
        for (int k = lane; k < K; k += 32) {
            float wv = ldw(w, base + k, wdt);
#pragma unroll
            for (int m = 0; m < GEMV_MAX_M; m++)
                if (m < M) acc[m] += x[(long long)m * K + k] * wv;
        }
    }
    float bv = bias ? bias[n] : 0.f;
#pragma unroll
    for (int m = 0; m < GEMV_MAX_M; m++) {
        if (m < M) {
            float s = warp_sum(acc[m]);
            if (lane == 0) y[(long long)m * N + n] = s + bv;
        }
    }
}

// embedding: out[i, d] = table[ids[i], d] (ids validated on the host).
extern "C" __global__ void embedding(const void* __restrict__ table, const int* __restrict__ ids,
                                     float* __restrict__ out, long long total, int D, int tdt) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / D;
        int d = (int)(i % D);
        out[i] = ldw(table, (long long)ids[r] * D + d, tdt);
    }
}

// embedding_sum: out[r, t, d] = Σ_k table_k[ids[k, t], d] for K ≤ 9 tables
// of one dtype, added in k order (as a chain of add_f32), written to each
// of the rows output rows (compute.EmbeddingSummer). ids validated on the
// host where known; a replayed step's ids are codes its sampler drew.
extern "C" __global__ void embedding_sum(const void* t0, const void* t1, const void* t2, const void* t3,
                                         const void* t4, const void* t5, const void* t6, const void* t7,
                                         const void* t8, const int* __restrict__ ids, float* __restrict__ out,
                                         int K, int T, int D, int tdt, int rows) {
    pdl_begin();
    const void* tab[9] = {t0, t1, t2, t3, t4, t5, t6, t7, t8};
    long long total = (long long)T * D;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        int t = (int)(i / D), d = (int)(i % D);
        float s = ldw(tab[0], (long long)ids[t] * D + d, tdt);
#pragma unroll
        for (int k = 1; k < 9; k++)
            if (k < K) s = __fadd_rn(s, ldw(tab[k], (long long)ids[k * T + t] * D + d, tdt));
        for (int r = 0; r < rows; r++) out[r * total + i] = s;
    }
}

// to_f32 widens any float dtype (weights converted once for small kernels).
extern "C" __global__ void to_f32(const void* __restrict__ src, float* __restrict__ dst, long long n, int dt) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        dst[i] = ldw(src, i, dt);
}

extern "C" __global__ void add_f32(const float* __restrict__ a, const float* __restrict__ b,
                                   float* __restrict__ out, long long n) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

extern "C" __global__ void scale_f32(const float* __restrict__ x, float* __restrict__ out, float s, long long n) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = x[i] * s;
}

extern "C" __global__ void tanh_f32(const float* __restrict__ x, float* __restrict__ out, long long n) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = (float)tanh((double)x[i]);
}

// cossin: x [rows, n] → [rows, 2n] = [cos x | sin x] (float64 like engine/compute/cpu).
extern "C" __global__ void cossin(const float* __restrict__ x, float* __restrict__ out, long long total, int n) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / n;
        int j = (int)(i % n);
        double v = (double)x[i];
        out[r * 2 * n + j] = (float)cos(v);
        out[r * 2 * n + n + j] = (float)sin(v);
    }
}

// swiglu: x [rows, 2d] = [y | gate] → y·silu(gate) [rows, d].
extern "C" __global__ void swiglu(const float* __restrict__ x, float* __restrict__ out, long long total, int d) {
    pdl_begin();
    grid_loop(total, [&](auto i) {
        const long long r = i / (unsigned)d;
        const int j = (int)(i % (unsigned)d);
        out[i] = x[r * 2 * d + j] * silu_ref(x[r * 2 * d + d + j]);
    });
}

// snake: x + sin²(αx)/(α + 1e-9) with α per channel of x [B, C, T].
extern "C" __global__ void snake(const float* __restrict__ x, const float* __restrict__ alpha,
                                 float* __restrict__ out, long long total, int C, int T) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        int c = (int)((i / T) % C);
        out[i] = snake_ref(x[i], alpha[c]);
    }
}

// layernorm: one block per row of D; optional residual (sum = x + res is
// also written to sum_out when given). Statistics in float64 as engine/compute/cpu.
extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ res,
                                     const float* __restrict__ w, const float* __restrict__ b,
                                     float* __restrict__ out, float* __restrict__ sum_out, int D, float eps) {
    pdl_begin();
    __shared__ double scratch[32];
    long long row = blockIdx.x;
    const float* xr = x + row * D;
    const float* rr = res ? res + row * D : 0;
    float* orow = out + row * D;
    float* srow = sum_out ? sum_out + row * D : 0;
    double s = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float v = rr ? xr[i] + rr[i] : xr[i];
        if (srow) srow[i] = v;
        s += (double)v;
    }
    double mean = block_sum_d(s, scratch) / D;
    double ss = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float v = rr ? xr[i] + rr[i] : xr[i];
        double d = (double)v - mean;
        ss += d * d;
    }
    ss = block_sum_d(ss, scratch);
    double rstd = 1.0 / sqrt(ss / D + (double)eps);
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float v = rr ? xr[i] + rr[i] : xr[i];
        float y = (float)(((double)v - mean) * rstd);
        y = __fmul_rn(y, w[i]);
        if (b) y = __fadd_rn(y, b[i]);
        orow[i] = y;
    }
}

// layernorm_v8 is layernorm for rows of D = 8·D8 floats, D8 ≤ 2·blockDim:
// thread t keeps the 8 consecutive floats of chunks t and t + blockDim in
// registers, so a row is read once (the scalar kernel's three passes were
// a chain of dependent loads: 10 µs for two rows of 2048 in a decode
// step). Its float64 statistics are ln_sum8 / ln_sq8 of common.cuh in
// the order mamba_run takes them for a row of 2048 on 256 threads, so a
// batch's Mamba2 layers (this norm, then gpu.Mamba2Block) give the bits
// a lone utterance's mamba_run gives.
#define LN_CHUNKS 2
extern "C" __global__ void __launch_bounds__(1024) layernorm_v8(const float4* __restrict__ x, const float4* __restrict__ res,
                                        const float4* __restrict__ w, const float4* __restrict__ b,
                                        float4* __restrict__ out, float4* __restrict__ sum_out, int D8, float eps) {
    pdl_begin();
    __shared__ double scratch[32];
    const long long base = (long long)blockIdx.x * D8 * 2;
    float v[LN_CHUNKS][8];
    double s = 0;
    // The weight and bias of a thread's first chunk (its only one when
    // D8 ≤ blockDim, as in the decode step) are requested with the row,
    // not after the two reductions: one L2 round trip less on the
    // kernel's dependent path.
    const float4 z4 = make_float4(0.f, 0.f, 0.f, 0.f);
    float4 w0[2] = {z4, z4}, b0[2] = {z4, z4};
    if (threadIdx.x < D8) {
        w0[0] = w[2 * threadIdx.x], w0[1] = w[2 * threadIdx.x + 1];
        if (b) b0[0] = b[2 * threadIdx.x], b0[1] = b[2 * threadIdx.x + 1];
    }
#pragma unroll
    for (int k = 0; k < LN_CHUNKS; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < D8) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float4 a = x[base + 2 * i + h];
                if (res) {
                    const float4 r = res[base + 2 * i + h];
                    a.x = __fadd_rn(a.x, r.x); a.y = __fadd_rn(a.y, r.y);
                    a.z = __fadd_rn(a.z, r.z); a.w = __fadd_rn(a.w, r.w);
                }
                if (sum_out) sum_out[base + 2 * i + h] = a;
                v[k][4 * h] = a.x, v[k][4 * h + 1] = a.y, v[k][4 * h + 2] = a.z, v[k][4 * h + 3] = a.w;
            }
            s = k == 0 ? ln_sum8(v[k]) : __dadd_rn(s, ln_sum8(v[k]));
        }
    }
    const double D = 8.0 * D8;
    const double mean = block_sum_d(s, scratch) / D;
    double ss = 0;
#pragma unroll
    for (int k = 0; k < LN_CHUNKS; k++) {
        if (threadIdx.x + k * blockDim.x < D8) ss = ln_sq8(v[k], mean, ss);
    }
    ss = block_sum_d(ss, scratch);
    const double rstd = 1.0 / sqrt(ss / D + (double)eps);
#pragma unroll
    for (int k = 0; k < LN_CHUNKS; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < D8) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float4 ww = k == 0 ? w0[h] : w[2 * i + h];
                const float wv[4] = {ww.x, ww.y, ww.z, ww.w};
                float y[4];
#pragma unroll
                for (int e = 0; e < 4; e++) y[e] = ln_scale(v[k][4 * h + e], mean, rstd, wv[e]);
                if (b) {
                    const float4 bb = k == 0 ? b0[h] : b[2 * i + h];
                    y[0] = __fadd_rn(y[0], bb.x); y[1] = __fadd_rn(y[1], bb.y);
                    y[2] = __fadd_rn(y[2], bb.z); y[3] = __fadd_rn(y[3], bb.w);
                }
                out[base + 2 * i + h] = make_float4(y[0], y[1], y[2], y[3]);
            }
        }
    }
}

// copy_axis4 / copy_axis2 copy a [outer, n, inner] block between tensors
// viewed as [outer, srcDim, inner] and [outer, dstDim, inner] starting at
// srcOff / dstOff along the middle axis (Slice, Concat, CopyInto).
extern "C" __global__ void copy_axis4(const unsigned int* __restrict__ src, unsigned int* __restrict__ dst,
                                      long long total, long long n_inner, long long inner,
                                      long long srcDim, long long srcOff, long long dstDim, long long dstOff) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long o = i / n_inner, r = i % n_inner;
        dst[(o * dstDim + dstOff) * inner + r] = src[(o * srcDim + srcOff) * inner + r];
    }
}

extern "C" __global__ void copy_axis2(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                                      long long total, long long n_inner, long long inner,
                                      long long srcDim, long long srcOff, long long dstDim, long long dstOff) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long o = i / n_inner, r = i % n_inner;
        dst[(o * dstDim + dstOff) * inner + r] = src[(o * srcDim + srcOff) * inner + r];
    }
}

// copy_rows4 / copy_rows2: copy_axis4 / copy_axis2 on a two-dimensional
// grid (blockIdx.y the outer index, for outer < 65536 and rows of n < 2³¹
// elements): no 64-bit division per element. The DAC streamer's window
// joins copy a few MB each (3456 blocks of copy_axis4: 7.4 µs).
#define COPY_ROWS(NAME, T)                                                                                        \
    extern "C" __global__ void NAME(const T* __restrict__ src, T* __restrict__ dst, int n_inner, long long inner, \
                                    long long srcDim, long long srcOff, long long dstDim, long long dstOff) {     \
        pdl_begin();                                                                                              \
        const long long o = blockIdx.y;                                                                           \
        const T* s = src + (o * srcDim + srcOff) * inner;                                                         \
        T* d = dst + (o * dstDim + dstOff) * inner;                                                               \
        for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < n_inner; r += gridDim.x * blockDim.x) d[r] = s[r]; \
    }
COPY_ROWS(copy_rows4, unsigned int)
COPY_ROWS(copy_rows2, unsigned short)

// window_cols: compute.Core.Window, the DAC streamer's window of a stage
// in one kernel (it was a Concat's two copies and a Slice's one, or a
// zero fill more): row o (blockIdx.y) of w, n = lead + nx + trail
// columns, is prev's row (np = lead columns; zeros where prev is null),
// x's row (nx columns; x may be null with nx = 0) and trail zeros; its
// last keep columns also go to tail (null when keep is 0). With alpha
// (per channel; C channels a batch row) it also writes the window's Snake
// to h, as the snake kernel computes it (compute.SnakeWindows: a residual
// unit's first activation).
extern "C" __global__ void window_cols(const float* __restrict__ prev, int lead, const float* __restrict__ x, int nx,
                                       int trail, float* __restrict__ w, float* __restrict__ tail, int keep,
                                       const float* __restrict__ alpha, float* __restrict__ h, int C) {
    pdl_begin();
    const long long o = blockIdx.y;
    const int n = lead + nx + trail;
    const float a = alpha ? alpha[o % C] : 0.f;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
        float v = 0.f;
        if (c < lead) {
            if (prev) v = prev[o * lead + c];
        } else if (c < lead + nx) {
            v = x[o * nx + c - lead];
        }
        w[o * n + c] = v;
        if (c >= n - keep) tail[o * keep + c - (n - keep)] = v;
        if (alpha) h[o * n + c] = snake_ref(v, a);
    }
}

// ---------------------------------------------------------------------------
// Weight-read GEMV for the CFG decode step: y[m, n] = x[m, :]·w[n, :]
// (+ b[n]) for M ≤ MR rows (2 for one utterance) and BF16 weights with
// K % 8 == 0; on Hopper the chunk GEMV (gemv.cu) takes the decode step's
// K and gemv_tc (gemvtc.cu) a batch's rows. Each BF16 weight is read
// exactly once, 16 bytes at a time, by cp.async into shared memory
// (bypassing L1, where the activations stay; 256-byte L2 sectors), in two
// stages per lane: a lane has up to 2·R·U copies in flight while it does
// the arithmetic of the previous batch, so the narrow N = 2048 shapes keep
// enough bytes in flight (ptxas interleaves plain register loads with the
// FMAs that use them, leaving only ~2 loads per lane in flight; the copies
// cannot be reordered that way). A block of 8 warps holds (8/KS)·R output
// rows: KS warps share one group of R rows, each reading its own contiguous
// slice of K. Every lane copies and reads back only its own shared-memory
// slots, so no barrier is needed until the slices are combined. Partial
// sums are reduced in a fixed order (warp shuffle, then the KS slices in
// index order): results are deterministic. R and U are compile-time
// (R·U ≤ 4: 32 KiB of static shared memory); KS ∈ {1, 2, 4, 8} is an argument.
__device__ __forceinline__ void fma_bf16x8(float& acc, uint4 v, float4 a, float4 b) {
    acc += a.x * __uint_as_float(v.x << 16) + a.y * __uint_as_float(v.x & 0xffff0000u) +
           a.z * __uint_as_float(v.y << 16) + a.w * __uint_as_float(v.y & 0xffff0000u) +
           b.x * __uint_as_float(v.z << 16) + b.y * __uint_as_float(v.z & 0xffff0000u) +
           b.z * __uint_as_float(v.w << 16) + b.w * __uint_as_float(v.w & 0xffff0000u);
}

template <int R, int U, int MR>
__device__ __forceinline__ void gemv_body(const float* __restrict__ x, const unsigned short* __restrict__ w,
                                          const float* __restrict__ bias, float* __restrict__ y, int M, int N,
                                          int K, int KS, int early) {
    __shared__ uint4 buf[2][8][R * U][32];
    __shared__ float part[8][R][MR];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int group = warp / KS, slice = warp % KS;
    int groups = 8 / KS;
    int n0 = (blockIdx.x * groups + group) * R;
    int K8 = K >> 3;
    int per = (K8 + KS - 1) / KS;
    int lo = slice * per, hi = min(K8, lo + per);
    const uint4* wr[R];
#pragma unroll
    for (int r = 0; r < R; r++) wr[r] = (const uint4*)(w + (long long)min(n0 + r, N - 1) * K);
    float acc[MR][R];
#pragma unroll
    for (int m = 0; m < MR; m++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[m][r] = 0.f;
    const int B = 32 * U; // k8 elements per batch per warp
    int nb = hi > lo ? (hi - lo + B - 1) / B : 0;
    auto issue = [&](int b) {
        int st = b & 1;
#pragma unroll
        for (int j = 0; j < U; j++) {
            int k = lo + b * B + 32 * j + lane;
            if (k < hi) {
#pragma unroll
                for (int r = 0; r < R; r++) cp_async16(&buf[st][warp][j * R + r][lane], wr[r] + k);
            }
        }
        cp_async_commit();
    };
    // The first weight stage is requested before waiting for the previous
    // kernel (programmatic dependent launch): the weight is never written
    // by a kernel that can still be running (it is uploaded, or filled and
    // synchronised, before use), and the activations x are read only after
    // the wait. The backend always asks for it (early = 1); early = 0 waits
    // first.
    if (early && nb > 0) issue(0);
    pdl_begin();
    if (!early && nb > 0) issue(0);
    for (int b = 0; b < nb; b++) {
        if (b + 1 < nb) {
            issue(b + 1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        int st = b & 1;
#pragma unroll
        for (int j = 0; j < U; j++) {
            int k = lo + b * B + 32 * j + lane;
            if (k < hi) {
#pragma unroll
                for (int m = 0; m < MR; m++) {
                    // MR = 2 computes both rows for M = 1 too (row 0
                    // twice): no branch in the decode step's hot loop.
                    if (MR == 2 || m < M) {
                        const float4* xm = (const float4*)(x + (long long)min(m, M - 1) * K);
                        float4 p = __ldg(xm + 2 * k), q = __ldg(xm + 2 * k + 1);
#pragma unroll
                        for (int r = 0; r < R; r++) fma_bf16x8(acc[m][r], buf[st][warp][j * R + r][lane], p, q);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MR; m++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[m][r] = warp_sum(acc[m][r]);
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int r = 0; r < R; r++) part[warp][r][m] = acc[m][r];
    }
    __syncthreads();
    if (slice == 0 && lane < R) {
        int n = n0 + lane;
        if (n < N) {
            float bv = bias ? bias[n] : 0.f;
            for (int m = 0; m < min(M, MR); m++) {
                float sum = 0.f;
                for (int s = 0; s < KS; s++) sum += part[warp + s][lane][m];
                y[(long long)m * N + n] = sum + bv;
            }
        }
    }
}

// gemv_mMR_rRuU: the GEMV for M ≤ MR rows. MR = 2 is the CFG decode step;
// MR = 8 serves zonos.Batch up to 4 utterances (2 rows each), whose
// weights are read once for every row: each lane multiplies a 16-byte
// weight piece by all M activation rows (read through L1, where they
// stay). It is latency-bound, not bandwidth-bound (ncu, H200, 2026-11-29,
// N 8512 × K 2048: 567 GB/s, 25 % occupancy at 86 registers, most stalls
// waiting on the staged weight in shared memory), which is why Hopper
// takes a batch's rows to gemv_tc's tensor cores; a 16-row variant was
// slower than the tiled GEMMs. Four output rows a warp group (R = 4, U =
// 1) was the fastest of R ∈ {1, 2, 4} at every decode shape (H200,
// 2026-11-29).
#define GEMV(name, R, U, MR, BOUNDS)                                                                          \
    extern "C" __global__ void BOUNDS                                                                         \
        name(const float* __restrict__ x, const unsigned short* __restrict__ w, const float* __restrict__ b,  \
             float* __restrict__ y, int M, int N, int K, int KS, int early) {                                 \
        gemv_body<R, U, MR>(x, w, b, y, M, N, K, KS, early);                                                  \
    }
GEMV(gemv_m2_r4u1, 4, 1, 2, __launch_bounds__(256))
GEMV(gemv_m8_r4u1, 4, 1, 8, __launch_bounds__(256, 2))

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// pdl_probe_spin and pdl_probe_stamp check programmatic dependent launch
// (TestPDLOverlap): the spin kernel's blocks busy-wait ns nanoseconds of
// the global timer and record the latest end in t[0]; the stamp kernel,
// launched next, records when its first block started (before waiting:
// its own probe slot only, which nothing else touches) in t[1] and when
// its wait returned in t[2]. With PDL t[1] < t[0] ≤ t[2].
extern "C" __global__ void pdl_probe_spin(unsigned long long* t, long long ns) {
    pdl_begin();
    unsigned long long t0 = globaltimer(), now;
    do {
        now = globaltimer();
    } while ((long long)(now - t0) < ns);
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&t[0], globaltimer());
}

extern "C" __global__ void pdl_probe_stamp(unsigned long long* t) {
    unsigned long long s = globaltimer();
    if (threadIdx.x == 0) atomicMin(&t[1], s);
    pdl_begin();
    if (threadIdx.x == 0) atomicMax(&t[2], globaltimer());
}
