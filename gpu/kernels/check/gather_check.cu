// gather_check: a host program (no GPU needed) that checks conv_tile's
// incremental gather (ConvGather in tc.cu) against the direct definition
// of the convolutions' implicit-GEMM operands, for every thread, tile and
// k step of many random geometries (strided, dilated, transposed, batched,
// split along K, every tile width). Built and run by TestGatherCheck when
// nvcc is installed: nvcc -o gather_check gather_check.cu && ./gather_check
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../tc.cu"

// refA and refB are gather_a and gather_b's convolution cases.
static float refA(const Problem& p, int gm, int gk, int k_hi) {
    if (gm >= p.M || gk >= k_hi) return 0.f;
    if (p.mode == TC_CONV) return ((const float*)p.w)[(long long)gm * p.Kr + gk];
    int ci = gk / p.J, j = gk % p.J;
    return ((const float*)p.w)[((long long)ci * p.Cout + gm) * p.Kw + p.rho + j * p.stride];
}

// checkPrep: every word conv_prep_a writes (conv_prep_value) is the
// weight that conv_tile's fragment load of that slot stands for: fragment
// (warp row half w, block i, k step q), lane (g, c), slot e at row
// m0 + 32w + 16i + g + 8·(e & 1), k k0 + 8q + c + 4·(e >> 1) (the layout of
// a[0], a[8], a[4·LDA], a[4·LDA + 8] in conv_tc's A tile).
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
        total += checkPrep(p, what);
        cases++;
    }
    printf("ok: %d geometries, %ld gathered and prepared values equal the definition\n", cases, total);
    return 0;
}
