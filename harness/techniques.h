/* The technique table: the twelve techniques side by side for one model on one GPU, each figure in its own
 * unit and marked measured or computed, grouped by technique in the byte table's order, no overall rank.
 * Computed rows come from the byte table (vLLM's token slots and concurrency, the ratio to the model as
 * configured); measured rows are the run's representative cases of the technique (their time per call,
 * GB/s, share of their class ceiling and accuracy where the case reports one). A technique with no
 * measured row in the run says so instead of a number. */
#ifndef KM_TECHNIQUES_H
#define KM_TECHNIQUES_H

#include <cjson/cJSON.h>

#include "results.h"
#include "table.h"

/* bytes: the byte table's JSON object (km_bytes_table_json, or a run file's tables.bytes), NULL when
 * there is none; r: the run's rows (may be empty); tables: the case tables whose derived figures to add
 * (NULL, 0: none). NULL when out of memory. */
km_table *km_techniques_table(const cJSON *bytes, const km_results *r, const km_case_table *const *tables,
                              size_t ntables);

/* One derived figure over the run's rows: 0 with *value set, or -1 with the reason (the case it lacks, or a
 * zero denominator) in why. */
int km_derived_value(const km_derived *d, const km_results *r, double *value, char *why, size_t whylen);

#endif
