/* CPU references for the sparse (Quest) family, written apart from the kernels: page summaries, page
 * scores, the exact top-k with the same tie rule, the gather, the dense read's XOR, and the recall of a
 * selection on data with planted high-attention tokens. Layouts are those of kernels/sparse_topk.h. */
#ifndef KM_SPARSE_REF_H
#define KM_SPARSE_REF_H

#include <stddef.h>
#include <stdint.h>

#include "sparse_topk.h"

float km_bf16_to_float(uint16_t bits);
uint16_t km_float_to_bf16(float f); /* round to nearest even (finite inputs) */

/* Page summaries of all sequences: max then min per page of 16 tokens (fewer for a partial last page);
 * a later token replaces the current value only when strictly larger (smaller). */
void km_sparse_ref_summarize(const uint16_t *keys, uint16_t *summary, km_sparse_shape s);

/* Scores of all rows in fp32, and for each the sum of |terms| (to state a relative tolerance). */
void km_sparse_ref_score(const uint16_t *query, const uint16_t *summary, float *scores, float *abs_sum,
                         km_sparse_shape s);

/* One row's exact top-k (1 <= k <= pages): the last page, then the k-1 highest of the rest in IEEE total
 * order (NaN lowest), ties to the lower page; written ascending to out. 0 ok, -1 out of memory. */
int km_sparse_ref_topk_row(const float *scores, int pages, int k, int32_t *out);

/* Gather the selected pages of row `row` (b * kv_heads + h) into k_out/v_out ([k][16][d] each). */
void km_sparse_ref_gather_row(const uint16_t *keys, const uint16_t *values, const int32_t *selected, int k, int row,
                              km_sparse_shape s, uint16_t *k_out, uint16_t *v_out);

/* XOR of every 32-bit word of both buffers (what the dense read's partials XOR to). */
uint32_t km_sparse_ref_xor(const uint16_t *a, const uint16_t *b, size_t bytes);

/* Plant high-attention tokens in sequence 0 (s.batch is ignored): for each KV head, `per_head` random
 * tokens get key = (L / sqrt(d)) * sum of the group's queries, L uniform in [lo, hi], so each of those
 * queries gives them a logit of about L (random keys give logits ~ N(0, 1)). */
void km_sparse_ref_plant(uint16_t *keys, const uint16_t *query, km_sparse_shape s, int per_head, float lo, float hi,
                         uint64_t seed);

/* Recall of a selection for sequence 0: the share of the true softmax attention mass (logits q.k/sqrt(d)
 * over all tokens, per query head) held by the selected pages, averaged over query heads. *oracle gets
 * the same for the best possible k pages per KV head (largest group mass, last page forced).
 * 0 ok, -1 out of memory. */
int km_sparse_ref_recall(const uint16_t *keys, const uint16_t *query, const int32_t *selected, int k,
                         km_sparse_shape s, double *recall, double *oracle);

#endif
