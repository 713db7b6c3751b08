/* The split-KV merge's arithmetic (the decode kernel's CTA merge and its last CTA's merge into the output, and the
 * combine pass), in log2 space: a running merge (m, sum, acc[dims]) takes a block of n partials (lse_j, o_j[dims])
 * at once, with one update of
 * the running maximum and one rescale per block and n independent exponentials, so that a block of 16 partials costs
 * one dependent chain instead of 16. Host and device code alike, so that tests/cpu_attn_merge.c checks it against a
 * double-precision merge on the CPU.
 *
 * A partial j of a query row over a chunk of tokens: lse_j = log2(sum_t 2^(s_t)) of its scores s_t (log2 units) and
 * o_j = sum_t 2^(s_t - lse_j) v_t, its normalised output (dims <= 8 consecutive output dims here); a chunk without a token
 * of the row has lse_j = -INFINITY and a finite o_j (0). The merge of all partials is
 * out = sum_j 2^lse_j o_j / sum_j 2^lse_j, and its own log2-sum-exp log2(sum_j 2^lse_j). */
#ifndef KM_KERNELS_ATTN_MERGE_H
#define KM_KERNELS_ATTN_MERGE_H

#include <math.h>

#ifdef __CUDACC__
#define KM_MERGE_HD __host__ __device__ __forceinline__
#define KM_MERGE_UNROLL _Pragma("unroll")
#else
#define KM_MERGE_HD static inline
#define KM_MERGE_UNROLL
#endif

#define KM_ATTN_MERGE_DIMS 8 /* the most output dims one running merge holds */

/* m: the largest lse taken so far (-INFINITY before any); sum: sum_j 2^(lse_j - m); acc: sum_j 2^(lse_j - m) o_j
 * (its first dims entries). */
typedef struct km_attn_merge {
  float m, sum, acc[KM_ATTN_MERGE_DIMS];
} km_attn_merge;

KM_MERGE_HD km_attn_merge km_attn_merge_start(void) {
  km_attn_merge r;
  r.m = -INFINITY, r.sum = 0.f;
  KM_MERGE_UNROLL
  for (int k = 0; k < KM_ATTN_MERGE_DIMS; ++k) r.acc[k] = 0.f;
  return r;
}

/* The running merge takes n >= 1 partials of dims <= KM_ATTN_MERGE_DIMS output dims: lse[j] and o[dims j .. dims j +
 * dims - 1]. The same sums as taking them one at a time, in another order. */
KM_MERGE_HD void km_attn_merge_block(km_attn_merge *r, const float *lse, const float *o, int n, int dims) {
  float mb = lse[0];
  KM_MERGE_UNROLL
  for (int j = 1; j < n; ++j) mb = fmaxf(mb, lse[j]);
  const float mn = fmaxf(r->m, mb);
  if (mn == -INFINITY) return; /* no partial so far had a token */
  const float a = exp2f(r->m - mn); /* 0 while m is -inf */
  float ws = 0.f, sum[KM_ATTN_MERGE_DIMS];
  KM_MERGE_UNROLL
  for (int k = 0; k < dims; ++k) sum[k] = 0.f;
  KM_MERGE_UNROLL
  for (int j = 0; j < n; ++j) {
    const float b = exp2f(lse[j] - mn); /* 0 for a partial without a token */
    ws += b;
    KM_MERGE_UNROLL
    for (int k = 0; k < dims; ++k) sum[k] += b * o[dims * j + k];
  }
  r->sum = r->sum * a + ws;
  KM_MERGE_UNROLL
  for (int k = 0; k < dims; ++k) r->acc[k] = r->acc[k] * a + sum[k];
  r->m = mn;
}

/* 1 / sum, the factor that turns acc into the merged output (0 where no partial had a token: the output is 0). */
KM_MERGE_HD float km_attn_merge_scale(const km_attn_merge *r) { return r->sum > 0.f ? 1.f / r->sum : 0.f; }

/* The merged partials' own log2-sum-exp (-INFINITY where none had a token). */
KM_MERGE_HD float km_attn_merge_lse(const km_attn_merge *r) {
  return r->sum > 0.f ? r->m + log2f(r->sum) : -INFINITY;
}

#endif
