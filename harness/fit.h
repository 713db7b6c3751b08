/* Least-squares line fits: the latency-bandwidth model t = alpha + bytes / beta of a copy sweep is a
 * line in bytes with intercept alpha and slope 1 / beta. Used by the offload family and --params. */
#ifndef KM_FIT_H
#define KM_FIT_H

#include <stddef.h>

/* Ordinary least squares y = alpha + slope * x over n points. r2 is the coefficient of
 * determination (1 when every y is equal and the line hits them all). Returns 0, or -1 when
 * n < 2, a value is not finite, or all x are equal (no slope to fit); outputs are then untouched. */
int km_fit_linear(const double *x, const double *y, size_t n, double *alpha, double *slope, double *r2);

/* The most terms a model may have, intercept included. */
#define KM_FIT_MAX_TERMS 8
/* Least squares of relative error: the coefficients c minimising sum_i ((X_i . c - y_i) / y_i)^2, where
 * X is n rows of p term values (row-major; a column of ones for an intercept) and every y_i > 0. The
 * relative error is what the acceptance rule bounds (every point within 10%), and it keeps the small
 * points of a sweep over decades from being ignored. Returns 0, or -1 when p is 0 or above
 * KM_FIT_MAX_TERMS, n < p, a value is not finite, a y is not positive, or the columns are not linearly
 * independent over the points (no unique fit); coef is then untouched. */
int km_fit_relative(const double *X, const double *y, size_t n, size_t p, double *coef);

#endif
