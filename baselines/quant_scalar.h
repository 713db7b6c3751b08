/* Scalar baselines for quant/: the same math as kernels/quant_fp8.cu and quant_3bit.cu written the way a
 * first CUDA port would be, one element (or one output byte, or one vector where the math needs the
 * whole vector) per thread, 1- and 2-byte accesses, no shuffles. Same formats, same codes. */
#ifndef KM_BASELINES_QUANT_SCALAR_H
#define KM_BASELINES_QUANT_SCALAR_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "quant_fp8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fp8 with the granularities of quant_fp8.h: per-token-head, a thread per row finds amax and writes the
 * scale; then (every granularity) a thread per element reads its row's scale and encodes. */
cudaError_t km_scalar_fp8_quantize(const uint16_t *src, uint8_t *dst, float *scales, size_t tokens, int heads,
                                   int head_dim, km_fp8_format fmt, km_quant_granularity gran, cudaStream_t stream);
cudaError_t km_scalar_fp8_dequantize(const uint8_t *src, const float *scales, uint16_t *dst, size_t tokens, int heads,
                                     int head_dim, km_fp8_format fmt, km_quant_granularity gran, cudaStream_t stream);
/* uniform 3-bit: a thread per group writes scale + zero, then a thread per code byte; dequantize a
 * thread per element. */
cudaError_t km_scalar_u3_quantize(const uint16_t *src, uint8_t *dst, size_t tokens, int heads, int head_dim,
                                  cudaStream_t stream);
cudaError_t km_scalar_u3_dequantize(const uint8_t *src, uint16_t *dst, size_t tokens, int heads, int head_dim,
                                    cudaStream_t stream);
/* TurboQuant: the rotation needs the whole vector, so a thread per (token, head) vector. */
cudaError_t km_scalar_tq3_quantize(const uint16_t *src, uint8_t *codes, uint16_t *side, size_t tokens, int heads,
                                   int head_dim, int is_v, cudaStream_t stream);
cudaError_t km_scalar_tq3_dequantize(const uint8_t *codes, const uint16_t *side, uint16_t *dst, size_t tokens,
                                     int heads, int head_dim, int is_v, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
