/* TurboQuant 3-bit quantize with the rotation in one thread's registers (kernels/quant_tq3_rows.cu): the
 * launchers kernels/quant_3bit.cu dispatches to for the variants KM_TQ3_ROWS64, KM_TQ3_ROWS,
 * KM_TQ3_ROWS_FOLD and KM_TQ3_ROWS_LEAN, and what they put in a km_quant_plan. Internal to kernels/. */
#ifndef KM_KERNELS_QUANT_TQ3_ROWS_H
#define KM_KERNELS_QUANT_TQ3_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "quant_3bit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raise the kernels' dynamic shared-memory limits and fill plan->tq3_rows_quantize. Outside timing. */
cudaError_t km_tq3_rows_plan(km_quant_plan *plan);

/* rows of bf16 [rows, head_dim] (head_dim 64, 128, 256; checked by the caller), variant one of
 * KM_TQ3_ROWS64 / KM_TQ3_ROWS / KM_TQ3_ROWS_FOLD / KM_TQ3_ROWS_LEAN; the launch's error. */
cudaError_t km_tq3_rows_quantize(const km_quant_plan *plan, km_tq3_variant variant, const uint16_t *src,
                                 uint8_t *codes, uint16_t *side, size_t rows, int head_dim, int is_v,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
