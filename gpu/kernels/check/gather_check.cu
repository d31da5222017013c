// gather_check: a host program (no GPU needed) that checks conv_tcq's
// operand layouts (tc.cu) against the direct definition of the
// convolutions' implicit-GEMM operands for many random geometries
// (strided, dilated, transposed, batched, split along K or folded, the
// DAC's own): every value ConvRowGather copies into a block's input tile,
// for every thread, block and k step, and every word conv_prep_a writes
// (conv_prep_value). Built and run by TestGatherCheck when nvcc is
// installed: nvcc -o gather_check gather_check.cu && ./gather_check
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../tc.cu"

// refA and refB are gather_a and gather_b's convolution cases: the
// implicit GEMM's A (weights) and B (input) by their definition.
static float refA(const Problem& p, int gm, int gk, int k_hi) {
    if (gm >= p.M || gk >= k_hi) return 0.f;
    if (p.mode == TC_CONV) return ((const float*)p.w)[(long long)gm * p.Kr + gk];
    int ci = gk / p.J, j = gk % p.J;
    return ((const float*)p.w)[((long long)ci * p.Cout + gm) * p.Kw + p.rho + j * p.stride];
}

static float refB(const Problem& p, int gn, int gk, int k_hi) {
    if (gk >= k_hi) return 0.f;
    if (p.mode == TC_CONV) {
        if (gn >= p.Tout) return 0.f;
        int ci = gk / p.Kw, kw = gk % p.Kw;
        int q = gn * p.stride + kw * p.dil - p.pad;
        return q >= 0 && q < p.T ? p.xb[(long long)ci * p.T + q] : 0.f;
    }
    if (gn >= p.Nph) return 0.f;
    int ci = gk / p.J, j = gk % p.J;
    int q = gn + p.cph - j;
    return q >= 0 && q < p.T ? p.xb[(long long)ci * p.T + q] : 0.f;
}

// checkRows: every value conv_tcq_tile's ConvRowGather copies is refB's,
// for every block of the grid (z = (batch item · phases + ρ) · splits +
// split; splits = 1 folds the whole reduction into each block), every
// thread (k row tid / 8 of each 16-wide step, columns tid mod 8 + 8c of
// the TN-wide tile) and every k step.
template <int TN>
static long checkRows(Problem p, int splits, int kchunk, int batch, const char* what) {
    constexpr int NPER = TN / 8;
    int phases = p.mode == TC_CONVT ? p.stride : 1;
    long checked = 0;
    for (int z = 0; z < batch * phases * splits; z++)
        for (int n0 = 0; n0 < p.N; n0 += TN) {
            // conv_tcq_tile's prologue
            Problem q = p;
            if (!block_tile_z(q, splits, n0, z)) continue;
            long long total;
            const BlockK kr = block_span(q, splits, kchunk, true, z, batch * phases * splits, total);
            const int k_lo = kr.k_lo, k_hi = kr.k_hi;
            int steps = k_lo < k_hi ? (k_hi - k_lo + CV_K - 1) / CV_K : 0;
            for (int tid = 0; tid < TC_THREADS; tid++) {
                int row = tid >> 3, c0 = tid & 7;
                ConvRowGather<NPER> g;
                g.init(q, n0, row, c0, k_lo, k_hi);
                for (int i = 0; i < steps; i++) {
                    bool rin = g.rin();
                    int q0 = g.q0();
                    const float* src = g.src(q0);
                    for (int c = 0; c < NPER; c++) {
                        float got = g.inside(rin, q0, c) ? src[c * g.cs8] : 0.f;
                        float want = refB(q, n0 + c0 + 8 * c, k_lo + CV_K * i + row, k_hi);
                        if (got != want) {
                            printf("FAIL %s TN %d splits %d z %d n0 %d tid %d step %d: column %d got %g want %g\n", what,
                                   TN, splits, z, n0, tid, i, c0 + 8 * c, got, want);
                            exit(1);
                        }
                        checked++;
                    }
                    g.next();
                }
            }
        }
    return checked;
}

// checkPrep: every word conv_prep_a writes (conv_prep_value) is the
// weight that TcqFrag's fragment load of that slot stands for: fragment
// (warp row half w, block i, k step q), lane (g, c), slot e at row
// m0 + 32w + 16i + g + 8·(e & 1), k k0 + 8q + c + 4·(e >> 1) (the m16n8k8
// TF32 A fragment's slots (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)).
static long checkPrep(Problem p, const char* what) {
    int phases = p.mode == TC_CONVT ? p.stride : 1;
    int mtiles = (p.M + CV_M - 1) / CV_M, ksteps = (p.Kr + CV_K - 1) / CV_K;
    long checked = 0;
    for (int rho = 0; rho < phases; rho++)
        for (int mt = 0; mt < mtiles; mt++)
            for (int ks = 0; ks < ksteps; ks++)
                for (int w = 0; w < 2; w++)
                    for (int i = 0; i < 2; i++)
                        for (int q = 0; q < 2; q++)
                            for (int lane = 0; lane < 32; lane++)
                                for (int e = 0; e < 4; e++) {
                                    int f = (w * 2 + i) * 2 + q, pos = (f * 32 + lane) * 4 + e;
                                    int m = mt * CV_M + 32 * w + 16 * i + (lane >> 2) + 8 * (e & 1);
                                    int k = ks * CV_K + 8 * q + (lane & 3) + 4 * (e >> 1);
                                    Problem r = p;
                                    r.rho = rho, r.J = p.mode == TC_CONVT ? p.Kw / p.stride : 1;
                                    float want = refA(r, m, k, p.Kr);
                                    float got = conv_prep_value((const float*)p.w, p.mode, p.M, p.Kr, p.Cout, p.Kw,
                                                                p.stride, rho, mt, ks, pos);
                                    if (got != want) {
                                        printf("FAIL %s: prepared A ρ %d tile %d k step %d word %d got %g want %g\n", what,
                                               rho, mt, ks, pos, got, want);
                                        exit(1);
                                    }
                                    checked++;
                                }
    return checked;
}

int main() {
    srand(7);
    long total = 0;
    int cases = 0;
    // 60 random geometries, then the DAC's own strides and dilations
    // (transposed stride 8, kernel 16, padding 4; kernel 7, dilation 9)
    // on fewer channels.
    for (int c = 0; c < 64; c++) {
        bool convt = c < 60 ? c % 3 == 2 : c % 2 == 0;
        bool dac = c >= 60;
        int batch = 1 + rand() % 2;
        Problem p = {};
        p.Cin = 1 + rand() % 40, p.Cout = 1 + rand() % 150;
        p.T = 1 + rand() % 90;
        if (convt) {
            p.stride = dac ? 8 : 1 + rand() % 5;
            p.Kw = p.stride * (dac ? 2 : 1 + rand() % 3);
            p.pad = dac ? 4 : rand() % (p.stride + 1);
            p.dil = 1;
            p.Tout = (p.T - 1) * p.stride - 2 * p.pad + p.Kw;
            if (p.Tout < 1) continue;
            p.mode = TC_CONVT;
            p.Kr = p.Cin * (p.Kw / p.stride);
            p.N = (p.Tout + p.stride - 1) / p.stride + 1;
        } else {
            p.Kw = dac ? 7 : 1 + rand() % 7, p.dil = dac ? 9 : 1 + rand() % 3, p.stride = dac ? 1 : 1 + rand() % 2;
            p.pad = dac ? 27 : rand() % (p.dil * (p.Kw - 1) / 2 + 1);
            p.Tout = (p.T + 2 * p.pad - p.dil * (p.Kw - 1) - 1) / p.stride + 1;
            if (p.Tout < 1) continue;
            p.mode = TC_CONV;
            p.Kr = p.Cin * p.Kw;
            p.N = p.Tout;
        }
        p.M = p.Cout;
        std::vector<float> x((size_t)batch * p.Cin * p.T), w((size_t)p.Cin * p.Cout * p.Kw);
        for (size_t i = 0; i < x.size(); i++) x[i] = (float)(i + 1);
        for (size_t i = 0; i < w.size(); i++) w[i] = -(float)(i + 1);
        p.x = x.data(), p.w = w.data();
        int kchunk = 32 * (1 + rand() % 4);
        int splits = (p.Kr + kchunk - 1) / kchunk;
        char what[160];
        snprintf(what, sizeof what, "%s Cin %d Cout %d Kw %d T %d stride %d pad %d dil %d batch %d chunk %d",
                 convt ? "convT" : "conv", p.Cin, p.Cout, p.Kw, p.T, p.stride, p.pad, p.dil, batch, kchunk);
        total += checkRows<32>(p, splits, kchunk, batch, what);
        total += checkRows<32>(p, 1, kchunk, batch, what);
        total += checkPrep(p, what);
        cases++;
    }
    printf("ok: %d geometries, %ld gathered and prepared values equal the definition\n", cases, total);
    return 0;
}
