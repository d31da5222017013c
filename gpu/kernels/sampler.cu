// The end of a decode step on the device (compute.SamplerOps): classifier-
// free guidance and Zonos' sampler, stage by stage as engine/sample does it
// on the host, with the same float32 roundings (no contraction into FMAs:
// explicit _rn intrinsics), double-precision exp/log and sums, a stable
// descending order for top-p (sequential float32 cumulative sum, as the
// host's loop) and the Philox4x32-10 noise of engine/sample.Philox, so that
// identical logits give identical tokens.
#include "common.cuh"

__device__ __forceinline__ float ninf() { return __int_as_float(0xff800000); }

// Words of one utterance's row of per-utterance sampler parameters
// (compute.RowSamplerOps params, I32 [n, ROW_WORDS]; float knobs as their
// bits), as compute.PutRowParams lays them out.
#define ROW_SEED 0
#define ROW_COUNTER 2
#define ROW_TEMPERATURE 4
#define ROW_TOPP 5
#define ROW_TOPK 6
#define ROW_MINP 7
#define ROW_LINEAR 8
#define ROW_CONF 9
#define ROW_QUAD 10
#define ROW_PENALTY 11
#define ROW_WINDOW 12
#define ROW_SCALE 13
#define ROW_PADFROM 14
#define ROW_ACTIVE 15
#define ROW_WORDS 16

// row_u64 reads the 64-bit value at words w, w+1 (low first) of a params row.
__device__ __forceinline__ unsigned long long row_u64(const int* pr, int w) {
    return (unsigned long long)(unsigned int)pr[w] | (unsigned long long)(unsigned int)pr[w + 1] << 32;
}

// guide: heads [2, R, W] → out [R, W] = u + (c − u)·scale; columns ≥ padFrom
// and (eosBias) column eos of rows r with r mod 9 ≠ 0 (codebooks 1–8 of
// each utterance) are −inf. When prm is not null (GuideRows) the rows of
// utterance r/9 take scale and padFrom from its params row instead.
extern "C" __global__ void guide(const float* __restrict__ heads, float* __restrict__ out, int R, int W,
                                 float scale, int padFrom, int eos, int eosBias, const int* __restrict__ prm) {
    pdl_begin();
    int n = R * W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float c = heads[i], u = heads[n + i];
        int col = i % W, row = i / W;
        float sc = scale;
        int pad = padFrom;
        if (prm) {
            const int* pr = prm + (row / 9) * ROW_WORDS;
            sc = __int_as_float(pr[ROW_SCALE]);
            pad = pr[ROW_PADFROM];
        }
        float v = __fadd_rn(u, __fmul_rn(__fsub_rn(c, u), sc));
        if (col >= pad || (eosBias && row % 9 != 0 && col == eos)) v = ninf();
        out[i] = v;
    }
}

// Philox4x32-10 block for counter c under key (k0, k1), as sample.PhiloxBlock.
__device__ __forceinline__ uint4 philox(unsigned long long c, unsigned int k0, unsigned int k1) {
    unsigned int x0 = (unsigned int)c, x1 = (unsigned int)(c >> 32), x2 = 0, x3 = 0;
#pragma unroll
    for (int r = 0; r < 10; r++) {
        unsigned int hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
        unsigned int hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
        unsigned int y0 = hi1 ^ x1 ^ k0, y1 = lo1, y2 = hi0 ^ x3 ^ k1, y3 = lo0;
        x0 = y0; x1 = y1; x2 = y2; x3 = y3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return make_uint4(x0, x1, x2, x3);
}

// philox_exp: q for element g of the noise grid: lane g%4 of block counter + g/4,
// −log((u>>8 + 1)/2²⁴) in double, rounded to float.
__device__ __forceinline__ float philox_exp(unsigned long long seed, unsigned long long counter, long long g) {
    uint4 b = philox(counter + (unsigned long long)(g >> 2), (unsigned int)seed, (unsigned int)(seed >> 32));
    unsigned int w = (g & 3) == 0 ? b.x : (g & 3) == 1 ? b.y : (g & 3) == 2 ? b.z : b.w;
    double u = ((double)(w >> 8) + 1.0) / 16777216.0;
    return (float)(-log(u));
}

// Block reductions (256 threads; every thread gets the result).
__device__ double bsum(double v, double* sd) {
    __syncthreads();
    v = warp_sum_d(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sd[warp] = v;
    __syncthreads();
    double t = 0;
    for (int i = 0; i < (int)(blockDim.x >> 5); i++) t += sd[i];
    __syncthreads();
    return t;
}

__device__ float bmax(float v, float* sf) {
    __syncthreads();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sf[warp] = v;
    __syncthreads();
    float t = sf[0];
    for (int i = 1; i < (int)(blockDim.x >> 5); i++) t = fmaxf(t, sf[i]);
    __syncthreads();
    return t;
}

// better: (v, i) beats (bv, bi) in "first index of the maximum", NaN never wins.
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
    if (v != v) return false;
    if (bi < 0 || bv != bv) return true;
    return v > bv || (v == bv && i < bi);
}

// bargmax: the host's Argmax: best = 0; v > row[best] → best = i. That is the
// first index of the largest non-NaN value, or 0 when row[0] is NaN.
__device__ int bargmax(const float* row, int W, float* sf, int* si) {
    float bv = 0.f;
    int bi = -1;
    for (int i = threadIdx.x; i < W; i += blockDim.x) {
        float v = row[i];
        if (better(v, i, bv, bi)) { bv = v; bi = i; }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi >= 0 && better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
    }
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sf[warp] = bv; si[warp] = bi; }
    __syncthreads();
    float tv = 0.f;
    int ti = -1;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        if (si[w] >= 0 && better(sf[w], si[w], tv, ti)) { tv = sf[w]; ti = si[w]; }
    __syncthreads();
    if (row[0] != row[0] || ti < 0) return 0;
    return ti;
}

// softmax_row: p = softmax(x / t) as sample.Softmax (x may alias p).
__device__ void softmax_row(const float* x, float* p, int W, float t, double* sd, float* sf) {
    float mx = ninf();
    for (int i = threadIdx.x; i < W; i += blockDim.x) mx = fmaxf(mx, __fdiv_rn(x[i], t));
    mx = bmax(mx, sf);
    double s = 0;
    for (int i = threadIdx.x; i < W; i += blockDim.x) {
        float e = (float)exp((double)__fsub_rn(__fdiv_rn(x[i], t), mx));
        p[i] = e;
        s += (double)e;
    }
    s = bsum(s, sd);
    for (int i = threadIdx.x; i < W; i += blockDim.x) p[i] = (float)((double)p[i] / s);
    __syncthreads();
}

__device__ void renormalise(float* p, int W, double* sd) {
    double s = 0;
    for (int i = threadIdx.x; i < W; i += blockDim.x) s += (double)p[i];
    s = bsum(s, sd);
    for (int i = threadIdx.x; i < W; i += blockDim.x) p[i] = (float)((double)p[i] / s);
    __syncthreads();
}

// sample_rows: one block of 256 threads per row r of logits [R, W].
// hist [R, H] (I32) or null; the penalty uses columns [hstart, H).
// probs [R, W] and order [R, W] (int) are scratch; out [R] the tokens;
// qn [R, W] is stored noise, or null for Philox noise from (seed, counter);
// when rng is not null, seed and counter are read from it instead
// ({seed lo, seed hi, counter lo, counter hi}: a graph replay's inputs).
// When prm is not null (SampleRows) row r belongs to utterance u = r/9 and
// every knob, the window, seed and counter come from u's params row: the
// arguments temp … penalty, hstart, qn, seed, counter and rng are ignored,
// a penalty of 1 skips the history, the noise index is the element's in
// u's own [9, W] grid, and an inactive row writes 0 and draws nothing.
extern "C" __global__ void __launch_bounds__(256) sample_rows(
    float* __restrict__ logits, const int* __restrict__ hist, int H, int hstart, float* __restrict__ probs,
    int* __restrict__ order, int* __restrict__ out, int W, float temp, float topP, int topK, float minP,
    float lin, float conf, float quad, float penalty, const float* __restrict__ qn, unsigned long long seed,
    unsigned long long counter, const unsigned int* __restrict__ rng, const int* __restrict__ prm) {
    pdl_begin();
    int r = blockIdx.x;
    long long g0 = (long long)r * W;  // the row's first element in the noise grid
    if (rng) {
        seed = (unsigned long long)rng[0] | (unsigned long long)rng[1] << 32;
        counter = (unsigned long long)rng[2] | (unsigned long long)rng[3] << 32;
    }
    if (prm) {
        const int* pr = prm + (r / 9) * ROW_WORDS;
        if (!pr[ROW_ACTIVE]) {
            if (threadIdx.x == 0) out[r] = 0;
            return;
        }
        seed = row_u64(pr, ROW_SEED);
        counter = row_u64(pr, ROW_COUNTER);
        temp = __int_as_float(pr[ROW_TEMPERATURE]);
        topP = __int_as_float(pr[ROW_TOPP]);
        topK = pr[ROW_TOPK];
        minP = __int_as_float(pr[ROW_MINP]);
        lin = __int_as_float(pr[ROW_LINEAR]);
        conf = __int_as_float(pr[ROW_CONF]);
        quad = __int_as_float(pr[ROW_QUAD]);
        penalty = __int_as_float(pr[ROW_PENALTY]);
        int win = pr[ROW_WINDOW];
        hstart = win > 0 && H > win ? H - win : 0;
        if (penalty == 1.f) hist = nullptr;
        qn = nullptr;
        g0 = (long long)(r % 9) * W;
    }
    __shared__ double sd[32];
    __shared__ float sf[32];
    __shared__ int si[32];
    float* x = logits + (long long)r * W;
    float* p = probs + (long long)r * W;
    int* ord = order + (long long)r * W;

    // repetition penalty: the thread of a token's first occurrence applies
    // penalty^n (multiplied once per occurrence, as the host's map does).
    if (hist) {
        const int* h = hist + (long long)r * H;
        for (int j = hstart + threadIdx.x; j < H; j += blockDim.x) {
            int tok = h[j];
            if (tok < 0) continue;
            if (tok > W - 1) tok = W - 1;
            bool first = true;
            for (int k = hstart; k < j && first; k++) {
                int t2 = h[k];
                if (t2 >= 0 && min(t2, W - 1) == tok) first = false;
            }
            if (!first) continue;
            float f = penalty;
            for (int k = j + 1; k < H; k++) {
                int t2 = h[k];
                if (t2 >= 0 && min(t2, W - 1) == tok) f = __fmul_rn(f, penalty);
            }
            float v = x[tok];
            x[tok] = v <= 0.f ? __fmul_rn(v, f) : __fdiv_rn(v, f);
        }
        __syncthreads();
    }
    if (!(temp > 0.f)) {
        int t = bargmax(x, W, sf, si);
        if (threadIdx.x == 0) out[r] = t;
        return;
    }
    softmax_row(x, p, W, temp, sd, sf);

    if (lin > 0.f) {  // unified: softmax(log p·(linear + H·conf) − (log p)²·quad)
        double ent = 0;
        for (int i = threadIdx.x; i < W; i += blockDim.x) {
            float v = p[i];
            float lp = (float)log((double)fmaxf(v, 1e-20f));
            x[i] = lp;
            ent -= (double)__fmul_rn(v, lp);
        }
        ent = bsum(ent, sd);
        float sc = __fadd_rn(lin, __fmul_rn((float)ent, conf));
        for (int i = threadIdx.x; i < W; i += blockDim.x) {
            float lp = x[i];
            x[i] = __fsub_rn(__fmul_rn(lp, sc), __fmul_rn(__fmul_rn(lp, lp), quad));
        }
        __syncthreads();
        softmax_row(x, p, W, 1.f, sd, sf);
    }

    if (topP > 0.f) {  // stable descending order, then the host's sequential cumsum
        for (int i = threadIdx.x; i < W; i += blockDim.x) {
            float v = p[i];
            int rank = 0;
            for (int j = 0; j < W; j++) {
                float u = p[j];
                rank += (u > v) || (u == v && j < i);
            }
            ord[rank] = i;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            float cum = 0.f;
            for (int k = 0; k < W; k++) {
                int i = ord[k];
                float v = p[i];
                cum = __fadd_rn(cum, v);
                ord[k] = __fsub_rn(cum, v) > topP ? -1 - i : i;  // −1−i: dropped
            }
        }
        __syncthreads();
        for (int k = threadIdx.x; k < W; k += blockDim.x)
            if (ord[k] < 0) p[-1 - ord[k]] = 0.f;
        __syncthreads();
        renormalise(p, W, sd);
    }

    if (topK > 0) {  // keep p_i iff fewer than k entries are strictly larger
        int k = min(topK, W);
        for (int i = threadIdx.x; i < W; i += blockDim.x) {
            float v = p[i];
            int gt = 0;
            for (int j = 0; j < W; j++) gt += p[j] > v;
            ord[i] = gt < k;
        }
        __syncthreads();
        for (int i = threadIdx.x; i < W; i += blockDim.x)
            if (!ord[i]) p[i] = 0.f;
        __syncthreads();
        renormalise(p, W, sd);
    }

    if (minP > 0.f) {
        float mx = 0.f;
        for (int i = threadIdx.x; i < W; i += blockDim.x) mx = fmaxf(mx, p[i]);
        mx = bmax(mx, sf);
        float cut = __fmul_rn(minP, mx);
        for (int i = threadIdx.x; i < W; i += blockDim.x)
            if (p[i] < cut) p[i] = 0.f;
        __syncthreads();
        renormalise(p, W, sd);
    }

    // draw: argmax(p / q), q ~ Exp(1) from Philox
    for (int i = threadIdx.x; i < W; i += blockDim.x) {
        long long g = g0 + i;
        float q = qn ? qn[g] : philox_exp(seed, counter, g);
        x[i] = __fdiv_rn(p[i], q);
    }
    __syncthreads();
    int t = bargmax(x, W, sf, si);
    if (threadIdx.x == 0) out[r] = t;
}

// step_feed: device-side token feedback (compute.GraphOps FeedAt). After a
// decode step's sampling it writes the next step's input in place, as the
// host's generate loop would: for utterance u (one thread each; n ≤ the
// block) the column the loop writes from the sampled tokens tok[9u…] —
// the EOS rule included: the first EOS on codebook 0 caps the remaining
// steps at 9 and from then on the column is MASK up to the closing
// codebook, then EOS — into the fed ids ([9, n] codebook-major), its
// repetition window rows shifted by one with the column appended, and its
// loop state (remaining, stopping) at fb. Thread 0 advances the position
// and the 64-bit Philox counter by inc. out[21u…] holds the raw tokens,
// the written column and the new (remaining, stopping, masked), for the
// host. masked, the third loop-state word, is how many trailing cells of
// the written column are MASK, not tokens: the columns of the codebook
// delay's ramp (column t < 9 holds MASK from codebook t on), whose leading
// cells take the tokens in order as the loop's write does; each step
// leaves one fewer. Columns with other known cells (an audio prefix, the
// tail beyond the last frame) are not handled: the host does not queue a
// step behind those.
extern "C" __global__ void step_feed(const int* __restrict__ tok, int* __restrict__ in, int* __restrict__ out, int n,
                                     int posOff, int rngOff, unsigned int inc, int histOff, int w, int fbOff, int eos,
                                     int mask) {
    pdl_begin();
    int u = threadIdx.x;
    if (u == 0) {
        in[posOff] += 1;
        unsigned long long c = (unsigned long long)(unsigned int)in[rngOff + 2] |
                               ((unsigned long long)(unsigned int)in[rngOff + 3] << 32);
        c += inc;
        in[rngOff + 2] = (int)(unsigned int)c;
        in[rngOff + 3] = (int)(unsigned int)(c >> 32);
    }
    if (u >= n) return;
    int t[9];
    for (int k = 0; k < 9; k++) t[k] = tok[9 * u + k];
    int rem = in[fbOff + 3 * u], stop = in[fbOff + 3 * u + 1], masked = in[fbOff + 3 * u + 2];
    for (int k = 0; k < 9; k++) out[21 * u + k] = t[k];
    if (t[0] == eos) {
        rem = min(rem, 9);
        stop = 1;
    }
    if (stop) {
        int idx = min(9 - rem, 8);
        for (int k = 0; k < idx; k++) t[k] = mask;
        t[idx] = eos;
    }
    rem -= 1;
    for (int k = 9 - masked; k < 9; k++) t[k] = mask;
    masked = max(masked - 1, 0);
    for (int k = 0; k < 9; k++) {
        in[k * n + u] = t[k];
        out[21 * u + 9 + k] = t[k];
        int* h = in + histOff + (9 * u + k) * w;
        for (int i = 0; i + 1 < w; i++) h[i] = h[i + 1];
        if (w > 0) h[w - 1] = t[k];
    }
    in[fbOff + 3 * u] = rem;
    in[fbOff + 3 * u + 1] = stop;
    in[fbOff + 3 * u + 2] = masked;
    out[21 * u + 18] = rem;
    out[21 * u + 19] = stop;
    out[21 * u + 20] = masked;
}
