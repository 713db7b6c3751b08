/* Reference GEMM and comparison for the prefill rows. The GEMM is the textbook shared-memory tiling: a
 * 64 x 64 output tile per block, k in steps of 16, 4 x 4 outputs per thread, every bound checked, so any
 * shape works. It runs a few percent of cuBLASLt's speed, which is fine for a check run once per case. */
#include "prefill_gemm_ref.h"

namespace {

constexpr int kTile = 64, kStep = 16, kThreads = 256, kPerThread = 4;

__device__ float bf16_bits_to_float(uint16_t bits) { return __uint_as_float((unsigned)bits << 16); }

__global__ void gemm_ref(const uint16_t *__restrict__ in, const uint16_t *__restrict__ weight, float *__restrict__ ref,
                         float *__restrict__ abs_sum, int tokens, int n, int k) {
  __shared__ float xs[kStep][kTile + 1]; /* xs[kk][row]: +1 keeps the column reads off one bank */
  __shared__ float ws[kStep][kTile + 1]; /* ws[kk][col] */
  const size_t b = blockIdx.z;
  in += b * (size_t)tokens * k;
  weight += b * (size_t)n * k;
  ref += b * (size_t)tokens * n;
  abs_sum += b * (size_t)tokens * n;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const int tr = threadIdx.x / (kTile / kPerThread), tc = threadIdx.x % (kTile / kPerThread);
  float acc[kPerThread][kPerThread] = {}, mag[kPerThread][kPerThread] = {};
  for (int k0 = 0; k0 < k; k0 += kStep) {
    for (int i = threadIdx.x; i < kTile * kStep; i += kThreads) {
      const int r = i / kStep, kk = i % kStep, gk = k0 + kk;
      const int gr = row0 + r, gc = col0 + r;
      xs[kk][r] = gr < tokens && gk < k ? bf16_bits_to_float(in[(size_t)gr * k + gk]) : 0.0f;
      ws[kk][r] = gc < n && gk < k ? bf16_bits_to_float(weight[(size_t)gc * k + gk]) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kStep; kk++) {
      float a[kPerThread], w[kPerThread];
      for (int i = 0; i < kPerThread; i++) a[i] = xs[kk][tr * kPerThread + i];
      for (int j = 0; j < kPerThread; j++) w[j] = ws[kk][tc * kPerThread + j];
      for (int i = 0; i < kPerThread; i++)
        for (int j = 0; j < kPerThread; j++) {
          const float p = a[i] * w[j];
          acc[i][j] += p;
          mag[i][j] += fabsf(p);
        }
    }
    __syncthreads();
  }
  for (int i = 0; i < kPerThread; i++)
    for (int j = 0; j < kPerThread; j++) {
      const int r = row0 + tr * kPerThread + i, c = col0 + tc * kPerThread + j;
      if (r < tokens && c < n) {
        ref[(size_t)r * n + c] = acc[i][j];
        abs_sum[(size_t)r * n + c] = mag[i][j];
      }
    }
}

__global__ void compare(const uint16_t *__restrict__ got, const float *__restrict__ ref,
                        const float *__restrict__ abs_sum, size_t count, float rel, float share,
                        unsigned long long *bad, unsigned long long *first_bad) {
  unsigned long long mine = 0, lowest = count;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
    const float g = bf16_bits_to_float(got[i]), r = ref[i];
    const bool ok = fabsf(g - r) <= rel * fabsf(r) + share * abs_sum[i]; /* false for NaN */
    if (!ok) {
      mine++;
      if (i < lowest) lowest = i;
    }
  }
  if (mine) {
    atomicAdd(bad, mine);
    atomicMin(first_bad, lowest);
  }
}

__global__ void compare_init(unsigned long long *bad, unsigned long long *first_bad, size_t count) {
  *bad = 0;
  *first_bad = count;
}

}  // namespace

extern "C" cudaError_t km_gemm_ref_bf16(const uint16_t *in, const uint16_t *weight, float *ref, float *abs_sum,
                                        int tokens, int n, int k, int batch, cudaStream_t stream) {
  if (tokens <= 0 || n <= 0 || k <= 0 || batch <= 0) return cudaErrorInvalidValue;
  const dim3 grid((unsigned)((n + kTile - 1) / kTile), (unsigned)((tokens + kTile - 1) / kTile), (unsigned)batch);
  gemm_ref<<<grid, kThreads, 0, stream>>>(in, weight, ref, abs_sum, tokens, n, k);
  return cudaGetLastError();
}

extern "C" cudaError_t km_gemm_compare_bf16(const uint16_t *got, const float *ref, const float *abs_sum, size_t count,
                                            float rel, float share, unsigned long long *bad,
                                            unsigned long long *first_bad, cudaStream_t stream) {
  compare_init<<<1, 1, 0, stream>>>(bad, first_bad, count);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || count == 0) return e;
  const int threads = 256;
  size_t blocks = (count + threads - 1) / threads;
  if (blocks > 65536) blocks = 65536;
  compare<<<(unsigned)blocks, threads, 0, stream>>>(got, ref, abs_sum, count, rel, share, bad, first_bad);
  return cudaGetLastError();
}
