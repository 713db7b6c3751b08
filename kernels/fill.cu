// Device-side fills: a counter-based hash (splitmix64 finaliser) of (seed, index) gives
// independent random words with no state, so any thread can make any element.
#include "fill.h"

#include <cuda_bf16.h>

namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ uint64_t hash2(uint64_t seed, uint64_t i) { return mix64(seed ^ mix64(i)); }

int grid_for(size_t n, int threads) {
  size_t blocks = (n + threads - 1) / threads;
  const size_t cap = 132 * 32;  // enough to fill any current GPU; the kernels are grid-stride
  if (blocks > cap) blocks = cap;
  return blocks == 0 ? 1 : (int)blocks;
}

__global__ void fill_bits_words(uint64_t *dst, size_t nwords, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nwords; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = hash2(seed, i);
}

__global__ void fill_bits_bytes(unsigned char *dst, size_t nbytes, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nbytes; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = (unsigned char)hash2(seed, i);
}

// Box-Muller on two 32-bit uniforms from one hash.
__device__ __forceinline__ float normal_at(uint64_t seed, size_t i) {
  uint64_t h = hash2(seed, i);
  float u1 = ((uint32_t)h + 1.0f) * (1.0f / 4294967296.0f);  // (0, 1]
  float u2 = (uint32_t)(h >> 32) * (1.0f / 4294967296.0f);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

__global__ void fill_normal_bf16(__nv_bfloat16 *dst, size_t n, uint64_t seed, float stddev, int channels,
                                 int every, int offset, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = normal_at(seed, i) * stddev;
    if (every > 0 && channels > 0 && (int)(i % channels) % every == offset) v *= scale;
    dst[i] = __float2bfloat16_rn(v);
  }
}

__global__ void fill_normal_f32(float *dst, size_t n, uint64_t seed, float mean, float stddev) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = mean + normal_at(seed, i) * stddev;
}

__global__ void fill_index(int32_t *dst, size_t n, uint64_t seed, int32_t bound) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = (int32_t)(hash2(seed, i) % (uint64_t)bound);
}

}  // namespace

extern "C" cudaError_t km_fill_random_bits(void *dst, size_t bytes, uint64_t seed, cudaStream_t stream) {
  const int threads = 256;
  size_t head = bytes;
  if (((uintptr_t)dst & 7u) == 0) {
    size_t nwords = bytes / 8;
    if (nwords) fill_bits_words<<<grid_for(nwords, threads), threads, 0, stream>>>((uint64_t *)dst, nwords, seed);
    head = bytes - nwords * 8;
    dst = (unsigned char *)dst + nwords * 8;
    seed = ~seed;
  }
  if (head) fill_bits_bytes<<<grid_for(head, threads), threads, 0, stream>>>((unsigned char *)dst, head, seed);
  return cudaGetLastError();
}

extern "C" cudaError_t km_fill_normal_bf16(uint16_t *dst, size_t n, uint64_t seed, float stddev, int channels,
                                           int outlier_every, int outlier_offset, float outlier_scale,
                                           cudaStream_t stream) {
  const int threads = 256;
  if (n) fill_normal_bf16<<<grid_for(n, threads), threads, 0, stream>>>((__nv_bfloat16 *)dst, n, seed, stddev, channels,
                                                                    outlier_every, outlier_offset, outlier_scale);
  return cudaGetLastError();
}

extern "C" cudaError_t km_fill_normal_f32(float *dst, size_t n, uint64_t seed, float mean, float stddev,
                                          cudaStream_t stream) {
  const int threads = 256;
  if (n) fill_normal_f32<<<grid_for(n, threads), threads, 0, stream>>>(dst, n, seed, mean, stddev);
  return cudaGetLastError();
}

extern "C" cudaError_t km_fill_random_index(int32_t *dst, size_t n, uint64_t seed, int32_t bound, cudaStream_t stream) {
  const int threads = 256;
  if (bound <= 0) return cudaErrorInvalidValue;
  if (n) fill_index<<<grid_for(n, threads), threads, 0, stream>>>(dst, n, seed, bound);
  return cudaGetLastError();
}
