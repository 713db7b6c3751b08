/* The example consumer of a kvmicro-params/2 file (reports/PARAMS.md): what a serving simulator does
 * with it, predicting the time of one primitive call from its series' fit at a point of its axes.
 * `report predict` runs it. */
#ifndef KM_REPORT_PARAMS_PREDICT_H
#define KM_REPORT_PARAMS_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

typedef struct km_prediction {
  double time_us;
  int copy_model;              /* the fit is time = alpha + bytes / beta: alpha_us and beta_gbps are set */
  double alpha_us, beta_gbps;
  double max_rel_error;        /* the fit's worst point */
  int in_range;                /* 0: some axis outside the fitted range, an extrapolation */
  char outside[160];           /* which axes, when not in range */
} km_prediction;

/* The named series' fit at the point given as axis names and values. 0 ok; -1 with one line in err
 * (wrong schema, unknown series, a series without a fit, a missing axis value, fields of the wrong
 * type). An unknown series' error lists series that have a fit. */
int km_params_predict(const cJSON *params, const char *series, const char *const *axes, const double *values,
                      size_t n, km_prediction *out, char *err, size_t errlen);
/* `report predict PARAMS.json SERIES BYTES` or `... SERIES AXIS=VALUE...`: 0 ok, 2 bad input (err holds
 * one line). */
int km_params_predict_command(const char *path, const char *series, const char *const *args, int nargs, FILE *out,
                              char *err, size_t errlen);

#endif
