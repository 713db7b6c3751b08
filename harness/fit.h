/* Least-squares line fits: the latency-bandwidth model t = alpha + bytes / beta of a copy sweep is a
 * line in bytes with intercept alpha and slope 1 / beta. Used by the offload family and --params. */
#ifndef KM_FIT_H
#define KM_FIT_H

#include <stddef.h>

/* Ordinary least squares y = alpha + slope * x over n points. r2 is the coefficient of
 * determination (1 when every y is equal and the line hits them all). Returns 0, or -1 when
 * n < 2, a value is not finite, or all x are equal (no slope to fit); outputs are then untouched. */
int km_fit_linear(const double *x, const double *y, size_t n, double *alpha, double *slope, double *r2);

#endif
