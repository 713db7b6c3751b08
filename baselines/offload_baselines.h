/* What engines do today to move scattered KV blocks between host and device: one cudaMemcpyAsync per
 * block (vLLM's swap_blocks), and CUDA 12.8+'s cudaMemcpyBatchAsync, one call for the whole list. */
#ifndef KM_BASELINES_OFFLOAD_H
#define KM_BASELINES_OFFLOAD_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copy sizes[i] bytes from srcs[i] to dsts[i] for i < count, one cudaMemcpyAsync (cudaMemcpyDefault,
 * UVA) each, in order on `stream`. Returns the first error. */
cudaError_t km_offload_copy_per_block(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                      size_t count, cudaStream_t stream);

/* 1 when this build's runtime has cudaMemcpyBatchAsync (CUDA >= 12.8), else 0. */
int km_offload_batch_available(void);

/* The same list as one cudaMemcpyBatchAsync, sources read in stream order. `stream` must not be the
 * legacy NULL stream. cudaErrorNotSupported when the runtime lacks the call; a driver too old for it
 * answers with its own error (cudaErrorCallRequiresNewerDriver, cudaErrorNotSupported). */
cudaError_t km_offload_copy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
