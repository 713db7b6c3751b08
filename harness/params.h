/* The serving simulator's input (schema kvmicro-params/1, reports/PARAMS.md): per primitive and
 * series a least-squares fit time_us = alpha_us + bytes / (beta_GBps * 1e3), its R^2 and range,
 * the raw points, the ceiling, and the byte table for the model. */
#ifndef KM_PARAMS_H
#define KM_PARAMS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "bytes_table.h"
#include "results.h"

#define KM_PARAMS_SCHEMA "kvmicro-params/1"

/* The series a case belongs to: its name with every swept component (a size such as 64MiB, or
 * bsN, ctxN, budgetN, pN, nN, bN, rN, kN) replaced by '*'. Cases with no such component are a series
 * of one point. */
void km_params_series_of(const char *name, char *buf, size_t len);
cJSON *km_params_json(const km_results *r, const km_model *m, const km_bytes_params *p, double ceiling_gbps);
int km_params_write(const char *path, const km_results *r, const km_model *m, const km_bytes_params *p,
                    double ceiling_gbps, char *err, size_t errlen);

#endif
