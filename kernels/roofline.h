/* Bandwidth reference kernels: the best an SM kernel does for a plain copy, a read-only reduce and a
 * write-only fill, so every primitive can be compared with the same access pattern at its simplest. */
#ifndef KM_KERNELS_ROOFLINE_H
#define KM_KERNELS_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kernel_image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Grid for a memory-bound grid-stride kernel of 256 threads: enough resident blocks to fill every SM. */
int km_stream_grid(int sms);

/* Copy `bytes` (a multiple of 16, 16-byte aligned pointers) with 16-byte vectors. */
cudaError_t km_copy_vec16(void *dst, const void *src, size_t bytes, int sms, cudaStream_t stream);

/* Ways to shape the same copy, measured side by side to pick km_copy_vec16's (roofline/sm_copy/...). */
typedef enum km_copy_shape {
  KM_COPY_STRIDED_ILP4 = 0, /* thread-strided: 4 loads a grid-width apart */
  KM_COPY_TILE_ILP4,        /* block tiles: a block moves 16 KiB contiguous per step */
  KM_COPY_TILE_ILP8,        /* block tiles of 32 KiB */
  KM_COPY_TILE_ILP8_PLAIN,  /* as TILE_ILP8 without streaming cache hints */
  KM_COPY_STRIDED_ILP8,     /* thread-strided, 8 loads in flight */
  KM_COPY_BULK,             /* sm_90 bulk copies through shared memory (cp.async.bulk), 16 KiB stages */
  KM_COPY_BLOCKS_ILP4,      /* one 16 KiB tile per block, a block per tile: the hardware schedules the tiles */
  KM_COPY_BLOCKS_ILP8,      /* one 32 KiB tile per block */
  KM_COPY_SHAPE_COUNT
} km_copy_shape;
/* KM_COPY_BULK runs only after km_copy_bulk_setup found sm_90 code for it (else the launch fails). */
cudaError_t km_copy_vec16_shape(void *dst, const void *src, size_t bytes, int sms, km_copy_shape shape,
                                cudaStream_t stream);
/* What this binary runs for the KM_COPY_BULK kernel on the current device (*img), and when that is sm_90
 * code (km_kernel_image_runs(img, KM_BULK_MIN_ARCH)) its shared memory is set up. Once, before launching. */
cudaError_t km_copy_bulk_setup(km_kernel_image *img);
/* XOR of all 64-bit words of src (bytes a multiple of 16) into *out (which the caller zeroes). */
cudaError_t km_read_xor(const void *src, size_t bytes, unsigned long long *out, int sms, cudaStream_t stream);
/* Fill dst with the 64-bit pattern, 16 bytes per store. */
cudaError_t km_write_pattern(void *dst, size_t bytes, uint64_t pattern, int sms, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
