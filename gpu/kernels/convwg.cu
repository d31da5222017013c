// The DAC's convolutions on Hopper's TF32 warpgroup instructions (conv_wg).
// An sm_90a module of its own, which the backend loads only when asked
// (ZONOS_CONV_WG=1, gpu/convwg.go): it has not yet run on a GPU, and a
// module that fails to load would stop the backend.
//
// conv_tcq (tc.cu) runs each 8-wide k step of an output fragment as three
// dependent mma.sync products into a zeroed fragment, then an IEEE add to
// the fp32 total (the 3xTF32 that keeps fp32's precision). On the DAC's
// large layers that chain, the B splits and the adds held the tensor pipe
// at 37 % with "wait" the top stall (ncu, session 23). conv_wg keeps the
// arithmetic — per 8-wide k step small·big, big·small, big·big from zero,
// then one add — with the products on m64n64k8 TF32 wgmmas that read both
// operands from shared memory, two fragment sets in flight so one set's
// adds run while the other's products do:
//   - the weights, prepared once by conv_prep_wg: per output phase, 64-row
//     tile and 32-wide k step, the big then the small TF32 parts, each a
//     64 × 128-byte K-major plane in the 128-byte swizzle, copied as is;
//   - the input: each thread copies one k row of a 32-wide step at 16
//     columns (4-byte cp.async, zero fill), then splits the values it
//     copied in place into the big plane and the small one;
//   - CW_STAGES k steps in flight, 1 block = 1 warpgroup, 64 × 64 outputs.
// Split-K grids and folding are conv_tcq's (tcSplits' pieces; splits = 1
// folds them in piece order). Whether the tensor cores' sums of a k step
// equal mma.sync's is checked by TestConvWgMatches, not assumed.
#include "common.cuh"

#define CW_M 64
#define CW_N 64
#define CW_K 32
#define CW_STAGES 3
#define CW_PLANE_A (CW_M * 128)
#define CW_PLANE_B (CW_N * 128)
#define CW_STAGE (2 * CW_PLANE_A + 2 * CW_PLANE_B)  // 32 KiB
#define CW_SMEM (CW_STAGES * CW_STAGE + 1024)
#define CW_CONVT 2  // tc.cu's TC_CONVT

// cw_word is the 32-bit word of element (row r, k < 32) of a K-major plane
// of 128-byte rows in the 128-byte swizzle (tc_wg's layout, 4-byte values).
__host__ __device__ __forceinline__ int cw_word(int r, int k) {
    return r * 32 + ((((k >> 2) ^ r) & 7) << 2) + (k & 3);
}

// conv_prep_wg lays a convolution's weights out for conv_wg: for each phase
// ρ (one for TC_CONV), 64-row tile mt and 32-wide k step ks, 4096 words:
// the big TF32 parts of its 64 × 32 values (tf32_split) at cw_word, then
// the small parts. Rows past M and k past Kr are zero. The values are
// conv_prep_a's (tc.cu conv_prep_value).
extern "C" __global__ void conv_prep_wg(const float* __restrict__ w, unsigned* __restrict__ out, int mode, int M,
                                        int Kr, int Cout, int Kw, int stride, int phases, int mtiles, int ksteps) {
    pdl_begin();
    long long total = (long long)phases * mtiles * ksteps * 2048;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        int pos = (int)(idx & 2047), r = pos >> 5, k = pos & 31;
        long long tile = idx >> 11;  // (ρ·mtiles + mt)·ksteps + ks
        int ks = (int)(tile % ksteps), mt = (int)(tile / ksteps % mtiles), rho = (int)(tile / ksteps / mtiles);
        int m = mt * CW_M + r, kk = ks * CW_K + k;
        float v = 0.f;
        if (m < M && kk < Kr) {
            if (mode == CW_CONVT) {
                int J = Kw / stride, ci = kk / J, j = kk - ci * J;
                v = w[((long long)ci * Cout + m) * Kw + rho + j * stride];
            } else {
                v = w[(long long)m * Kr + kk];
            }
        }
        unsigned big, small;
        tf32_split(v, big, small);
        out[tile * 4096 + cw_word(r, k)] = big;
        out[tile * 4096 + 2048 + cw_word(r, k)] = small;
    }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// wgmma_tf32_m64n64: d = (acc ? d : 0) + A·B for one m64n64k8 TF32 wgmma
// (A and B K-major in shared memory, described by da and db).
__device__ __forceinline__ void wgmma_tf32_m64n64(float (&d)[32], unsigned long long da, unsigned long long db,
                                                  int acc) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(acc));
}
#endif

// conv_wg: TC_CONV and TC_CONVT (tc.cu's modes and output placement) from
// conv_prep_wg's weights aprep; grid (⌈N/64⌉, ⌈M/64⌉, batch·phases·splits)
// with N the output columns (of one phase), 128 threads, CW_SMEM bytes of
// dynamic shared memory. Epilogue (ealpha, eres) as tc.cu's conv_epilogue
// where unsplit; split s writes its partial to work[s] for tc_reduce_rows.
extern "C" __global__ void __launch_bounds__(128) conv_wg(
    const float* __restrict__ x, const unsigned* __restrict__ aprep, const float* __restrict__ bias,
    float* __restrict__ out, float* __restrict__ work, int mode, int M, int Kr, int splits, int kchunk, int Cin,
    int T, int Cout, int Kw, int Tout, int stride, int pad, int dil, const float* __restrict__ ealpha,
    const float* __restrict__ eres, int eresT, int eresOff) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char cw_smem_raw[];
    unsigned char* ring = (unsigned char*)(((unsigned long long)cw_smem_raw + 1023) & ~1023ull);
    pdl_begin();
    const bool convt = mode == CW_CONVT;
    const int phases = convt ? stride : 1;
    const int z = blockIdx.z, s = z % splits, rho = (z / splits) % phases, bat = z / (splits * phases);
    const int J = convt ? Kw / stride : 1;
    int t0 = 0, cph = 0, ncols = Tout;
    if (convt) {
        t0 = ((rho - pad) % stride + stride) % stride;
        cph = (t0 + pad - rho) / stride;
        ncols = t0 < Tout ? (Tout - t0 + stride - 1) / stride : 0;
    }
    const int m0 = blockIdx.y * CW_M, n0 = blockIdx.x * CW_N;
    if (n0 >= ncols) return;
    const int k_lo = s * kchunk, k_hi = splits == 1 ? Kr : min(Kr, k_lo + kchunk);
    const int steps = k_lo < k_hi ? (k_hi - k_lo + CW_K - 1) / CW_K : 0;
    const float* xb = x + (long long)bat * Cin * T;
    const long long total = (long long)(gridDim.z / (splits * phases)) * Cout * Tout;
    const int tid = threadIdx.x;

    // A: the prepared tiles of this phase and row tile, from k step k_lo/32.
    const int mtiles = (M + CW_M - 1) / CW_M, ksteps = (Kr + CW_K - 1) / CW_K;
    const unsigned* asrc = aprep + (((long long)rho * mtiles + blockIdx.y) * ksteps + k_lo / CW_K) * 4096 + tid * 4;
    // B: k row kr of each step, columns c0 + 4c (c < 16): word cw_word(n, kr)
    // of the big plane, whose swizzle depends on n & 7 = c0 + 4·(c & 1).
    const int kr = tid >> 2, c0 = tid & 3;
    const int taps = convt ? J : Kw, tstep = convt ? -1 : dil;
    int k = k_lo + kr, ci = k / taps, tap = k - ci * taps;
    const int d32 = CW_K / taps, r32 = CW_K - d32 * taps;
    const int gn0 = n0 + c0, tbase = convt ? gn0 + cph : gn0 * stride - pad, cs4 = 4 * (convt ? 1 : stride);
    const int ncol = gn0 < ncols ? min(16, (ncols - gn0 + 3) / 4) : 0;
    const int bw0 = cw_word(c0, kr), bw1 = cw_word(c0 + 4, kr);  // words of columns c0 and c0 + 4 (+ 8·32 per 2c)
    const unsigned sring = (unsigned)__cvta_generic_to_shared(ring);
    auto issue = [&](int i) {
        if (i < steps) {
            unsigned st = sring + (i % CW_STAGES) * CW_STAGE;
#pragma unroll
            for (int r = 0; r < 8; r++)
                asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(st + (tid + r * 128) * 16),
                             "l"(asrc + r * 512));
            asrc += 4096;
            const bool rin = k < k_hi;
            const int q0 = tbase + tap * tstep;
            const float* src = xb + (long long)ci * T + q0;
            const unsigned sb = st + 2 * CW_PLANE_A;
#pragma unroll
            for (int c = 0; c < 16; c++) {
                int q = q0 + c * cs4;
                bool in = rin && c < ncol && (unsigned)q < (unsigned)T;
                unsigned dst = sb + 4u * ((c & 1 ? bw1 : bw0) + (c >> 1) * 256);
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src + c * cs4),
                             "r"(in ? 4 : 0));
            }
            k += CW_K, tap += r32, ci += d32;
            if (tap >= taps) tap -= taps, ci++;
        }
        cp_async_commit();
    };

    float acc[32], tot[32], d0[32], d1[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = tot[i] = d0[i] = d1[i] = 0.f;
#pragma unroll
    for (int i = 0; i < CW_STAGES - 1; i++) issue(i);
    const int csteps = kchunk / CW_K;  // k steps per split piece
    int left = csteps;
    for (int i = 0; i < steps; i++) {
        cp_async_wait<CW_STAGES - 2>();  // step i's copies (this thread's) have landed
        unsigned char* st = ring + (i % CW_STAGES) * CW_STAGE;
        {  // split this thread's B values in place: big stays, small to the next plane
            unsigned* bb = (unsigned*)(st + 2 * CW_PLANE_A);
#pragma unroll
            for (int c = 0; c < 16; c++) {
                int w = (c & 1 ? bw1 : bw0) + (c >> 1) * 256;
                unsigned big, small;
                tf32_split(__uint_as_float(bb[w]), big, small);
                bb[w] = big;
                bb[CW_PLANE_B / 4 + w] = small;
            }
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the copies and splits, seen by wgmma
        __syncthreads();  // everyone's; and step i − 1's wgmmas are done (waited below)
        issue(i + CW_STAGES - 1);
        const unsigned long long abig = wg_desc(st), asmall = wg_desc(st + CW_PLANE_A);
        const unsigned long long bbig = wg_desc(st + 2 * CW_PLANE_A), bsmall = wg_desc(st + 2 * CW_PLANE_A + CW_PLANE_B);
#pragma unroll
        for (int kk = 0; kk < CW_K / 8; kk++) {  // 32 bytes of k: 2 in the descriptors' address field
            float(&d)[32] = kk & 1 ? d1 : d0;
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            wgmma_tf32_m64n64(d, asmall + 2 * kk, bbig + 2 * kk, 0);
            wgmma_tf32_m64n64(d, abig + 2 * kk, bsmall + 2 * kk, 1);
            wgmma_tf32_m64n64(d, abig + 2 * kk, bbig + 2 * kk, 1);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            if (kk > 0) {
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                float(&e)[32] = kk & 1 ? d0 : d1;
#pragma unroll
                for (int o = 0; o < 32; o++) acc[o] += e[o];
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int o = 0; o < 32; o++) acc[o] += d1[o];  // the last 8-wide step (kk = 3)
        if (splits == 1 && (--left == 0 || i + 1 == steps)) {  // a split piece ends: tc_reduce_rows' add
#pragma unroll
            for (int o = 0; o < 32; o++) tot[o] += acc[o], acc[o] = 0.f;
            left = csteps;
        }
    }
    asm volatile("cp.async.wait_group 0;");
    // Accumulator layout (m64nNk8, fp32): warp q holds rows 16q + g and
    // 16q + g + 8 (g = lane / 4); element 4j + e is column 8j + 2t + (e & 1)
    // (t = lane % 4) of row g + 8·(e >> 1).
    const int lane = tid & 31, q = tid >> 5, g = lane >> 2, t = lane & 3;
    const int tcol = convt ? stride : 1;
    float* dst = splits > 1 ? work + (long long)s * total : out;
#pragma unroll
    for (int o = 0; o < 32; o++) {
        int gm = m0 + 16 * q + g + 8 * ((o & 3) >> 1), col = n0 + 8 * (o >> 2) + 2 * t + (o & 1);
        if (gm >= M || col >= ncols) continue;
        float v = acc[o];
        if (splits == 1) {
            v = tot[o] + (bias ? bias[gm] : 0.f);
            if (!convt) {
                if (ealpha) v = snake_ref(v, ealpha[gm]);
                if (eres) v = eres[((long long)bat * Cout + gm) * eresT + eresOff + col] + v;
            }
        }
        dst[((long long)bat * Cout + gm) * Tout + t0 + (long long)col * tcol] = v;
    }
#endif
}
