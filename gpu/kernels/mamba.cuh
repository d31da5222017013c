// The Mamba2 decode step's pieces shared by mamba2.cu (the mixer op by op)
// and mamba_block.cu (a whole residual block in one kernel), so both do the
// same arithmetic bit for bit.
#pragma once
#include "common.cuh"

#define CONV_MAXK 16
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
__device__ __forceinline__ void scan_bc(const float* xr, int Di, int G, int g, int N, int lane, float* Bv, float* Cv) {
#pragma unroll
    for (int i = 0; i < SCAN_MAXN / 32; i++) {
        int n = lane + 32 * i;
        Bv[i] = n < N ? xr[Di + g * N + n] : 0.f;
        Cv[i] = n < N ? xr[Di + G * N + g * N + n] : 0.f;
    }
}

// scan_step advances the state row st by one position and returns C·state
// summed over the warp.
__device__ __forceinline__ float scan_step(float* st, float decay, float dx, const float* Bv, const float* Cv, int N, int lane) {
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < SCAN_MAXN / 32; i++) {
        int n = lane + 32 * i;
        if (n < N) {
            float v = __fadd_rn(__fmul_rn(st[i], decay), __fmul_rn(dx, Bv[i]));
            st[i] = v;
            acc += v * Cv[i];
        }
    }
    return warp_sum(acc);
}

// scan_state moves a state row between memory and the lanes' registers.
__device__ __forceinline__ void scan_state_load(float* st, const float* sp, int N, int lane) {
#pragma unroll
    for (int i = 0; i < SCAN_MAXN / 32; i++) {
        int n = lane + 32 * i;
        st[i] = n < N ? sp[n] : 0.f;
    }
}

__device__ __forceinline__ void scan_state_store(const float* st, float* sp, int N, int lane) {
#pragma unroll
    for (int i = 0; i < SCAN_MAXN / 32; i++) {
        int n = lane + 32 * i;
        if (n < N) sp[n] = st[i];
    }
}

// mamba_step_head: the decode step's conv and scan for one (batch row b,
// head h) by one block of SCAN_WARPS warps over the head's P rows (the body
// of mamba_step). The block first computes the conv outputs it needs — its
// head's P x channels and its group's B and C channels — into shared
// memory (same arithmetic as mamba_conv), while the state rows of the scan
// are already on their way, then scans as mamba_scan does. It rolls the
// conv state of its own x channels; the B and C channels are read by every
// head of the group, so their state is rolled after every block has read
// it (mamba_norm_v4's roll argument, or mamba_block's second phase).
// in (the in_proj rows) is read through L2 only (ld.cg): in mamba_block
// other blocks of the same kernel wrote it. st_in, if not null, holds the
// head's state rows already (mamba_block copies them to shared memory
// early); the updated rows go to state. gate ≠ 0 writes y·silu(z)
// instead of y (z: the first Di entries of the in_proj row).
#define STEP_ROWS 8 // P ≤ 8 · SCAN_WARPS
__device__ __forceinline__ void mamba_step_head(int b, int h, const float* __restrict__ in, const float* __restrict__ cw,
                                                const float* __restrict__ cb, float* __restrict__ cst,
                                                const float* __restrict__ dtb, const float* __restrict__ alog,
                                                const float* __restrict__ Dw, float* __restrict__ state,
                                                const float* st_in, float* __restrict__ y, int gate, int E, int Di, int C, int H, int P,
                                                int N, int G, int Kc) {
    __shared__ float xs[8 * SCAN_WARPS], bs[SCAN_MAXN], cs[SCAN_MAXN];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int g = h / (H / G);
    const float* row = in + (long long)b * E;
    // The scan's state rows first: they do not depend on the conv.
    float st[STEP_ROWS][SCAN_MAXN / 32];
#pragma unroll
    for (int r = 0; r < STEP_ROWS; r++) {
        int p = warp + SCAN_WARPS * r;
        if (p < P) scan_state_load(st[r], (st_in ? st_in : state + ((long long)b * H + h) * P * N) + (long long)p * N, N, lane);
    }
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
                float v = j + 1 < Kc ? sp[j + 1] : __ldcg(row + Di + c);
                acc = __fadd_rn(acc, __fmul_rn(v, cw[c * Kc + j]));
                if (i < P) sp[j] = v;
            }
        }
        *dst = silu_ref(acc);
    }
    __syncthreads();
    float A = -(float)exp((double)alog[h]);
    float delta, decay;
    softplus_decay(__ldcg(row + Di + C + h) + dtb[h], A, &delta, &decay);
    float dskip = Dw[h];
    float Bv[SCAN_MAXN / 32], Cv[SCAN_MAXN / 32];
#pragma unroll
    for (int i = 0; i < SCAN_MAXN / 32; i++) {
        int n = lane + 32 * i;
        Bv[i] = n < N ? bs[n] : 0.f;
        Cv[i] = n < N ? cs[n] : 0.f;
    }
#pragma unroll
    for (int r = 0; r < STEP_ROWS; r++) {
        int p = warp + SCAN_WARPS * r;
        if (p < P) {
            float xv = xs[p];
            float acc = scan_step(st[r], decay, __fmul_rn(delta, xv), Bv, Cv, N, lane);
            if (lane == 0) {
                float yv = acc + dskip * xv;
                // gate: y·silu(z) as mamba_norm_v4 computes it from y.
                if (gate) yv = __fmul_rn(yv, silu_ref(__ldcg(row + h * P + p)));
                y[(long long)b * Di + h * P + p] = yv;
            }
            scan_state_store(st[r], state + (((long long)b * H + h) * P + p) * N, N, lane);
        }
    }
}
