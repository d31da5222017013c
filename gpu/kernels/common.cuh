// Shared device helpers of the zonostream kernels (included by every .cu).
// dtype codes match compute.DType: 0 F32, 1 BF16, 2 F16, 3 I32.
#pragma once

__device__ __forceinline__ float bf16_to_f32(unsigned short u) {
    return __uint_as_float(((unsigned int)u) << 16);
}

__device__ __forceinline__ float f16_to_f32(unsigned short u) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(u));
    return f;
}

// ldw loads element i of a weight stored as F32, BF16 or F16, as float.
__device__ __forceinline__ float ldw(const void* w, long long i, int dt) {
    if (dt == 1) return bf16_to_f32(((const unsigned short*)w)[i]);
    if (dt == 2) return f16_to_f32(((const unsigned short*)w)[i]);
    return ((const float*)w)[i];
}

// CONV_MAXK bounds the Mamba2 causal conv's width (d_conv; 4 in Zonos).
#define CONV_MAXK 16

// snake_ref: Snake1d, x + sin²(αx)/(α + 1e-9), as the snake kernel and the
// convolutions' Snake epilogue (tc.cu) both compute it.
__device__ __forceinline__ float snake_ref(float x, float a) {
    float inv = 1.0f / (a + 1e-9f);
    float s = (float)sin((double)(a * x));
    return x + inv * s * s;
}

// silu as engine/compute/cpu computes it: v / (1 + float32(exp(float64(-v)))).
__device__ __forceinline__ float silu_ref(float v) {
    return v / (1.0f + (float)exp(-(double)v));
}

// grid_loop calls f(i) for every i < total, the grid striding over them,
// with i an unsigned 32-bit index when total fits (a long long otherwise):
// the element kernels' index arithmetic (i % C, i / C, …) is then 32-bit
// division, where 64-bit division is a long software sequence (ncu, H200,
// 2026-11-30, a 71-position prefill: mamba_conv_par, three of them an
// element, 10.4 → 9.7 µs a layer; swiglu 10.1 → 8.3 µs). f takes its index
// by auto and must compute the same values with either type.
template <typename F>
__device__ __forceinline__ void grid_loop(long long total, F f) {
    if (total <= 0x7fffffffLL) {
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)total; i += gridDim.x * blockDim.x) f(i);
    } else {
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
            f(i);
    }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// LayerNorm's float64 statistics over a thread's 8 consecutive floats, in
// one order for every kernel that normalises a row (layernorm_v8, and
// mamba_run's phase 1, which keeps the same 8 floats a thread): ln_sum8
// is their sum as a pairwise tree, ln_sq8 adds their squared deviations
// from mean to s one after another, and ln_scale is a normalised value
// times its weight.
__device__ __forceinline__ double ln_sum8(const float (&r)[8]) {
    return __dadd_rn(__dadd_rn(__dadd_rn((double)r[0], (double)r[1]), __dadd_rn((double)r[2], (double)r[3])),
                     __dadd_rn(__dadd_rn((double)r[4], (double)r[5]), __dadd_rn((double)r[6], (double)r[7])));
}
__device__ __forceinline__ double ln_sq8(const float (&r)[8], double mean, double s) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const double d = __dsub_rn((double)r[i], mean);
        s = __fma_rn(d, d, s);
    }
    return s;
}
__device__ __forceinline__ float ln_scale(float v, double mean, double rstd, float w) {
    return __fmul_rn((float)__dmul_rn(__dsub_rn((double)v, mean), rstd), w);
}

// block_sum_d reduces a double over the block (blockDim.x a multiple of 32,
// at most 1024); every thread gets the result. scratch holds 32 doubles.
__device__ __forceinline__ double block_sum_d(double v, double* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int nw = blockDim.x >> 5;
    v = warp_sum_d(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    double t = 0;
    for (int i = 0; i < nw; i++) t += scratch[i];
    return t;
}

// cp.async: 16-byte global → shared copies that bypass registers, in
// commit groups (sm_80).
__device__ __forceinline__ void cp_async16(void* smem, const void* g) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(s), "l"(g));
}
// cp_async16z (tc.cu, wgmma.cu) copies 16 bytes global → shared, or writes 16 zero bytes.
__device__ __forceinline__ void cp_async16z(void* smem, const void* g, bool in) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    int n = in ? 16 : 0;  // 0: zero-fill
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(g), "r"(n));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// tf32_split (tc.cu, wgmma.cu) splits v into TF32 parts for two
// products, v ≈ big + small, as CUTLASS's 3xTF32 does: big is v rounded
// to TF32 (to nearest, ties away: cvt.rna.tf32's result for every finite
// v and for ±inf), small is
// the exact remainder v − big passed as it is, whose low 13 bits the
// tensor cores ignore (truncation: about 21 bits of v in all). Three
// instructions per value; cvt.rna costs four for big alone (its inf/NaN
// test) and two more for small (sm_90 SASS, 2026-11-29). A NaN v gives a
// NaN small, so it still reaches the output.
__device__ __forceinline__ void tf32_split(float v, unsigned& big, unsigned& small) {
    big = (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
    small = __float_as_uint(v - __uint_as_float(big));
}

// wg_desc (wgmma.cu) describes a K-major tile in shared memory
// for wgmma: rows of 128 bytes, 128-byte swizzle, 8-row groups 1024 bytes
// apart (the stride field); the leading-dimension field is unused by this
// layout (1).
__device__ __forceinline__ unsigned long long wg_desc(const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    return (unsigned long long)((a & 0x3ffff) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// Programmatic dependent launch (Hopper, sm_90 PTX only; no-ops in the
// compute_80 build). The backend launches a kernel with the PDL attribute
// only when its sm_90 body waits (kernels.PDLEntries), so the next kernel
// of the stream may start while this one finishes: its blocks become
// resident and then wait here for the previous kernel to complete
// and its writes to be visible. Nothing before pdl_wait may read or write
// memory another kernel writes (TestPDLWaitFirst checks the PTX).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// pdl_trigger lets the next kernel of the stream launch as soon as every
// block of this one has called it (after its own wait, so at most one
// kernel is launched ahead).
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// pdl_begin is the first statement of every kernel: wait for the previous
// kernel, then let the next one launch.
__device__ __forceinline__ void pdl_begin() {
    pdl_wait();
    pdl_trigger();
}

// bf16x2_rn packs lo and hi rounded to BF16 (to nearest even): lo in the
// low half (the lower k), hi in the high half.
__device__ __forceinline__ unsigned bf16x2_rn(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// bf16_split3 splits the pair (x0, x1) into three BF16 pairs: each part is
// the remainder of the ones before rounded to BF16 (the remainders are
// exact in fp32). tc_wbf and gemv_tc split their activations so.
__device__ __forceinline__ void bf16_split3(float x0, float x1, unsigned& hi, unsigned& mid, unsigned& lo) {
    hi = bf16x2_rn(x0, x1);
    x0 -= __uint_as_float(hi << 16), x1 -= __uint_as_float(hi & 0xffff0000u);
    mid = bf16x2_rn(x0, x1);
    x0 -= __uint_as_float(mid << 16), x1 -= __uint_as_float(mid & 0xffff0000u);
    lo = bf16x2_rn(x0, x1);
}

// mma_bf16: c += a·b for one m16n8k16 BF16 fragment (fp32 accumulation;
// tc.cu's tc_wbf, gemvtc.cu's gemv_tc).
__device__ __forceinline__ void mma_bf16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Hopper bulk copies and mbarriers (gemv.cu, mamba2.cu's mamba_run), and
// the BF16 GEMV's dot product and warp reduce-scatter.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

// mbar_fence_init makes the initialised barriers visible to the copy engine.
__device__ __forceinline__ void mbar_fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

// bulk_g2s copies bytes (a multiple of 16, both addresses 16-byte aligned)
// from global to shared memory and counts them on bar when they land.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}

// dot8 adds the product of 8 BF16 weights and 8 activations to acc.
__device__ __forceinline__ void dot8(float& acc, uint4 v, const float* a) {
    acc = fmaf(__uint_as_float(v.x << 16), a[0], acc);
    acc = fmaf(__uint_as_float(v.x & 0xffff0000u), a[1], acc);
    acc = fmaf(__uint_as_float(v.y << 16), a[2], acc);
    acc = fmaf(__uint_as_float(v.y & 0xffff0000u), a[3], acc);
    acc = fmaf(__uint_as_float(v.z << 16), a[4], acc);
    acc = fmaf(__uint_as_float(v.z & 0xffff0000u), a[5], acc);
    acc = fmaf(__uint_as_float(v.w << 16), a[6], acc);
    acc = fmaf(__uint_as_float(v.w & 0xffff0000u), a[7], acc);
}

// RS<O, V>::run is reduce_scatter's butterfly from xor distance O up to
// V/2: the lane's first 2·n values (n = V/(2·O)) pair up, 2i with 2i + 1,
// and become value i: the lane keeps the one its bit O selects and adds
// its partner's copy of it.
template <int O, int V>
struct RS {
    static __device__ __forceinline__ void run(float (&a)[V], int lane) {
        const bool up = lane & O;
#pragma unroll
        for (int i = 0; i < V / (2 * O); i++) {
            float send = up ? a[2 * i] : a[2 * i + 1];
            float keep = up ? a[2 * i + 1] : a[2 * i];
            a[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
        }
        RS<2 * O, V>::run(a, lane);
    }
};
template <int V>
struct RS<V, V> {
    static __device__ __forceinline__ void run(float (&)[V], int) {}
};

// reduce_scatter sums each of a lane's V values (V a power of two ≤ 32)
// over the warp and returns value lane % V's total: log2 V butterfly
// steps that each send half of what is left, then plain butterfly sums
// over the lane bits above V. Every step, scattering or plain, pairs the
// lanes at xor distance 1, 2, 4, 8, 16 in that order, so every value is
// added up in the same tree whatever V is: GEMV blocks that take
// different numbers of rows (the plain chunk GEMV's 16 pieces, the gated
// one's 8) give the same bits for the same row.
template <int V>
__device__ __forceinline__ float reduce_scatter(float (&a)[V], int lane) {
    RS<1, V>::run(a, lane);
    float v = a[0];
#pragma unroll
    for (int o = V; o < 32; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#endif
