/* CPU references for the eviction family, written apart from the kernels: SnapKV scores in fp64 (the
 * arithmetic of kernels/evict.h written as plain loops), the kept set with km_sparse_topk's rule, the check
 * that a kept set is the fp64 one up to near-ties, and the compaction. */
#ifndef KM_EVICT_REF_H
#define KM_EVICT_REF_H

#include <stddef.h>
#include <stdint.h>

#include "evict.h"

/* Scores of the GPU are fp32 sums in another order: within this share of the fp64 score. Every term is
 * positive, so the relative error of the sum is that of its terms (a few fp32 roundings of the logit times
 * |logit|, and ex2.approx's 2^-22). */
#define KM_EVICT_SCORE_REL 1e-4

/* fp64 scores of row (sequence b, KV head h): scores[0..P-1] and scores[P] = 0, P = context - window. Reads
 * the queries and the K pool through the table in the layouts of kernels/evict.h. 0 ok, -1 out of memory. */
int km_evict_ref_score_row(const km_evict_shape *s, const uint16_t *q_window, const uint16_t *k_pool,
                           const int32_t *table, int b, int h, double *scores);

/* The kept tokens of one row from its scores (P + 1 of them): km_sparse_topk's rule (entry P forced, the
 * rest highest first, ties to the lower index, NaN lowest), km_evict_select_len of them, ascending.
 * 0 ok, -1 out of memory. */
int km_evict_ref_select_row(const km_evict_shape *s, const float *scores, int32_t *selected);

/* How many tokens of `selected` (one row) disagree with the fp64 scores beyond a near-tie: kept with a score
 * below the fp64 threshold (the (k-1)-th highest prefix score), or dropped with one above it, by more than
 * 2 x KM_EVICT_SCORE_REL of the larger. -1 out of memory. */
long km_evict_ref_near_tie_violations(const km_evict_shape *s, const double *ref_scores, const int32_t *selected);

/* Compaction: slot j < budget of every (sequence, head) of the compacted pools gets K and V of
 * km_evict_kept_token(j); nothing else is written. */
void km_evict_ref_compact(const km_evict_shape *s, const uint16_t *k_pool, const uint16_t *v_pool, const int32_t *table,
                          const int32_t *selected, uint16_t *dst_k, uint16_t *dst_v, const int32_t *dst_table);

#endif
