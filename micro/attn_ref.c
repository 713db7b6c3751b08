/* CPU reference of one decode step (see attn_ref.h): scores in double, max-subtracted softmax per query
 * head, GQA grouping (query head j reads KV head j / group), the causal position and the window. */
#include "attn_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_3bit.h"
#include "quant_ref.h"
#include "sparse_ref.h"

/* 3-bit: code `dim % 32` of the group's record (3 bits at bit 3 x (dim % 32), LSB first) x scale + zero. */
static double u3_elem(const uint8_t *row, int dim) {
  const uint8_t *rec = row + (size_t)(dim / 32) * 16;
  const int bit = 3 * (dim % 32);
  const unsigned two = rec[bit / 8] | (unsigned)rec[bit / 8 + 1] << 8; /* byte 12 (the scale) at most: inside */
  const double scale = km_ref_f16_to_f32((uint16_t)(rec[12] | rec[13] << 8));
  const double zero = km_ref_f16_to_f32((uint16_t)(rec[14] | rec[15] << 8));
  return (double)((two >> (bit % 8)) & 7u) * scale + zero;
}

double km_attn_ref_elem(const void *rows, size_t hr, int dim, int d, km_attn_ref_kv kv) {
  const size_t i = hr * (size_t)d + (size_t)dim;
  if (kv == KM_REF_KV_BF16) return (double)km_bf16_to_float(((const uint16_t *)rows)[i]);
  if (kv == KM_REF_KV_U3) return u3_elem((const uint8_t *)rows + hr * (size_t)(d / 2), dim);
  if (kv == KM_REF_KV_TQ3) return NAN;
  return km_ref_fp8_decode(((const uint8_t *)rows)[i], kv == KM_REF_KV_E4M3 ? KM_REF_E4M3 : KM_REF_E5M2);
}

/* Is position t visible to the query at position pos? */
static int visible(const km_attn_ref_shape *s, int t, int pos) {
  return t <= pos && (s->window <= 0 || t > pos - s->window);
}

/* TurboQuant: x = S H level(codes) x norm / d (kernels/quant_3bit.h), in double. */
static void tq_row(const uint8_t *codes, int d, double norm, double *x) {
  static const double levels[8] = {-KM_TQ_L3, -KM_TQ_L2, -KM_TQ_L1, -KM_TQ_L0, KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};
  uint8_t c[256];
  km_ref_unpack3(codes, d, c);
  for (int i = 0; i < d; ++i) x[i] = levels[c[i]];
  for (int len = 1; len < d; len <<= 1)
    for (int i = 0; i < d; ++i)
      if (!(i & len)) {
        const double a = x[i], b = x[i | len];
        x[i] = a + b;
        x[i | len] = a - b;
      }
  for (int i = 0; i < d; ++i) x[i] *= (km_ref_tq_negative(i) ? -norm : norm) / d;
}

/* One head row (token x kv_heads + KV head) decoded and scaled, into x[d]. */
static void decode_row(const km_attn_ref_shape *s, const void *rows, const float *sc, double tensor_scale, size_t hr,
                       double *x) {
  const int d = s->head_dim;
  if (s->kv == KM_REF_KV_TQ3) {
    tq_row((const uint8_t *)rows + hr * (size_t)(3 * d / 8), d, sc[hr], x);
    return;
  }
  const double f = s->kv == KM_REF_KV_BF16 || s->kv == KM_REF_KV_U3 ? 1.0 : s->per_token ? sc[hr] : tensor_scale;
  /* (TurboQuant returned above: its norms are in sc whatever per_token says) */
  for (int i = 0; i < d; ++i) x[i] = f * km_attn_ref_elem(rows, hr, i, d, s->kv);
}

/* KV head kvh for every query token: each visible row decoded once for the group's query heads. */
static void step_kv_head(const km_attn_ref_shape *s, int ctx, const uint16_t *q, const void *k_rows, const void *v_rows,
                         const float *k_sc, const float *v_sc, const int32_t *pages, int npages, int kvh, float *out) {
  const int d = s->head_dim, group = s->heads / s->kv_heads, cap = ctx > 0 ? ctx : 1;
  int *toks = malloc((size_t)cap * sizeof *toks);
  double *w = malloc((size_t)group * cap * sizeof *w), *acc = malloc((size_t)group * d * sizeof *acc);
  double *x = malloc((size_t)d * sizeof *x), *qd = malloc((size_t)group * d * sizeof *qd), *mx = malloc((size_t)group * sizeof *mx);
  if (!toks || !w || !acc || !x || !qd || !mx) abort();
  for (int qi = 0; qi < s->q_len; ++qi) {
    const int pos = ctx - s->q_len + qi;
    int n = 0;
    if (pages) {
      for (int j = 0; j < npages; ++j)
        for (int u = 0; u < 16; ++u) {
          int t = pages[(size_t)kvh * npages + j] * 16 + u;
          if (t < ctx && visible(s, t, pos)) toks[n++] = t;
        }
    } else {
      for (int t = 0; t < ctx; ++t)
        if (visible(s, t, pos)) toks[n++] = t;
    }
    for (int hg = 0; hg < group; ++hg) {
      const uint16_t *qr = q + ((size_t)qi * s->heads + kvh * group + hg) * d;
      for (int i = 0; i < d; ++i) qd[(size_t)hg * d + i] = km_bf16_to_float(qr[i]);
      mx[hg] = -INFINITY;
    }
    for (int j = 0; j < n; ++j) {
      decode_row(s, k_rows, k_sc, s->k_scale, (size_t)toks[j] * s->kv_heads + kvh, x);
      for (int hg = 0; hg < group; ++hg) {
        double dot = 0;
        for (int i = 0; i < d; ++i) dot += qd[(size_t)hg * d + i] * x[i];
        const double v = dot * s->sm_scale;
        w[(size_t)hg * cap + j] = v;
        if (v > mx[hg]) mx[hg] = v;
      }
    }
    memset(acc, 0, (size_t)group * d * sizeof *acc);
    for (int hg = 0; hg < group; ++hg)
      for (int j = 0; j < n; ++j) w[(size_t)hg * cap + j] = exp(w[(size_t)hg * cap + j] - mx[hg]);
    for (int j = 0; j < n; ++j) {
      decode_row(s, v_rows, v_sc, s->v_scale, (size_t)toks[j] * s->kv_heads + kvh, x);
      for (int hg = 0; hg < group; ++hg) {
        const double p = w[(size_t)hg * cap + j];
        for (int i = 0; i < d; ++i) acc[(size_t)hg * d + i] += p * x[i];
      }
    }
    for (int hg = 0; hg < group; ++hg) {
      double sum = 0;
      for (int j = 0; j < n; ++j) sum += w[(size_t)hg * cap + j];
      float *o = out + ((size_t)qi * s->heads + kvh * group + hg) * d;
      for (int i = 0; i < d; ++i) o[i] = (float)(n ? acc[(size_t)hg * d + i] / sum : 0.0);
    }
  }
  free(toks), free(w), free(acc), free(x), free(qd), free(mx);
}

void km_attn_ref_step(const km_attn_ref_shape *s, int ctx, const uint16_t *q, const void *k_rows, const void *v_rows,
                      const float *k_sc, const float *v_sc, const int32_t *pages, int npages, int kvh_count,
                      float *out) {
  const int nkv = kvh_count < s->kv_heads ? kvh_count : s->kv_heads;
  /* KV heads are independent (each writes its own query heads): one per thread where OpenMP is built in */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
  for (int kvh = 0; kvh < nkv; ++kvh) step_kv_head(s, ctx, q, k_rows, v_rows, k_sc, v_sc, pages, npages, kvh, out);
}

void km_attn_ref_compare(const float *a, const float *b, size_t n, double *rel_err, double *cosine) {
  double dd = 0, bb = 0, aa = 0, ab = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    dd += (x - y) * (x - y);
    bb += y * y;
    aa += x * x;
    ab += x * y;
  }
  *rel_err = bb > 0 ? sqrt(dd / bb) : sqrt(dd);
  *cosine = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}
