// Prefill projections on Hopper's warpgroup tensor-core instructions
// (wgmma, sm_90a): Linear with BF16 weights and many rows, out = x·wᵀ + b.
//
// tc_wbf (tc.cu) reaches about a quarter of mma.sync's peak on the prefill
// shapes (M = 2·prefix rows, K 2048–8192): its 64 × 128 tiles advance k 32
// at a time with two block barriers and a split of the activation per step,
// and it leans on split-K partials summed by a second kernel. Here:
//   - bf16_parts splits the activation once into its two BF16 parts, x =
//     hi + lo (the same rounding as tc_wbf: hi = bf16(x), lo = bf16(x − hi)),
//     as two planes [2][M][K];
//   - tc_wg's block, one warpgroup of 128 threads, owns a 64 × 128 output
//     tile over all of k (split-K only where the tiles leave SMs idle):
//     cp.async brings 64-wide k steps of both planes and of the weight into
//     shared memory in the 128-byte-swizzled K-major layout wgmma reads,
//     three stages deep, and each k step is eight m64n128k16 wgmmas (four
//     16-wide k slices × the two parts, the small part first) accumulating
//     in fp32 registers.
// Each product of a BF16 part and a BF16 weight is exact in fp32, so the
// result differs from tc_wbf's only in the order the tensor cores add.
//
// The compute_80 build has the entry points with empty bodies (the backend
// launches them only on Hopper, where gen.sh marks the PTX sm_90a).
#include "common.cuh"

#define WG_M 64
#define WG_N 128
#define WG_K 64          // bf16 per k step: one 128-byte row of the swizzled layout
#define WG_STAGES 3
#define WG_PARTS 2
#define WG_ROW 128       // bytes per shared-memory row
#define WG_STAGE_A (WG_PARTS * WG_M * WG_ROW)
#define WG_STAGE_B (WG_N * WG_ROW)
#define WG_STAGE (WG_STAGE_A + WG_STAGE_B)        // 32 KiB
#define WG_SMEM (WG_STAGES * WG_STAGE + 1024)     // + slack to align the ring to 1024 bytes (the swizzle's period)

// bf16_parts: planes[0][i] = bf16(x[i]), planes[1][i] = bf16(x[i] − hi),
// rounded to nearest even, four elements a thread (n % 4 == 0).
extern "C" __global__ void bf16_parts(const float* __restrict__ x, unsigned short* __restrict__ planes, long long n) {
    pdl_begin();
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= n) return;
    float4 v = *(const float4*)(x + i);
    unsigned h0 = bf16x2_rn(v.x, v.y), h1 = bf16x2_rn(v.z, v.w);
    float r0 = v.x - __uint_as_float(h0 << 16), r1 = v.y - __uint_as_float(h0 & 0xffff0000u);
    float r2 = v.z - __uint_as_float(h1 << 16), r3 = v.w - __uint_as_float(h1 & 0xffff0000u);
    *(uint2*)(planes + i) = make_uint2(h0, h1);
    *(uint2*)(planes + n + i) = make_uint2(bf16x2_rn(r0, r1), bf16x2_rn(r2, r3));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// wgmma_m64n128: d += A·B for one m64n128k16 BF16 wgmma (fp32 accumulators;
// A and B K-major in shared memory, described by da and db).
__device__ __forceinline__ void wgmma_m64n128(float (&d)[64], unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1));
}


// wg_load requests k step k0 of the block's operands into stage buffer st:
// both planes' 64 rows at m0 and the weight's 128 rows at n0, each row's
// eight 16-byte pieces placed at piece c ^ (row & 7) (the 128-byte
// swizzle), zero-filled outside M, N or [.., k_hi).
__device__ __forceinline__ void wg_load(unsigned char* st, const unsigned short* __restrict__ planes,
                                        const unsigned short* __restrict__ w, int M, int N, int K, int m0, int n0,
                                        int k0, int k_hi) {
#pragma unroll
    for (int i = 0; i < WG_PARTS * WG_M * 8 / 128; i++) {
        int e = threadIdx.x + i * 128;
        int r = e >> 3, c = e & 7;  // r: part · 64 + row
        int part = r / WG_M, gm = m0 + r % WG_M, gk = k0 + c * 8;
        bool in = gm < M && gk < k_hi;
        cp_async16z(st + r * WG_ROW + ((c ^ (r & 7)) << 4),
                    planes + (in ? (long long)part * M * K + (long long)gm * K + gk : 0), in);
    }
#pragma unroll
    for (int i = 0; i < WG_N * 8 / 128; i++) {
        int e = threadIdx.x + i * 128;
        int r = e >> 3, c = e & 7;
        int gn = n0 + r, gk = k0 + c * 8;
        bool in = gn < N && gk < k_hi;
        cp_async16z(st + WG_STAGE_A + r * WG_ROW + ((c ^ (r & 7)) << 4), w + (in ? (long long)gn * K + gk : 0), in);
    }
}
#endif

// tc_wg: out[M, N] = planes·wᵀ + bias for BF16 w [N, K] (K % 8 == 0), the
// activation as bf16_parts' two planes. Grid (⌈N/128⌉, ⌈M/64⌉, splits),
// 128 threads, WG_SMEM bytes of dynamic shared memory. With splits > 1,
// split s reduces k in [s·kchunk, (s+1)·kchunk) and writes its partial to
// work[s][M][N] for tc_reduce_rows (which adds the bias).
extern "C" __global__ void __launch_bounds__(128) tc_wg(const unsigned short* __restrict__ planes,
                                                         const unsigned short* __restrict__ w,
                                                         const float* __restrict__ bias, float* __restrict__ out,
                                                         float* __restrict__ work, int M, int N, int K, int splits,
                                                         int kchunk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char wg_smem_raw[];
    unsigned char* ring = (unsigned char*)(((unsigned long long)wg_smem_raw + 1023) & ~1023ull);
    pdl_begin();
    int s = blockIdx.z;
    int m0 = blockIdx.y * WG_M, n0 = blockIdx.x * WG_N;
    int k_lo = s * kchunk, k_hi = min(K, k_lo + kchunk);
    int nk = k_hi > k_lo ? (k_hi - k_lo + WG_K - 1) / WG_K : 0;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.f;
#pragma unroll
    for (int st = 0; st < WG_STAGES - 1; st++) {
        if (st < nk) wg_load(ring + st * WG_STAGE, planes, w, M, N, K, m0, n0, k_lo + st * WG_K, k_hi);
        cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(WG_STAGES - 2));
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // cp.async's writes, seen by wgmma's reads
        __syncthreads();  // stage kt landed for every thread; stage kt − 1's wgmmas are done
        if (kt + WG_STAGES - 1 < nk)
            wg_load(ring + ((kt + WG_STAGES - 1) % WG_STAGES) * WG_STAGE, planes, w, M, N, K, m0, n0,
                    k_lo + (kt + WG_STAGES - 1) * WG_K, k_hi);
        cp_async_commit();
        unsigned char* st = ring + (kt % WG_STAGES) * WG_STAGE;
        unsigned long long da = wg_desc(st), db = wg_desc(st + WG_STAGE_A);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < WG_K / 16; kk++) {  // 32 bytes of k = 2 in the descriptor's address field
            wgmma_m64n128(acc, da + (WG_M * WG_ROW >> 4) + 2 * kk, db + 2 * kk);  // the small part
            wgmma_m64n128(acc, da + 2 * kk, db + 2 * kk);                          // the big part
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    asm volatile("cp.async.wait_group 0;");
    // Accumulator layout (m64nNk16, fp32): warp q holds rows 16q + g and
    // 16q + g + 8 (g = lane / 4); acc[4j + e] is column 8j + 2t + (e & 1)
    // (t = lane % 4) of row g + 8·(e >> 1).
    int lane = threadIdx.x & 31, q = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    long long total = (long long)M * N;
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int gm = m0 + 16 * q + g + 8 * (e >> 1), gn = n0 + 8 * j + 2 * t + (e & 1);
            if (gm >= M || gn >= N) continue;
            long long idx = (long long)gm * N + gn;
            if (splits > 1) work[(long long)s * total + idx] = acc[4 * j + e];
            else out[idx] = acc[4 * j + e] + (bias ? bias[gn] : 0.f);
        }
#endif
}

