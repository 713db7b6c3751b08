/* The per-block peer copy loop (see p2p_baselines.h). */
#include "p2p_baselines.h"

cudaError_t km_p2p_memcpy_peer_per_block(void *const *dsts, int dst_dev, const void *const *srcs, int src_dev,
                                         const size_t *sizes, size_t count, cudaStream_t stream) {
  for (size_t i = 0; i < count; i++) {
    cudaError_t e = cudaMemcpyPeerAsync(dsts[i], dst_dev, srcs[i], src_dev, sizes[i], stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
