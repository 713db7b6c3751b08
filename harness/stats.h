/* Summary statistics of timing samples: median (mean of the two middle values for even n), mean,
 * sample standard deviation, coefficient of variation, extremes. */
#ifndef KM_STATS_H
#define KM_STATS_H

#include <stddef.h>

/* A run whose coefficient of variation exceeds this is marked noisy (DESIGN.md, timing rules). */
#define KM_NOISY_CV 0.05

typedef struct km_stats {
  size_t n;
  double median, mean, stddev, cv, min, max;
} km_stats;

/* 0 ok; -1 when n == 0 or a sample is not finite. x is not modified. */
int km_stats_compute(const double *x, size_t n, km_stats *out);
double km_median_of(const double *x, size_t n); /* NaN when n == 0 */
/* The nearest-rank q-quantile (0 <= q <= 1: the value of rank round(q (n - 1)) in ascending order); NaN when
 * n == 0. x is not modified. */
double km_quantile_of(const double *x, size_t n, double q);
/* km_quantile_of for each of q[0..nq) into out[0..nq), from one sort of x. */
void km_quantiles_of(const double *x, size_t n, const double *q, size_t nq, double *out);
int km_stats_noisy(const km_stats *s);

#endif
