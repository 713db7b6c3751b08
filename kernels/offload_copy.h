/* Scattered KV blocks <-> one contiguous run: gather pool blocks (picked by a block table) into a
 * contiguous buffer and scatter the reverse. The contiguous side may be a device staging buffer or
 * mapped pinned host memory (its cudaHostGetDevicePointer address), so the SMs cross PCIe themselves. */
#ifndef KM_KERNELS_OFFLOAD_COPY_H
#define KM_KERNELS_OFFLOAD_COPY_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* All four: block i of the contiguous side <-> pool block ids[i] (ids on the device, each in
 * [0, pool blocks)); block_bytes a multiple of 16 and every pointer 16-byte aligned, else
 * cudaErrorInvalidValue. Pool offsets are 64-bit: pools may exceed 4 GiB. sms: the device's
 * multiprocessor count, found at setup (the persistent grid fills every SM; a launch sits between the
 * timing events, so it does not ask the device). */

/* dst[i] = pool[ids[i]]: device staging buffer (offload: gather, then one D2H copy). */
cudaError_t km_offload_gather_blocks(void *dst, const void *pool, const int32_t *ids, size_t nblocks,
                                     size_t block_bytes, int sms, cudaStream_t stream);
/* pool[ids[i]] = src[i]: device staging buffer (reload: one H2D copy, then scatter). */
cudaError_t km_offload_scatter_blocks(void *pool, const void *src, const int32_t *ids, size_t nblocks,
                                      size_t block_bytes, int sms, cudaStream_t stream);
/* pool[ids[i]] = host[i], the SMs reading mapped pinned host memory over PCIe. */
cudaError_t km_offload_host_to_blocks(void *pool, const void *host_mapped, const int32_t *ids, size_t nblocks,
                                      size_t block_bytes, int sms, cudaStream_t stream);
/* host[i] = pool[ids[i]], the SMs writing mapped pinned host memory over PCIe. */
cudaError_t km_offload_blocks_to_host(void *host_mapped, const void *pool, const int32_t *ids, size_t nblocks,
                                      size_t block_bytes, int sms, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
