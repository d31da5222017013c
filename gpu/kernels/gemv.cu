// Bulk-copy GEMV for Hopper (issue 7): y[m, n] = x[m, :]·w[n, :] (+ b[n])
// for M ≤ 2 rows (the CFG decode step) and BF16 weights with K a multiple
// of 2048 up to 8192 (every decode projection: K = 2048, 4096, 8192).
//
// Why: the weight is the whole cost of a decode projection, and the
// cp.async GEMV (gemv_m2_* in core.cu) reaches 50–80 % of the read
// bandwidth. There every lane issues its own 16-byte copies, two stages of
// at most 2 KiB per warp, so an SM has ~24 KiB in flight and each block's
// ramp, tail and the unequal block counts per SM cost 2–4 µs a projection.
// Here one block per SM owns a contiguous range of whole rows (the grid
// splits N evenly, ±1 row), which is one contiguous range of the weight;
// a producer thread streams it through a ring of 16 KiB stages with
// cp.async.bulk (the SM's copy engine; one instruction per stage), and the
// 8 consumer warps wait on each stage's mbarrier, multiply, and free the
// slot. Up to ring·16 KiB per SM are in flight, and the first `early`
// stages are requested before the kernel waits for its predecessor (the
// weights are never written while kernels run).
//
// Layout: a stage holds RS = 4/KT whole rows (KT = K/2048), 1024 16-byte
// pieces; consumer thread t multiplies pieces t + 256·j, which are always
// k8 = t + 256·kt (kt = j % KT) of row j / KT: its activation slice is the
// same in every stage and stays in registers (16·KT floats per row of x).
// A thread accumulates 32 output rows (two per CFG row) at a time; a warp
// reduce-scatters them (31 shuffles per CFG row, lane l ends with row l),
// and the 8 warps' partials are summed in index order: deterministic.
//
// The sm_90 PTX of this module is marked PTX ISA 8.0 by gen.sh (cp.async.bulk
// and mbarrier transaction counts); the compute_80 build has no bulk copy,
// so there the kernels trap, and the backend launches them only on Hopper.
#include "common.cuh"

#define GB_STAGE_BYTES 16384 // one ring stage
#define GB_STAGE_U4 1024     // 16-byte pieces per stage
#define GB_CONSUMERS 256     // consumer threads (8 warps); the producer is warp 8
#define GB_GROUP 32          // output rows reduced together
#define GB_MAX_RING 13       // stages the shared memory can hold (13 · 16 KiB + the rest ≤ 227 KiB)
#define GB_PART_FLOATS 1024  // two buffers of [8 warps][GB_GROUP rows][2 CFG rows]
// Dynamic shared memory: ring · GB_STAGE_BYTES of stages, then
// GB_PART_FLOATS floats of partials, then 2 · GB_MAX_RING mbarriers.

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

// bulk_g2s_first is bulk_g2s with the L2's evict-first policy: a weight
// streamed once per step should not push the small tensors the row
// kernels read (norm weights, conv state, biases) out of the L2.
__device__ __forceinline__ void bulk_g2s_first(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile(
        "{\n\t.reg .b64 pol;\n\t"
        "createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n\t"
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], pol;\n\t}" ::"r"(smem_u32(dst)),
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

// RS<O, V>::run is reduce_scatter's butterfly from step O down: values i
// and i + O of a lane's first 2·O become value i, the lane keeping the
// half its bit O selects and adding its partner's copy of that half.
template <int O, int V>
struct RS {
    static __device__ __forceinline__ void run(float (&a)[V], int lane) {
        const bool up = lane & O;
#pragma unroll
        for (int i = 0; i < O; i++) {
            float send = up ? a[i] : a[i + O];
            float keep = up ? a[i + O] : a[i];
            a[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
        }
        RS<O / 2, V>::run(a, lane);
    }
};
template <int V>
struct RS<0, V> {
    static __device__ __forceinline__ void run(float (&)[V], int) {}
};

// reduce_scatter sums each of a lane's V values (V a power of two ≤ 32)
// over the warp and returns value lane % V's total: log2 V butterfly
// steps that each send half of what is left, then plain butterfly sums
// over the lane bits above V.
template <int V>
__device__ __forceinline__ float reduce_scatter(float (&a)[V], int lane) {
    RS<V / 2, V>::run(a, lane);
    float v = a[0];
#pragma unroll
    for (int o = V; o < 32; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// rs_step is one butterfly step of reduce_scatter32: rows i and i + O of
// a lane's first 2·O rows become row i, the lane keeping the half its bit
// O selects and adding its partner's copy of that half.
template <int O>
__device__ __forceinline__ void rs_step(float (&a)[GB_GROUP][2], int m, bool up) {
#pragma unroll
    for (int i = 0; i < O; i++) {
        float send = up ? a[i][m] : a[i + O][m];
        float keep = up ? a[i + O][m] : a[i][m];
        a[i][m] = keep + __shfl_xor_sync(0xffffffffu, send, O);
    }
}

// reduce_scatter32 sums a[·][m] over the warp's lanes and returns row
// lane's total: five butterfly steps, each sending half of what is left.
__device__ __forceinline__ float reduce_scatter32(float (&a)[GB_GROUP][2], int m, int lane) {
    rs_step<16>(a, m, lane & 16);
    rs_step<8>(a, m, lane & 8);
    rs_step<4>(a, m, lane & 4);
    rs_step<2>(a, m, lane & 2);
    rs_step<1>(a, m, lane & 1);
    return a[0][m];
}
#endif

template <int KT>
__device__ __forceinline__ void gemv_bulk_body(const float* __restrict__ x, const unsigned short* __restrict__ w,
                                               const float* __restrict__ bias, float* __restrict__ y, int M, int N,
                                               int K, int ring, int early) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int RS = 4 / KT;           // rows per stage
    constexpr int SPG = GB_GROUP / RS;   // stages per group of rows
    extern __shared__ __align__(128) unsigned char gb_smem[];
    float* part = (float*)(gb_smem + ring * GB_STAGE_BYTES);
    unsigned long long* full = (unsigned long long*)(part + GB_PART_FLOATS);
    unsigned long long* empty = full + GB_MAX_RING;
    const int r0 = (int)((long long)blockIdx.x * N / gridDim.x);
    const int r1 = (int)((long long)(blockIdx.x + 1) * N / gridDim.x);
    const int nr = r1 - r0, nst = (nr + RS - 1) / RS;
    const unsigned rowBytes = (unsigned)K * 2u;
    const char* src = (const char*)(w + (long long)r0 * K);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    auto issue = [&](int s) {
        const int slot = s % ring;
        const unsigned bytes = (unsigned)min(RS, nr - s * RS) * rowBytes;
        mbar_expect_tx(&full[slot], bytes);
        bulk_g2s(gb_smem + slot * GB_STAGE_BYTES, src + (long long)s * RS * rowBytes, bytes, &full[slot]);
    };
    const int pre = min(early, min(ring, nst));
    if (threadIdx.x == GB_CONSUMERS) {
        for (int s = 0; s < ring; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], GB_CONSUMERS / 32);
        }
        mbar_fence_init();
        for (int s = 0; s < pre; s++) issue(s);
    }
    __syncthreads();
    pdl_begin();
    if (warp == GB_CONSUMERS / 32) { // the producer
        if (lane == 0) {
            for (int s = pre; s < nst; s++) {
                if (s >= ring) mbar_wait(&empty[s % ring], (unsigned)(s / ring - 1) & 1u);
                issue(s);
            }
        }
        return;
    }
    const int t = threadIdx.x;
    float xa[KT][2][8];
#pragma unroll
    for (int kt = 0; kt < KT; kt++) {
#pragma unroll
        for (int m = 0; m < 2; m++) { // M = 1 multiplies row 0 twice (no branch in the loop)
            const float4* xm = (const float4*)(x + (long long)min(m, M - 1) * K) + 2 * (t + 256 * kt);
            float4 p = xm[0], q = xm[1];
            xa[kt][m][0] = p.x, xa[kt][m][1] = p.y, xa[kt][m][2] = p.z, xa[kt][m][3] = p.w;
            xa[kt][m][4] = q.x, xa[kt][m][5] = q.y, xa[kt][m][6] = q.z, xa[kt][m][7] = q.w;
        }
    }
    const uint4* stages = (const uint4*)gb_smem;
    for (int g = 0; g * SPG < nst; g++) {
        float acc[GB_GROUP][2];
#pragma unroll
        for (int r = 0; r < GB_GROUP; r++) acc[r][0] = acc[r][1] = 0.f;
#pragma unroll
        for (int ss = 0; ss < SPG; ss++) {
            const int s = g * SPG + ss;
            if (s < nst) {
                const int slot = s % ring;
                mbar_wait(&full[slot], (unsigned)(s / ring) & 1u);
                const uint4* sp = stages + slot * GB_STAGE_U4 + t;
                uint4 v[4];
#pragma unroll
                for (int j = 0; j < 4; j++) v[j] = sp[256 * j];
                // The slot is free once every lane holds its pieces: the
                // producer refills it while this warp multiplies.
                __syncwarp();
                if (lane == 0) mbar_arrive(&empty[slot]);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    dot8(acc[ss * RS + j / KT][0], v[j], xa[j % KT][0]);
                    dot8(acc[ss * RS + j / KT][1], v[j], xa[j % KT][1]);
                }
            }
        }
        const float v0 = reduce_scatter32(acc, 0, lane), v1 = reduce_scatter32(acc, 1, lane);
        float* pb = part + (g & 1) * (GB_PART_FLOATS / 2);
        pb[(warp * GB_GROUP + lane) * 2] = v0;
        pb[(warp * GB_GROUP + lane) * 2 + 1] = v1;
        // Consumers only (the producer warp may still be issuing). The
        // partials alternate between two buffers, so one barrier per group
        // separates this group's writes from the reads two groups later.
        asm volatile("bar.sync 1, 256;" ::: "memory");
        if (t < 2 * GB_GROUP) {
            const int row = t >> 1, m = t & 1, n = r0 + g * GB_GROUP + row;
            if (n < r1 && m < M) {
                float sum = 0.f;
#pragma unroll
                for (int q = 0; q < GB_CONSUMERS / 32; q++) sum += pb[(q * GB_GROUP + row) * 2 + m];
                y[(long long)m * N + n] = bias ? sum + bias[n] : sum;
            }
        }
    }
#else
    __trap(); // never launched below sm_90 (the backend checks)
#endif
}

// gemv_bulk_kKT: K = 2048·KT. Launch: grid min(SMs, N), 288 threads, dynamic
// shared memory ring·GB_STAGE_BYTES + 4·GB_PART_FLOATS + 16·GB_MAX_RING.
#define GEMV_BULK(KT)                                                                                       \
    extern "C" __global__ void __launch_bounds__(GB_CONSUMERS + 32, 1)                                      \
        gemv_bulk_k##KT(const float* __restrict__ x, const unsigned short* __restrict__ w,                  \
                        const float* __restrict__ b, float* __restrict__ y, int M, int N, int K, int ring, \
                        int early) {                                                                        \
        gemv_bulk_body<KT>(x, w, b, y, M, N, K, ring, early);                                               \
    }
GEMV_BULK(1)
GEMV_BULK(2)
GEMV_BULK(4)

// The chunk GEMV: the same product with no ring and no persistent blocks.
// Block b owns the RC = P/KT rows starting at b·RC (P·4 KiB of weight, one
// contiguous piece), which thread 0 requests with one bulk copy as the
// block starts (before the wait for the predecessor when early ≠ 0), and
// the 8 warps multiply once it has landed. Many small blocks leave the
// balancing to the block scheduler: an SM busy with another kernel (a row
// kernel's blocks, the vocoder's lane) just takes fewer of them, where the
// ring kernel's one fixed block per SM makes the whole projection wait
// for the SM that started last. Several blocks per SM keep their copies
// in flight at once (4 of 32 KiB at ~64 registers per thread).
// flags: bit 0 requests the chunk before the wait for the predecessor,
// bit 1 streams it with the L2's evict-first policy.
template <int KT, int P>
__device__ __forceinline__ void gemv_chunk_body(const float* __restrict__ x, const unsigned short* __restrict__ w,
                                                const float* __restrict__ bias, float* __restrict__ y, int M, int N,
                                                int K, int flags) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int RC = P / KT; // rows per block
    constexpr int V = 2 * RC;  // partial sums per thread: (row, CFG row)
    extern __shared__ __align__(128) uint4 chunk[]; // P·256 pieces (P·4 KiB of dynamic shared memory)
    __shared__ float part[8][V];
    __shared__ unsigned long long bar;
    const int r0 = blockIdx.x * RC, rows = min(RC, N - r0);
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    const unsigned bytes = (unsigned)rows * (unsigned)K * 2u;
    auto request = [&]() {
        mbar_expect_tx(&bar, bytes);
        if (flags & 2)
            bulk_g2s_first(chunk, w + (long long)r0 * K, bytes, &bar);
        else
            bulk_g2s(chunk, w + (long long)r0 * K, bytes, &bar);
    };
    if (t == 0) {
        mbar_init(&bar, 1);
        mbar_fence_init();
        if (flags & 1) request();
    }
    __syncthreads();
    pdl_begin();
    if (t == 0 && !(flags & 1)) request();
    float xa[KT][2][8];
#pragma unroll
    for (int kt = 0; kt < KT; kt++) {
#pragma unroll
        for (int m = 0; m < 2; m++) { // M = 1 multiplies row 0 twice (no branch in the loop)
            const float4* xm = (const float4*)(x + (long long)min(m, M - 1) * K) + 2 * (t + 256 * kt);
            float4 p = xm[0], q = xm[1];
            xa[kt][m][0] = p.x, xa[kt][m][1] = p.y, xa[kt][m][2] = p.z, xa[kt][m][3] = p.w;
            xa[kt][m][4] = q.x, xa[kt][m][5] = q.y, xa[kt][m][6] = q.z, xa[kt][m][7] = q.w;
        }
    }
    float acc[V];
#pragma unroll
    for (int v = 0; v < V; v++) acc[v] = 0.f;
    mbar_wait(&bar, 0);
    // Piece t + 256·p is k8 = t + 256·(p % KT) of row p / KT; rows past
    // the last (a ragged final block) hold stale data and are not stored.
#pragma unroll
    for (int p = 0; p < P; p++) {
        const uint4 v = chunk[p * 256 + t];
        dot8(acc[2 * (p / KT)], v, xa[p % KT][0]);
        dot8(acc[2 * (p / KT) + 1], v, xa[p % KT][1]);
    }
    const float sum = reduce_scatter<V>(acc, lane);
    if (lane < V) part[warp][lane] = sum;
    __syncthreads();
    if (t < V) {
        const int row = t >> 1, m = t & 1;
        if (row < rows && m < M) {
            float s = 0.f;
#pragma unroll
            for (int q = 0; q < 8; q++) s += part[q][t];
            const int n = r0 + row;
            y[(long long)m * N + n] = bias ? s + bias[n] : s;
        }
    }
#else
    __trap(); // never launched below sm_90 (the backend checks)
#endif
}

// gemv_chunk_kKT_pP: K = 2048·KT, P·4 KiB of weight per block. Launch:
// grid ⌈N / (P/KT)⌉, 256 threads, P·4096 bytes of dynamic shared memory.
#define GEMV_CHUNK(KT, P)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256)                                                      \
        gemv_chunk_k##KT##_p##P(const float* __restrict__ x, const unsigned short* __restrict__ w,        \
                                const float* __restrict__ b, float* __restrict__ y, int M, int N, int K, \
                                int flags) {                                                               \
        gemv_chunk_body<KT, P>(x, w, b, y, M, N, K, flags);                                                \
    }
GEMV_CHUNK(1, 8)
GEMV_CHUNK(2, 8)
GEMV_CHUNK(4, 8)
GEMV_CHUNK(1, 16)
GEMV_CHUNK(2, 16)
GEMV_CHUNK(4, 16)
