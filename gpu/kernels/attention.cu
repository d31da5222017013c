// Attention with a KV cache, rotary embedding (two conventions) and grouped
// KV heads; reference: engine/compute/cpu Attention.
#include "common.cuh"

// rot_angle returns cos and sin of position p at frequency index i exactly
// as engine/compute/cpu rotaryTable does (float32 inv_freq and angle, float64 trig).
__device__ __forceinline__ void rot_angle(int p, int i, int dr, double base, float* c, float* s) {
    float e = (float)(2 * i) / (float)dr;
    float inv = 1.0f / (float)pow(base, (double)e);
    float a = __fmul_rn((float)p, inv);
    *c = (float)cos((double)a);
    *s = (float)sin((double)a);
}

// rotated returns element d of head vector v after rotary at position p
// (interleaved pairs (2i, 2i+1) or halves (i, i + dr/2) over dr dims).
__device__ __forceinline__ float rotated(const float* v, int d, int p, int dr, int interleaved, double base) {
    if (d >= dr) return v[d];
    int half = dr / 2;
    int i, ia, ib;
    if (interleaved) { i = d >> 1; ia = 2 * i; ib = 2 * i + 1; }
    else { i = d < half ? d : d - half; ia = i; ib = i + half; }
    float c, s;
    rot_angle(p, i, dr, base, &c, &s);
    float x1 = v[ia], x2 = v[ib];
    if (d == ia) return __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
    return __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
}

// rot_apply is rotated() with the angle's cos c and sin s already known.
__device__ __forceinline__ float rot_apply(const float* v, int d, int dr, int interleaved, float c, float s) {
    if (d >= dr) return v[d];
    int half = dr / 2;
    int ia, ib;
    if (interleaved) { ia = d & ~1; ib = ia + 1; }
    else { int i = d < half ? d : d - half; ia = i; ib = i + half; }
    float x1 = v[ia], x2 = v[ib];
    if (d == ia) return __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
    return __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
}

// rot_table: tab[t, i] = (cos, sin) of position pos + t at frequency index i
// < dr/2, as rot_angle computes them: a prefill's 12 attention layers share
// one table (the backend keeps it for the positions it was made for)
// instead of each cache write and each query rotation evaluating float64
// pow, cos and sin per element.
extern "C" __global__ void rot_table(float2* __restrict__ tab, int pos, int T, int dr, double base) {
    pdl_begin();
    const int half = dr / 2;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < T * half; e += gridDim.x * blockDim.x) {
        float c, s;
        rot_angle(pos + e / half, e % half, dr, base, &c, &s);
        tab[e] = make_float2(c, s);
    }
}

// rot_tab_apply is element d of head vector v of position row t of the
// table after rotary (rot_apply with the table's angle).
__device__ __forceinline__ float rot_tab_apply(const float* v, int d, int dr, int interleaved, const float2* tab, int t) {
    if (d >= dr) return v[d];
    const int half = dr / 2;
    const float2 cs = tab[t * half + (interleaved ? d >> 1 : (d < half ? d : d - half))];
    return rot_apply(v, d, dr, interleaved, cs.x, cs.y);
}

// attn_cache writes rotated k and plain v for positions pos…pos+T−1 into the
// caches [B, maxT, Hk, Dh]; k, v are [B, T, Hk·Dh] with rows ldkv floats
// apart (Hk·Dh, or the packed qkv width). When posp is not null
// the first position is read from it instead (a decode step replayed as a
// CUDA graph keeps its position on the device). tab, when not null, is
// rot_table's for these positions.
extern "C" __global__ void attn_cache(const float* __restrict__ k, const float* __restrict__ v,
                                      float* __restrict__ kc, float* __restrict__ vc,
                                      int B, int T, int Hk, int Dh, int maxT, int pos, const int* __restrict__ posp,
                                      int dr, int interleaved, double base, int ldkv, const float2* __restrict__ tab) {
    pdl_begin();
    if (posp) pos = *posp;
    grid_loop((long long)B * T * Hk * Dh, [&](auto i) {
        const int d = (int)(i % (unsigned)Dh);
        const auto r = i / (unsigned)Dh; // (b, t, h)
        const int h = (int)(r % (unsigned)Hk);
        const auto bt = r / (unsigned)Hk; // k and v rows are ldkv floats apart (packed qkv)
        const int t = (int)(bt % (unsigned)T), b = (int)(bt / (unsigned)T);
        const float* kv = k + (long long)bt * ldkv + (long long)h * Dh;
        long long dst = (((long long)b * maxT + pos + t) * Hk + h) * Dh + d;
        kc[dst] = tab ? rot_tab_apply(kv, d, dr, interleaved, tab, t) : rotated(kv, d, pos + t, dr, interleaved, base);
        vc[dst] = v[(long long)bt * ldkv + (long long)h * Dh + d];
    });
}

#define ATT_WARPS 4
#define ATT_MAXD 256

// attend walks the cache positions [lo, hi) of batch b and KV head kh
// against the rotated query qs (shared, Dh ≤ 256) with an online softmax —
// warp w takes lo + w, lo + w + ATT_WARPS, … — then merges the warps and
// writes Σ o·weight to dst[0, Dh): divided by the sum (the attention
// output) when normalise is set, else raw, with the block's running max
// and sum in *M and *L (a split partial). Warps without positions count
// for nothing.
// kc and vc are plain pointers (coherent loads): attn_split reads a cache
// row it wrote itself.
__device__ __forceinline__ void attend(const float* qs, const float* kc, const float* vc,
                                       long long b, int kh, int Hk, int Dh, int maxT, int lo, int hi, float scale,
                                       float* dst, bool normalise, float* Mout, float* Lout) {
    __shared__ float om[ATT_WARPS][ATT_MAXD];
    __shared__ float ml[ATT_WARPS][2];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float m = -INFINITY, l = 0.f;
    float o[ATT_MAXD / 32];
#pragma unroll
    for (int i = 0; i < ATT_MAXD / 32; i++) o[i] = 0.f;
    for (int j = lo + warp; j < hi; j += ATT_WARPS) {
        const float* kr = kc + ((b * maxT + j) * Hk + kh) * Dh;
        const float* vr = vc + ((b * maxT + j) * Hk + kh) * Dh;
        float p = 0.f;
        for (int d = lane; d < Dh; d += 32) p += qs[d] * kr[d];
        float s = warp_sum(p) * scale;
        float mn = fmaxf(m, s);
        float corr = expf(m - mn);
        float e = expf(s - mn);
        l = l * corr + e;
#pragma unroll
        for (int i = 0; i < ATT_MAXD / 32; i++) {
            int d = lane + 32 * i;
            if (d < Dh) o[i] = o[i] * corr + e * vr[d];
        }
        m = mn;
    }
#pragma unroll
    for (int i = 0; i < ATT_MAXD / 32; i++) {
        int d = lane + 32 * i;
        if (d < Dh) om[warp][d] = o[i];
    }
    if (lane == 0) { ml[warp][0] = m; ml[warp][1] = l; }
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ATT_WARPS; w++) M = fmaxf(M, ml[w][0]);
    float L = 0.f;
    float f[ATT_WARPS];
    for (int w = 0; w < ATT_WARPS; w++) {
        f[w] = ml[w][1] > 0.f ? expf(ml[w][0] - M) : 0.f;
        L += ml[w][1] * f[w];
    }
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.f;
        for (int w = 0; w < ATT_WARPS; w++) acc += om[w][d] * f[w];
        dst[d] = normalise ? acc / L : acc;
    }
    *Mout = M;
    *Lout = L;
}

// attn: one block per (b, t, h) over cache positions [0, pos + t]. Dh ≤ 256.
// posp as in attn_cache; q rows are ldq floats apart.
extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32) attn(const float* __restrict__ q, const float* __restrict__ kc,
                                const float* __restrict__ vc, float* __restrict__ out,
                                int T, int H, int Hk, int Dh, int maxT, int pos, const int* __restrict__ posp,
                                int dr, int interleaved, double base, float scale, int ldq) {
    pdl_begin();
    if (posp) pos = *posp;
    __shared__ float qs[ATT_MAXD];
    int idx = blockIdx.x;
    int h = idx % H, t = (idx / H) % T, b = idx / (H * T);
    const float* qv = q + ((long long)b * T + t) * ldq + (long long)h * Dh;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) qs[d] = rotated(qv, d, pos + t, dr, interleaved, base);
    __syncthreads();
    float M, L;
    attend(qs, kc, vc, b, h / (H / Hk), Hk, Dh, maxT, 0, pos + t + 1, scale,
           out + (((long long)b * T + t) * H + h) * Dh, true, &M, &L);
}

// attn_pre is attn for a prefill (T > 1, Dh ≤ 128, Dh % 4 = 0, G = H/Hk
// ≤ 8 query heads per KV head; the backend's choice there). Why: attn's
// block per (b, t, h) walks its positions a warp at a time, one L2 round
// trip and one dependent shuffle reduction per position, and rotates its
// query with float64 trig per element: 34 µs a layer for a 71-position
// prompt (ncu, H200, 2026-11-30), 12 such layers on the time to first
// audio. One warp per query position walking its positions one by one was
// slower still: the walk is a chain of dependent shuffles and exps.
//
// Here block (b, KV head, Q = 8/G query positions) has warp w take query
// head g = w mod G of position t0 + w / G. The block brings ATP_J cached
// positions at a time into shared memory (keys padded to Dh + 1 floats a
// row, so lane j reading row j is conflict-free); each warp scores the
// tile's positions a lane each (a dot product over Dh from shared memory,
// no shuffles), takes the tile's max and sum in one reduction each, and
// adds the values weighted by the lanes' exps (broadcast by shuffle) into
// its output dims (4 a lane). Rotation by rot_table's angles (tab, for
// positions pos…pos+T−1; unused when dr = 0).
//
// Launch: grid B·Hk·⌈T / Q⌉, 256 threads; Q = 8 / G.
#define ATP_W 8
#define ATP_J 32
#define ATP_D 128
extern "C" __global__ void __launch_bounds__(ATP_W * 32) attn_pre(const float* __restrict__ q, const float* __restrict__ kc,
                                const float* __restrict__ vc, float* __restrict__ out,
                                int T, int H, int Hk, int Dh, int maxT, int pos, int dr, int interleaved,
                                float scale, int ldq, int Q, const float2* __restrict__ tab) {
    __shared__ float ks[ATP_J * (ATP_D + 1)];
    __shared__ __align__(16) float vs[ATP_J * ATP_D];
    __shared__ float qs[ATP_W][ATP_D];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int G = H / Hk, tiles = (T + Q - 1) / Q;
    const int tile = blockIdx.x % tiles, pair = blockIdx.x / tiles;
    const int kh = pair % Hk, b = pair / Hk;
    const int t0 = tile * Q, tq = t0 + warp / G, g = warp % G;
    const bool live = warp < Q * G && tq < T; // warp-uniform
    const int p = pos + tq;                     // this warp's query position
    const int last = pos + min(T, t0 + Q) - 1;  // the block's last query position
    pdl_begin();
    if (live) {
        const float* qv = q + ((long long)b * T + tq) * ldq + (long long)(kh * G + g) * Dh;
#pragma unroll
        for (int i = 0; i < ATP_D / 32; i++) {
            const int d = lane + 32 * i;
            if (d < Dh) qs[warp][d] = rot_tab_apply(qv, d, dr, interleaved, tab, tq);
        }
    }
    __syncwarp();
    const int D4 = Dh / 4;
    const bool on = 4 * lane < Dh;
    float m = -INFINITY, l = 0.f;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    const long long rowStride = (long long)Hk * Dh;
    const float* kbase = kc + ((long long)b * maxT * Hk + kh) * Dh;
    const float* vbase = vc + ((long long)b * maxT * Hk + kh) * Dh;
    for (int j0 = 0; j0 <= last; j0 += ATP_J) {
        const int jn = min(ATP_J, last + 1 - j0);
        __syncthreads(); // every warp is done with the previous tile
        for (int e = threadIdx.x; e < jn * D4; e += blockDim.x) {
            const int j = e / D4, d = 4 * (e % D4);
            const float4 kv = __ldcg((const float4*)(kbase + (j0 + j) * rowStride + d));
            float* kr = ks + j * (ATP_D + 1) + d;
            kr[0] = kv.x, kr[1] = kv.y, kr[2] = kv.z, kr[3] = kv.w;
            *(float4*)(vs + j * ATP_D + d) = __ldcg((const float4*)(vbase + (j0 + j) * rowStride + d));
        }
        __syncthreads();
        const int jc = live ? min(jn, p + 1 - j0) : 0; // positions of this tile the query sees (warp-uniform)
        if (jc <= 0) continue;
        float sc = -INFINITY;
        if (lane < jc) {
            const float* kr = ks + lane * (ATP_D + 1);
            float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
            for (int d = 0; d < Dh; d += 4) {
                a0 += qs[warp][d] * kr[d];
                a1 += qs[warp][d + 1] * kr[d + 1];
                a2 += qs[warp][d + 2] * kr[d + 2];
                a3 += qs[warp][d + 3] * kr[d + 3];
            }
            sc = ((a0 + a1) + (a2 + a3)) * scale;
        }
        float mt = sc;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
        const float mn = fmaxf(m, mt);
        const float corr = expf(m - mn);
        const float ex = lane < jc ? expf(sc - mn) : 0.f;
        l = l * corr + warp_sum(ex);
        o.x *= corr, o.y *= corr, o.z *= corr, o.w *= corr;
        for (int j = 0; j < jc; j++) {
            const float ej = __shfl_sync(0xffffffffu, ex, j);
            if (on) {
                const float4 vv = *(const float4*)(vs + j * ATP_D + 4 * lane);
                o.x += ej * vv.x, o.y += ej * vv.y, o.z += ej * vv.z, o.w += ej * vv.w;
            }
        }
        m = mn;
    }
    if (!live || !on) return;
    o.x = o.x / l, o.y = o.y / l, o.z = o.z / l, o.w = o.w / l;
    *(float4*)(out + (((long long)b * T + tq) * H + kh * G + g) * Dh + 4 * lane) = o;
}

// attn_split is attn for one query position per (b, h) spread over S
// blocks (flash-decoding): block (r, s) takes a contiguous share of the
// cache positions [0, n) and writes its unnormalised partial — o[Dh], then
// the running max m and sum l — to part[(r·S + s)·(Dh + 2)]; attn_merge
// combines them. With posp, row b's position is posp[b mod npos]: one
// position for every row (npos = 1), or one per utterance of a batch
// whose utterances stand at different positions (npos = n, rows b and
// b + n being one utterance's two CFG rows). A decode step has only B·H = 32 (b, h) pairs: one block
// each left 100+ SMs idle and walked the cache serially (31 µs at 100
// positions, growing with the utterance). T must be 1.
//
// It also does attn_cache's work for its position: the block whose share
// holds the new position writes that cache row (rotated k, v; read from
// k and v, rows ldkv floats apart) before walking its share, so the step
// needs no separate cache kernel. Blocks of the query heads that share a
// KV head write the same values.
extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32) attn_split(const float* __restrict__ q, const float* __restrict__ k,
                                const float* __restrict__ v, float* kc, float* vc, float* __restrict__ part,
                                int H, int Hk, int Dh, int maxT, int pos, const int* __restrict__ posp, int npos,
                                int dr, int interleaved, double base, float scale, int S, int ldq, int ldkv) {
    pdl_begin();
    __shared__ float qs[ATT_MAXD];
    int r = blockIdx.x, sidx = blockIdx.y;
    int h = r % H, b = r / H;
    if (posp) pos = posp[b % npos];
    const float* qv = q + (long long)b * ldq + (long long)h * Dh;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) qs[d] = rotated(qv, d, pos, dr, interleaved, base);
    __syncthreads();
    int n = pos + 1;
    int chunk = (n + S - 1) / S;
    int lo = sidx * chunk, hi = min(n, lo + chunk);
    int kh = h / (H / Hk);
    if (lo <= pos && pos < hi) {
        const float* kv = k + (long long)b * ldkv + (long long)kh * Dh;
        long long dst = (((long long)b * maxT + pos) * Hk + kh) * Dh;
        for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
            kc[dst + d] = rotated(kv, d, pos, dr, interleaved, base);
            vc[dst + d] = v[(long long)b * ldkv + (long long)kh * Dh + d];
        }
        __syncthreads();  // the row is read back below
    }
    float* pr = part + ((long long)r * S + sidx) * (Dh + 2);
    float M, L;
    attend(qs, kc, vc, b, kh, Hk, Dh, maxT, lo, hi, scale, pr, false, &M, &L);
    if (threadIdx.x == 0) { pr[Dh] = M; pr[Dh + 1] = L; }
}

// attn_merge combines attn_split's S ≤ ATT_MAXS partials of each (b, h)
// into out [B, 1, H·Dh]; a partial with l = 0 (no positions) counts for
// nothing. The S weights exp(m_s − M) are computed once into shared memory.
#define ATT_MAXS 64
extern "C" __global__ void attn_merge(const float* __restrict__ part, float* __restrict__ out, int Dh, int S) {
    pdl_begin();
    __shared__ float wt[ATT_MAXS];
    __shared__ float red[2];
    int r = blockIdx.x;
    const float* pr = part + (long long)r * S * (Dh + 2);
    if (threadIdx.x < 32) {
        float M = -INFINITY;
        for (int s = threadIdx.x; s < S; s += 32) {
            const float* p = pr + (long long)s * (Dh + 2);
            if (p[Dh + 1] > 0.f) M = fmaxf(M, p[Dh]);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
        float L = 0.f;
        for (int s = threadIdx.x; s < S; s += 32) {
            const float* p = pr + (long long)s * (Dh + 2);
            float w = p[Dh + 1] > 0.f ? expf(p[Dh] - M) : 0.f;
            wt[s] = w;
            L += p[Dh + 1] * w;
        }
        L = warp_sum(L);
        if (threadIdx.x == 0) red[0] = L;
    }
    __syncthreads();
    float L = red[0];
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.f;
        for (int s = 0; s < S; s++) acc += pr[(long long)s * (Dh + 2) + d] * wt[s];
        out[(long long)r * Dh + d] = acc / L;
    }
}

// attn_step is a decode step's attention (T = 1) in one kernel on the
// Hopper plan, for the short contexts of streaming; the generic plan runs
// attn_split and attn_merge. Why: the split and merge pair cost 11.9 µs a
// layer inside the step graph (H200, 2026-11-30: launched twice, the graph
// took 142 µs more over 12 layers) for about 100 positions: two kernel
// boundaries, 1024 blocks that each rotate their query with float64 pow,
// cos and sin after the wait, and partials that go through global memory.
//
// Here a cluster of ATS_S blocks takes one (b, KV head) and its G ≤ ATS_G
// query heads (grouped-query attention: each cached key and value row is
// read once for all G). Before the wait for the projection, each thread
// reads the position (written by the step's feedback kernel, long
// complete: in a PDL chain a kernel starts only once its predecessor has
// waited for its own) and computes the rotary angle of its element, so the
// float64 trig overlaps the projection. Warp w of block r takes positions
// r·ATS_W + w, + ATS_S·ATS_W, …; the new position's key and value come
// from the projection (block 0 also writes them to the cache). Warps merge
// into a block partial in shared memory, and the cluster's blocks merge
// their partials through distributed shared memory, each producing an
// even share of the G·Dh outputs. The rotation's arithmetic is rotated()'s;
// the softmax merges in the same (max, sum) form as attn_split/attn_merge,
// in another order. Dh ≤ 128, Dh % 4 = 0, G ≤ ATS_G (the backend checks).
//
// Launch: grid B·Hk·ATS_S, clusters of ATS_S = 8 blocks (16 warps each:
// 128 warps walk a (row, KV head)'s cache), ATS_W·32 threads; row b of the
// batch at posp[b mod npos] when posp is set, else at pos.
#define ATS_S 8
#define ATS_W 16
#define ATS_G 4
#define ATS_D 128

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned ats_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// ats_remote reads the float at p in the shared memory of the cluster's
// block rank.
__device__ __forceinline__ float ats_remote(const float* p, unsigned rank) {
    unsigned a;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(ats_smem(p)), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
    return v;
}

// ats_cluster_sync (arrive releases, wait acquires by default): every block of the cluster has arrived, and their
// shared-memory writes before it are visible to the others' reads after it.
__device__ __forceinline__ void ats_cluster_sync() {
    asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

#endif

extern "C" __global__ void __launch_bounds__(ATS_W * 32) attn_step(const float* __restrict__ q, const float* __restrict__ k,
                                const float* __restrict__ v, float* kc, float* vc, float* __restrict__ out,
                                int H, int Hk, int Dh, int maxT, int pos, const int* __restrict__ posp, int npos,
                                int dr, int interleaved, double base, float scale, int ldq, int ldkv) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ __align__(16) float qs[ATS_G * ATS_D];
    __shared__ __align__(16) float ks[ATS_D];
    __shared__ __align__(16) float vs[ATS_D];
    __shared__ __align__(16) float om[ATS_W][ATS_G][ATS_D];
    __shared__ float wml[ATS_W][ATS_G][2];
    __shared__ float part[ATS_G][ATS_D + 2]; // the block's partial: o, then m and l; read by the cluster
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    const int rank = blockIdx.x % ATS_S, pair = blockIdx.x / ATS_S;
    const int kh = pair % Hk, b = pair / Hk, G = H / Hk;
    // Before the wait: the position and this thread's rotary angle.
    int p = posp ? posp[b % npos] : pos;
    const int d = t % Dh;
    float c = 1.f, s = 0.f;
    if (d < dr) rot_angle(p, interleaved ? d >> 1 : (d < dr / 2 ? d : d - dr / 2), dr, base, &c, &s);
    pdl_wait();
    pdl_trigger();
    if (t < G * Dh) qs[t] = rot_apply(q + (long long)b * ldq + (long long)(kh * G + t / Dh) * Dh, d, dr, interleaved, c, s);
    if (t < Dh) {
        const long long src = (long long)b * ldkv + (long long)kh * Dh;
        const float kr = rot_apply(k + src, d, dr, interleaved, c, s), vr = v[src + d];
        ks[t] = kr;
        vs[t] = vr;
        if (rank == 0) {
            const long long dst = (((long long)b * maxT + p) * Hk + kh) * Dh + d;
            kc[dst] = kr;
            vc[dst] = vr;
        }
    }
    __syncthreads();
    const bool on = 4 * lane < Dh;
    float4 qr[ATS_G];
#pragma unroll
    for (int g = 0; g < ATS_G; g++)
        qr[g] = on && g < G ? ((const float4*)(qs + g * Dh))[lane] : make_float4(0.f, 0.f, 0.f, 0.f);
    float m[ATS_G], l[ATS_G];
    float4 o[ATS_G];
#pragma unroll
    for (int g = 0; g < ATS_G; g++) m[g] = -INFINITY, l[g] = 0.f, o[g] = make_float4(0.f, 0.f, 0.f, 0.f);
    const int n = p + 1;
    for (int j = rank * ATS_W + warp; j < n; j += ATS_S * ATS_W) {
        float4 kk = make_float4(0.f, 0.f, 0.f, 0.f), vv = kk;
        if (on) {
            if (j == p) {
                kk = ((const float4*)ks)[lane];
                vv = ((const float4*)vs)[lane];
            } else {
                const long long row = (((long long)b * maxT + j) * Hk + kh) * Dh;
                kk = __ldcg((const float4*)(kc + row) + lane);
                vv = __ldcg((const float4*)(vc + row) + lane);
            }
        }
        float sc[ATS_G];
#pragma unroll
        for (int g = 0; g < ATS_G; g++)
            sc[g] = ((qr[g].x * kk.x + qr[g].y * kk.y) + (qr[g].z * kk.z + qr[g].w * kk.w));
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
#pragma unroll
            for (int g = 0; g < ATS_G; g++) sc[g] += __shfl_xor_sync(0xffffffffu, sc[g], off);
        }
#pragma unroll
        for (int g = 0; g < ATS_G; g++) {
            if (g < G) {
                const float sg = sc[g] * scale;
                const float mn = fmaxf(m[g], sg);
                const float corr = expf(m[g] - mn), e = expf(sg - mn);
                l[g] = l[g] * corr + e;
                o[g].x = o[g].x * corr + e * vv.x;
                o[g].y = o[g].y * corr + e * vv.y;
                o[g].z = o[g].z * corr + e * vv.z;
                o[g].w = o[g].w * corr + e * vv.w;
                m[g] = mn;
            }
        }
    }
#pragma unroll
    for (int g = 0; g < ATS_G; g++) {
        if (g < G) {
            if (on) ((float4*)om[warp][g])[lane] = o[g];
            if (lane == 0) wml[warp][g][0] = m[g], wml[warp][g][1] = l[g];
        }
    }
    __syncthreads();
    if (t < G * Dh) { // this block's partial of output (g, d)
        const int g = t / Dh;
        float M = -INFINITY;
        for (int w = 0; w < ATS_W; w++)
            if (wml[w][g][1] > 0.f) M = fmaxf(M, wml[w][g][0]);
        float L = 0.f, acc = 0.f;
        for (int w = 0; w < ATS_W; w++) {
            const float f = wml[w][g][1] > 0.f ? expf(wml[w][g][0] - M) : 0.f;
            L += wml[w][g][1] * f;
            acc += om[w][g][d] * f;
        }
        part[g][d] = acc;
        if (d == 0) part[g][ATS_D] = M, part[g][ATS_D + 1] = L;
    }
    ats_cluster_sync();
    const int share = (G * Dh + ATS_S - 1) / ATS_S;
    if (t < share && rank * share + t < G * Dh) { // the cluster's merge of output (g, dd)
        const int idx = rank * share + t, g = idx / Dh, dd = idx % Dh;
        float ms[ATS_S], ls[ATS_S];
        float M = -INFINITY;
#pragma unroll
        for (int r = 0; r < ATS_S; r++) {
            ms[r] = ats_remote(&part[g][ATS_D], r);
            ls[r] = ats_remote(&part[g][ATS_D + 1], r);
            if (ls[r] > 0.f) M = fmaxf(M, ms[r]);
        }
        float L = 0.f, acc = 0.f;
#pragma unroll
        for (int r = 0; r < ATS_S; r++) {
            const float f = ls[r] > 0.f ? expf(ms[r] - M) : 0.f;
            L += ls[r] * f;
            acc += ats_remote(&part[g][dd], r) * f;
        }
        out[((long long)b * H + kh * G + g) * Dh + dd] = acc / L;
    }
    ats_cluster_sync(); // the partials stay until every block has read them
#else
    pdl_begin();
    __trap(); // clusters are Hopper's; the backend launches this only there
#endif
}
