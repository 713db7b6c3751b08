/* Least-squares fits. The line's sums are taken about the means so that x in bytes (up to 2^30 and
 * more) and y in seconds (down to 1e-6) do not lose digits to cancellation in x^2 sums; the relative
 * fit scales each column to unit size before solving its normal equations, for the same reason. */
#include "fit.h"

#include <math.h>

static int all_finite(const double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

static double mean_of(const double *v, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s / (double)n;
}

int km_fit_linear(const double *x, const double *y, size_t n, double *alpha, double *slope, double *r2) {
  if (!x || !y || n < 2 || !all_finite(x, n) || !all_finite(y, n)) return -1;
  double mx = mean_of(x, n), my = mean_of(y, n);
  double sxx = 0.0, sxy = 0.0, syy = 0.0;
  for (size_t i = 0; i < n; i++) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (!(sxx > 0.0)) return -1;
  double b = sxy / sxx, a = my - b * mx;
  double ss_res = 0.0;
  for (size_t i = 0; i < n; i++) {
    double r = y[i] - (a + b * x[i]);
    ss_res += r * r;
  }
  if (alpha) *alpha = a;
  if (slope) *slope = b;
  /* syy == 0: every y equal, so the fitted line (slope 0) explains them exactly */
  if (r2) *r2 = syy > 0.0 ? 1.0 - ss_res / syy : 1.0;
  return 0;
}

/* Solve the p x p system a c = b in place by Gaussian elimination with partial pivoting. A pivot below
 * `tiny` relative to the largest diagonal means the columns are dependent: -1. */
static int solve(double a[KM_FIT_MAX_TERMS][KM_FIT_MAX_TERMS], double *b, size_t p, double *c) {
  double scale = 0.0;
  for (size_t i = 0; i < p; i++) scale = fabs(a[i][i]) > scale ? fabs(a[i][i]) : scale;
  const double tiny = 1e-12 * scale;
  for (size_t k = 0; k < p; k++) {
    size_t piv = k;
    for (size_t i = k + 1; i < p; i++)
      if (fabs(a[i][k]) > fabs(a[piv][k])) piv = i;
    if (!(fabs(a[piv][k]) > tiny)) return -1;
    for (size_t j = 0; j < p; j++) {
      double t = a[k][j];
      a[k][j] = a[piv][j];
      a[piv][j] = t;
    }
    double t = b[k];
    b[k] = b[piv];
    b[piv] = t;
    for (size_t i = k + 1; i < p; i++) {
      double f = a[i][k] / a[k][k];
      for (size_t j = k; j < p; j++) a[i][j] -= f * a[k][j];
      b[i] -= f * b[k];
    }
  }
  for (size_t k = p; k-- > 0;) {
    double s = b[k];
    for (size_t j = k + 1; j < p; j++) s -= a[k][j] * c[j];
    c[k] = s / a[k][k];
  }
  return 0;
}

int km_fit_relative(const double *X, const double *y, size_t n, size_t p, double *coef) {
  if (!X || !y || !coef || p == 0 || p > KM_FIT_MAX_TERMS || n < p) return -1;
  double colmax[KM_FIT_MAX_TERMS] = {0};
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(y[i]) || !(y[i] > 0)) return -1;
    for (size_t j = 0; j < p; j++) {
      double v = X[i * p + j];
      if (!isfinite(v)) return -1;
      colmax[j] = fabs(v) > colmax[j] ? fabs(v) : colmax[j];
    }
  }
  for (size_t j = 0; j < p; j++)
    if (!(colmax[j] > 0)) return -1; /* a term that is zero at every point cannot be fitted */
  /* rows divided by y (relative error), columns by their largest value (conditioning) */
  double ata[KM_FIT_MAX_TERMS][KM_FIT_MAX_TERMS] = {{0}}, atb[KM_FIT_MAX_TERMS] = {0}, c[KM_FIT_MAX_TERMS];
  for (size_t i = 0; i < n; i++) {
    double row[KM_FIT_MAX_TERMS];
    for (size_t j = 0; j < p; j++) row[j] = X[i * p + j] / colmax[j] / y[i];
    for (size_t j = 0; j < p; j++) {
      for (size_t k = 0; k < p; k++) ata[j][k] += row[j] * row[k];
      atb[j] += row[j]; /* target y_i / y_i = 1 */
    }
  }
  if (solve(ata, atb, p, c) != 0) return -1;
  for (size_t j = 0; j < p; j++) {
    if (!isfinite(c[j])) return -1;
    coef[j] = c[j] / colmax[j];
  }
  return 0;
}
