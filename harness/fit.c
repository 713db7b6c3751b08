/* Least-squares line fit. Sums are taken about the means so that x in bytes (up to 2^30 and more)
 * and y in seconds (down to 1e-6) do not lose digits to cancellation in x^2 sums. */
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
