// Block-table gather/scatter between a KV pool and one contiguous run, in 16-byte accesses. The same
// kernel serves a device staging buffer and mapped pinned host memory: only the pointer differs.
#include "offload_copy.h"

namespace {

constexpr int kThreads = 256;
// 16-byte loads each thread issues before its first store: 4 x 16 B x 2,048 threads = 128 KiB in
// flight per SM, enough to cover HBM latency and, for mapped host memory, the ~1-2 us PCIe round trip.
constexpr int kUnroll = 4;
constexpr size_t kTileChunks = (size_t)kThreads * kUnroll;  // 16-byte chunks one CTA moves per step (16 KiB)
constexpr int kCtasPerSm = 2048 / kThreads;                  // a full SM of threads; the loop is persistent

// One work item = one tile of one KV block, so the block-table lookup and the 64-bit offset math
// happen once per 16 KiB, not per chunk. kScatter: contiguous -> pool; else pool -> contiguous.
template <bool kScatter>
__global__ void __launch_bounds__(kThreads) move_blocks(uint4 *__restrict__ dst, const uint4 *__restrict__ src,
                                                        const int32_t *__restrict__ ids, size_t nblocks,
                                                        size_t block_chunks, size_t tiles_per_block) {
  const size_t items = nblocks * tiles_per_block;
  for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
    const size_t i = item / tiles_per_block;
    const size_t tile = item - i * tiles_per_block;
    const size_t contig_base = i * block_chunks;
    const size_t pool_base = (size_t)__ldg(ids + i) * block_chunks;
    const uint4 *s = src + (kScatter ? contig_base : pool_base);
    uint4 *d = dst + (kScatter ? pool_base : contig_base);
    const size_t off0 = tile * kTileChunks + threadIdx.x;
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      const size_t off = off0 + (size_t)u * kThreads;
      if (off < block_chunks) v[u] = s[off];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      const size_t off = off0 + (size_t)u * kThreads;
      if (off < block_chunks) d[off] = v[u];
    }
  }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

template <bool kScatter>
cudaError_t launch(void *dst, const void *src, const int32_t *ids, size_t nblocks, size_t block_bytes, int sms,
                   cudaStream_t stream) {
  if (block_bytes == 0 || block_bytes % 16 != 0 || !aligned16(dst) || !aligned16(src) || !ids || sms < 1)
    return cudaErrorInvalidValue;
  if (nblocks == 0) return cudaSuccess;
  const size_t block_chunks = block_bytes / 16;
  const size_t tiles_per_block = (block_chunks + kTileChunks - 1) / kTileChunks;
  const size_t items = nblocks * tiles_per_block;
  size_t grid = (size_t)sms * kCtasPerSm;
  if (grid > items) grid = items;
  move_blocks<kScatter><<<(unsigned)grid, kThreads, 0, stream>>>(
      static_cast<uint4 *>(dst), static_cast<const uint4 *>(src), ids, nblocks, block_chunks, tiles_per_block);
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t km_offload_gather_blocks(void *dst, const void *pool, const int32_t *ids, size_t nblocks,
                                                size_t block_bytes, int sms, cudaStream_t stream) {
  return launch<false>(dst, pool, ids, nblocks, block_bytes, sms, stream);
}

extern "C" cudaError_t km_offload_scatter_blocks(void *pool, const void *src, const int32_t *ids, size_t nblocks,
                                                 size_t block_bytes, int sms, cudaStream_t stream) {
  return launch<true>(pool, src, ids, nblocks, block_bytes, sms, stream);
}

extern "C" cudaError_t km_offload_host_to_blocks(void *pool, const void *host_mapped, const int32_t *ids,
                                                 size_t nblocks, size_t block_bytes, int sms, cudaStream_t stream) {
  return launch<true>(pool, host_mapped, ids, nblocks, block_bytes, sms, stream);
}

extern "C" cudaError_t km_offload_blocks_to_host(void *host_mapped, const void *pool, const int32_t *ids,
                                                 size_t nblocks, size_t block_bytes, int sms, cudaStream_t stream) {
  return launch<false>(host_mapped, pool, ids, nblocks, block_bytes, sms, stream);
}
