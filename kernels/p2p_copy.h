/* KV blocks from one pool to another through block tables on both sides: dst_pool[dst_ids[i]] =
 * src_pool[src_ids[i]]. Either pool may sit on another GPU (its peer address, with peer access enabled):
 * launched on the receiving GPU the SMs read the peer's memory (pull), launched on the sending GPU they
 * write it (push). A NULL table is the identity, so one block of n bytes with both tables NULL is a
 * contiguous copy. */
#ifndef KM_KERNELS_P2P_COPY_H
#define KM_KERNELS_P2P_COPY_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Vectors of 16 bytes: 256 threads x 4 per CTA, a CTA per 16 KiB tile of a block, so CTAs go to SMs as
 * they free up and no SM count is asked for at launch. */
enum { KM_P2P_THREADS = 256, KM_P2P_UNROLL = 4 };
#define KM_P2P_TILE_BYTES ((size_t)KM_P2P_THREADS * KM_P2P_UNROLL * 16)

/* Tiles (CTAs) one launch runs: nblocks x ceil(block_bytes / KM_P2P_TILE_BYTES). */
size_t km_p2p_tiles(size_t nblocks, size_t block_bytes);

/* Tables (when not NULL) are on the launching GPU, int32 ids within their pools (offsets are 64-bit).
 * block_bytes a multiple of 16, both pools 16-byte aligned, and the tiles below 2^31, else
 * cudaErrorInvalidValue; nblocks 0 is a no-op. `stream` belongs to the current device. */
cudaError_t km_p2p_copy_blocks(void *dst_pool, const int32_t *dst_ids, const void *src_pool, const int32_t *src_ids,
                               size_t nblocks, size_t block_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
