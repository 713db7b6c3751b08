/* fp8 KV quantization (primitive 2): bf16 [tokens, heads, head_dim] <-> fp8 e4m3/e5m2 codes of the
 * same shape, with a per-tensor or per-head static scale or a per-(token, head) dynamic scale, plus a
 * fused dequantize + paged gather from an fp8 block pool. Encoding: round to nearest even, saturating
 * (|x| beyond the largest finite value and +-Inf give +-max finite; NaN gives 0x7F). */
#ifndef KM_KERNELS_QUANT_FP8_H
#define KM_KERNELS_QUANT_FP8_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum km_fp8_format {
  KM_FP8_E4M3 = 0, /* 1-4-3, bias 7, max 448, no Inf, NaN = S.1111.111 */
  KM_FP8_E5M2,     /* 1-5-2, bias 15, max 57344, IEEE-like Inf/NaN */
  KM_FP8_FORMAT_COUNT
} km_fp8_format;

typedef enum km_quant_granularity {
  KM_QUANT_PER_TENSOR = 0, /* one static scale, given (scales[0]) */
  KM_QUANT_PER_HEAD,       /* one static scale per KV head, given (scales[heads]) */
  KM_QUANT_PER_TOKEN_HEAD, /* dynamic: scale = amax over head_dim / fp8 max, fp32 [tokens, heads] */
  KM_QUANT_GRANULARITY_COUNT
} km_quant_granularity;

/* Largest finite value of the format: the dynamic scale is amax / this. */
#define KM_FP8_E4M3_MAX 448.0f
#define KM_FP8_E5M2_MAX 57344.0f

/* Per element: inv = scale > 0 ? 1/scale : 0 (fp32, correctly rounded), code = fp8(x * inv).
 * src bf16 [rows, head_dim], dst fp8 [rows, head_dim], rows = tokens * heads. For the static
 * granularities `scales` is read; for per-token-head it is written ([rows] fp32).
 * head_dim: 64, 128 or 256. Pointers 16-byte aligned. */
cudaError_t km_quant_fp8_quantize(const uint16_t *src, uint8_t *dst, float *scales, size_t tokens, int heads,
                                  int head_dim, km_fp8_format fmt, km_quant_granularity gran,
                                  cudaStream_t stream);

/* x = bf16(decode(code) * scale), the product rounded once to fp32 then to bf16 (nearest even). */
cudaError_t km_quant_fp8_dequantize(const uint8_t *src, const float *scales, uint16_t *dst, size_t tokens,
                                    int heads, int head_dim, km_fp8_format fmt, km_quant_granularity gran,
                                    cudaStream_t stream);

/* Fused dequantize + paged gather. pool fp8 [blocks, block_size, heads, head_dim] (vLLM NHD),
 * pool_scales fp32 [blocks, block_size, heads] (per-token-head); block_table int32
 * [num_seqs, blocks_per_seq] with blocks_per_seq = ceil(tokens_per_seq / block_size), ids widened to
 * 64 bits before addressing. dst bf16 [num_seqs * tokens_per_seq, heads, head_dim], sequence-major. */
cudaError_t km_quant_fp8_dequant_gather(const uint8_t *pool, const float *pool_scales, const int32_t *block_table,
                                        uint16_t *dst, int num_seqs, int tokens_per_seq, int block_size,
                                        int heads, int head_dim, km_fp8_format fmt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
