/* The two library ways to move a list of blocks: a loop of cudaMemcpyAsync calls, and one
 * cudaMemcpyBatchAsync, whose signature changed between CUDA 12.8 (a failIdx out-argument) and 13.0. */
#include "offload_baselines.h"

#include <string.h>

cudaError_t km_offload_copy_per_block(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                      size_t count, cudaStream_t stream) {
  for (size_t i = 0; i < count; i++) {
    cudaError_t e = cudaMemcpyAsync(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

int km_offload_batch_available(void) {
#if CUDART_VERSION >= 12080
  return 1;
#else
  return 0;
#endif
}

cudaError_t km_offload_copy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                  cudaStream_t stream) {
#if CUDART_VERSION >= 12080
  if (count == 0) return cudaSuccess;
  /* one attribute set for the whole list: stream order, because the same buffers are reused by the
   * previous instance on this stream (the out-of-order modes assume nothing else touches them) */
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t attr_idx = 0;
#if CUDART_VERSION >= 13000
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, count, &attr, &attr_idx, 1, stream);
#else
  /* 12.8/12.9: non-const pointer arrays (not written) and the index of a failing copy */
  size_t fail_idx = 0;
  return cudaMemcpyBatchAsync((void **)dsts, (void **)srcs, (size_t *)sizes, count, &attr, &attr_idx, 1, &fail_idx,
                              stream);
#endif
#else
  (void)dsts, (void)srcs, (void)sizes, (void)count, (void)stream;
  return cudaErrorNotSupported;
#endif
}
