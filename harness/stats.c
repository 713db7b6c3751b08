/* Summary statistics. The median sorts a copy; for even n it averages the two middle samples
 * (taking either one alone biases the result, a mistake seen in other GPU benchmark harnesses). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double km_median_of(const double *x, size_t n) {
  if (n == 0) return NAN;
  double *s = malloc(n * sizeof *s);
  if (!s) return NAN;
  memcpy(s, x, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  double m = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return m;
}

void km_quantiles_of(const double *x, size_t n, const double *q, size_t nq, double *out) {
  double *s = n ? malloc(n * sizeof *s) : NULL;
  if (s) {
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
  }
  for (size_t i = 0; i < nq; ++i) {
    const double qi = q[i] < 0 ? 0 : q[i] > 1 ? 1 : q[i];
    out[i] = s ? s[(size_t)(qi * (double)(n - 1) + 0.5)] : NAN;
  }
  free(s);
}

double km_quantile_of(const double *x, size_t n, double q) {
  double v;
  km_quantiles_of(x, n, &q, 1, &v);
  return v;
}

int km_stats_compute(const double *x, size_t n, km_stats *out) {
  memset(out, 0, sizeof *out);
  if (n == 0) return -1;
  double sum = 0.0, mn = x[0], mx = x[0];
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) return -1;
    sum += x[i];
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
  }
  double mean = sum / (double)n, ss = 0.0;
  for (size_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
  out->n = n;
  out->mean = mean;
  out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
  out->cv = mean != 0.0 ? out->stddev / fabs(mean) : 0.0;
  out->min = mn;
  out->max = mx;
  out->median = km_median_of(x, n);
  return 0;
}

int km_stats_noisy(const km_stats *s) { return s->cv > KM_NOISY_CV; }
