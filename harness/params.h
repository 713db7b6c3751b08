/* The serving simulator's input (schema kvmicro-params/2, reports/PARAMS.md): per series a case table
 * declares (km_sweep), a cost model over its axes fitted to the measured points and published only
 * where the rules of harness/sweep_fit.h hold, else the reason; the raw points always; the start-up
 * ceilings, the GPU's identity, and the byte table for the model. */
#ifndef KM_PARAMS_H
#define KM_PARAMS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "bytes_table.h"
#include "results.h"

#define KM_PARAMS_SCHEMA "kvmicro-params/2"

/* gpu: the result file's context.gpu object (identity and ceilings), copied in; NULL: none. */
cJSON *km_params_json(const km_results *r, const km_model *m, const km_bytes_params *p, const cJSON *gpu);
int km_params_write(const char *path, const km_results *r, const km_model *m, const km_bytes_params *p,
                    const cJSON *gpu, char *err, size_t errlen);

#endif
