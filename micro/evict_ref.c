/* CPU references for the eviction family: SnapKV's scoring in fp64 over one (sequence, KV head) row, the
 * kept set, its near-tie check against fp64, and the compaction, as plain loops in index order. */
#include "evict_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_ref.h"

static const uint16_t *piece(const km_evict_shape *s, const uint16_t *pool, const int32_t *table, int bps, int b, int t,
                             int h) {
  const int64_t blk = table[(size_t)b * bps + t / s->block_size];
  return pool + (((size_t)blk * s->block_size + t % s->block_size) * s->kv_heads + h) * s->head_dim;
}

static double dot(const double *q, const float *k, int d) {
  double acc[4] = {0, 0, 0, 0};
  for (int i = 0; i < d; i += 4)
    for (int u = 0; u < 4; ++u) acc[u] += q[i + u] * k[i + u];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

int km_evict_ref_score_row(const km_evict_shape *s, const uint16_t *q_window, const uint16_t *k_pool,
                           const int32_t *table, int b, int h, double *scores) {
  const int d = s->head_dim, G = s->q_heads / s->kv_heads, W = s->window, T = s->context, P = T - W;
  float *keys = malloc((size_t)T * d * sizeof *keys);
  double *e = malloc((size_t)T * sizeof *e), *a = calloc((size_t)P + 1, sizeof *a), *q = malloc((size_t)d * sizeof *q);
  if (!keys || !e || !a || !q) {
    free(keys), free(e), free(a), free(q);
    return -1;
  }
  for (int t = 0; t < T; ++t) {
    const uint16_t *k = piece(s, k_pool, table, s->blocks_per_seq, b, t, h);
    for (int i = 0; i < d; ++i) keys[(size_t)t * d + i] = km_bf16_to_float(k[i]);
  }
  const double scale = 1.0 / sqrt((double)d);
  for (int i = 0; i < W; ++i)
    for (int g = 0; g < G; ++g) {
      const uint16_t *qr = q_window + (((size_t)b * W + i) * s->q_heads + (size_t)h * G + g) * d;
      for (int c = 0; c < d; ++c) q[c] = km_bf16_to_float(qr[c]);
      const int seen = P + i + 1; /* causal inside the window */
      double m = -INFINITY, sum = 0.0;
      for (int j = 0; j < seen; ++j) {
        e[j] = dot(q, keys + (size_t)j * d, d) * scale;
        if (e[j] > m) m = e[j];
      }
      for (int j = 0; j < seen; ++j) {
        e[j] = exp(e[j] - m);
        sum += e[j];
      }
      for (int j = 0; j < P; ++j) a[j] += e[j] / sum;
    }
  const int half = s->kernel / 2;
  for (int t = 0; t < P; ++t) {
    double acc = s->pool == KM_EVICT_POOL_MAX ? -INFINITY : 0.0;
    for (int j = t - half; j <= t + half; ++j) {
      if (j < 0 || j >= P) continue; /* avg: zero padding, counted in the divisor; max: ignored */
      const double v = a[j] / W;
      acc = s->pool == KM_EVICT_POOL_MAX ? (v > acc ? v : acc) : acc + v;
    }
    scores[t] = s->pool == KM_EVICT_POOL_MAX ? acc : acc / s->kernel;
  }
  scores[P] = 0.0;
  free(keys), free(e), free(a), free(q);
  return 0;
}

int km_evict_ref_select_row(const km_evict_shape *s, const float *scores, int32_t *selected) {
  return km_sparse_ref_topk_row(scores, km_evict_score_len(s), km_evict_select_len(s), selected);
}

static int descending(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a < b) - (a > b);
}

long km_evict_ref_near_tie_violations(const km_evict_shape *s, const double *ref_scores, const int32_t *selected) {
  const int P = s->context - s->window, kk = km_evict_select_len(s);
  long bad = selected[kk - 1] != P; /* the window's forced entry, last */
  for (int i = 0; i + 1 < kk; ++i)
    if (selected[i] < 0 || selected[i] >= P || (i > 0 && selected[i] <= selected[i - 1])) ++bad;
  if (bad || kk == 1) return bad;
  double *sorted = malloc((size_t)P * sizeof *sorted);
  unsigned char *kept = calloc((size_t)P, 1);
  if (!sorted || !kept) {
    free(sorted), free(kept);
    return -1;
  }
  memcpy(sorted, ref_scores, (size_t)P * sizeof *sorted);
  qsort(sorted, (size_t)P, sizeof *sorted, descending);
  const double thr = sorted[kk - 2];
  for (int i = 0; i + 1 < kk; ++i) kept[selected[i]] = 1;
  for (int j = 0; j < P; ++j) {
    const double big = fabs(ref_scores[j]) > fabs(thr) ? fabs(ref_scores[j]) : fabs(thr);
    const double tol = 2 * KM_EVICT_SCORE_REL * big;
    if ((kept[j] && ref_scores[j] < thr - tol) || (!kept[j] && ref_scores[j] > thr + tol)) ++bad;
  }
  free(sorted), free(kept);
  return bad;
}

void km_evict_ref_compact(const km_evict_shape *s, const uint16_t *k_pool, const uint16_t *v_pool, const int32_t *table,
                          const int32_t *selected, uint16_t *dst_k, uint16_t *dst_v, const int32_t *dst_table) {
  const int kk = km_evict_select_len(s);
  const size_t bytes = (size_t)s->head_dim * sizeof(uint16_t);
  for (int b = 0; b < s->batch; ++b)
    for (int j = 0; j < s->budget; ++j)
      for (int h = 0; h < s->kv_heads; ++h) {
        const int t = km_evict_kept_token(s, selected + ((size_t)b * s->kv_heads + h) * kk, j);
        const size_t src = (size_t)(piece(s, k_pool, table, s->blocks_per_seq, b, t, h) - k_pool);
        const size_t dst = (size_t)(piece(s, dst_k, dst_table, s->dst_blocks_per_seq, b, j, h) - dst_k);
        memcpy(dst_k + dst, k_pool + src, bytes);
        memcpy(dst_v + dst, v_pool + src, bytes);
      }
}
