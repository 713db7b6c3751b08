/* CPU reference for pooled KV: plain loops over (sequence, entry, element) in index order. */
#include "compress_ref.h"

#include "sparse_ref.h"

uint16_t km_compress_ref_mean_of(const uint16_t *vals, int n, size_t stride) {
  float acc = km_bf16_to_float(vals[0]);
  for (int i = 1; i < n; ++i) acc += km_bf16_to_float(vals[(size_t)i * stride]);
  return km_float_to_bf16(acc * (1.0f / (float)n));
}

void km_compress_ref_mean(const km_compress_shape *s, const uint16_t *k_new, const uint16_t *v_new, uint16_t *k_pool,
                          uint16_t *v_pool, const int32_t *table) {
  const size_t row = (size_t)s->kv_heads * s->head_dim;
  const int entries = km_compress_entries(s);
  for (int b = 0; b < s->batch; ++b)
    for (int e = 0; e < entries; ++e) {
      const size_t src = ((size_t)b * s->tokens + (size_t)e * s->ratio) * row;
      const int64_t blk = table[(size_t)b * s->blocks_per_seq + e / s->block_size];
      const size_t dst = ((size_t)blk * s->block_size + e % s->block_size) * row;
      for (size_t i = 0; i < row; ++i) {
        k_pool[dst + i] = km_compress_ref_mean_of(k_new + src + i, s->ratio, row);
        v_pool[dst + i] = km_compress_ref_mean_of(v_new + src + i, s->ratio, row);
      }
    }
}
