/* The example consumer of a kvmicro-params/1 file (reports/PARAMS.md): what a serving simulator does
 * with it, predicting the time of one primitive call from its series' fit. `report predict` runs it. */
#ifndef KM_REPORT_PARAMS_PREDICT_H
#define KM_REPORT_PARAMS_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

typedef struct km_prediction {
  double time_us;
  double alpha_us, beta_gbps, r2;
  double min_bytes, max_bytes; /* the fit's range of validity */
  int in_range;                /* 0: bytes outside [min_bytes, max_bytes], an extrapolation */
} km_prediction;

/* time_us = alpha_us + bytes / (beta_GBps * 1e3) for the named series. 0 ok; -1 with one line in err
 * (wrong schema, unknown series, a series without a fit, fields of the wrong type). */
int km_params_predict(const cJSON *params, const char *series, double bytes, km_prediction *out, char *err,
                      size_t errlen);
/* `report predict PARAMS.json SERIES BYTES`: 0 ok, 2 bad input (err holds one line). */
int km_params_predict_command(const char *path, const char *series, const char *bytes, FILE *out, char *err,
                              size_t errlen);

#endif
