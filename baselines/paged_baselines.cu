// Baselines for the paged gather: per-piece cudaMemcpyAsync, cub::DeviceMemcpy::Batched and a
// contiguous copy. Piece order and output layout match kernels/paged_gather.cu so outputs compare bitwise.
#include "paged_baselines.h"

#include <cub/device/device_memcpy.cuh>

namespace {

// Piece i of the output, in (seq, head, block within seq) order: where it comes from and goes to.
struct piece_ref {
  uint64_t src, dst;
};

piece_ref piece_at(const km_paged_geom *g, const int32_t *table, size_t i) {
  const uint64_t piece = km_paged_piece_bytes(g);
  const uint64_t per_block = g->layout == KM_PAGED_HND ? (uint64_t)g->kv_heads : 1u;
  const uint64_t bps = (uint64_t)g->blocks_per_seq;
  const uint64_t blk_in_seq = i % bps;
  const uint64_t seq_head = i / bps;
  const uint64_t head = seq_head % per_block;
  const uint64_t seq = seq_head / per_block;
  const int64_t blk = (int64_t)table[seq * bps + blk_in_seq];
  piece_ref r;
  r.src = ((uint64_t)blk * per_block + head) * piece;
  r.dst = (uint64_t)i * piece;
  return r;
}

}  // namespace

extern "C" size_t km_paged_piece_count(const km_paged_geom *g) {
  size_t per_block = g->layout == KM_PAGED_HND ? (size_t)g->kv_heads : 1u;
  return (size_t)g->num_seqs * (size_t)g->blocks_per_seq * per_block;
}

extern "C" cudaError_t km_paged_memcpy_per_block(const km_paged_geom *g, const void *pool,
                                                 const int32_t *host_table, void *out, cudaStream_t stream) {
  const size_t n = km_paged_piece_count(g);
  const size_t piece = km_paged_piece_bytes(g);
  for (size_t i = 0; i < n; ++i) {
    piece_ref r = piece_at(g, host_table, i);
    cudaError_t e = cudaMemcpyAsync(static_cast<unsigned char *>(out) + r.dst,
                                    static_cast<const unsigned char *>(pool) + r.src, piece,
                                    cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

extern "C" void km_paged_batch_args(const km_paged_geom *g, const void *pool, const int32_t *host_table, void *out,
                                    const void **src, void **dst, size_t *sizes) {
  const size_t n = km_paged_piece_count(g);
  const size_t piece = km_paged_piece_bytes(g);
  for (size_t i = 0; i < n; ++i) {
    piece_ref r = piece_at(g, host_table, i);
    src[i] = static_cast<const unsigned char *>(pool) + r.src;
    dst[i] = static_cast<unsigned char *>(out) + r.dst;
    sizes[i] = piece;
  }
}

extern "C" cudaError_t km_paged_cub_temp_bytes(size_t n, size_t *bytes) {
  *bytes = 0;
  return cub::DeviceMemcpy::Batched(nullptr, *bytes, static_cast<const void *const *>(nullptr),
                                    static_cast<void *const *>(nullptr), static_cast<const size_t *>(nullptr), n);
}

extern "C" cudaError_t km_paged_cub_batched(void *temp, size_t temp_bytes, const void *const *d_src,
                                            void *const *d_dst, const size_t *d_sizes, size_t n,
                                            cudaStream_t stream) {
  cudaError_t e = cub::DeviceMemcpy::Batched(temp, temp_bytes, d_src, d_dst, d_sizes, n, stream);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

extern "C" cudaError_t km_paged_contiguous_copy(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
}
