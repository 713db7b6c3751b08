/* CPU reference for the paged gather and the block-table makers (see paged_ref.h). Each (token, head)
 * row is located from the layout's definition, independently of the kernel's piece-based mapping. */
#include "paged_ref.h"

#include <stdlib.h>
#include <string.h>

/* Byte offset of row (token t, head h) inside a block of the pool, or inside a gathered sequence
 * of `tokens` tokens: NHD puts heads inside tokens, HND tokens inside heads. */
static uint64_t row_offset(km_paged_layout layout, uint64_t t, uint64_t h, uint64_t tokens, uint64_t heads,
                           uint64_t row_bytes) {
  if (layout == KM_PAGED_NHD) return (t * heads + h) * row_bytes;
  return (h * tokens + t) * row_bytes;
}

void km_paged_ref_gather(const km_paged_geom *g, const unsigned char *pool, const int32_t *table,
                         unsigned char *out) {
  const uint64_t row = (uint64_t)g->head_dim * (uint64_t)g->elem_bytes;
  const uint64_t heads = (uint64_t)g->kv_heads, bs = (uint64_t)g->block_size;
  const uint64_t seq_tokens = (uint64_t)g->blocks_per_seq * bs;
  const uint64_t block_bytes = bs * heads * row;
  for (uint64_t s = 0; s < (uint64_t)g->num_seqs; ++s) {
    unsigned char *seq_out = out + s * seq_tokens * heads * row;
    for (uint64_t b = 0; b < (uint64_t)g->blocks_per_seq; ++b) {
      const unsigned char *blk = pool + (uint64_t)(int64_t)table[s * (uint64_t)g->blocks_per_seq + b] * block_bytes;
      for (uint64_t t = 0; t < bs; ++t)
        for (uint64_t h = 0; h < heads; ++h)
          memcpy(seq_out + row_offset(g->layout, b * bs + t, h, seq_tokens, heads, row),
                 blk + row_offset(g->layout, t, h, bs, heads, row), row);
    }
  }
}

void km_paged_ref_sums(const km_paged_geom *g, const unsigned char *pool, const int32_t *table, uint32_t *sums) {
  const uint64_t block_bytes = km_paged_block_bytes(g);
  for (uint64_t s = 0; s < (uint64_t)g->num_seqs; ++s) {
    uint32_t sum = 0;
    for (uint64_t b = 0; b < (uint64_t)g->blocks_per_seq; ++b) {
      const unsigned char *blk = pool + (uint64_t)(int64_t)table[s * (uint64_t)g->blocks_per_seq + b] * block_bytes;
      for (uint64_t i = 0; i + 4 <= block_bytes; i += 4)
        sum += (uint32_t)blk[i] | (uint32_t)blk[i + 1] << 8 | (uint32_t)blk[i + 2] << 16 | (uint32_t)blk[i + 3] << 24;
    }
    sums[s] = sum;
  }
}

void km_paged_table_sequential(int32_t *table, size_t n) {
  for (size_t i = 0; i < n; ++i) table[i] = (int32_t)i;
}

uint64_t km_paged_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, bound) for bound <= 2^32 by a multiply-shift of 32 random bits (no modulo bias). */
static uint64_t rand_below(uint64_t *state, uint64_t bound) {
  return ((km_paged_rand(state) >> 32) * bound) >> 32;
}

int km_paged_tables_random(int32_t *tables, int batch, int mbps, const int32_t *ctx, int block_size, uint64_t seed,
                           int64_t *num_blocks) {
  int64_t total = 0;
  for (int i = 0; i < batch; ++i) {
    const int64_t n = (ctx[i] + (int64_t)block_size - 1) / block_size;
    if (n > mbps) return -1;
    total += n;
  }
  *num_blocks = total;
  int32_t *perm = malloc((size_t)(total > 0 ? total : 1) * sizeof *perm);
  if (!perm || km_paged_table_random(perm, (size_t)total, total, seed) != 0) {
    free(perm);
    return -1;
  }
  int64_t k = 0;
  for (int i = 0; i < batch; ++i) {
    const int64_t n = (ctx[i] + (int64_t)block_size - 1) / block_size;
    for (int j = 0; j < mbps; ++j) tables[(size_t)i * mbps + j] = j < n ? perm[k++] : 0;
  }
  free(perm);
  return 0;
}

int km_paged_table_random(int32_t *table, size_t n, int64_t num_blocks, uint64_t seed) {
  if (num_blocks <= 0 || num_blocks > (int64_t)INT32_MAX + 1 || (int64_t)n > num_blocks) return -1;
  int32_t *ids = malloc((size_t)num_blocks * sizeof *ids);
  if (!ids) return -1;
  for (int64_t i = 0; i < num_blocks; ++i) ids[i] = (int32_t)i;
  /* Partial Fisher-Yates: position i takes a uniform pick among the ids not yet taken. */
  uint64_t state = seed;
  for (size_t i = 0; i < n; ++i) {
    uint64_t j = i + rand_below(&state, (uint64_t)num_blocks - i);
    int32_t tmp = ids[i];
    ids[i] = ids[j];
    ids[j] = tmp;
    table[i] = ids[i];
  }
  free(ids);
  return 0;
}
