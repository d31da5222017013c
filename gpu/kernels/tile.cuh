// The fp32 SIMT tile of the implicit-GEMM convolutions (audio.cu's
// conv_gemm, speaker.cu's conv2d_gemm): out[m, n] = Σ_r A[m, r]·B[r, n]
// for a block's 64 × 64 outputs, 256 threads.
#pragma once

#define ST_M 64
#define ST_N 64
#define ST_K 16

// simt_tile sums the block's tile into acc: thread (tx, ty) = (tid mod 16,
// tid / 16) owns rows ty·4 … ty·4+3 and columns tx·4 … tx·4+3. For each
// 16-wide k step r0 the block stages a(r, m) for rows m < 64 and b(r, n)
// for columns n < 64 (r = r0 … r0+15, m and n relative to the tile) in
// shared memory; the functors return the operand, or 0 past the reduction
// R or the tile's edge. Each output is then a chain of fused multiply-adds
// from +0 over r = 0 … R−1 in order (the last step's padding adds 0·0,
// which leaves it unchanged), the same wherever the output lies, so a
// window of a longer signal reproduces the long result.
template <class AOp, class BOp>
__device__ __forceinline__ void simt_tile(int R, AOp a_at, BOp b_at, float (&acc)[4][4]) {
    __shared__ float Ws[ST_K][ST_M + 4];
    __shared__ float Xs[ST_K][ST_N + 4];
    int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
    for (int r0 = 0; r0 < R; r0 += ST_K) {
        for (int i = threadIdx.x; i < ST_M * ST_K; i += 256) {
            int rr = i % ST_K, m = i / ST_K;
            Ws[rr][m] = a_at(r0 + rr, m);
        }
        for (int i = threadIdx.x; i < ST_N * ST_K; i += 256) {
            int nn = i % ST_N, rr = i / ST_N;
            Xs[rr][nn] = b_at(r0 + rr, nn);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < ST_K; kk++) {
            float a[4], c[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = Ws[kk][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; j++) c[j] = Xs[kk][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], c[j], acc[i][j]);
        }
        __syncthreads();
    }
}
