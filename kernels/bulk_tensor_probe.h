/* The tensor-map copy of the decode kernel's TMA pipeline (kernels/bulk_copy.cuh: load_box3 into a ring of
 * mbarrier-counted slots, the 128-byte swizzle), alone: one warp copies a [rows][128 bytes] buffer box by box (16
 * rows a box, the pipeline's tile) through `slots` ring slots into shared memory and writes each slot as it landed
 * (still swizzled) to dst. A correctness check of that path by itself, and the smallest kernel on which to ask
 * compute-sanitizer's synccheck about phases that tensor copies complete (reports/attn-notes.md). */
#ifndef KM_KERNELS_BULK_TENSOR_PROBE_H
#define KM_KERNELS_BULK_TENSOR_PROBE_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KM_BULK_TENSOR_ROW_BYTES 128 /* one swizzle span */
#define KM_BULK_TENSOR_BOX_ROWS 16   /* rows per box: one tile of the decode pipeline */
#define KM_BULK_TENSOR_MAX_SLOTS 4

/* rows a positive multiple of KM_BULK_TENSOR_BOX_ROWS, slots 1..KM_BULK_TENSOR_MAX_SLOTS, src and dst device buffers
 * of rows x 128 bytes (16-byte aligned). dst gets box b's shared-memory image at b x 2,048 bytes: byte k of 16-byte
 * chunk j of its row r is at r x 128 + ((j ^ (r % 8)) x 16) + k. cudaErrorNotSupported where the code that runs is
 * not sm_90's or the driver has no tensor-map encoder; cudaErrorInvalidValue for bad arguments. */
cudaError_t km_bulk_tensor_probe(const uint8_t *src, int rows, int slots, uint8_t *dst, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
