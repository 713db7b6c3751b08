/* A series' cost model and the rules for publishing it (reports/PARAMS.md). A model is an intercept plus
 * terms, each a product of the series' axes ("batch*context"); it is fitted to the points by least
 * squares of relative error (harness/fit.h) and published only when
 *   - it has >= KM_FIT_MIN_POINTS points and more points than coefficients,
 *   - every axis spans >= KM_FIT_MIN_SPAN (largest / smallest value),
 *   - no coefficient is negative (no negative fixed cost, no cost that falls as a size grows),
 *   - every point is predicted within KM_FIT_MAX_REL_ERROR.
 * Otherwise the reason names the rule that failed. Pure arithmetic (tests/cpu_params_fit.c). */
#ifndef KM_SWEEP_FIT_H
#define KM_SWEEP_FIT_H

#include <stddef.h>

#include "fit.h"
#include "registry.h"

#define KM_FIT_MIN_POINTS 3
#define KM_FIT_MIN_SPAN 4.0
#define KM_FIT_MAX_REL_ERROR 0.10

typedef struct km_model_terms {
  size_t nterms; /* after the intercept */
  int factor[KM_FIT_MAX_TERMS - 1][KM_SWEEP_MAX_AXES]; /* axis indices of each term's factors, -1 after the last */
  char text[KM_FIT_MAX_TERMS - 1][96];                 /* each term as written, spaces removed */
} km_model_terms;

/* Parse "batch + batch*context" over the named axes. 0 ok; -1 with one line in err (an unknown axis,
 * an empty term, too many terms or factors). */
int km_model_parse(const char *model, const char *const *axes, size_t naxes, km_model_terms *out, char *err,
                   size_t errlen);

typedef struct km_fit_point {
  double at[KM_SWEEP_MAX_AXES]; /* the point's value on each axis */
  double time_us;
  const char *name;             /* for the reason a point fails (NULL: its index) */
} km_fit_point;

typedef struct km_sweep_fit {
  int published;                 /* every rule holds */
  int fitted;                    /* a least-squares solution exists (coef valid) */
  double coef[KM_FIT_MAX_TERMS]; /* [0] intercept in us, then us per unit of each term */
  double max_rel_error;          /* over the points */
  size_t worst;                  /* the point with that error */
  double r2;                     /* of time, over the points */
  double lo[KM_SWEEP_MAX_AXES], hi[KM_SWEEP_MAX_AXES];
  char reason[320];              /* why it is not published ("" when it is) */
} km_sweep_fit;

/* The model's prediction at one point, in microseconds. */
double km_model_predict(const km_model_terms *m, const double *coef, const double *at);
void km_sweep_fit_compute(const km_fit_point *pts, size_t n, const char *const *axes, size_t naxes,
                          const km_model_terms *m, km_sweep_fit *out);

#endif
