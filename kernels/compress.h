/* Pooled KV on the write path: every `ratio` consecutive tokens of K and of V (ratio 2, 4 or 8) become one
 * stored entry per head, their mean. The new tokens arrive as the projection writes them,
 * [batch][tokens][kv_heads][head_dim] bf16; entry e < tokens / ratio of sequence b (tokens e * ratio ..
 * e * ratio + ratio - 1; a tail of fewer than ratio tokens waits for more) goes to slot e of the sequence's
 * compressed paged pool, vLLM's layout [num_blocks][block_size][kv_heads][head_dim] through an int32
 * table [batch][blocks_per_seq]. Each element: the ratio values summed in fp32 in token order, times
 * 1 / ratio (exact: a power of two), rounded to the nearest bf16 (ties to even). The CPU reference does the
 * same operations in the same order, so the output is checked bit for bit. */
#ifndef KM_KERNELS_COMPRESS_H
#define KM_KERNELS_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct km_compress_shape {
  int batch, tokens, kv_heads, head_dim;
  int ratio;          /* 2, 4 or 8 tokens per entry */
  int block_size;     /* tokens (entries) per block of the compressed pool */
  int blocks_per_seq; /* table entries per sequence: >= ceil(tokens / ratio / block_size) */
} km_compress_shape;

#ifdef __CUDACC__
#define KM_COMPRESS_HD __host__ __device__ __forceinline__
#else
#define KM_COMPRESS_HD static inline
#endif

KM_COMPRESS_HD int km_compress_entries(const km_compress_shape *s) { return s->ratio > 0 ? s->tokens / s->ratio : 0; }

/* NULL when the kernel takes shape s, else one phrase naming what is wrong. */
KM_COMPRESS_HD const char *km_compress_shape_error(const km_compress_shape *s) {
  if (s->batch <= 0 || s->tokens <= 0 || s->kv_heads <= 0 || s->head_dim <= 0) return "batch, tokens, heads and head_dim must be positive";
  if (s->ratio != 2 && s->ratio != 4 && s->ratio != 8) return "ratio must be 2, 4 or 8";
  if (s->tokens < s->ratio) return "tokens must be at least the ratio";
  if (((long long)s->kv_heads * s->head_dim) % 8 != 0) return "kv_heads x head_dim must be a multiple of 8 (16-byte vectors)";
  if (s->block_size <= 0 || (long long)s->blocks_per_seq * s->block_size < s->tokens / s->ratio)
    return "blocks_per_seq x block_size must cover tokens / ratio entries";
  if ((long long)s->batch * (s->tokens / s->ratio) * s->kv_heads * s->head_dim / 8 > 0x7fffffffLL)
    return "batch x entries x kv_heads x head_dim / 8 must be below 2^31";
  return 0;
}

/* Pool K and V of every sequence into the compressed pools (16-byte aligned). Only the entries' slots are
 * written. cudaErrorInvalidValue for a shape km_compress_shape_error rejects. */
cudaError_t km_compress_mean(const km_compress_shape *s, const uint16_t *k_new, const uint16_t *v_new,
                             uint16_t *k_pool, uint16_t *v_pool, const int32_t *table, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
