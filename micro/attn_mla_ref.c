/* CPU reference of one MLA decode step (see attn_mla_ref.h): every head's scores over every token in
 * double, max-subtracted softmax, the weighted sum of the first 512 latent dims. */
#include "attn_mla_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_ref.h"
#include "sparse_ref.h"

double km_mla_ref_elem(const km_mla_ref_shape *s, const void *rows, size_t i) {
  if (!s->fp8) return (double)km_bf16_to_float(((const uint16_t *)rows)[i]);
  return (double)km_ref_fp8_decode(((const uint8_t *)rows)[i], KM_REF_E4M3) * s->scale;
}

/* One head's output from the decoded rows c[ctx][D]. */
static void head_step(const km_mla_ref_shape *s, int ctx, const uint16_t *q, const double *c, int h, float *out) {
  const int D = KM_MLA_REF_DIM, DV = KM_MLA_REF_VDIM;
  const int n = ctx > 0 ? ctx : 1;
  double *w = malloc((size_t)n * sizeof *w), *acc = malloc((size_t)DV * sizeof *acc), *qd = malloc((size_t)D * sizeof *qd);
  if (!w || !acc || !qd) abort();
  for (int i = 0; i < D; ++i) qd[i] = km_bf16_to_float(q[(size_t)h * D + i]);
  double mx = -INFINITY;
  for (int t = 0; t < ctx; ++t) {
    double dot = 0;
    for (int i = 0; i < D; ++i) dot += qd[i] * c[(size_t)t * D + i];
    w[t] = dot * s->sm_scale;
    if (w[t] > mx) mx = w[t];
  }
  double sum = 0;
  for (int t = 0; t < ctx; ++t) sum += (w[t] = exp(w[t] - mx));
  memset(acc, 0, (size_t)DV * sizeof *acc);
  for (int t = 0; t < ctx; ++t)
    for (int i = 0; i < DV; ++i) acc[i] += w[t] * c[(size_t)t * D + i];
  for (int i = 0; i < DV; ++i) out[(size_t)h * DV + i] = (float)(ctx > 0 ? acc[i] / sum : 0.0);
  free(w);
  free(acc);
  free(qd);
}

void km_mla_ref_step(const km_mla_ref_shape *s, int ctx, const uint16_t *q, const void *rows, const int *heads_list,
                     int n_list, float *out) {
  const int D = KM_MLA_REF_DIM;
  double *c = malloc((size_t)(ctx > 0 ? ctx : 1) * D * sizeof *c); /* the decoded rows, once for all heads */
  if (!c) abort();
  for (size_t i = 0; i < (size_t)ctx * D; ++i) c[i] = km_mla_ref_elem(s, rows, i);
  const int count = heads_list ? n_list : s->heads;
  /* heads are independent: one per thread where OpenMP is built in */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
  for (int k = 0; k < count; ++k) head_step(s, ctx, q, c, heads_list ? heads_list[k] : k, out);
  free(c);
}
