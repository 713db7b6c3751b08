/* CPU reference of one decode step (see attn_ref.h): scores in double, max-subtracted softmax per query
 * head, GQA grouping (query head j reads KV head j / group), the causal position and the window. */
#include "attn_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_ref.h"
#include "sparse_ref.h"

double km_attn_ref_elem(const void *rows, size_t hr, int dim, int d, km_attn_ref_kv kv) {
  const size_t i = hr * (size_t)d + (size_t)dim;
  if (kv == KM_REF_KV_BF16) return (double)km_bf16_to_float(((const uint16_t *)rows)[i]);
  if (kv == KM_REF_KV_U3) {
    /* the group's record: codes unpacked with the quant reference, then code x scale + zero */
    const uint8_t *rec = (const uint8_t *)rows + hr * (size_t)(d / 2) + (size_t)(dim / 32) * 16;
    uint8_t codes[32];
    km_ref_unpack3(rec, 32, codes);
    const double scale = km_ref_f16_to_f32((uint16_t)(rec[12] | rec[13] << 8));
    const double zero = km_ref_f16_to_f32((uint16_t)(rec[14] | rec[15] << 8));
    return codes[dim % 32] * scale + zero;
  }
  return km_ref_fp8_decode(((const uint8_t *)rows)[i], kv == KM_REF_KV_E4M3 ? KM_REF_E4M3 : KM_REF_E5M2);
}

/* Is position t visible to the query at position pos? */
static int visible(const km_attn_ref_shape *s, int t, int pos) {
  return t <= pos && (s->window <= 0 || t > pos - s->window);
}

void km_attn_ref_step(const km_attn_ref_shape *s, int ctx, const uint16_t *q, const void *k_rows, const void *v_rows,
                      const float *k_sc, const float *v_sc, const int32_t *pages, int npages, int kvh_count,
                      float *out) {
  const int d = s->head_dim, group = s->heads / s->kv_heads;
  int *toks = malloc((size_t)(ctx > 0 ? ctx : 1) * sizeof *toks);
  double *w = malloc((size_t)(ctx > 0 ? ctx : 1) * sizeof *w);
  double *acc = malloc((size_t)d * sizeof *acc);
  if (!toks || !w || !acc) abort();
  for (int kvh = 0; kvh < kvh_count && kvh < s->kv_heads; ++kvh)
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
        const int head = kvh * group + hg;
        const uint16_t *qr = q + ((size_t)qi * s->heads + head) * d;
        double mx = -INFINITY;
        for (int j = 0; j < n; ++j) {
          const size_t hr = (size_t)toks[j] * s->kv_heads + kvh;
          double dot = 0;
          for (int i = 0; i < d; ++i) dot += km_bf16_to_float(qr[i]) * km_attn_ref_elem(k_rows, hr, i, d, s->kv);
          double ks = s->kv == KM_REF_KV_BF16 || s->kv == KM_REF_KV_U3 ? 1.0 : s->per_token ? k_sc[(size_t)toks[j] * s->kv_heads + kvh] : s->k_scale;
          w[j] = dot * ks * s->sm_scale;
          if (w[j] > mx) mx = w[j];
        }
        double sum = 0;
        for (int j = 0; j < n; ++j) {
          w[j] = exp(w[j] - mx);
          sum += w[j];
        }
        memset(acc, 0, (size_t)d * sizeof *acc);
        for (int j = 0; j < n; ++j) {
          const size_t hr = (size_t)toks[j] * s->kv_heads + kvh;
          double vs = s->kv == KM_REF_KV_BF16 || s->kv == KM_REF_KV_U3 ? 1.0 : s->per_token ? v_sc[hr] : s->v_scale;
          for (int i = 0; i < d; ++i) acc[i] += w[j] * vs * km_attn_ref_elem(v_rows, hr, i, d, s->kv);
        }
        float *o = out + ((size_t)qi * s->heads + head) * d;
        for (int i = 0; i < d; ++i) o[i] = (float)(n ? acc[i] / sum : 0.0);
      }
    }
  free(toks);
  free(w);
  free(acc);
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
