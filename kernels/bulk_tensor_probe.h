/* The tensor-map copy of the decode kernel's TMA pipeline (kernels/bulk_copy.cuh: load_box3 into a ring of
 * mbarrier-counted slots, the 128-byte swizzle), alone: each warp copies a [rows][128 bytes] buffer box by box (16
 * rows a box, the pipeline's tile) through its own `slots` ring slots into shared memory and writes each slot as it
 * landed (still swizzled) to its part of dst; `ctas` CTAs of `warps` such warps, as the decode kernel's grid of
 * four-warp CTAs each warp with its ring. A correctness check of that path by itself, and the smallest kernels on which
 * to ask compute-sanitizer's synccheck about phases that tensor copies complete (reports/attn-notes.md). */
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
#define KM_BULK_TENSOR_MAX_WARPS 4   /* warps per CTA, each with its own ring (the decode kernel's four) */
#define KM_BULK_TENSOR_MAX_CTAS 4096

/* rows a positive multiple of KM_BULK_TENSOR_BOX_ROWS, slots 1..KM_BULK_TENSOR_MAX_SLOTS, ctas 1..KM_BULK_TENSOR_MAX_CTAS,
 * warps 1..KM_BULK_TENSOR_MAX_WARPS; src a device buffer of rows x 128 bytes, dst one of ctas x warps x rows x 128
 * (16-byte aligned). Warp w of CTA c writes box b's shared-memory image at ((c x warps + w) x rows / 16 + b) x 2,048
 * bytes: byte k of 16-byte chunk j of its row r is at r x 128 + ((j ^ (r % 8)) x 16) + k. cudaErrorNotSupported where
 * the code that runs is not sm_90's or the driver has no tensor-map encoder; cudaErrorInvalidValue for bad arguments. */
cudaError_t km_bulk_tensor_probe(const uint8_t *src, int rows, int slots, int ctas, int warps, uint8_t *dst,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
