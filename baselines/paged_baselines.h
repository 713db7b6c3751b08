/* What a user would do instead of the paged gather kernel: one cudaMemcpyAsync per block (vLLM's
 * copy_blocks/swap_blocks style), cub::DeviceMemcpy::Batched over per-piece pointer arrays, and one
 * contiguous cudaMemcpyAsync of the same bytes. Same pieces and output order as kernels/paged_gather.h. */
#ifndef KM_BASELINES_PAGED_BASELINES_H
#define KM_BASELINES_PAGED_BASELINES_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "paged_gather.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pieces one gather moves: table entries (NHD) or table entries x kv_heads (HND). */
size_t km_paged_piece_count(const km_paged_geom *g);

/* One cudaMemcpyAsync per piece (a whole block for NHD, a (block, head) piece for HND), block ids
 * read from a host copy of the table as vLLM's block-copy ops do. Returns the first error. */
cudaError_t km_paged_memcpy_per_block(const km_paged_geom *g, const void *pool, const int32_t *host_table,
                                      void *out, cudaStream_t stream);

/* Host-side argument arrays for a batched copy, one entry per piece in output order (n =
 * km_paged_piece_count): src[i], dst[i], sizes[i] = piece bytes. Pure host code. */
void km_paged_batch_args(const km_paged_geom *g, const void *pool, const int32_t *host_table, void *out,
                         const void **src, void **dst, size_t *sizes);

/* Temporary storage cub::DeviceMemcpy::Batched needs for n buffers (allocate it outside the timed region). */
cudaError_t km_paged_cub_temp_bytes(size_t n, size_t *bytes);

/* cub::DeviceMemcpy::Batched over device arrays of n source pointers, destination pointers and sizes. */
cudaError_t km_paged_cub_batched(void *temp, size_t temp_bytes, const void *const *d_src, void *const *d_dst,
                                 const size_t *d_sizes, size_t n, cudaStream_t stream);

/* The same byte count as one contiguous device-to-device cudaMemcpyAsync. */
cudaError_t km_paged_contiguous_copy(void *dst, const void *src, size_t bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
