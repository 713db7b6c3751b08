/* TurboQuant 3-bit quantize on tensor cores (kernels/quant_tq3_mma.cu): the launcher kernels/quant_3bit.cu
 * dispatches to for the variants KM_TQ3_MMA and KM_TQ3_MMA_LEAN, and what it puts in a km_quant_plan. Internal to
 * kernels/. */
#ifndef KM_KERNELS_QUANT_TQ3_MMA_H
#define KM_KERNELS_QUANT_TQ3_MMA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "quant_3bit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raise the kernels' dynamic shared-memory limits and fill plan->tq3_mma_quantize. Outside timing. */
cudaError_t km_tq3_mma_plan(km_quant_plan *plan);

/* rows of bf16 [rows, head_dim]; head_dim 128 only (anything else, or no plan, is cudaErrorInvalidValue);
 * lean 0: v6, 1: v8 (the Gram operands by ldmatrix, two Gram chains); the launch's error. */
cudaError_t km_tq3_mma_quantize(const km_quant_plan *plan, int lean, const uint16_t *src, uint8_t *codes,
                                uint16_t *side, size_t rows, int head_dim, int is_v, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
