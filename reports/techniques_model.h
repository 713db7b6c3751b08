/* `report techniques A.json --model M`: the technique table of a recorded run for another model, with
 * no GPU time: the capacity rows computed for M under the run's own byte-table settings (KV budget,
 * block size, host budget, dtypes, the measured reload rate), beside the run's measured rows as they
 * were measured (a case on the run's --model shape keeps that shape, which its label states). */
#ifndef KM_REPORT_TECHNIQUES_MODEL_H
#define KM_REPORT_TECHNIQUES_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "run_file.h"
#include "table.h"

/* 0 ok; -1 with one line in err (an unknown model or bad config.json, a budget below one block of M, a
 * stored setting of the wrong type). */
int km_techniques_for_model_print(const km_run_file *f, const char *model, km_format fmt, FILE *out, char *err,
                                  size_t errlen);

#endif
