/* Bandwidth reference kernels: the best an SM kernel does for a plain copy, a read-only reduce and a
 * write-only fill, so every primitive can be compared with the same access pattern at its simplest. */
#ifndef KM_KERNELS_ROOFLINE_H
#define KM_KERNELS_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Grid for a memory-bound grid-stride kernel of 256 threads: enough resident blocks to fill every SM. */
int km_stream_grid(int sms);

/* Copy `bytes` (a multiple of 16, 16-byte aligned pointers) with 16-byte vectors. */
cudaError_t km_copy_vec16(void *dst, const void *src, size_t bytes, int sms, cudaStream_t stream);
/* XOR of all 64-bit words of src (bytes a multiple of 16) into *out (which the caller zeroes). */
cudaError_t km_read_xor(const void *src, size_t bytes, unsigned long long *out, int sms, cudaStream_t stream);
/* Fill dst with the 64-bit pattern, 16 bytes per store. */
cudaError_t km_write_pattern(void *dst, size_t bytes, uint64_t pattern, int sms, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
