// Mean pooling of K and V on the write path (see compress.h). Thread per output vector (8 bf16 of one
// entry row, all heads of an entry being one contiguous row of kv_heads x head_dim): it loads the RATIO
// input vectors of K and of V (a stride of one token row apart, so neighbouring threads read neighbouring
// 16 bytes) and U such outputs, 8 / RATIO, so every thread has 16 loads of 16 bytes in flight.
#include "compress.h"

#include <cuda_bf16.h>

#include "paged_gather.h"

namespace {

constexpr int kThreads = 256;

struct PoolArgs {
  const uint4 *k, *v;
  uint4 *kp, *vp;
  const int32_t *table;
  uint32_t total;  // output vectors of K (V has as many)
  uint32_t row_vecs;
  km_paged_divmod by_row, by_entries, by_block;
  int tokens, entries, block_size, bps;
};

template <int RATIO>
__device__ __forceinline__ uint4 mean_of(const uint4 (&in)[RATIO]) {
  float acc[8];
  const float scale = 1.0f / RATIO;
#pragma unroll
  for (int i = 0; i < RATIO; ++i) {
    const uint32_t w[4] = {in[i].x, in[i].y, in[i].z, in[i].w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float lo = __uint_as_float(w[q] << 16), hi = __uint_as_float(w[q] & 0xffff0000u);
      acc[2 * q] = i == 0 ? lo : acc[2 * q] + lo;  // token order, as the CPU reference
      acc[2 * q + 1] = i == 0 ? hi : acc[2 * q + 1] + hi;
    }
  }
  uint32_t o[4];
#pragma unroll
  for (int q = 0; q < 4; ++q)
    o[q] = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(acc[2 * q] * scale)) |
           ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(acc[2 * q + 1] * scale)) << 16);
  return make_uint4(o[0], o[1], o[2], o[3]);
}

template <int RATIO>
__global__ __launch_bounds__(kThreads) void pool_kernel(PoolArgs a) {
  constexpr int U = 8 / RATIO;
  const uint32_t first = blockIdx.x * (uint32_t)(kThreads * U) + threadIdx.x;
  uint4 kin[U][RATIO], vin[U][RATIO];
  size_t dst[U];
  bool ok[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t g = first + u * kThreads;
    ok[u] = g < a.total;
    const uint32_t gg = ok[u] ? g : 0u;
    const uint32_t row = km_paged_div(a.by_row, gg), w = gg - row * a.row_vecs;
    const uint32_t b = km_paged_div(a.by_entries, row), e = row - b * a.entries;
    const uint32_t blk = km_paged_div(a.by_block, e);
    const int64_t id = __ldg(a.table + (size_t)b * a.bps + blk);
    dst[u] = ((size_t)id * a.block_size + (e - blk * a.block_size)) * a.row_vecs + w;
    const size_t src = ((size_t)b * a.tokens + (size_t)e * RATIO) * a.row_vecs + w;
#pragma unroll
    for (int i = 0; i < RATIO; ++i) {
      kin[u][i] = __ldg(a.k + src + (size_t)i * a.row_vecs);
      vin[u][i] = __ldg(a.v + src + (size_t)i * a.row_vecs);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (ok[u]) {
      a.kp[dst[u]] = mean_of<RATIO>(kin[u]);
      a.vp[dst[u]] = mean_of<RATIO>(vin[u]);
    }
}

}  // namespace

extern "C" cudaError_t km_compress_mean(const km_compress_shape *s, const uint16_t *k_new, const uint16_t *v_new,
                                        uint16_t *k_pool, uint16_t *v_pool, const int32_t *table,
                                        cudaStream_t stream) {
  if (!s || km_compress_shape_error(s) || !k_new || !v_new || !k_pool || !v_pool || !table) return cudaErrorInvalidValue;
  if ((((uintptr_t)k_new | (uintptr_t)v_new | (uintptr_t)k_pool | (uintptr_t)v_pool) & 15u) != 0)
    return cudaErrorInvalidValue;
  PoolArgs a;
  a.k = reinterpret_cast<const uint4 *>(k_new);
  a.v = reinterpret_cast<const uint4 *>(v_new);
  a.kp = reinterpret_cast<uint4 *>(k_pool);
  a.vp = reinterpret_cast<uint4 *>(v_pool);
  a.table = table;
  a.row_vecs = (uint32_t)(s->kv_heads * s->head_dim / 8);
  a.entries = km_compress_entries(s);
  a.total = (uint32_t)((long long)s->batch * a.entries * a.row_vecs);
  a.by_row = km_paged_divmod_make(a.row_vecs);
  a.by_entries = km_paged_divmod_make((uint32_t)a.entries);
  a.by_block = km_paged_divmod_make((uint32_t)s->block_size);
  a.tokens = s->tokens;
  a.block_size = s->block_size;
  a.bps = s->blocks_per_seq;
  const int per_cta = kThreads * (8 / s->ratio);
  const unsigned blocks = (unsigned)(((uint64_t)a.total + per_cta - 1) / per_cta);
  switch (s->ratio) {
    case 2: pool_kernel<2><<<blocks, kThreads, 0, stream>>>(a); break;
    case 4: pool_kernel<4><<<blocks, kThreads, 0, stream>>>(a); break;
    default: pool_kernel<8><<<blocks, kThreads, 0, stream>>>(a); break;
  }
  return cudaGetLastError();
}
