// What the quantize / dequantize kernels share: a (token, head) row of head_dim values is spread over TPR
// lanes of a warp, so one warp instruction covers 32 / TPR consecutive rows; a warp takes U such row groups
// per trip of a grid-stride loop, loading all of them before using any (bytes in flight). Also the bf16
// <-> fp32 conversions and the checks and head_dim dispatch of the host entry points.
#ifndef KM_QUANT_ROWS_CUH
#define KM_QUANT_ROWS_CUH

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace kmq {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kThreads = 256;

// Blocks of `kernel` one SM holds at once (its registers and shared memory decide): asked once, when a
// plan is made, never by a launch (the launch sits between the timing events).
template <typename Kernel>
cudaError_t blocks_per_sm(Kernel kernel, int *out) {
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(out, kernel, kThreads, 0);
  if (e == cudaSuccess && *out < 1) *out = 1;
  return e;
}

// Blocks for a grid-stride loop where each warp takes `rows_per_warp` rows per trip. max_waves = 0: one
// trip per warp, as many blocks as the rows need, and the hardware hands them to SMs as SMs free up.
// max_waves = N: at most N times `resident` (the blocks the SMs hold at once, from the caller's plan),
// for kernels that pay a per-block set-up. Measured on the H200 (% of the copy ceiling, one persistent
// wave -> one trip per warp): fp8 quantize 91 -> 99.5, fp8 dequantize 88 -> 93, uniform 3-bit
// dequantize 85 -> 92; a static split leaves the kernel waiting on its slowest SM. TurboQuant, which
// fills a shared table per block, and the uniform 3-bit quantize do best at 4-8 waves.
inline int grid_for_rows(size_t resident, size_t rows, int rows_per_warp, int max_waves) {
  const size_t warps = (rows + rows_per_warp - 1) / rows_per_warp;
  size_t blocks = (warps + kThreads / 32 - 1) / (kThreads / 32);
  if (max_waves > 0) {
    const size_t cap = (resident > 0 ? resident : 1) * (size_t)max_waves;
    if (blocks > cap) blocks = cap;
  }
  const size_t max_grid = 0x7fffffff;
  return blocks == 0 ? 1 : (int)(blocks < max_grid ? blocks : max_grid);
}

// This lane's place in the walk: lane `part` of row group `sub`; trips start at `first` and advance by
// `step`, warp-uniform, so shuffles inside a trip always see the full warp.
template <int TPR, int U>
struct RowWalk {
  static constexpr int kRowsPerWarp = 32 / TPR;
  int sub, part;
  size_t first, step;

  __device__ __forceinline__ RowWalk() {
    const int lane = threadIdx.x & 31;
    sub = lane / TPR;
    part = lane % TPR;
    first = (((size_t)blockIdx.x * kThreads + threadIdx.x) >> 5) * (kRowsPerWarp * U);
    step = (((size_t)gridDim.x * kThreads) >> 5) * (kRowsPerWarp * U);
  }
  // The row this lane works on in group u of the trip that starts at base.
  __device__ __forceinline__ size_t row(size_t base, int u) const { return base + u * kRowsPerWarp + sub; }
  static int grid(size_t resident, size_t rows, int max_waves) {
    return grid_for_rows(resident, rows, kRowsPerWarp * U, max_waves);
  }
};

// The U rows of a trip, N 16-byte chunks per lane: chunk k of lane `part` is chunk part + TPR * k of its
// row (rows of N * TPR chunks), streamed past L1 and L2 (__ldcs). Rows past the end read as zeros.
template <int TPR, int U, int N>
__device__ __forceinline__ void load_rows(const uint4 *__restrict__ src, const RowWalk<TPR, U> &w, size_t base,
                                          size_t rows, uint4 (&in)[U][N]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t row = w.row(base, u);
#pragma unroll
    for (int k = 0; k < N; ++k)
      in[u][k] = row < rows ? __ldcs(src + row * (N * TPR) + w.part + TPR * k) : make_uint4(0, 0, 0, 0);
  }
}

__device__ __forceinline__ void bf16x8_to_f32(const uint4 v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ uint32_t f32x2_to_bf16x2(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // lo lands in the low 16 bits
  uint32_t r;
  memcpy(&r, &h, sizeof r);
  return r;
}

__device__ __forceinline__ uint4 f32x8_to_bf16x8(const float (&f)[8]) {
  return make_uint4(f32x2_to_bf16x2(f[0], f[1]), f32x2_to_bf16x2(f[2], f[3]), f32x2_to_bf16x2(f[4], f[5]),
                    f32x2_to_bf16x2(f[6], f[7]));
}

// Rows of a (tokens x heads) tensor with the head_dim the kernels take (64, 128, 256) and whose row
// index fits 32 bits (the kernels' row arithmetic). cudaSuccess with *rows set, else cudaErrorInvalidValue.
inline cudaError_t rows_of(size_t tokens, int heads, int head_dim, size_t *rows) {
  if (heads <= 0 || (head_dim != 64 && head_dim != 128 && head_dim != 256)) return cudaErrorInvalidValue;
  if (tokens > ((size_t)1 << 32) / (size_t)heads) return cudaErrorInvalidValue;
  *rows = tokens * (size_t)heads;
  return *rows < ((size_t)1 << 32) ? cudaSuccess : cudaErrorInvalidValue;
}

// The checks and the head_dim dispatch of every entry point: rows = tokens x heads (rows_of); nothing to
// do for zero rows; else launch(std::integral_constant<int, TPR>, rows) with TPR = L64, 2 L64 or 4 L64 for
// head_dim 64, 128, 256 (L64: lanes per row at head_dim 64), then the launch's error.
template <int L64, typename Launch>
cudaError_t for_rows(size_t tokens, int heads, int head_dim, Launch &&launch) {
  size_t rows = 0;
  const cudaError_t e = rows_of(tokens, heads, head_dim, &rows);
  if (e != cudaSuccess || rows == 0) return e;
  if (head_dim == 64) launch(std::integral_constant<int, L64>{}, rows);
  else if (head_dim == 128) launch(std::integral_constant<int, 2 * L64>{}, rows);
  else launch(std::integral_constant<int, 4 * L64>{}, rows);
  return cudaGetLastError();
}

}  // namespace kmq

#endif
