/* What a C/CUDA user would write instead of kernels/attn_decode.cu, and the simple kernel every decode
 * step is cross-checked against on the device: vLLM's first paged-attention kernel shape, one CTA per
 * (sequence, query token, query head) with no split, so K and V are re-read for every query head of a
 * group; fp32 dot products and softmax on CUDA cores, token by token. Same layouts and semantics as
 * km_attn_decode (kernels/attn_decode.h): bf16 or fp8 cache with per-tensor or per-token-head scales,
 * q_len, window, selected pages. */
#ifndef KM_BASELINES_ATTN_H
#define KM_BASELINES_ATTN_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "attn_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct km_attn_naive_shape {
  km_attn_shape shape;
  int batch;
  int max_blocks_per_seq;
  int sparse_pages; /* > 0: args.selected lists that many 16-token pages per (sequence, KV head) */
} km_attn_naive_shape;

cudaError_t km_attn_naive_decode(const km_attn_naive_shape *s, const km_attn_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
