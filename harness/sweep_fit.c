/* Fitting a declared model and deciding whether it may be published. */
#include "sweep_fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int axis_index(const char *name, size_t len, const char *const *axes, size_t naxes) {
  for (size_t i = 0; i < naxes; i++)
    if (strlen(axes[i]) == len && strncmp(axes[i], name, len) == 0) return (int)i;
  return -1;
}

/* One term "a*b": its factors' axis indices. */
static int parse_term(const char *t, size_t len, const char *const *axes, size_t naxes, int *factors, char *err,
                      size_t errlen) {
  size_t nf = 0, i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && t[j] != '*') j++;
    size_t a = i, b = j;
    while (a < b && t[a] == ' ') a++;
    while (b > a && t[b - 1] == ' ') b--;
    int k = axis_index(t + a, b - a, axes, naxes);
    if (b == a || k < 0 || nf == KM_SWEEP_MAX_AXES) {
      snprintf(err, errlen, "model term '%.*s': '%.*s' is %s", (int)len, t, (int)(b - a), t + a,
               b == a ? "empty" : k < 0 ? "not one of the series' axes" : "one factor too many");
      return -1;
    }
    factors[nf++] = k;
    i = j + 1;
  }
  for (; nf < KM_SWEEP_MAX_AXES; nf++) factors[nf] = -1;
  return 0;
}

int km_model_parse(const char *model, const char *const *axes, size_t naxes, km_model_terms *out, char *err,
                   size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *m = model ? model : "bytes";
  size_t i = 0, len = strlen(m);
  while (i <= len) {
    size_t j = i;
    while (j < len && m[j] != '+') j++;
    if (out->nterms == KM_FIT_MAX_TERMS - 1) {
      snprintf(err, errlen, "model '%s': more than %d terms", m, KM_FIT_MAX_TERMS - 1);
      return -1;
    }
    size_t n = out->nterms;
    if (parse_term(m + i, j - i, axes, naxes, out->factor[n], err, errlen) != 0) return -1;
    size_t o = 0;
    for (size_t k = i; k < j && o + 1 < sizeof out->text[n]; k++)
      if (m[k] != ' ') out->text[n][o++] = m[k];
    out->text[n][o] = '\0';
    out->nterms++;
    i = j + 1;
  }
  return 0;
}

static double term_value(const km_model_terms *m, size_t term, const double *at) {
  double v = 1.0;
  for (size_t f = 0; f < KM_SWEEP_MAX_AXES && m->factor[term][f] >= 0; f++) v *= at[m->factor[term][f]];
  return v;
}

double km_model_predict(const km_model_terms *m, const double *coef, const double *at) {
  double t = coef[0];
  for (size_t j = 0; j < m->nterms; j++) t += coef[j + 1] * term_value(m, j, at);
  return t;
}

/* The first rule that fails on the points alone (before fitting), or 0. */
static int check_points(const km_fit_point *pts, size_t n, const char *const *axes, size_t naxes,
                        const km_model_terms *m, km_sweep_fit *out) {
  const size_t p = m->nterms + 1;
  if (n < KM_FIT_MIN_POINTS || n <= p) {
    snprintf(out->reason, sizeof out->reason, "%zu point(s): a fit of %zu coefficients needs at least %zu", n, p,
             p + 1 > KM_FIT_MIN_POINTS ? p + 1 : (size_t)KM_FIT_MIN_POINTS);
    return -1;
  }
  for (size_t a = 0; a < naxes; a++) {
    out->lo[a] = out->hi[a] = pts[0].at[a];
    for (size_t i = 1; i < n; i++) {
      out->lo[a] = pts[i].at[a] < out->lo[a] ? pts[i].at[a] : out->lo[a];
      out->hi[a] = pts[i].at[a] > out->hi[a] ? pts[i].at[a] : out->hi[a];
    }
    if (!(out->lo[a] > 0) || !(out->hi[a] >= KM_FIT_MIN_SPAN * out->lo[a])) {
      snprintf(out->reason, sizeof out->reason, "%s spans %.4gx (%.6g..%.6g): a fit needs >= %.0fx", axes[a],
               out->lo[a] > 0 ? out->hi[a] / out->lo[a] : 0.0, out->lo[a], out->hi[a], KM_FIT_MIN_SPAN);
      return -1;
    }
  }
  return 0;
}

static void judge(const km_fit_point *pts, size_t n, const km_model_terms *m, km_sweep_fit *out) {
  double mean = 0.0, ss_tot = 0.0, ss_res = 0.0;
  for (size_t i = 0; i < n; i++) mean += pts[i].time_us / (double)n;
  for (size_t i = 0; i < n; i++) {
    double pred = km_model_predict(m, out->coef, pts[i].at), err = fabs(pred - pts[i].time_us) / pts[i].time_us;
    ss_res += (pred - pts[i].time_us) * (pred - pts[i].time_us);
    ss_tot += (pts[i].time_us - mean) * (pts[i].time_us - mean);
    if (err > out->max_rel_error || i == 0) {
      out->max_rel_error = err;
      out->worst = i;
    }
  }
  out->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  for (size_t j = 0; j <= m->nterms; j++)
    if (out->coef[j] < 0) {
      snprintf(out->reason, sizeof out->reason, "%s coefficient %.6g us%s is negative", j ? m->text[j - 1] : "fixed",
               out->coef[j], j ? " per unit" : "");
      return;
    }
  if (out->max_rel_error > KM_FIT_MAX_REL_ERROR) {
    char idx[32];
    snprintf(idx, sizeof idx, "%zu", out->worst);
    snprintf(out->reason, sizeof out->reason, "point %s is predicted %.1f%% off (%.4g us measured): every point must "
             "be within %.0f%%", pts[out->worst].name ? pts[out->worst].name : idx, 100.0 * out->max_rel_error,
             pts[out->worst].time_us, 100.0 * KM_FIT_MAX_REL_ERROR);
    return;
  }
  out->published = 1;
}

void km_sweep_fit_compute(const km_fit_point *pts, size_t n, const char *const *axes, size_t naxes,
                          const km_model_terms *m, km_sweep_fit *out) {
  memset(out, 0, sizeof *out);
  if (check_points(pts, n, axes, naxes, m, out) != 0) return;
  const size_t p = m->nterms + 1;
  double X[KM_FIT_MAX_TERMS * 512], y[512];
  if (n > 512) {
    snprintf(out->reason, sizeof out->reason, "%zu points: more than this writer fits (512)", n);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    X[i * p] = 1.0;
    for (size_t j = 0; j < m->nterms; j++) X[i * p + j + 1] = term_value(m, j, pts[i].at);
    y[i] = pts[i].time_us;
  }
  if (km_fit_relative(X, y, n, p, out->coef) != 0) {
    snprintf(out->reason, sizeof out->reason, "no unique fit: a time is not positive, or the terms do not vary "
             "independently over the points");
    return;
  }
  out->fitted = 1;
  judge(pts, n, m, out);
}
