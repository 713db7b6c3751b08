// Block-table to block-table copy in 16-byte vectors (see p2p_copy.h). One CTA per 16 KiB tile: every
// thread issues its 4 loads before its first store, so a CTA keeps 16 KiB in flight, and 8 resident CTAs
// per SM keep 128 KiB: about 30x what NVLink's ~2 us read latency times ~450 GB/s asks of each of 132 SMs.
#include "p2p_copy.h"

namespace {

constexpr size_t kTileVecs = (size_t)KM_P2P_THREADS * KM_P2P_UNROLL;

__global__ void __launch_bounds__(KM_P2P_THREADS)
    copy_blocks(uint4 *__restrict__ dst, const int32_t *__restrict__ dst_ids, const uint4 *__restrict__ src,
                const int32_t *__restrict__ src_ids, size_t block_vecs, uint32_t tiles_per_block) {
  const uint32_t i = blockIdx.x / tiles_per_block;
  const uint32_t tile = blockIdx.x - i * tiles_per_block;
  const size_t d_blk = dst_ids ? (size_t)(int64_t)dst_ids[i] : i;
  const size_t s_blk = src_ids ? (size_t)(int64_t)src_ids[i] : i;
  const uint4 *s = src + s_blk * block_vecs;
  uint4 *d = dst + d_blk * block_vecs;
  const size_t off0 = (size_t)tile * kTileVecs + threadIdx.x;
  uint4 v[KM_P2P_UNROLL];
#pragma unroll
  for (int u = 0; u < KM_P2P_UNROLL; u++) {
    const size_t off = off0 + (size_t)u * KM_P2P_THREADS;
    if (off < block_vecs) v[u] = s[off];
  }
#pragma unroll
  for (int u = 0; u < KM_P2P_UNROLL; u++) {
    const size_t off = off0 + (size_t)u * KM_P2P_THREADS;
    if (off < block_vecs) d[off] = v[u];
  }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

}  // namespace

extern "C" size_t km_p2p_tiles(size_t nblocks, size_t block_bytes) {
  return nblocks * ((block_bytes + KM_P2P_TILE_BYTES - 1) / KM_P2P_TILE_BYTES);
}

extern "C" cudaError_t km_p2p_copy_blocks(void *dst_pool, const int32_t *dst_ids, const void *src_pool,
                                          const int32_t *src_ids, size_t nblocks, size_t block_bytes,
                                          cudaStream_t stream) {
  if (block_bytes == 0 || block_bytes % 16 != 0 || !aligned16(dst_pool) || !aligned16(src_pool))
    return cudaErrorInvalidValue;
  if (nblocks == 0) return cudaSuccess;
  const size_t tiles_per_block = km_p2p_tiles(1, block_bytes);
  if (nblocks > ((size_t)1 << 31) / tiles_per_block) return cudaErrorInvalidValue;
  const size_t grid = nblocks * tiles_per_block;
  if (grid >= ((size_t)1 << 31)) return cudaErrorInvalidValue;
  copy_blocks<<<(unsigned)grid, KM_P2P_THREADS, 0, stream>>>(static_cast<uint4 *>(dst_pool), dst_ids,
                                                             static_cast<const uint4 *>(src_pool), src_ids,
                                                             block_bytes / 16, (uint32_t)tiles_per_block);
  return cudaGetLastError();
}
