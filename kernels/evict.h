/* SnapKV-style KV eviction over a vLLM paged cache: score every cached token of each (sequence, KV head)
 * from the attention of the last `window` queries, keep the top `budget` tokens (the window always kept),
 * and compact K and V of the kept tokens into a second paged cache. The shape checks and the index math
 * the CPU reference shares are inline here.
 *
 * Scores (SnapKV, FasterDecoding/SnapKV snapkv_utils.py, with its GQA group summed): for KV head h of
 * sequence b, P = context - window prefix tokens, and each query head g of the group and window query i
 * (token P + i), p_{g,i}(j) = softmax_j(q_{g,i} . k_j / sqrt(head_dim)) over the tokens j <= P + i (causal
 * inside the window). For prefix tokens j < P:
 *   a(j)     = (1 / window) * sum_g sum_i p_{g,i}(j)           (averaged over the window, summed over the group)
 *   score(j) = avg over j-2..j+2 of a, zeros outside [0, P)    (avg_pool1d, kernel 5, padding 2, count_include_pad)
 *              or the max over the in-range ones (max_pool1d)
 * Softmax and sums in fp32 (SnapKV rounds the probabilities to bf16 before summing; we do not).
 *
 * Selection: the prefix's budget - window highest scores (ties to the lower token; km_sparse_topk's
 * order) plus the window. The score row has P + 1 entries: entry P stands for the window and is forced by
 * km_sparse_topk (it always keeps a row's last entry), so selected[row] holds kk = budget - window + 1
 * ascending token indices ending with P. Kept slot j < budget of a row is token
 *   km_evict_kept_token(j) = selected[row][j] for j < kk, else j + context - budget   (the window, in order).
 * SnapKV keeps the prefix in top-k order; we keep ascending positions: the same set.
 *
 * Layouts (bf16 as uint16_t bits): queries of the window [batch][window][q_heads][head_dim] (query head
 * h * group + g serves KV head h); K and V pools [num_blocks][block_size][kv_heads][head_dim] with an int32
 * table [batch][blocks_per_seq] (kernels/paged_gather.h's NHD layout); the compacted pools the same with
 * their own table [batch][dst_blocks_per_seq] (>= ceil(budget / block_size)): slot j of sequence b, head h
 * holds K and V of token km_evict_kept_token(j) of (b, h). Every sequence holds `context` tokens. */
#ifndef KM_KERNELS_EVICT_H
#define KM_KERNELS_EVICT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "sparse_topk.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum km_evict_pool {
  KM_EVICT_POOL_AVG = 0, /* SnapKV's default */
  KM_EVICT_POOL_MAX,
  KM_EVICT_POOL_COUNT
} km_evict_pool;

/* SnapKV's defaults: observation window 64, pooling kernel 5. */
#define KM_EVICT_WINDOW 64
#define KM_EVICT_KERNEL 5
#define KM_EVICT_MAX_KERNEL 15

typedef struct km_evict_shape {
  int batch, context, kv_heads, q_heads, head_dim;
  int window;         /* observation window W (queries that score, tokens always kept) */
  int budget;         /* tokens kept per (sequence, KV head), the window included */
  int kernel;         /* pooling kernel (odd, padding kernel / 2), 1: none */
  km_evict_pool pool;
  int block_size;     /* tokens per block of both pools */
  int blocks_per_seq; /* source table entries per sequence (>= ceil(context / block_size)) */
  int dst_blocks_per_seq;
} km_evict_shape;

#ifdef __CUDACC__
#define KM_EVICT_HD __host__ __device__ __forceinline__
#else
#define KM_EVICT_HD static inline
#endif

/* Rows of scores and selections: one per (sequence, KV head). */
KM_EVICT_HD int km_evict_rows(const km_evict_shape *s) { return s->batch * s->kv_heads; }
/* Entries per score row: the P = context - window prefix tokens, then the window's forced entry. */
KM_EVICT_HD int km_evict_score_len(const km_evict_shape *s) { return s->context - s->window + 1; }
/* Selected token indices per row (the forced window entry included). */
KM_EVICT_HD int km_evict_select_len(const km_evict_shape *s) { return s->budget - s->window + 1; }

KM_EVICT_HD int km_evict_kept_token(const km_evict_shape *s, const int32_t *selected_row, int j) {
  return j < km_evict_select_len(s) ? selected_row[j] : j + s->context - s->budget;
}

/* NULL when the kernels take shape s, else one phrase naming what is wrong. head_dim 64/128/256, a GQA
 * group (q_heads / kv_heads) of 1..8, window * group a multiple of 32 (16 for head_dim 256): the scoring
 * kernel's warps own 32 (16) query rows; window < context, window <= budget <= context. */
KM_EVICT_HD const char *km_evict_shape_error(const km_evict_shape *s) {
  if (s->batch <= 0 || s->context <= 0 || s->kv_heads <= 0 || s->q_heads <= 0) return "batch, context and heads must be positive";
  if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256) return "head_dim must be 64, 128 or 256";
  if (s->q_heads % s->kv_heads != 0 || s->q_heads / s->kv_heads > 8) return "q_heads must be 1..8 times kv_heads";
  if (s->window <= 0 || s->window >= s->context) return "window must be in 1..context-1";
  if ((s->window * (s->q_heads / s->kv_heads)) % (s->head_dim == 256 ? 16 : 32) != 0)
    return "window x group must be a multiple of 32 (16 at head_dim 256)";
  if (s->budget < s->window || s->budget > s->context) return "budget must be in window..context";
  if (s->kernel < 1 || s->kernel % 2 == 0 || s->kernel > KM_EVICT_MAX_KERNEL) return "pooling kernel must be odd, 1..15";
  if ((unsigned)s->pool >= KM_EVICT_POOL_COUNT) return "pooling must be avg or max";
  if (s->block_size <= 0 || (long long)s->blocks_per_seq * s->block_size < s->context)
    return "blocks_per_seq x block_size must cover the context";
  if ((long long)s->dst_blocks_per_seq * s->block_size < s->budget) return "dst_blocks_per_seq x block_size must cover the budget";
  if ((long long)s->batch * s->kv_heads > 65535) return "batch x kv_heads must be at most 65535";
  if ((long long)s->batch * s->budget * s->kv_heads * (s->head_dim / 8) > 0x7fffffffLL)
    return "batch x budget x kv_heads x head_dim / 8 must be below 2^31";
  return 0;
}

/* Scratch the scoring needs (per-chunk softmax statistics and unpooled sums), in bytes. */
size_t km_evict_scratch_bytes(const km_evict_shape *s);

/* scores: [rows][km_evict_score_len] fp32 (the forced entry written 0). Two passes over K: softmax
 * statistics per query row, then the probabilities summed per token; then the pooling. */
cudaError_t km_evict_score(const km_evict_shape *s, const uint16_t *q_window, const uint16_t *k_pool,
                           const int32_t *table, void *scratch, float *scores, cudaStream_t stream);

/* selected: [rows][km_evict_select_len] int32, ascending (km_sparse_topk). The score row must fit one
 * CTA's shared memory: km_evict_score_len <= plan->topk_max_pages (plan: km_sparse_plan_make, at setup). */
cudaError_t km_evict_select(const km_sparse_plan *plan, const km_evict_shape *s, const float *scores, int32_t *selected,
                            cudaStream_t stream);

/* How the compaction runs; every variant writes the same bits. Tiles of KM_EVICT_COMPACT_THREADS x unroll
 * 16-byte vectors of K (and as many of V), each thread holding `unroll` of each in flight: 2 (the default:
 * 8 KiB of K and 8 KiB of V, the shape of the H200's fastest plain copy), 4 or 8. persistent 0: a CTA per
 * tile, the hardware handing tiles to SMs as they free up; 1: `grid` CTAs (the resident ones, found by
 * km_evict_compact_opts_make at setup so no device query sits in the launch) walk the tiles with a grid
 * stride, each issuing its next tile's loads before storing the current one. */
typedef struct km_evict_compact_opts {
  int unroll;
  int persistent;
  int grid; /* CTAs of a persistent launch; 0 for a CTA per tile */
} km_evict_compact_opts;

#define KM_EVICT_COMPACT_THREADS 256
#define KM_EVICT_COMPACT_UNROLL 2 /* the default */

/* NULL when km_evict_compact takes o, else one phrase naming what is wrong. */
KM_EVICT_HD const char *km_evict_compact_opts_error(const km_evict_compact_opts *o) {
  if (o->unroll != 2 && o->unroll != 4 && o->unroll != 8) return "compaction unroll must be 2, 4 or 8";
  if (o->persistent != 0 && o->persistent != 1) return "compaction persistent must be 0 or 1";
  if (o->persistent && o->grid <= 0) return "a persistent compaction needs a grid of at least one CTA";
  if (!o->persistent && o->grid != 0) return "a compaction of a CTA per tile takes no grid (0)";
  return 0;
}

/* *o for shape s: the knobs checked, and for a persistent launch the grid: the fewest CTAs that walk no
 * more tiles each than all those resident on the current device at once would (SMs x occupancy of that
 * kernel), so each walks the same number of tiles bar one. Knobs and shape are checked before the device
 * is asked: cudaErrorInvalidValue for a bad one, *o untouched. */
cudaError_t km_evict_compact_opts_make(const km_evict_shape *s, int unroll, int persistent, km_evict_compact_opts *o);

/* Copy K and V of every kept (slot, head) into the compacted pools through dst_table. 16-byte aligned
 * pools; budget slots per sequence written, nothing else. opts NULL: the default (unroll 2, a CTA per
 * tile). */
cudaError_t km_evict_compact(const km_evict_compact_opts *opts, const km_evict_shape *s, const uint16_t *k_pool,
                             const uint16_t *v_pool, const int32_t *table, const int32_t *selected, uint16_t *dst_k,
                             uint16_t *dst_v, const int32_t *dst_table, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
