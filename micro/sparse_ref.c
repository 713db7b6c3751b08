/* CPU references for the sparse (Quest) family: summaries, scores, exact top-k, gather, dense XOR,
 * planted data and recall. Straightforward loops in index order, independent of the kernels' mapping. */
#include "sparse_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float km_bf16_to_float(uint16_t bits) {
  uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t km_float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static int page_count(km_sparse_shape s) { return (s.tokens + KM_SPARSE_PAGE_TOKENS - 1) / KM_SPARSE_PAGE_TOKENS; }

static size_t key_offset(km_sparse_shape s, int b, int t, int h) {
  return (((size_t)b * s.tokens + t) * s.kv_heads + h) * s.head_dim;
}

static void summarize_page(const uint16_t *keys, km_sparse_shape s, int b, int h, int p, uint16_t *mx, uint16_t *mn) {
  const int t0 = p * KM_SPARSE_PAGE_TOKENS;
  int t1 = t0 + KM_SPARSE_PAGE_TOKENS;
  if (t1 > s.tokens) t1 = s.tokens;
  memcpy(mx, keys + key_offset(s, b, t0, h), (size_t)s.head_dim * sizeof *mx);
  memcpy(mn, mx, (size_t)s.head_dim * sizeof *mn);
  for (int t = t0 + 1; t < t1; ++t) {
    const uint16_t *k = keys + key_offset(s, b, t, h);
    for (int i = 0; i < s.head_dim; ++i) {
      const float v = km_bf16_to_float(k[i]);
      if (v > km_bf16_to_float(mx[i])) mx[i] = k[i];
      if (v < km_bf16_to_float(mn[i])) mn[i] = k[i];
    }
  }
}

void km_sparse_ref_summarize(const uint16_t *keys, uint16_t *summary, km_sparse_shape s) {
  const int pages = page_count(s);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.kv_heads; ++h)
      for (int p = 0; p < pages; ++p) {
        uint16_t *dst = summary + (((size_t)b * s.kv_heads + h) * pages + p) * 2 * s.head_dim;
        summarize_page(keys, s, b, h, p, dst, dst + s.head_dim);
      }
}

void km_sparse_ref_score(const uint16_t *query, const uint16_t *summary, float *scores, float *abs_sum,
                         km_sparse_shape s) {
  const int pages = page_count(s), group = s.q_heads / s.kv_heads, d = s.head_dim;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.kv_heads; ++h) {
      const size_t row = (size_t)b * s.kv_heads + h;
      for (int p = 0; p < pages; ++p) {
        const uint16_t *mx = summary + (row * pages + p) * 2 * d, *mn = mx + d;
        float acc = 0.0f, mag = 0.0f;
        for (int g = 0; g < group; ++g) {
          const uint16_t *q = query + ((size_t)b * s.q_heads + (size_t)h * group + g) * d;
          for (int i = 0; i < d; ++i) {
            const float qi = km_bf16_to_float(q[i]);
            const float a = qi * km_bf16_to_float(mx[i]), c = qi * km_bf16_to_float(mn[i]);
            const float t = a > c ? a : c;
            acc += t;
            mag += fabsf(t);
          }
        }
        scores[row * pages + p] = acc;
        if (abs_sum) abs_sum[row * pages + p] = mag;
      }
    }
}

typedef struct ranked {
  uint32_t key;
  int32_t page;
} ranked;

/* IEEE total order as an unsigned key, NaN below everything (same rule as the header states). */
static uint32_t order_key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static int by_key_desc_page_asc(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return (a->page > b->page) - (a->page < b->page);
}

static int by_int_asc(const void *pa, const void *pb) {
  const int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
  return (a > b) - (a < b);
}

int km_sparse_ref_topk_row(const float *scores, int pages, int k, int32_t *out) {
  if (k < 1 || k > pages) return -1;
  ranked *r = malloc((size_t)pages * sizeof *r);
  if (!r) return -1;
  int n = 0;
  for (int p = 0; p < pages - 1; ++p) r[n++] = (ranked){order_key(scores[p]), p};
  qsort(r, (size_t)n, sizeof *r, by_key_desc_page_asc);
  out[0] = pages - 1;
  for (int j = 1; j < k; ++j) out[j] = r[j - 1].page;
  qsort(out, (size_t)k, sizeof *out, by_int_asc);
  free(r);
  return 0;
}

void km_sparse_ref_gather_row(const uint16_t *keys, const uint16_t *values, const int32_t *selected, int k, int row,
                              km_sparse_shape s, uint16_t *k_out, uint16_t *v_out) {
  const int b = row / s.kv_heads, h = row % s.kv_heads, d = s.head_dim;
  for (int j = 0; j < k; ++j)
    for (int t = 0; t < KM_SPARSE_PAGE_TOKENS; ++t) {
      const size_t src = key_offset(s, b, selected[j] * KM_SPARSE_PAGE_TOKENS + t, h);
      const size_t dst = ((size_t)j * KM_SPARSE_PAGE_TOKENS + t) * d;
      memcpy(k_out + dst, keys + src, (size_t)d * sizeof *k_out);
      memcpy(v_out + dst, values + src, (size_t)d * sizeof *v_out);
    }
}

uint32_t km_sparse_ref_xor(const uint16_t *a, const uint16_t *b, size_t bytes) {
  uint32_t acc = 0;
  for (size_t i = 0; i < bytes / 4; ++i) {
    uint32_t wa, wb;
    memcpy(&wa, (const char *)a + 4 * i, 4);
    memcpy(&wb, (const char *)b + 4 * i, 4);
    acc ^= wa ^ wb;
  }
  return acc;
}

static uint64_t next_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void km_sparse_ref_plant(uint16_t *keys, const uint16_t *query, km_sparse_shape s, int per_head, float lo, float hi,
                         uint64_t seed) {
  const int group = s.q_heads / s.kv_heads, d = s.head_dim;
  uint64_t state = seed;
  for (int h = 0; h < s.kv_heads; ++h)
    for (int n = 0; n < per_head; ++n) {
      const int t = (int)(next_rand(&state) % (uint64_t)s.tokens);
      const float u = (float)(next_rand(&state) >> 40) / (float)(1u << 24);
      const float scale = (lo + (hi - lo) * u) / sqrtf((float)d);  /* q_g . sum_g q ~ d */
      uint16_t *k = keys + key_offset(s, 0, t, h);
      for (int i = 0; i < d; ++i) {
        float sum = 0.0f;
        for (int g = 0; g < group; ++g) sum += km_bf16_to_float(query[((size_t)h * group + g) * d + i]);
        k[i] = km_float_to_bf16(scale * sum);
      }
    }
}

/* Attention mass per page of query head qh of sequence 0, added into mass[pages]. */
static void head_page_mass(const uint16_t *keys, const uint16_t *query, km_sparse_shape s, int qh, float *logit,
                           double *mass) {
  const int h = qh / (s.q_heads / s.kv_heads), d = s.head_dim;
  const uint16_t *q = query + (size_t)qh * d;
  const float inv = 1.0f / sqrtf((float)d);
  float top = -INFINITY;
  for (int t = 0; t < s.tokens; ++t) {
    const uint16_t *k = keys + key_offset(s, 0, t, h);
    float dot = 0.0f;
    for (int i = 0; i < d; ++i) dot += km_bf16_to_float(q[i]) * km_bf16_to_float(k[i]);
    logit[t] = dot * inv;
    if (logit[t] > top) top = logit[t];
  }
  double total = 0.0;
  for (int t = 0; t < s.tokens; ++t) total += exp((double)logit[t] - top);
  for (int t = 0; t < s.tokens; ++t) mass[t / KM_SPARSE_PAGE_TOKENS] += exp((double)logit[t] - top) / total;
}

int km_sparse_ref_recall(const uint16_t *keys, const uint16_t *query, const int32_t *selected, int k,
                         km_sparse_shape s, double *recall, double *oracle) {
  const int pages = page_count(s), group = s.q_heads / s.kv_heads;
  float *logit = malloc((size_t)s.tokens * sizeof *logit);
  double *mass = malloc((size_t)pages * sizeof *mass);
  float *group_mass = malloc((size_t)pages * sizeof *group_mass);
  int32_t *best = malloc((size_t)k * sizeof *best);
  int rc = (logit && mass && group_mass && best) ? 0 : -1;
  double got = 0.0, ideal = 0.0;
  for (int h = 0; rc == 0 && h < s.kv_heads; ++h) {
    memset(mass, 0, (size_t)pages * sizeof *mass);
    for (int g = 0; g < group; ++g) head_page_mass(keys, query, s, h * group + g, logit, mass);
    for (int j = 0; j < k; ++j) got += mass[selected[(size_t)h * k + j]];
    for (int p = 0; p < pages; ++p) group_mass[p] = (float)mass[p];
    rc = km_sparse_ref_topk_row(group_mass, pages, k, best);
    for (int j = 0; rc == 0 && j < k; ++j) ideal += mass[best[j]];
  }
  *recall = got / s.q_heads;
  *oracle = ideal / s.q_heads;
  free(logit);
  free(mass);
  free(group_mass);
  free(best);
  return rc;
}
