/* Query-aware sparse KV read (Quest): per-page min/max key summaries, page scores from the decode
 * query, an exact top-k page selection per (sequence, KV head), and a gather of the selected pages;
 * plus the dense read of every page that the sparse path is measured against. */
#ifndef KM_KERNELS_SPARSE_TOPK_H
#define KM_KERNELS_SPARSE_TOPK_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tokens per page: Quest's page and vLLM's default block size. */
#define KM_SPARSE_PAGE_TOKENS 16
/* Largest GQA group (query heads per KV head) the scoring kernel takes. */
#define KM_SPARSE_MAX_GROUP 8

/* Layouts (all bf16 as raw uint16_t bits, row-major, each sequence contiguous):
 *   keys, values  [batch][tokens][kv_heads][head_dim]      (tokens = capacity per sequence)
 *   query         [batch][q_heads][head_dim]              (query head g serves KV head g / group)
 *   summary       [batch][kv_heads][pages][2][head_dim]    (index 0 = max, 1 = min), stored in bf16:
 *                 the min and max of bf16 values are bf16 values, so nothing is rounded
 *   scores        [batch * kv_heads][pages] fp32
 *   selected      [batch * kv_heads][k] int32 page indices, ascending
 *   gathered K, V [batch * kv_heads][k][16][head_dim]
 * pages = ceil(tokens / 16). head_dim must be 64, 128 or 256; q_heads / kv_heads in {1, 2, 4, 8}. */
typedef struct km_sparse_shape {
  int batch;
  int tokens;
  int kv_heads;
  int q_heads;
  int head_dim;
} km_sparse_shape;

/* What the launchers size their grids and shared memory by, looked up once at setup: a launch sits
 * between the timing events, so it must not query the device. */
typedef struct km_sparse_plan {
  int sms;            /* multiprocessors: grid-stride grids stop at 16 CTAs per SM */
  int dense_grid;     /* CTAs of the dense read: as many as the SMs hold at once */
  int topk_max_pages; /* the longest top-k row whose keys fit one CTA's shared memory (~56K on H100/H200) */
  int select_max_pages; /* the same for km_sparse_select (its CTAs carry the top-k's shared memory too) */
} km_sparse_plan;

/* Fill *plan for the current device and opt the top-k kernel into the shared memory that
 * topk_max_pages assumes. Outside any timed region. */
cudaError_t km_sparse_plan_make(km_sparse_plan *plan);

/* Summaries of every page from the keys (prefill). A partial last page covers its valid tokens.
 * Ties (equal values, e.g. -0 and +0) keep the earlier token's bits, so the result is deterministic. */
cudaError_t km_sparse_summarize(const km_sparse_plan *plan, const uint16_t *keys, uint16_t *summary, km_sparse_shape s,
                                cudaStream_t stream);

/* Decode-time update: sequence b has just appended the token at position pos[b] (its key is already in
 * `keys`); fold it into its page's summary (a new page starts from it). Bitwise equal to a rebuild. */
cudaError_t km_sparse_summary_append(const km_sparse_plan *plan, const uint16_t *keys, uint16_t *summary,
                                     const int32_t *pos, km_sparse_shape s, cudaStream_t stream);

/* scores[b*kv_heads + h][p] = sum over the group's query heads g, over dims i, of
 * max(q_g,i * max_i, q_g,i * min_i), in fp32. */
cudaError_t km_sparse_score(const uint16_t *query, const uint16_t *summary, float *scores, km_sparse_shape s,
                            cudaStream_t stream);

/* Exact top-k per row of `scores` (rows x pages, 1 <= k <= pages): the last page of each row is always
 * selected, the other k-1 are the highest scores, ties going to the lower page index; scores are ordered
 * as IEEE total order (-0 < +0) with NaN below -inf. Written ascending. One CTA per row keeps the row's
 * keys in shared memory, so pages <= plan->topk_max_pages. */
cudaError_t km_sparse_topk(const km_sparse_plan *plan, const float *scores, int32_t *selected, int rows, int pages,
                           int k, cudaStream_t stream);

/* Score + top-k in one launch: writes `scores` bitwise equal to km_sparse_score (each page summed in the
 * same fp32 order) and `selected` equal to km_sparse_topk of those scores (same rule: last page always,
 * the other k-1 highest, ties to the lower page, IEEE total order with NaN lowest, ascending), so the
 * selection is identical to the two launches'. Many CTAs per row score slices of its pages (enough to
 * fill the GPU at batch 1), and the last CTA of a row to finish runs that row's top-k from L2.
 * counters: batch * kv_heads uint32, a workspace allocated and zeroed (cudaMemset) once, outside any
 * timed region; every launch that completes leaves them zero again, so the next one needs no memset.
 * Launches sharing one counters buffer must not run concurrently (one stream is fine); after a launch
 * that failed or was aborted, zero them again. 1 <= k <= pages <= plan->select_max_pages; the group
 * q_heads / kv_heads in {1, 2, 4, 8}. */
cudaError_t km_sparse_select(const km_sparse_plan *plan, const uint16_t *query, const uint16_t *summary,
                             float *scores, uint32_t *counters, int32_t *selected, km_sparse_shape s, int k,
                             cudaStream_t stream);

/* Which fused select km_sparse_select_v runs. Both write the same scores and the same selection (bitwise
 * those of km_sparse_score + km_sparse_topk) and use `counters` the same way, so they may share one buffer.
 *   V1: the kernel km_sparse_select runs (512-thread CTAs; the row's top-k from shared memory).
 *   V2: 256-thread scoring CTAs shaped as km_sparse_score's (8 pages per lane group in flight instead of
 *       4 when that grid fits one CTA per SM), and a top-k tail with the row's keys in registers (three
 *       11/11/10-bit radix digits, one barrier each, then a block-wide prefix sum for the compaction).
 *       The register tail takes rows of up to 4,096 pages; longer rows (up to plan->select_max_pages)
 *       run V1. Not yet timed on a GPU: see reports/sparse-notes.md. */
typedef enum km_sparse_select_variant {
  KM_SPARSE_SELECT_V1 = 0,
  KM_SPARSE_SELECT_V2 = 1
} km_sparse_select_variant;

/* km_sparse_select with the variant named (km_sparse_select is this with KM_SPARSE_SELECT_V1). The same
 * arguments and limits; an unknown variant is cudaErrorInvalidValue. */
cudaError_t km_sparse_select_v(const km_sparse_plan *plan, const uint16_t *query, const uint16_t *summary,
                               float *scores, uint32_t *counters, int32_t *selected, km_sparse_shape s, int k,
                               km_sparse_select_variant variant, cudaStream_t stream);

/* Gather the k selected pages of each (sequence, KV head) row, K and V, into contiguous outputs.
 * Needs tokens % 16 == 0 (whole pages). */
cudaError_t km_sparse_read(const uint16_t *keys, const uint16_t *values, const int32_t *selected, int k,
                           uint16_t *k_out, uint16_t *v_out, km_sparse_shape s, cudaStream_t stream);

/* The dense read: every byte of K and V (each `bytes` long, a multiple of 16) read once, as attention
 * over all pages would; each warp writes the XOR of the 32-bit words it read to partials[i]
 * (so the read cannot be optimised away and the CPU can check it). *used: partials written
 * (<= max_partials; the grid, plan->dense_grid CTAs, shrinks to fit). */
cudaError_t km_sparse_dense_read(const km_sparse_plan *plan, const uint16_t *keys, const uint16_t *values, size_t bytes,
                                 uint32_t *partials, int max_partials, int *used, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
