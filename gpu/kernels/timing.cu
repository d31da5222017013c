// Bandwidth probes of compute.Timer: a 128-bit grid-stride copy (bytes read
// plus written) and a 128-bit streaming read whose per-block sums are
// stored so the loads cannot be optimised away.
#include "common.cuh"

extern "C" __global__ void copy_u4(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

extern "C" __global__ void read_u4(const uint4* __restrict__ src, unsigned int* __restrict__ sink, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    unsigned int acc = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 v = __ldcs(src + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicXor(sink + blockIdx.x, acc);
}
