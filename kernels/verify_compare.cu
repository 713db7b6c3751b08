// The device comparisons of kernels/verify_compare.h: one thread per element in a grid-stride loop, an
// atomic count, and the first few mismatches kept by the slot the count hands out.
#include "verify_compare.h"
#include "verify_diff.cuh"

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;  // a fixed grid: no device query, the loop covers any size

unsigned blocks_for(size_t n) {
  size_t g = (n + kThreads - 1) / kThreads;
  if (g > kMaxBlocks) g = kMaxBlocks;
  return g == 0 ? 1u : (unsigned)g;
}

__device__ __forceinline__ uint32_t load_elem(const unsigned char *p, size_t i, int elem_bytes) {
  if (elem_bytes == 1) return p[i];
  if (elem_bytes == 2) return reinterpret_cast<const uint16_t *>(p)[i];
  return reinterpret_cast<const uint32_t *>(p)[i];
}

__global__ void compare_kernel(const unsigned char *got, const unsigned char *want, size_t n, int elem_bytes,
                               size_t stride, int max_ulp, km_diff *d) {
  for (size_t i = blockIdx.x * (size_t)kThreads + threadIdx.x; i < n; i += (size_t)gridDim.x * kThreads) {
    const uint32_t g = load_elem(got, i * stride, elem_bytes), w = load_elem(want, i * stride, elem_bytes);
    if (km_verify_differs(g, w, elem_bytes, max_ulp)) km_diff_record(d, i, g, w);
  }
}

__global__ void close_kernel(const float *got, const float *want, const float *mag, size_t n, float rel_tol,
                             km_diff *d) {
  for (size_t i = blockIdx.x * (size_t)kThreads + threadIdx.x; i < n; i += (size_t)gridDim.x * kThreads) {
    const float g = got[i], w = want[i];
    if (!(fabsf(g - w) <= rel_tol * mag[i])) km_diff_record(d, i, __float_as_uint(g), __float_as_uint(w));
  }
}

// One thread per group of 8 codes (3 bytes of both): group g holds elements 8g .. 8g + 7, which is row * d + i
// for d a multiple of 8, since rows are whole groups.
__global__ void codes3_kernel(const uint8_t *got, const uint8_t *want, size_t groups, km_diff *far, km_diff *near) {
  for (size_t g = blockIdx.x * (size_t)kThreads + threadIdx.x; g < groups; g += (size_t)gridDim.x * kThreads) {
    const uint8_t *gg = got + 3 * g, *wg = want + 3 * g;
    if (gg[0] == wg[0] && gg[1] == wg[1] && gg[2] == wg[2]) continue;
    for (int j = 0; j < 8; ++j) {
      const uint32_t c = km_verify_code3(gg, j), w = km_verify_code3(wg, j);
      const int dist = km_verify_code3_distance(c, w);
      if (dist) km_diff_record(dist == 1 ? near : far, 8 * g + j, c, w);
    }
  }
}

bool aligned(const void *p, int bytes) { return ((uintptr_t)p % (uintptr_t)bytes) == 0; }

}  // namespace

extern "C" cudaError_t km_verify_compare(const void *got, const void *want, size_t n, int elem_bytes, size_t stride,
                                         int max_ulp, km_diff *diff, cudaStream_t stream) {
  if ((elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4) || stride == 0 || !diff || !aligned(got, elem_bytes) ||
      !aligned(want, elem_bytes))
    return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  compare_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const unsigned char *>(got),
                                                         static_cast<const unsigned char *>(want), n, elem_bytes,
                                                         stride, max_ulp, diff);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_compare_close(const float *got, const float *want, const float *mag, size_t n,
                                               float rel_tol, km_diff *diff, cudaStream_t stream) {
  if (!diff) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  close_kernel<<<blocks_for(n), kThreads, 0, stream>>>(got, want, mag, n, rel_tol, diff);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_compare_codes3(const uint8_t *got, const uint8_t *want, size_t rows, int d,
                                                km_diff *far, km_diff *near, cudaStream_t stream) {
  if (d <= 0 || d % 8) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (!got || !want || !far || !near) return cudaErrorInvalidValue;
  const size_t groups = rows * (size_t)(d / 8);
  codes3_kernel<<<blocks_for(groups), kThreads, 0, stream>>>(got, want, groups, far, near);
  return cudaGetLastError();
}
