/* What engines do today to move KV blocks between two GPUs of one host: one cudaMemcpyPeerAsync per
 * block (a swap_blocks-style loop across devices). Batched alternatives reused from other families:
 * km_offload_copy_batch (cudaMemcpyBatchAsync over UVA pointers, offload_baselines.h) and
 * km_paged_cub_batched (cub::DeviceMemcpy::Batched, paged_baselines.h); NCCL is in p2p_nccl.h. */
#ifndef KM_BASELINES_P2P_H
#define KM_BASELINES_P2P_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copy sizes[i] bytes from srcs[i] (memory of device src_dev) to dsts[i] (device dst_dev) for i < count,
 * one cudaMemcpyPeerAsync each, in order on `stream`. Returns the first error. */
cudaError_t km_p2p_memcpy_peer_per_block(void *const *dsts, int dst_dev, const void *const *srcs, int src_dev,
                                         const size_t *sizes, size_t count, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
