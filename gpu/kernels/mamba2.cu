// Mamba2 mixer between its projections (reference: engine/compute/cpu Mamba2):
// causal depthwise conv with state + SiLU, selective scan with state and the
// D skip, gated RMSNorm rmsnorm(y·silu(z))·w. The scan walks the sequence
// in order (one warp per (batch, head, headdim row), d_state across lanes),
// for prefill and decode alike.
#include "common.cuh"


// mamba_conv: one thread per (b, channel c) of xBC; walks t, rolling the
// pre-activation state [B, C, Kc] and writing silu(conv) to xbc [B, T, C].
extern "C" __global__ void mamba_conv(const float* __restrict__ in, const float* __restrict__ cw,
                                      const float* __restrict__ cb, float* __restrict__ state,
                                      float* __restrict__ xbc, int B, int T, int E, int Di, int C, int Kc) {
    pdl_begin();
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)B * C) return;
    int b = (int)(i / C), c = (int)(i % C);
    float st[CONV_MAXK];
    float* sp = state + ((long long)b * C + c) * Kc;
    for (int j = 0; j < Kc; j++) st[j] = sp[j];
    for (int t = 0; t < T; t++) {
        for (int j = 0; j + 1 < Kc; j++) st[j] = st[j + 1];
        st[Kc - 1] = in[((long long)b * T + t) * E + Di + c];
        float acc = cb[c];
        for (int j = 0; j < Kc; j++) acc = __fadd_rn(acc, __fmul_rn(st[j], cw[c * Kc + j]));
        xbc[((long long)b * T + t) * C + c] = silu_ref(acc);
    }
    for (int j = 0; j < Kc; j++) sp[j] = st[j];
}

#define SCAN_WARPS 8
#define SCAN_MAXN 256

// The scan's pieces, shared by the step kernel (mamba_scan) and the
// prefill kernels (mamba_dt, mamba_scan_pre) so both do the same
// arithmetic. Lanes hold d_state entries n = lane + 32·i.

// softplus_decay: delta = softplus(draw) as mamba_ssm (identity above 20),
// decay = exp(delta·A).
__device__ __forceinline__ void softplus_decay(float draw, float A, float* delta, float* decay) {
    *delta = draw > 20.f ? draw : (float)log1p(exp((double)draw));
    *decay = (float)exp((double)__fmul_rn(*delta, A));
}

// scan_bc loads B and C of one position (xr: its xBC row) for group g.
template <int NS = SCAN_MAXN / 32>
__device__ __forceinline__ void scan_bc(const float* xr, int Di, int G, int g, int N, int lane, float* Bv, float* Cv) {
#pragma unroll
    for (int i = 0; i < NS; i++) {
        int n = lane + 32 * i;
        Bv[i] = n < N ? xr[Di + g * N + n] : 0.f;
        Cv[i] = n < N ? xr[Di + G * N + g * N + n] : 0.f;
    }
}

// scan_step advances the state row st by one position and returns C·state
// summed over the warp.
template <int NS = SCAN_MAXN / 32>
__device__ __forceinline__ float scan_step(float* st, float decay, float dx, const float* Bv, const float* Cv, int N, int lane) {
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < NS; i++) {
        int n = lane + 32 * i;
        if (n < N) {
            float v = __fadd_rn(__fmul_rn(st[i], decay), __fmul_rn(dx, Bv[i]));
            st[i] = v;
            acc = __fmaf_rn(v, Cv[i], acc);
        }
    }
    return warp_sum(acc);
}

// scan_state moves a state row between memory and the lanes' registers.
template <int NS = SCAN_MAXN / 32>
__device__ __forceinline__ void scan_state_load(float* st, const float* sp, int N, int lane) {
#pragma unroll
    for (int i = 0; i < NS; i++) {
        int n = lane + 32 * i;
        st[i] = n < N ? sp[n] : 0.f;
    }
}

template <int NS = SCAN_MAXN / 32>
__device__ __forceinline__ void scan_state_store(const float* st, float* sp, int N, int lane) {
#pragma unroll
    for (int i = 0; i < NS; i++) {
        int n = lane + 32 * i;
        if (n < N) sp[n] = st[i];
    }
}

// mamba_scan: grid (B·H, ⌈P/8⌉), one warp per headdim row p; lanes hold
// d_state entries n = lane + 32·i of the state [B, H, P, N].
extern "C" __global__ void __launch_bounds__(SCAN_WARPS * 32) mamba_scan(const float* __restrict__ in, const float* __restrict__ xbc,
                                      const float* __restrict__ dtb, const float* __restrict__ alog,
                                      const float* __restrict__ Dw, float* __restrict__ state,
                                      float* __restrict__ y, int T, int E, int Di, int C, int H, int P,
                                      int N, int G) {
    pdl_begin();
    int bh = blockIdx.x;
    int b = bh / H, h = bh % H;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int p = blockIdx.y * SCAN_WARPS + warp;
    if (p >= P) return;
    int g = h / (H / G);
    float A = -(float)exp((double)alog[h]);
    float dbias = dtb[h], dskip = Dw[h];
    float st[SCAN_MAXN / 32], Bv[SCAN_MAXN / 32], Cv[SCAN_MAXN / 32];
    float* sp = state + (((long long)b * H + h) * P + p) * N;
    scan_state_load(st, sp, N, lane);
    for (int t = 0; t < T; t++) {
        long long row = (long long)b * T + t;
        float delta, decay;
        softplus_decay(in[row * E + Di + C + h] + dbias, A, &delta, &decay);
        const float* xr = xbc + row * C;
        float xv = xr[h * P + p];
        scan_bc(xr, Di, G, g, N, lane, Bv, Cv);
        float acc = scan_step(st, decay, __fmul_rn(delta, xv), Bv, Cv, N, lane);
        if (lane == 0) y[row * Di + h * P + p] = __fmaf_rn(dskip, xv, acc);
    }
    scan_state_store(st, sp, N, lane);
}

// step_operands is what both decode-step kernels do once their block's
// conv outputs are in shared memory (bs, cs: the group's B and C): the
// head's decay and input scale from its dt and A_log (their softplus and
// exps overlap the barrier's wait), then B and C in the lanes' registers.
template <int NS = SCAN_MAXN / 32>
__device__ __forceinline__ void step_operands(float dtv, float alv, const float* bs, const float* cs, int N, int lane,
                                              float* delta, float* decay, float* Bv, float* Cv) {
    float A = -(float)exp((double)alv);
    softplus_decay(dtv, A, delta, decay);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < NS; i++) {
        int n = lane + 32 * i;
        Bv[i] = n < N ? bs[n] : 0.f;
        Cv[i] = n < N ? cs[n] : 0.f;
    }
}

// mamba_step: the decode step's conv and scan in one kernel, grid B·H, one
// block per (batch row, head), 8 warps over the head's P rows. The block
// first computes the conv outputs it needs — its head's P x channels and
// its group's B and C channels — into shared memory (same arithmetic as
// mamba_conv), while the state rows of the scan are already on their way,
// then scans as mamba_scan does. It rolls the conv state of its own x
// channels; the B and C channels are read by every head of the group, so
// their state is rolled by the norm kernel that follows (mamba_norm_v4's
// roll argument), after every block has read it.
//
// NS: state slots per lane (d_state ≤ 32·NS): 4 for Zonos' 128 halves the
// state's registers, so an SM holds more blocks (batches run this kernel
// over B·64 blocks). flags bit 0: the state rows are requested before the
// wait for in_proj, as mamba_step_gated's are (only this kernel of one
// layer writes them, once per step; the kernel before in_proj has
// finished when this one starts).
#define STEP_ROWS 8 // P ≤ 8 · SCAN_WARPS
template <int NS>
__device__ __forceinline__ void mamba_step_body(const float* __restrict__ in, const float* __restrict__ cw,
                                                const float* __restrict__ cb, float* __restrict__ cst,
                                                const float* __restrict__ dtb, const float* __restrict__ alog,
                                                const float* __restrict__ Dw, float* __restrict__ state,
                                                float* __restrict__ y, int E, int Di, int C, int H, int P, int N, int G,
                                                int Kc, int flags) {
    __shared__ float xs[8 * SCAN_WARPS], bs[SCAN_MAXN], cs[SCAN_MAXN];
    int b = blockIdx.x / H, h = blockIdx.x % H;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int g = h / (H / G);
    const float* row = in + (long long)b * E;
    float st[STEP_ROWS][NS];
    auto load_state = [&]() {
#pragma unroll
        for (int r = 0; r < STEP_ROWS; r++) {
            int p = warp + SCAN_WARPS * r;
            if (p < P) scan_state_load<NS>(st[r], state + (((long long)b * H + h) * P + p) * N, N, lane);
        }
    };
    if (flags & 1) load_state();
    pdl_begin();
    // The head's scalars (dt, its bias, A, D) and the scan's state rows
    // (unless requested before the wait) first: they do not depend on the
    // conv, so their loads and the softplus overlap it instead of following
    // the barrier.
    float dtv = row[Di + C + h] + dtb[h], alv = alog[h], dskip = Dw[h];
    if (!(flags & 1)) load_state();
    // Conv outputs: P x channels, then N B and N C channels.
    for (int i = threadIdx.x; i < P + 2 * N; i += blockDim.x) {
        int c;
        float* dst;
        if (i < P) {
            c = h * P + i, dst = &xs[i];
        } else if (i < P + N) {
            c = Di + g * N + (i - P), dst = &bs[i - P];
        } else {
            c = Di + G * N + g * N + (i - P - N), dst = &cs[i - P - N];
        }
        float* sp = cst + ((long long)b * C + c) * Kc;
        float acc = cb[c];
        // The window is the state shifted by one plus the new input; the
        // shift is done in place in ascending order (only this block reads
        // its x channels).
#pragma unroll
        for (int j = 0; j < CONV_MAXK; j++) {
            if (j < Kc) {
                float v = j + 1 < Kc ? sp[j + 1] : row[Di + c];
                acc = __fadd_rn(acc, __fmul_rn(v, cw[c * Kc + j]));
                if (i < P) sp[j] = v;
            }
        }
        *dst = silu_ref(acc);
    }
    float delta, decay, Bv[NS], Cv[NS];
    step_operands<NS>(dtv, alv, bs, cs, N, lane, &delta, &decay, Bv, Cv);
#pragma unroll
    for (int r = 0; r < STEP_ROWS; r++) {
        int p = warp + SCAN_WARPS * r;
        if (p < P) {
            float xv = xs[p];
            float acc = scan_step<NS>(st[r], decay, __fmul_rn(delta, xv), Bv, Cv, N, lane);
            if (lane == 0) y[(long long)b * Di + h * P + p] = __fmaf_rn(dskip, xv, acc);
            scan_state_store<NS>(st[r], state + (((long long)b * H + h) * P + p) * N, N, lane);
        }
    }
}

// mamba_step (d_state ≤ 256) and mamba_step_n128 (≤ 128). Launch grid B·H,
// 256 threads.
#define MAMBA_STEP(NAME, NMAX)                                                                                      \
    extern "C" __global__ void __launch_bounds__(SCAN_WARPS * 32)                                                   \
        NAME(const float* __restrict__ in, const float* __restrict__ cw, const float* __restrict__ cb,             \
             float* __restrict__ cst, const float* __restrict__ dtb, const float* __restrict__ alog,               \
             const float* __restrict__ Dw, float* __restrict__ state, float* __restrict__ y, int E, int Di, int C, \
             int H, int P, int N, int G, int Kc, int flags) {                                                      \
        mamba_step_body<NMAX / 32>(in, cw, cb, cst, dtb, alog, Dw, state, y, E, Di, C, H, P, N, G, Kc, flags);     \
    }
MAMBA_STEP(mamba_step, 256)
MAMBA_STEP(mamba_step_n128, 128)

// mamba_step_gated: mamba_step for the fused mixer (gpu.Mamba2Block, one
// norm group): the conv outputs come from in_proj's epilogue (xbc [B, C],
// the conv state already rolled there), and the block gates its outputs,
// yg [B, Di] = y·silu(z), and sums their squares for the gated RMSNorm
// into part [B, H·S] (double), which out_proj's load adds up and applies:
// the norm kernel between the two projections goes.
//
// A block takes 64 of a head's P rows (grid B·H·⌈P / 64⌉), 8 a warp
// (rows warp + 8r), and sums their squares as mamba_run's scan does —
// each warp's 8 in the tree of a butterfly over xor 4, 2, 1, then the
// warps in order — so that out_proj's gated norm (gemv_chunk_norm, which
// adds a row's parts as mamba_run's out_proj does) has the bits a lone
// utterance's mamba_run gives: a batch's Mamba2 layers compute each
// utterance exactly as it would be computed alone. Every block computes
// its head's decay and loads B and C itself (a few hundred bytes from
// L2). Measured on an H200 (2026-11-30), the lone step graph, when this
// kernel was its Mamba2 scan: 8 rows a warp 1.684 ms, 2 rows (four
// blocks a head) 1.611 ms; the lone step now runs mamba_run, and a
// batch has B·H blocks to spread.
//
// flags bit 0: the block requests its state rows before waiting for the
// previous kernel. The SSM state is read and written by this kernel only
// (of one layer, once per step): the previous kernel of the stream never
// writes it, and the one before that has finished by the time this one
// starts (each kernel waits before it lets the next launch).
template <int NS>
__device__ __forceinline__ void mamba_step_gated_body(const float* __restrict__ in, const float* __restrict__ xbc,
                                                      const float* __restrict__ dtb, const float* __restrict__ alog,
                                                      const float* __restrict__ Dw, float* __restrict__ state,
                                                      float* __restrict__ yg, double* __restrict__ part, int E,
                                                      int Di, int C, int H, int P, int N, int G, int flags) {
    __shared__ float xs[8 * SCAN_WARPS], bs[SCAN_MAXN], cs[SCAN_MAXN];
    __shared__ double wsum[SCAN_WARPS];
    constexpr int RW = 8; // rows a warp
    const int S = (P + SCAN_WARPS * RW - 1) / (SCAN_WARPS * RW);
    const int bh = blockIdx.x / S, s = blockIdx.x % S;
    const int b = bh / H, h = bh % H;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = h / (H / G);
    const int p0 = s * SCAN_WARPS * RW + warp;
    float st[RW][NS];
    auto load_state = [&]() {
#pragma unroll
        for (int r = 0; r < RW; r++) {
            const int p = p0 + SCAN_WARPS * r;
            if (p < P) scan_state_load<NS>(st[r], state + (((long long)b * H + h) * P + p) * N, N, lane);
        }
    };
    if (flags & 1) load_state();
    pdl_begin();
    if (!(flags & 1)) load_state();
    const float* row = in + (long long)b * E;
    const float* xr = xbc + (long long)b * C;
    const float dtv = row[Di + C + h] + dtb[h], alv = alog[h], dskip = Dw[h];
    float zr[RW];
#pragma unroll
    for (int r = 0; r < RW; r++) {
        const int p = p0 + SCAN_WARPS * r;
        zr[r] = p < P ? row[h * P + p] : 0.f;
    }
    for (int i = threadIdx.x; i < P + 2 * N; i += blockDim.x) {
        if (i < P)
            xs[i] = xr[h * P + i];
        else if (i < P + N)
            bs[i - P] = xr[Di + g * N + (i - P)];
        else
            cs[i - P - N] = xr[Di + G * N + g * N + (i - P - N)];
    }
    float delta, decay, Bv[NS], Cv[NS];
    step_operands<NS>(dtv, alv, bs, cs, N, lane, &delta, &decay, Bv, Cv);
    double sq[RW]; // lane 0: the squares of the warp's rows
#pragma unroll
    for (int r = 0; r < RW; r++) {
        const int p = p0 + SCAN_WARPS * r;
        sq[r] = 0;
        if (p < P) {
            float xv = xs[p];
            float acc = scan_step<NS>(st[r], decay, __fmul_rn(delta, xv), Bv, Cv, N, lane);
            if (lane == 0) {
                float a = __fmul_rn(__fmaf_rn(dskip, xv, acc), silu_ref(zr[r]));
                yg[(long long)b * Di + h * P + p] = a;
                sq[r] = (double)a * (double)a;
            }
            scan_state_store<NS>(st[r], state + (((long long)b * H + h) * P + p) * N, N, lane);
        }
    }
    if (lane == 0)
        wsum[warp] = __dadd_rn(__dadd_rn(__dadd_rn(sq[0], sq[4]), __dadd_rn(sq[2], sq[6])),
                               __dadd_rn(__dadd_rn(sq[1], sq[5]), __dadd_rn(sq[3], sq[7])));
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int w = 0; w < SCAN_WARPS; w++) t += wsum[w];
        part[blockIdx.x] = t;
    }
}

// mamba_step_gated_nN: d_state ≤ N (NS = N/32 state slots per lane and
// row: fewer registers, more resident blocks). Launch grid
// B·H·⌈P / 64⌉, 256 threads; part holds one double per block.
#define MAMBA_STEP_GATED(NMAX)                                                                                       \
    extern "C" __global__ void __launch_bounds__(SCAN_WARPS * 32) mamba_step_gated_n##NMAX(                        \
        const float* __restrict__ in, const float* __restrict__ xbc, const float* __restrict__ dtb,               \
        const float* __restrict__ alog, const float* __restrict__ Dw, float* __restrict__ state,                  \
        float* __restrict__ yg, double* __restrict__ part, int E, int Di, int C, int H, int P, int N, int G,      \
        int flags) {                                                                                               \
        mamba_step_gated_body<NMAX / 32>(in, xbc, dtb, alog, Dw, state, yg, part, E, Di, C, H, P, N, G, flags);     \
    }
MAMBA_STEP_GATED(128)
MAMBA_STEP_GATED(256)

// mamba_norm: one block per (row, group) of y [rows, Di]:
// out = rmsnorm(y·silu(z))·w with z the first Di entries of the in_proj row.
extern "C" __global__ void mamba_norm(const float* __restrict__ y, const float* __restrict__ in,
                                      const float* __restrict__ w, float* __restrict__ out,
                                      int Di, int G, int E, float eps) {
    pdl_begin();
    __shared__ double scratch[32];
    long long row = blockIdx.x / G;
    int g = blockIdx.x % G;
    int gs = Di / G;
    const float* yr = y + row * Di + g * gs;
    const float* z = in + row * E + g * gs;
    float* o = out + row * Di + g * gs;
    double ms = 0;
    for (int i = threadIdx.x; i < gs; i += blockDim.x) {
        float v = __fmul_rn(yr[i], silu_ref(z[i]));
        o[i] = v;
        ms += (double)v * (double)v;
    }
    ms = block_sum_d(ms, scratch);
    float r = (float)(1.0 / sqrt(ms / gs + (double)eps));
    for (int i = threadIdx.x; i < gs; i += blockDim.x)
        o[i] = __fmul_rn(__fmul_rn(o[i], r), w[g * gs + i]);
}

// mamba_norm_v4 is mamba_norm for groups of gs = 4·gs4 floats (gs4 ≤
// 4·blockDim) whose rows start 16-byte aligned (Di, E multiples of 4): one
// read of y and z into registers instead of a chain of dependent loads.
//
// roll (decode after mamba_step, else null): the conv state [rows, C, Kc]
// whose B and C channels [Di, C) the block of group 0 rolls by one
// position, appending the in_proj row's values.
extern "C" __global__ void __launch_bounds__(1024) mamba_norm_v4(const float* __restrict__ y, const float* __restrict__ in,
                                         const float* __restrict__ w, float* __restrict__ out,
                                         int Di, int G, int E, float eps, float* __restrict__ roll, int C, int Kc) {
    pdl_begin();
    __shared__ double scratch[32];
    long long row = blockIdx.x / G;
    int g = blockIdx.x % G;
    int gs = Di / G, gs4 = gs / 4;
    const float4* yr = (const float4*)(y + row * Di + g * gs);
    const float4* z = (const float4*)(in + row * E + g * gs);
    const float4* wg = (const float4*)(w + g * gs);
    float4* o = (float4*)(out + row * Di + g * gs);
    float4 v[4], zv[4];
    // The row's loads and the weight of a thread's first float4 (its only
    // one when gs4 ≤ blockDim, as in the decode step) are requested first,
    // and the conv state is rolled while they are in flight: the norm's
    // dependent path has one L2 round trip, not three.
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < gs4) v[k] = yr[i], zv[k] = z[i];
    }
    float4 w0 = threadIdx.x < gs4 ? wg[threadIdx.x] : make_float4(0.f, 0.f, 0.f, 0.f);
    if (roll && g == 0) {
        for (int c = Di + threadIdx.x; c < C; c += blockDim.x) {
            float* sp = roll + (row * C + c) * Kc;
#pragma unroll
            for (int j = 0; j < CONV_MAXK; j++)
                if (j < Kc) sp[j] = j + 1 < Kc ? sp[j + 1] : in[row * E + Di + c];
        }
    }
    double ms = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < gs4) {
            float4 a = v[k], zz = zv[k];
            a.x = __fmul_rn(a.x, silu_ref(zz.x)); a.y = __fmul_rn(a.y, silu_ref(zz.y));
            a.z = __fmul_rn(a.z, silu_ref(zz.z)); a.w = __fmul_rn(a.w, silu_ref(zz.w));
            v[k] = a;
            ms += ((double)a.x * (double)a.x + (double)a.y * (double)a.y) + ((double)a.z * (double)a.z + (double)a.w * (double)a.w);
        }
    }
    ms = block_sum_d(ms, scratch);
    float r = (float)(1.0 / sqrt(ms / gs + (double)eps));
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < gs4) {
            float4 a = v[k], ww = k == 0 ? w0 : wg[i];
            a.x = __fmul_rn(__fmul_rn(a.x, r), ww.x); a.y = __fmul_rn(__fmul_rn(a.y, r), ww.y);
            a.z = __fmul_rn(__fmul_rn(a.z, r), ww.z); a.w = __fmul_rn(__fmul_rn(a.w, r), ww.w);
            o[i] = a;
        }
    }
}

// Prefill variants (T > 1). The sequential kernels walk t in a chain of
// dependent loads (54 µs for the conv and 194 µs for the scan per layer at
// 80 positions); these do the same arithmetic in the same order with the
// work that does not depend on the recurrence taken out of it.

// mamba_conv_par: one thread per (b, t, c), the window read from the input
// or, before position 0, from the state; mamba_conv_state then rolls the
// state (after every window has read it).
extern "C" __global__ void mamba_conv_par(const float* __restrict__ in, const float* __restrict__ cw,
                                          const float* __restrict__ cb, const float* __restrict__ state,
                                          float* __restrict__ xbc, int B, int T, int E, int Di, int C, int Kc) {
    pdl_begin();
    grid_loop((long long)B * T * C, [&](auto i) {
        const int c = (int)(i % (unsigned)C);
        const auto bt = i / (unsigned)C;
        const int t = (int)(bt % (unsigned)T), b = (int)(bt / (unsigned)T);
        float acc = cb[c];
        for (int j = 0; j < Kc; j++) {
            int src = t - (Kc - 1) + j;
            float v = src >= 0 ? in[((long long)b * T + src) * E + Di + c] : state[((long long)b * C + c) * Kc + Kc + src];
            acc = __fadd_rn(acc, __fmul_rn(v, cw[c * Kc + j]));
        }
        xbc[i] = silu_ref(acc);
    });
}

extern "C" __global__ void mamba_conv_state(const float* __restrict__ in, float* __restrict__ state,
                                            int B, int T, int E, int Di, int C, int Kc) {
    pdl_begin();
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)B * C) return;
    int b = (int)(i / C), c = (int)(i % C);
    float* sp = state + ((long long)b * C + c) * Kc;
    for (int j = 0; j < Kc; j++) {  // ascending: sp[j + T] is read before it is overwritten
        int src = T - Kc + j;
        sp[j] = src >= 0 ? in[((long long)b * T + src) * E + Di + c] : sp[j + T];
    }
}

// mamba_dt: delta = softplus(dt + dt_bias) and decay = exp(delta·A) for
// every (b, t, h), into dd [B, T, H, 2], as mamba_scan computes them.
extern "C" __global__ void mamba_dt(const float* __restrict__ in, const float* __restrict__ dtb,
                                    const float* __restrict__ alog, float* __restrict__ dd,
                                    int B, int T, int E, int Di, int C, int H) {
    pdl_begin();
    grid_loop((long long)B * T * H, [&](auto i) {
        const int h = (int)(i % (unsigned)H);
        const long long row = i / (unsigned)H;
        float A = -(float)exp((double)alog[h]);
        softplus_decay(in[row * E + Di + C + h] + dtb[h], A, &dd[2 * (long long)i], &dd[2 * (long long)i + 1]);
    });
}

// mamba_scan_pre_nS is mamba_scan over precomputed (delta, decay), for
// prefill, d_state N ≤ 32·S, SCAN_CHUNK positions at a time. The scan is
// bound by instruction issue (ncu, H200, 2026-11-29: 79 M instructions
// for one 61-position layer, 55 % of issue slots busy), so the kernel
// spends as few as it can per state element:
//   - S is compile-time: a lane walks only the S slots N needs (the
//     generic kernel walked SCAN_MAXN/32 = 8, predicated, for N = 128);
//   - the block's warps share one group, so the chunk's B and C rows and
//     (delta, decay) are staged once into shared memory, lane-major (a
//     lane's S values n = lane + 32·i side by side: one vector load);
//   - only the state update is on the sequential path: the lanes' partial
//     C·state sums stay in registers and are reduced after the chunk,
//     all 16 at once (chunk_sum16).
// Each output is the same arithmetic in the same order as mamba_scan
// (state update, partial sums over i, then warp_sum): bit-identical.
#define SCAN_CHUNK 16

// chunk_sum16 reduces 16 values over the warp at once (a transposing
// butterfly): at each xor distance m = 16, 8, 4, 2 a lane keeps half of
// its values and adds its partner's copy of the same half, then the last
// value is added across m = 1. Value j ends in lanes 2j and 2j+1 as
// warp_sum(a[j]) would compute it: the same pairs are added in the same
// tree (each add is own + partner, as in warp_sum), so the bits match;
// it costs 16 shuffles instead of 80.
__device__ __forceinline__ float chunk_sum16(float* a, int lane) {
#pragma unroll
    for (int m = 16, c = 16; m >= 2; m >>= 1, c >>= 1) {
        bool hi = lane & m;
#pragma unroll
        for (int k = 0; k < c / 2; k++) {
            float send = hi ? a[k] : a[k + c / 2];
            float keep = hi ? a[k + c / 2] : a[k];
            a[k] = keep + __shfl_xor_sync(0xffffffffu, send, m);
        }
    }
    return a[0] + __shfl_xor_sync(0xffffffffu, a[0], 1);
}

template <int S>
__device__ __forceinline__ void scan_pre_body(const float* __restrict__ dd, const float* __restrict__ xbc,
                                              const float* __restrict__ Dw, float* __restrict__ state,
                                              float* __restrict__ y, int T, int Di, int C, int H, int P, int N, int G) {
    __shared__ __align__(16) float sB[SCAN_CHUNK][32 * S], sC[SCAN_CHUNK][32 * S];
    __shared__ float sdd[SCAN_CHUNK][2];
    pdl_begin();
    int bh = blockIdx.x;
    int b = bh / H, h = bh % H;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int p = blockIdx.y * SCAN_WARPS + warp;
    bool live = p < P; // every warp stages; only live ones scan
    int g = h / (H / G);
    float dskip = Dw[h];
    float st[S];
    bool on[S];
    float* sp = state + (((long long)b * H + h) * P + min(p, P - 1)) * N;
#pragma unroll
    for (int i = 0; i < S; i++) {
        on[i] = lane + 32 * i < N;
        st[i] = live && on[i] ? sp[lane + 32 * i] : 0.f;
    }
    for (int t0 = 0; t0 < T; t0 += SCAN_CHUNK) {
        int tc = min(SCAN_CHUNK, T - t0);
        const float* x0 = xbc + ((long long)b * T + t0) * C;
        __syncthreads(); // the previous chunk is no longer read
        for (int e = threadIdx.x; e < tc * 32 * S; e += blockDim.x) {
            int t = e / (32 * S), n = e % (32 * S);
            int at = (n & 31) * S + (n >> 5); // lane-major
            const float* xr = x0 + (long long)t * C + Di + g * N;
            sB[t][at] = n < N ? xr[n] : 0.f;
            sC[t][at] = n < N ? xr[G * N + n] : 0.f;
        }
        if (threadIdx.x < 2 * tc) {
            int t = threadIdx.x >> 1;
            sdd[t][threadIdx.x & 1] = dd[2 * (((long long)b * T + t0 + t) * H + h) + (threadIdx.x & 1)];
        }
        float xv[SCAN_CHUNK], acc[SCAN_CHUNK];
#pragma unroll
        for (int t = 0; t < SCAN_CHUNK; t++) xv[t] = live && t < tc ? x0[(long long)t * C + h * P + p] : 0.f;
        __syncthreads();
        if (!live) continue;
#pragma unroll
        for (int t = 0; t < SCAN_CHUNK; t++) {
            acc[t] = 0.f;
            if (t < tc) {
                float decay = sdd[t][1], dx = __fmul_rn(sdd[t][0], xv[t]);
                float Bv[S], Cv[S];
                if (S % 4 == 0) {
#pragma unroll
                    for (int i = 0; i < S; i += 4) {
                        float4 bq = *(const float4*)&sB[t][lane * S + i], cq = *(const float4*)&sC[t][lane * S + i];
                        Bv[i] = bq.x, Bv[i + 1] = bq.y, Bv[i + 2] = bq.z, Bv[i + 3] = bq.w;
                        Cv[i] = cq.x, Cv[i + 1] = cq.y, Cv[i + 2] = cq.z, Cv[i + 3] = cq.w;
                    }
                } else {
#pragma unroll
                    for (int i = 0; i < S; i++) Bv[i] = sB[t][lane * S + i], Cv[i] = sC[t][lane * S + i];
                }
#pragma unroll
                for (int i = 0; i < S; i++) {
                    if (on[i]) { // slots past N are skipped, as in mamba_scan
                        float v = __fadd_rn(__fmul_rn(st[i], decay), __fmul_rn(dx, Bv[i]));
                        st[i] = v;
                        acc[t] += v * Cv[i];
                    }
                }
            }
        }
        // The chunk's 16 sums, reduced together: lanes 2j and 2j+1 end
        // with position j's (chunk_sum16).
        float sum = chunk_sum16(acc, lane);
        int j = (lane >> 1) & 15;
        if (!(lane & 1) && j < tc) {
            long long row = (long long)b * T + t0 + j;
            y[row * Di + h * P + p] = sum + dskip * xbc[row * C + h * P + p];
        }
    }
#pragma unroll
    for (int i = 0; i < S; i++)
        if (live && on[i]) sp[lane + 32 * i] = st[i];
}

// mamba_ssd_pre_cb_nN: the prefill scan in chunked ("state space dual")
// form, for d_state N = 64 or 128 and head dim P a multiple of 32 (other
// shapes take the sequential scan, mamba_scan_pre_nS). Grid
// B·H·(P/32), 256 threads: warp w holds the state rows n ∈ [w·NS,
// (w+1)·NS) (NS = N/8) of the block's 32 head-dim columns p, one per
// lane, in registers.
// The sequential scan (mamba_scan_pre_nS) is bound by instruction issue:
// per position and state element it updates, multiplies by C and reduces
// over the warp. Here, per chunk of L = 16 positions with log decays
// a_t = delta_t·A summed into Lc_t (within the chunk):
//   y_t  = e^{Lc_t}·(C_t·h) + Σ_{s≤t} e^{Lc_t − Lc_s}·(C_t·B_s)·dx_s + D·x_t
//   h   ← e^{Lc_L}·h + Σ_s e^{Lc_L − Lc_s}·dx_s·B_sᵀ
// with dx_s = delta_s·x_s and h the state before the chunk: no reduction
// per position, and C·B once per chunk, shared by the 32 columns (ncu,
// H200, 2026-11-30: 58 µs for 80 positions of the real shape, about half
// the sequential kernel's time). Same quantities as
// the sequential scan, the decays multiplied as sums of logs (summed by a
// warp scan): outputs and states agree with it to rounding, not bit for
// bit (TestMambaChunkedScan).
#define SSD_L 16
#define SSD_PB 32
#define SSD_NMAX 128

// ssd_load_bc stages chunk t0's B and C rows of group g (zero past tc and
// N) in shared memory, every load in flight before the first store.
__device__ __forceinline__ void ssd_load_bc(float (*sB)[SSD_NMAX + 4], float (*sC)[SSD_NMAX + 4], const float* __restrict__ x0,
                                            int tc, int N, int Di, int G, int g, int C) {
#pragma unroll
    for (int k = 0; k < SSD_L * SSD_NMAX / (SCAN_WARPS * 32); k++) {
        const int e = threadIdx.x + SCAN_WARPS * 32 * k;
        const int t = e / SSD_NMAX, n = e % SSD_NMAX;
        const bool in = t < tc && n < N;
        sB[t][n] = in ? x0[(long long)t * C + Di + g * N + n] : 0.f;
        sC[t][n] = in ? x0[(long long)t * C + Di + G * N + g * N + n] : 0.f;
    }
}

// ssd_cb is C_t·B_s for one pair of a chunk's positions, summed in one
// fixed order (mamba_ssd_cb).
__device__ __forceinline__ float ssd_cb(const float (*sB)[SSD_NMAX + 4], const float (*sC)[SSD_NMAX + 4], int t, int s2, int N) {
    float a = 0.f;
    for (int n = 0; n < N; n += 4) {
        const float4 c4 = *(const float4*)&sC[t][n], b4 = *(const float4*)&sB[s2][n];
        a += c4.x * b4.x + c4.y * b4.y + c4.z * b4.z + c4.w * b4.w;
    }
    return a;
}

// mamba_ssd_cb: C_t·B_s for every pair s ≤ t of every chunk of 16
// positions, once per (batch row, group), into cb[((b·G + g)·chunks + c)·256
// + t·16 + s] (0 for s > t and past the sequence). Every head of a group
// shares it: computed in each of mamba_ssd_pre_cb's blocks (B·H·P/32 of
// them) it was most of their shared-memory traffic. Grid B·G·chunks, 256
// threads.
extern "C" __global__ void __launch_bounds__(SCAN_WARPS * 32) mamba_ssd_cb(const float* __restrict__ xbc, float* __restrict__ cb,
                                                                          int T, int Di, int C, int N, int G) {
    __shared__ __align__(16) float sB[SSD_L][SSD_NMAX + 4], sC[SSD_L][SSD_NMAX + 4];
    pdl_begin();
    const int chunks = (T + SSD_L - 1) / SSD_L;
    const int c = blockIdx.x % chunks, bg = blockIdx.x / chunks;
    const int g = bg % G, b = bg / G;
    const int t0 = c * SSD_L, tc = min(SSD_L, T - t0);
    ssd_load_bc(sB, sC, xbc + ((long long)b * T + t0) * C, tc, N, Di, G, g, C);
    __syncthreads();
    const int t = threadIdx.x / SSD_L, s2 = threadIdx.x % SSD_L;
    cb[(long long)blockIdx.x * SSD_L * SSD_L + threadIdx.x] = (s2 <= t && t < tc) ? ssd_cb(sB, sC, t, s2, N) : 0.f;
}

// ssd_pre_body: the chunks' C·Bᵀ comes from mamba_ssd_cb (cbAll).
template <int NS>
__device__ __forceinline__ void ssd_pre_body(const float* __restrict__ dd, const float* __restrict__ xbc, const float* __restrict__ alog,
                  const float* __restrict__ Dw, const float* __restrict__ cbAll, float* __restrict__ state,
                  float* __restrict__ y, int T, int Di, int C, int H, int P, int N, int G) {
    __shared__ __align__(16) float sB[SSD_L][SSD_NMAX + 4], sC[SSD_L][SSD_NMAX + 4];
    __shared__ float sDX[SSD_L][SSD_PB], sX[SSD_L][SSD_PB];
    __shared__ float sW[SSD_L][SSD_L], sLc[SSD_L], sE[SSD_L];
    // One buffer, two uses: the state tile on the way in and out (row p
    // of the 32: its N entries, padded), and in between the warps'
    // partial C·h sums sY[w][t][p].
    __shared__ float sYS[SSD_PB * (SSD_NMAX + 1)];
    auto sS = [&](int p, int n) -> float& { return sYS[p * (SSD_NMAX + 1) + n]; };
    auto sY = [&](int w, int t, int p) -> float& { return sYS[(w * SSD_L + t) * SSD_PB + p]; };
    pdl_begin();
    const int blocksPerHead = P / SSD_PB;
    const int bh = blockIdx.x / blocksPerHead, p0 = (blockIdx.x % blocksPerHead) * SSD_PB;
    const int b = bh / H, h = bh % H, g = h / (H / G);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n0 = warp * NS; // N = 8·NS: every warp's rows are real, 16-byte aligned in shared memory
    const float A = -(float)exp((double)alog[h]), dskip = Dw[h];
    // The block's 32 state rows are contiguous: read them coalesced into
    // shared memory, then each thread takes its column's entries.
    float* sp = state + ((long long)b * H + h) * P * N + (long long)p0 * N;
    for (int e = threadIdx.x; e < SSD_PB * N; e += blockDim.x) sS(e / N, e % N) = sp[e];
    __syncthreads();
    float st[NS];
#pragma unroll
    for (int i = 0; i < NS; i++) st[i] = sS(lane, n0 + i);
    const float* cbg = cbAll + (long long)(b * G + g) * ((T + SSD_L - 1) / SSD_L) * SSD_L * SSD_L;
    for (int t0 = 0; t0 < T; t0 += SSD_L) {
        const int tc = min(SSD_L, T - t0);
        const float* x0 = xbc + ((long long)b * T + t0) * C;
        __syncthreads(); // the previous chunk's shared values are no longer read
        // This thread's C_t·B_s from mamba_ssd_cb, parked in its own cell
        // of sW with the chunk's other loads.
        sW[threadIdx.x / SSD_L][threadIdx.x % SSD_L] = cbg[(t0 / SSD_L) * SSD_L * SSD_L + threadIdx.x];
        ssd_load_bc(sB, sC, x0, tc, N, Di, G, g, C);
#pragma unroll
        for (int k = 0; k < SSD_L * SSD_PB / (SCAN_WARPS * 32); k++) {
            const int e = threadIdx.x + SCAN_WARPS * 32 * k;
            const int t = e / SSD_PB, q = e % SSD_PB;
            const float xv = t < tc ? x0[(long long)t * C + h * P + p0 + q] : 0.f;
            const float delta = t < tc ? dd[2 * (((long long)b * T + t0 + t) * H + h)] : 0.f;
            sX[t][q] = xv;
            sDX[t][q] = __fmul_rn(delta, xv);
        }
        if (warp == 0) { // Lc: the chunk's log decays, loaded by 16 lanes at once, prefix-summed by a warp scan
            float a = lane < tc ? __fmul_rn(dd[2 * (((long long)b * T + t0 + lane) * H + h)], A) : 0.f;
#pragma unroll
            for (int o = 1; o < SSD_L; o <<= 1) {
                const float u = __shfl_up_sync(0xffffffffu, a, o);
                if (lane >= o) a += u;
            }
            if (lane < SSD_L) sLc[lane] = a;
        }
        __syncthreads();
        // C_t·h over the warp's state rows, for every position of the chunk.
#pragma unroll 2
        for (int t = 0; t < SSD_L; t++) {
            float a = 0.f;
#pragma unroll
            for (int i = 0; i < NS; i += 4) { // one 16-byte load per 4 products: shared-memory issue bounds the chunk
                const float4 c4 = *(const float4*)&sC[t][n0 + i];
                a += c4.x * st[i];
                a += c4.y * st[i + 1];
                a += c4.z * st[i + 2];
                a += c4.w * st[i + 3];
            }
            sY(warp, t, lane) = a;
        }
        // W[t][s] = e^{Lc_t − Lc_s}·(C_t·B_s) for s ≤ t, one pair per thread;
        // sE[s] = e^{Lc_last − Lc_s}.
        {
            const int t = threadIdx.x / SSD_L, s2 = threadIdx.x % SSD_L;
            float wv = 0.f;
            if (s2 <= t && t < tc) wv = sW[t][s2] * expf(sLc[t] - sLc[s2]);
            sW[t][s2] = wv;
            if (threadIdx.x < SSD_L) sE[threadIdx.x] = threadIdx.x < tc ? expf(sLc[tc - 1] - sLc[threadIdx.x]) : 0.f;
        }
        __syncthreads();
        // Outputs: (t, p) for t = warp and warp + 8.
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int t = warp + SCAN_WARPS * k;
            if (t < tc) {
                float ys = 0.f;
#pragma unroll
                for (int w = 0; w < SCAN_WARPS; w++) ys += sY(w, t, lane);
                float yi = 0.f;
                for (int s2 = 0; s2 <= t; s2++) yi += sW[t][s2] * sDX[s2][lane];
                const long long row = (long long)b * T + t0 + t;
                y[row * Di + h * P + p0 + lane] = (expf(sLc[t]) * ys + yi) + dskip * sX[t][lane];
            }
        }
        // The state after the chunk.
        const float decayAll = expf(sLc[tc - 1]);
#pragma unroll
        for (int i = 0; i < NS; i++) st[i] *= decayAll;
        for (int s2 = 0; s2 < tc; s2++) {
            const float coef = sE[s2] * sDX[s2][lane];
#pragma unroll
            for (int i = 0; i < NS; i += 4) {
                const float4 b4 = *(const float4*)&sB[s2][n0 + i];
                st[i] += coef * b4.x;
                st[i + 1] += coef * b4.y;
                st[i + 2] += coef * b4.z;
                st[i + 3] += coef * b4.w;
            }
        }
    }
    __syncthreads(); // every warp is done with sY
#pragma unroll
    for (int i = 0; i < NS; i++) sS(lane, n0 + i) = st[i];
    __syncthreads();
    for (int e = threadIdx.x; e < SSD_PB * N; e += blockDim.x) sp[e] = sS(e / N, e % N);
}

// mamba_ssd_pre_cb_nN: d_state N = 8·NS exactly (64 or 128), the chunks'
// C·Bᵀ read from mamba_ssd_cb (cb).
#define SSD_PRE(NMAX, NAME)                                                                                   \
    extern "C" __global__ void __launch_bounds__(SCAN_WARPS * 32)                                              \
        NAME(const float* __restrict__ dd, const float* __restrict__ xbc, const float* __restrict__ alog,     \
             const float* __restrict__ Dw, const float* __restrict__ cb, float* __restrict__ state,            \
             float* __restrict__ y, int T, int Di, int C, int H, int P, int N, int G) {                        \
        ssd_pre_body<NMAX / SCAN_WARPS>(dd, xbc, alog, Dw, cb, state, y, T, Di, C, H, P, N, G);               \
    }
SSD_PRE(64, mamba_ssd_pre_cb_n64)
SSD_PRE(128, mamba_ssd_pre_cb_n128)

#define SCAN_PRE(S)                                                                                          \
    extern "C" __global__ void __launch_bounds__(SCAN_WARPS * 32, 3)                                         \
        mamba_scan_pre_n##S(const float* __restrict__ dd, const float* __restrict__ xbc,                    \
                            const float* __restrict__ Dw, float* __restrict__ state, float* __restrict__ y, \
                            int T, int Di, int C, int H, int P, int N, int G) {                              \
        scan_pre_body<S>(dd, xbc, Dw, state, y, T, Di, C, H, P, N, G);                                       \
    }
SCAN_PRE(1)
SCAN_PRE(2)
SCAN_PRE(4)
SCAN_PRE(8)

// ---------------------------------------------------------------------------
// mamba_run: a decode step's run of consecutive Mamba2 blocks (add-norm and
// mixer, no MLP; in the hybrid the three between two attention layers) in
// one persistent kernel, so the weights stream without stopping at the
// kernel boundaries.
//
// Why: as separate kernels (layernorm_v8, gemv_chunk_conv,
// mamba_step_gated, gemv_chunk_norm) a layer's row work is a chain of
// dependent latencies with the memory idle: the weight stream of a
// projection starts only when its kernel's blocks are resident, and stops
// at its end. Here one block per SM has a producer warp that streams
// everything the block will read — its rows of every in_proj and out_proj
// of the run, and its SSM state rows — through a ring of shared-memory
// stages, in the order the block consumes them, independent of the data:
// it runs ahead across the row work and the grid barriers as far as the
// ring allows.
//
// The producer keeps few stages in flight (inflight, by default one of
// 32 KiB; inflight2 for the in_proj stages past the ring's depth, which
// the consumers wait for, by default two): left to fill its ring as fast
// as it frees, every block put up to the whole ring in flight as each
// phase began (16–24 MB at once), and the latency-bound steps of the
// layer (the norm's loads, the barriers, the scan's operands) queued
// behind it. Capped, the ring can be deep and still quiet (H200,
// 2026-11-30: mamba_run over 3 blocks 94.6 → 87–88 µs).
//
// The 8 consumer warps run each layer in three phases separated by grid
// barriers (a counter in global memory):
//  1. every block adds the residual and normalises both rows itself
//     (LayerNorm, float64 statistics; 16 KB from L2, so no barrier), each
//     thread keeping elements 8t … 8t+7 of both rows — exactly the slice of
//     the activation the GEMV's layout gives thread t — and the residual
//     stream in registers; then in_proj over the block's even share of
//     rows, each stage's products left per warp and added up at the
//     phase's end, where the xBC outputs run the causal conv (its state
//     and weights requested into shared memory a phase ahead), as
//     gemv_chunk_conv;
//  2. the scan: one (row, head) per block, its state rows taken from the
//     ring, its 8 rows a warp side by side, as mamba_step_gated
//     (y·silu(z), sums of squares per head);
//  3. out_proj over the block's rows with the gated RMSNorm applied as the
//     activation is loaded, as gemv_chunk_norm.
// The GEMV stages are gemv_chunk's layout (8 pieces of 4 KiB a 32 KiB
// stage, piece t + 256·p is k8 = t + 256·(p % KT) of row p / KT), so the
// products are the same; the norms' sums are in other orders (float64
// sums of floats: TestMamba2Run found no difference, but none is promised).
//
// Every block must be resident at once (grid barriers): one block per SM
// (the ring's 6 stages of 32 KiB and 16 KB more), at most as
// many blocks as SMs (128 of 132 by default: gpu.runGrid). Blocks that are
// not yet resident wait only for kernels that do not wait on this one, so
// they become resident; a barrier that waits over 2 s traps (an error, not
// a hang).
//
// Alternatives measured in the step graph on an H200 (2026-11-30) and
// dropped, all slower than this kernel (docs/performance.md has the
// figures): L2 hints keeping each block's stream past its ring; blocks
// handing each other flagged words instead of meeting at barriers; each
// block computing the in_proj rows of the scan unit it owns and arriving
// early at barrier 1; the projections' stages on tensor cores (spilled at
// 168 registers, slower barriers); and pipelined GEMV stages (a 46 %
// larger kernel whose instruction-fetch stalls doubled: the layer's code
// is walked once a layer, so it must stay small, mamba_run_body's note).
#define MR_WARPS 8
#define MR_THREADS (MR_WARPS * 32 + 32)
#define MR_STAGE 32768
#define MR_STAGES 6
#define MR_MAXL 8     // layers per launch
#define MR_MAXROWS 128 // in_proj rows per block
#define MR_KC 4       // conv width
#define MR_P 64       // head dim
#define MR_N 128      // d_state
#define MR_TRACE 64   // trace stamps per block

// MambaRunLayer is one block's tensors (gpu.Mamba2Run fills it).
struct MambaRunLayer {
    const unsigned short* win;  // in_proj [E, 2048] BF16
    const unsigned short* wout; // out_proj [2048, Di] BF16
    const float* lnw;           // LayerNorm weight [2048]
    const float* lnb;           // LayerNorm bias [2048] or null
    const float* cw;            // conv weight [C, Kc]
    const float* cb;            // conv bias [C]
    float* cst;                 // conv state [B, C, Kc]
    const float* dtb;           // dt_bias [H]
    const float* alog;          // A_log [H]
    const float* Dw;            // D [H]
    const float* nw;            // gated norm weight [Di]
    float* sst;                 // SSM state [B, H, P, N]
};

struct MambaRunArgs {
    MambaRunLayer layer[MR_MAXL];
    const float* hin; // hidden [B, 2048] entering the first block
    const float* rin; // residual stream [B, 2048] or null (the first block of the backbone)
    float* hout;      // the last block's mixer output [B, 2048] (and scratch before it)
    float* rout;      // the residual stream the last block normalised [B, 2048]
    float* zx;        // scratch [B, E]: in_proj outputs
    float* xbc;       // scratch [B, C]: silu(conv) of the xBC channels
    float* yg;        // scratch [B, Di]: y·silu(z)
    double* part;     // scratch [B·H]: sums of squares of yg per head
    unsigned* sync;   // two counters, zero between launches
    // trace (null: none) gets each block's global-timer stamps, MR_TRACE
    // a block: [0] its start (residency), [1] its consumers'
    // wait returned, then per layer 7: norm done, in_proj done, barrier,
    // scan done, barrier, out_proj done, barrier; from slot 24 4 ring
    // probes a layer (mr_ready), from 36 layer 1's in_proj stage ends and
    // at 46 its SM cycles (TestMamba2RunTrace). The slots are laid out for
    // runs of at most 3 layers (the hybrid's): a longer traced run's later
    // stamps overwrite the probes.
    unsigned long long* trace;
    int L, B, E, Di, C, H, P, N, Kc;
    float ln_eps, norm_eps;
    int stages;   // ring stages (≤ MR_STAGES; the dynamic shared memory is stages·MR_STAGE)
    int balanced; // split the projections' rows evenly over the blocks (else whole stages)
    int inflight;  // the producer's stages requested and not yet arrived, at most (0: up to the ring)
    int inflight2; // the same for the in_proj stages past the ring's depth (0: inflight)
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// mr_stamp writes the global timer to trace slot i of the block, if tracing.
__device__ __forceinline__ void mr_stamp(unsigned long long* trace, int i) {
    if (trace && i < MR_TRACE) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        trace[blockIdx.x * MR_TRACE + i] = now;
    }
}

// With a trace, each block also checks every grid barrier directly (the
// blocks' global timers disagree by more than a barrier takes): before arriving at barrier n its thread 0 marks slot MR_TRACE−3
// with n; after the wait thread i reads block i's mark and counts it into
// the block's slot MR_TRACE−1 if it is still below n (zero if the barrier
// holds); slot MR_TRACE−2 gets the block's SM.
__device__ __forceinline__ void mr_mark(unsigned long long* trace, unsigned n) {
    if (trace && threadIdx.x == 0) __stcg(trace + blockIdx.x * MR_TRACE + MR_TRACE - 3, (unsigned long long)n);
}
__device__ __forceinline__ void mr_check(unsigned long long* trace, unsigned n) {
    if (trace && threadIdx.x < gridDim.x && __ldcg(trace + threadIdx.x * MR_TRACE + MR_TRACE - 3) < n)
        atomicAdd(trace + blockIdx.x * MR_TRACE + MR_TRACE - 1, 1ull);
}

// mr_ready counts, for the trace, how many of the ring's next want stages
// have landed (without waiting), from the consumers' position.
__device__ __forceinline__ int mr_ready(unsigned long long* full, int slot, unsigned ph, int n, int want) {
    int c = 0;
    for (; c < want; c++) {
        unsigned done;
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(smem_u32(&full[slot])), "r"(ph)
            : "memory");
        if (!done) break;
        if (++slot == n) slot = 0, ph ^= 1;
    }
    return c;
}

__device__ __forceinline__ void mr_bar() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

__device__ __forceinline__ float4 ldcg4(const float* p) { return __ldcg((const float4*)p); }

// mr_arrive and mr_wait are a grid barrier in two halves, so that loads
// independent of the other blocks can be requested between them: every
// block's consumers have arrived (count reaches target) before any returns
// from mr_wait, and their global writes before mr_arrive are visible to
// loads after mr_wait that bypass L1 (__ldcg). The release is issued
// before those loads: a fence after them would wait for them too.
// mr_clock writes the SM clock to *slot (trace probes; null: none), read
// once dep has its value (a register the probe waits for) and after every
// memory access before it in program order has been issued.
__device__ __forceinline__ void mr_clock(unsigned long long* slot, float dep = 0.f) {
    if (slot) {
        unsigned long long c;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) : "f"(dep) : "memory");
        *slot = c;
    }
}

// ck (null: none): thread 0's clock as every consumer has arrived (ck[0])
// and once its release is through (ck[1]); mr_wait's ck[0] as its poll
// sees the target.
__device__ __forceinline__ void mr_arrive(unsigned* count, unsigned long long* ck = nullptr) {
    mr_bar();
    if (threadIdx.x == 0) {
        mr_clock(ck);
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
        mr_clock(ck ? ck + 1 : nullptr);
    }
}

__device__ __forceinline__ void mr_wait(unsigned* count, unsigned target, unsigned long long* ck = nullptr) {
    if (threadIdx.x == 0) {
        unsigned long long t0 = 0;
        for (unsigned spins = 0;; spins++) {
            unsigned v;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
            if (v >= target) {
                mr_clock(ck);
                break;
            }
            if ((spins & 1023) == 0) {
                unsigned long long now;
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                if (t0 == 0) t0 = now;
                else if (now - t0 > 2000000000ull) __trap(); // 2 s: a block never became resident
            }
        }
    }
    mr_bar();
}

// mr_ring is the consumers' side of the ring: which stage comes next.
struct MrRing {
    int slot, n;
    unsigned ph;
    __device__ __forceinline__ void next() {
        if (++slot == n) slot = 0, ph ^= 1;
    }
};

// mr_gemv_stage multiplies one ring stage (8/KT weight rows) by the
// activation slice xa, releases the stage, and leaves each warp's partial
// sums of the stage's V = 2·8/KT outputs (row v/2, CFG row v%2) in
// part[warp][v]. No barrier: the warps go on to the next stage, and the
// phase adds the partials up after its last (mr_gemv_finish).
template <int KT>
__device__ __forceinline__ void mr_gemv_stage(const uint4* stage, unsigned long long* empty, const float (&xa)[KT][2][8],
                                              float (*part)[16]) {
    constexpr int V = 2 * (8 / KT);
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    float acc[V];
#pragma unroll
    for (int v = 0; v < V; v++) acc[v] = 0.f;
#pragma unroll
    for (int p = 0; p < 8; p++) {
        const uint4 v = stage[p * 256 + t];
        dot8(acc[2 * (p / KT)], v, xa[p % KT][0]);
        dot8(acc[2 * (p / KT) + 1], v, xa[p % KT][1]);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty);
    const float sum = reduce_scatter<V>(acc, lane);
    if (lane < V) part[warp][lane] = sum;
}
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// mamba_run_body is both kernels: mamba_run (TRACE false) has none of the
// trace's code. The code of a layer is walked once a layer, so its size
// counts: at 5936 SASS instructions ncu counted 6 % of the warps' cycles
// stalled on instruction fetch, and a variant 46 % larger twice that and
// a 6 % slower step graph; the shape made compile-time and the code made
// smaller (4032 instructions) took the step graph from 1.431 to 1.359 ms
// (H200, 2026-11-30). Prefer one copy of rarely-hot code
// (lane parity for the two rows' float64 norms) and single passes over
// loops the compiler unrolls.
template <bool TRACE>
__device__ __forceinline__ void mamba_run_body(const MambaRunArgs& a) {
    unsigned long long* const trace = TRACE ? a.trace : nullptr;
    extern __shared__ __align__(128) uint4 ring[]; // MR_STAGES stages of 2048 pieces
    __shared__ unsigned long long full[MR_STAGES], empty[MR_STAGES];
    __shared__ float pbuf[MR_MAXROWS / 8][8][16]; // GEMV partials: [stage of the phase][warp][output]
    __shared__ double red[2][MR_WARPS][2], wsum[MR_WARPS];
    __shared__ float cvs[2][MR_MAXROWS][MR_KC], cvw[MR_MAXROWS][MR_KC], cvb[MR_MAXROWS];
    __shared__ float xs[64], bs[128], cs[128];
    constexpr int D = 2048;
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    const int G = gridDim.x, j = blockIdx.x;
    const int L = a.L, B = a.B;
    // The shape is compile-time (gpu.runFits launches no other): the scan's
    // rows, state slots and conv taps need no bounds checks. As runtime
    // values the scan was 1476 SASS instructions a (row, head), most of
    // them predicates and branches, and bound by their issue.
    constexpr int Di = 4096, P = MR_P, N = MR_N, Kc = MR_KC, H = Di / P, C = Di + 2 * N, E = Di + C + H;
    if (a.E != E || a.Di != Di || a.C != C || a.H != H || a.P != P || a.N != N || a.Kc != Kc) __trap();
    // The block's rows of in_proj [rlo, rhi) and of out_proj [olo, ohi),
    // in stages of 8 and 4 rows (the last may be short): an even share of
    // the rows (balanced), or of whole stages.
    int rlo, rhi, olo, ohi;
    if (a.balanced) {
        rlo = (int)((long long)E * j / G), rhi = (int)((long long)E * (j + 1) / G);
        olo = (int)((long long)D * j / G), ohi = (int)((long long)D * (j + 1) / G);
    } else {
        const int S1 = (E + 7) / 8, S2 = (D + 3) / 4;
        rlo = 8 * (int)((long long)S1 * j / G), rhi = min(8 * (int)((long long)S1 * (j + 1) / G), E);
        olo = 4 * (int)((long long)S2 * j / G), ohi = min(4 * (int)((long long)S2 * (j + 1) / G), D);
    }
    const int n1 = (rhi - rlo + 7) / 8, n2 = (ohi - olo + 3) / 4; // stages
    const int U = B * H;
    unsigned long long started = 0; // the block's start, stamped after the wait
    if (TRACE) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(started));
    if (t == 0) {
        for (int s = 0; s < a.stages; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], MR_WARPS);
        }
        mbar_fence_init();
    }
    __syncthreads();
    if (warp == MR_WARPS) {
        // Producer: one lane streams the block's stages in consumption order.
        if (lane != 0) return;
        int slot = 0;
        unsigned ph = 0;
        const int K = a.inflight > 0 && a.inflight < a.stages ? a.inflight : 0;
        // The block's stream, stage by stage: per layer its in_proj rows,
        // its (row, head) units' SSM state, its out_proj rows.
        const int nu = j < U ? (U - 1 - j) / G + 1 : 0, per = n1 + nu + n2, total = L * per;
        auto stage = [&](int i, const void** src) -> unsigned {
            const MambaRunLayer& ly = a.layer[i / per];
            int r = i % per;
            if (r < n1) {
                *src = ly.win + (long long)(rlo + 8 * r) * D;
                return (unsigned)(min(8, rhi - rlo - 8 * r) * D * 2);
            }
            r -= n1;
            if (r < nu) {
                *src = ly.sst + (long long)(j + r * G) * P * N;
                return (unsigned)(P * N * 4);
            }
            r -= nu;
            *src = ly.wout + (long long)(olo + 4 * r) * Di;
            return (unsigned)(min(4, ohi - olo - 4 * r) * Di * 2);
        };
        // The in_proj stages past the ring's depth stream while the
        // consumers wait for them; every other stage is fetched while they
        // are busy (norm, scan, barriers) and their latency-bound loads
        // share the memory system with it.
        const int K2 = a.inflight2 > 0 && a.inflight2 < a.stages ? a.inflight2 : K;
        for (int i = 0; i < total; i++) {
            const void* src;
            const unsigned bytes = stage(i, &src);
            const int r = i % per, k = r < n1 && r >= a.stages ? K2 : K;
            if (k && i >= k) {
                // The stage requested k pushes ago has arrived: its slot is
                // k behind this one, one lap back if that wraps.
                int ps = slot - k;
                unsigned pp = ph;
                if (ps < 0) ps += a.stages, pp ^= 1;
                mbar_wait(&full[ps], pp);
            }
            mbar_wait(&empty[slot], ph ^ 1);
            mbar_expect_tx(&full[slot], bytes);
            bulk_g2s(ring + slot * 2048, src, bytes, &full[slot]);
            if (++slot == a.stages) slot = 0, ph ^= 1;
        }
        return;
    }
    // The small per-layer operands (the conv state, weights and bias of the
    // block's xBC rows into shared memory, the LayerNorm's weights into
    // registers) are requested a phase ahead of their use: layer 0's before
    // the wait (only this kernel writes the conv state, once per step; the
    // weights never change), layer l+1's after layer l's out_proj. Measured
    // without this: layer 0's norm ended 7 µs after the start, its loads
    // queued behind the producer's stream.
    float4 lw[2], lb[2];
    auto load_small = [&](const MambaRunLayer& ly) {
        const int i = t, c = rlo + i - Di; // one row a thread at most (rows ≤ MR_MAXROWS)
        if (i < rhi - rlo && c >= 0 && c < C) {
#pragma unroll
            for (int q = 0; q < Kc; q++) {
                cvw[i][q] = ly.cw[c * Kc + q];
                cvs[0][i][q] = ly.cst[(long long)c * Kc + q];
                cvs[1][i][q] = B > 1 ? ly.cst[((long long)C + c) * Kc + q] : 0.f;
            }
            cvb[i] = ly.cb[c];
        }
        lw[0] = ldcg4(ly.lnw + 8 * t), lw[1] = ldcg4(ly.lnw + 8 * t + 4);
        lb[0] = lb[1] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ly.lnb) lb[0] = ldcg4(ly.lnb + 8 * t), lb[1] = ldcg4(ly.lnb + 8 * t + 4);
    };
    load_small(a.layer[0]);
    pdl_begin();
    if (t == 0 && trace) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        trace[blockIdx.x * MR_TRACE] = started;
        trace[blockIdx.x * MR_TRACE + MR_TRACE - 2] = smid;
    }
    if (t == 0) mr_stamp(trace, 1);
    int ts = 2; // next trace slot
    MrRing rg{0, a.stages, 0};
    unsigned syncs = 0;
    float res[2][8];
    for (int l = 0; l < L; l++) {
        const MambaRunLayer& ly = a.layer[l];
        // Layer 1's clock probes (trace slots 23, 45, 47-60; TestMamba2RunTrace).
        unsigned long long* const ck = (TRACE && trace && l == 1 && t == 0) ? trace + blockIdx.x * MR_TRACE : nullptr;
        auto clk = [&](int i, float dep = 0.f) { mr_clock(ck ? ck + i : nullptr, dep); };
        clk(23);
        // 1. residual add and LayerNorm.
        const float* hsrc = l == 0 ? a.hin : a.hout;
        double s1[2] = {0, 0};
#pragma unroll
        for (int m = 0; m < 2; m++) {
            const int mm = min(m, B - 1);
            float4 h0 = ldcg4(hsrc + mm * D + 8 * t), h1 = ldcg4(hsrc + mm * D + 8 * t + 4);
            float hv[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
            if (l == 0 && a.rin) {
                float4 r0 = ldcg4(a.rin + mm * D + 8 * t), r1 = ldcg4(a.rin + mm * D + 8 * t + 4);
                res[m][0] = r0.x, res[m][1] = r0.y, res[m][2] = r0.z, res[m][3] = r0.w;
                res[m][4] = r1.x, res[m][5] = r1.y, res[m][6] = r1.z, res[m][7] = r1.w;
            }
#pragma unroll
            for (int i = 0; i < 8; i++) res[m][i] = (l == 0 && !a.rin) ? hv[i] : __fadd_rn(hv[i], res[m][i]);
            s1[m] = ln_sum8(res[m]);
        }
        clk(47, (float)s1[1]); // the hidden rows loaded and added
        double mean[2], rstd[2];
#pragma unroll
        for (int m = 0; m < 2; m++) {
            double v = warp_sum_d(s1[m]);
            if (lane == 0) red[0][warp][m] = v;
        }
        mr_bar();
        double s2[2];
#pragma unroll
        for (int m = 0; m < 2; m++) {
            double tot = 0;
            for (int q = 0; q < MR_WARPS; q++) tot += red[0][q][m];
            mean[m] = tot / D;
            s2[m] = ln_sq8(res[m], mean[m], 0.0);
            double v = warp_sum_d(s2[m]);
            if (lane == 0) red[1][warp][m] = v;
        }
        mr_bar();
        clk(48); // both statistics' block sums
        float xa[1][2][8];
        const float wv[8] = {lw[0].x, lw[0].y, lw[0].z, lw[0].w, lw[1].x, lw[1].y, lw[1].z, lw[1].w};
        const float bv[8] = {lb[0].x, lb[0].y, lb[0].z, lb[0].w, lb[1].x, lb[1].y, lb[1].z, lb[1].w};
        {
            // Both rows' 1/sqrt from one copy of its code (a float64
            // division and square root, each a long inline sequence): lane
            // parity picks the row.
            const int mm = lane & 1;
            double tot = 0;
            for (int q = 0; q < MR_WARPS; q++) tot += red[1][q][mm];
            const double r = 1.0 / sqrt(tot / D + (double)a.ln_eps);
            rstd[0] = __shfl_sync(0xffffffffu, r, 0);
            rstd[1] = __shfl_sync(0xffffffffu, r, 1);
        }
#pragma unroll
        for (int m = 0; m < 2; m++) {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float y = ln_scale(res[m][i], mean[m], rstd[m], wv[i]);
                xa[0][m][i] = ly.lnb ? __fadd_rn(y, bv[i]) : y;
            }
        }
        clk(45, xa[0][1][7]);
        if (t == 0) mr_stamp(trace, ts);
        ts++;
        unsigned long long c0 = 0;
        if (TRACE) asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
        // in_proj: every stage's partials, then the outputs (and the conv
        // on the xBC ones) on as many threads at once.
        // Trace probes (slots 24 + 4l …): stages landed as in_proj
        // begins, the time its landed stages are done, its last stage done,
        // and stages landed as out_proj begins.
        const int probe = 24 + 4 * l, ready = (trace && t == 0 && probe + 3 < MR_TRACE - 3) ? mr_ready(full, rg.slot, rg.ph, rg.n, min(n1, rg.n)) : -1;
        if (TRACE && ready >= 0) trace[blockIdx.x * MR_TRACE + probe] = (unsigned long long)ready;
        for (int s = 0; s < n1; s++) {
            mbar_wait(&full[rg.slot], rg.ph);
            mr_gemv_stage<1>(ring + rg.slot * 2048, &empty[rg.slot], xa, pbuf[s]);
            rg.next();
            if (s + 1 == ready) mr_stamp(trace, probe + 1);
            if (ready >= 0 && l == 1 && s < 9) mr_stamp(trace, 36 + s); // layer 1: every stage's end
        }
        if (ready >= 0) mr_stamp(trace, probe + 2);
        if (ready >= 0 && l == 1) {
            // The SM clock over in_proj (cycles and ns from norm done): the
            // clock rate, to read the stage times in cycles.
            unsigned long long c1;
            asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
            trace[blockIdx.x * MR_TRACE + 46] = c1 - c0;
        }
        mr_bar();
        // One output a thread at most (n1 ≤ MR_MAXROWS / 8 stages): an if,
        // not a loop the compiler would unroll.
        {
            const int k = t >> 4, v = t & 15, row = v >> 1, m = v & 1, n = rlo + 8 * k + row;
            if (k < n1 && n < rhi && m < B) {
                float out = 0.f;
#pragma unroll
                for (int q = 0; q < 8; q++) out += pbuf[k][q][v];
                a.zx[(long long)m * E + n] = out;
                const int c = n - Di, i = n - rlo;
                if (c >= 0 && c < C) {
                    float acc = cvb[i];
#pragma unroll
                    for (int q = 0; q < Kc; q++) {
                        float w = q + 1 < Kc ? cvs[m][i][q + 1] : out;
                        acc = __fadd_rn(acc, __fmul_rn(w, cvw[i][q]));
                        ly.cst[((long long)m * C + c) * Kc + q] = w;
                    }
                    a.xbc[(long long)m * C + c] = silu_ref(acc);
                }
            }
        }
        if (t == 0) mr_stamp(trace, ts);
        ts++;
        mr_mark(trace, syncs + 1);
        mr_arrive(a.sync, ck ? ck + 49 : nullptr);
        // The scan's head scalars of the block's first (row, head), while
        // the other blocks arrive.
        float hb = 0.f, hal = 0.f, hd = 0.f;
        if (j < U) hb = ly.dtb[j % H], hal = ly.alog[j % H], hd = ly.Dw[j % H];
        mr_wait(a.sync, ++syncs * G, ck ? ck + 51 : nullptr);
        mr_check(trace, syncs);
        if (t == 0) mr_stamp(trace, ts);
        ts++;
        // 2. the scan, one (row, head) at a time.
        for (int u = j; u < U; u += G) {
            const int b = u / H, h = u % H;
            const float* row = a.zx + (long long)b * E;
            const float* xr = a.xbc + (long long)b * C;
            if (u != j) hb = ly.dtb[h], hal = ly.alog[h], hd = ly.Dw[h];
            const float dtv = __ldcg(row + Di + C + h) + hb, alv = hal, dskip = hd;
            float zr[8];
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const int p = warp + 8 * r;
                zr[r] = p < P ? __ldcg(row + h * P + p) : 0.f;
            }
            for (int i = t; i < P + 2 * N; i += 256) {
                if (i < P)
                    xs[i] = __ldcg(xr + h * P + i);
                else if (i < P + N)
                    bs[i - P] = __ldcg(xr + Di + (i - P));
                else
                    cs[i - P - N] = __ldcg(xr + Di + N + (i - P - N));
            }
            float delta, decay;
            softplus_decay(dtv, -(float)exp((double)alv), &delta, &decay);
            mr_bar();
            clk(52, decay); // the operands loaded
            float Bv[4], Cv[4], st[8][4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int n = lane + 32 * i;
                Bv[i] = n < N ? bs[n] : 0.f;
                Cv[i] = n < N ? cs[n] : 0.f;
            }
            mbar_wait(&full[rg.slot], rg.ph);
            const float* sf = (const float*)(ring + rg.slot * 2048);
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const int p = warp + 8 * r;
#pragma unroll
                for (int i = 0; i < 4; i++) st[r][i] = (p < P && lane + 32 * i < N) ? sf[p * N + lane + 32 * i] : 0.f;
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[rg.slot]);
            rg.next();
            clk(53, st[7][3]); // the state in registers
            // The 8 rows' state updates and sums side by side (their
            // shuffle chains interleave), then lane r finishes row r.
            float* sp = ly.sst + (long long)u * P * N;
            const float dx0 = delta;
            float accs[8];
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const int p = warp + 8 * r;
                float acc = 0.f;
                if (p < P) {
                    const float dxv = __fmul_rn(dx0, xs[p]);
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        if (lane + 32 * i < N) {
                            const float v = __fadd_rn(__fmul_rn(st[r][i], decay), __fmul_rn(dxv, Bv[i]));
                            st[r][i] = v;
                            acc = __fmaf_rn(v, Cv[i], acc);
                        }
                    }
                }
                accs[r] = acc;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
                for (int r = 0; r < 8; r++) accs[r] += __shfl_xor_sync(0xffffffffu, accs[r], o);
            }
            clk(54, accs[7]); // updated and summed
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const int p = warp + 8 * r;
                if (p < P) scan_state_store<4>(st[r], sp + (long long)p * N, N, lane);
            }
            clk(55); // the state's stores issued
            double ms = 0;
            {
                float acc = 0.f, zv = 0.f, xv = 0.f;
#pragma unroll
                for (int r = 0; r < 8; r++) {
                    if (lane == r) acc = accs[r], zv = zr[r];
                }
                const int p = warp + 8 * lane;
                if (lane < 8 && p < P) {
                    xv = xs[p];
                    const float y = __fmul_rn(__fmaf_rn(dskip, xv, acc), silu_ref(zv));
                    a.yg[(long long)b * Di + h * P + p] = y;
                    ms = (double)y * (double)y;
                }
#pragma unroll
                for (int o = 4; o > 0; o >>= 1) ms += __shfl_xor_sync(0xffffffffu, ms, o);
            }
            if (lane == 0) wsum[warp] = ms;
            mr_bar();
            clk(56); // y stored, its squares summed per warp
            if (t == 0) {
                double tot = 0;
                for (int w = 0; w < MR_WARPS; w++) tot += wsum[w];
                a.part[u] = tot;
            }
        }
        if (t == 0) mr_stamp(trace, ts);
        ts++;
        mr_mark(trace, syncs + 1);
        mr_arrive(a.sync);
        // The norm weight of the block's activation slice, while the other
        // blocks arrive.
        float4 nwv[2][2];
#pragma unroll
        for (int kt = 0; kt < 2; kt++) nwv[kt][0] = ldcg4(ly.nw + 8 * (t + 256 * kt)), nwv[kt][1] = ldcg4(ly.nw + 8 * (t + 256 * kt) + 4);
        mr_wait(a.sync, ++syncs * G, ck ? ck + 57 : nullptr);
        mr_check(trace, syncs);
        if (t == 0) mr_stamp(trace, ts);
        ts++;
        // 3. out_proj on the gated-normalised y.
        float xo[2][2][8];
        // y first, then the norm's parts: the two loads in flight together.
#pragma unroll
        for (int m = 0; m < 2; m++) {
            const int mm = min(m, B - 1);
#pragma unroll
            for (int kt = 0; kt < 2; kt++) {
                const float* yp = a.yg + (long long)mm * Di + 8 * (t + 256 * kt);
                const float4 y0 = ldcg4(yp), y1 = ldcg4(yp + 4);
                xo[kt][m][0] = y0.x, xo[kt][m][1] = y0.y, xo[kt][m][2] = y0.z, xo[kt][m][3] = y0.w;
                xo[kt][m][4] = y1.x, xo[kt][m][5] = y1.y, xo[kt][m][6] = y1.z, xo[kt][m][7] = y1.w;
            }
        }
        double pms[2][2];
#pragma unroll
        for (int m = 0; m < 2; m++) {
            const int mm = min(m, B - 1);
#pragma unroll
            for (int q = 0; q < 2; q++) pms[m][q] = lane + 32 * q < H ? __ldcg(a.part + mm * H + lane + 32 * q) : 0.0;
        }
        double ms[2];
#pragma unroll
        for (int m = 0; m < 2; m++) {
            ms[m] = pms[m][0] + pms[m][1];
            for (int h = lane + 64; h < H; h += 32) ms[m] += __ldcg(a.part + min(m, B - 1) * H + h);
            ms[m] = warp_sum_d(ms[m]);
        }
        float rn[2]; // as the norm's rstd: one copy of the float64 code, lane parity picks the row
        {
            const float r = (float)(1.0 / sqrt((lane & 1 ? ms[1] : ms[0]) / Di + (double)a.norm_eps));
            rn[0] = __shfl_sync(0xffffffffu, r, 0);
            rn[1] = __shfl_sync(0xffffffffu, r, 1);
        }
#pragma unroll
        for (int m = 0; m < 2; m++) {
            const float r = rn[m];
#pragma unroll
            for (int kt = 0; kt < 2; kt++) {
                const float nv[8] = {nwv[kt][0].x, nwv[kt][0].y, nwv[kt][0].z, nwv[kt][0].w,
                                     nwv[kt][1].x, nwv[kt][1].y, nwv[kt][1].z, nwv[kt][1].w};
#pragma unroll
                for (int i = 0; i < 8; i++) xo[kt][m][i] = __fmul_rn(__fmul_rn(xo[kt][m][i], r), nv[i]);
            }
        }
        clk(58, xo[1][1][7]); // the activation loaded and normalised
        if (ready >= 0) trace[blockIdx.x * MR_TRACE + probe + 3] = mr_ready(full, rg.slot, rg.ph, rg.n, min(n2, rg.n));
        for (int s = 0; s < n2; s++) {
            mbar_wait(&full[rg.slot], rg.ph);
            mr_gemv_stage<2>(ring + rg.slot * 2048, &empty[rg.slot], xo, pbuf[s]);
            rg.next();
        }
        mr_bar();
        clk(59); // out_proj's stages done
        {
            const int k = t >> 3, v = t & 7, row = v >> 1, m = v & 1, n = olo + 4 * k + row;
            if (k < n2 && n < ohi && m < B) { // one output a thread at most, as in_proj's
                float out = 0.f;
#pragma unroll
                for (int q = 0; q < 8; q++) out += pbuf[k][q][v];
                a.hout[(long long)m * D + n] = out;
            }
        }
        if (t == 0) mr_stamp(trace, ts);
        ts++;
        if (l + 1 < L) {
            mr_mark(trace, syncs + 1);
            mr_arrive(a.sync);
            load_small(a.layer[l + 1]); // while the other blocks arrive
            mr_wait(a.sync, ++syncs * G, ck ? ck + 60 : nullptr);
            mr_check(trace, syncs);
        }
        if (t == 0) mr_stamp(trace, ts);
        ts++;
    }
    if (j == 0) {
#pragma unroll
        for (int m = 0; m < 2; m++) {
            if (m >= B) break;
            float4* o = (float4*)(a.rout + m * D + 8 * t);
            o[0] = make_float4(res[m][0], res[m][1], res[m][2], res[m][3]);
            o[1] = make_float4(res[m][4], res[m][5], res[m][6], res[m][7]);
        }
    }
    if (t == 0 && atomicAdd(a.sync + 1, 1u) == (unsigned)G - 1) {
        // Every block has passed its last barrier: zero the counters for
        // the next launch.
        a.sync[0] = 0;
        a.sync[1] = 0;
    }
}
#endif

extern "C" __global__ void __launch_bounds__(MR_THREADS, 1) mamba_run(const MambaRunArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    mamba_run_body<false>(a);
#else
    __trap(); // never launched below sm_90 (the backend checks)
#endif
}

// mamba_run_trace is mamba_run stamping a.trace (TestMamba2RunTrace).
extern "C" __global__ void __launch_bounds__(MR_THREADS, 1) mamba_run_trace(const MambaRunArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    mamba_run_body<true>(a);
#else
    __trap();
#endif
}
