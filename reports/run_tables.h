/* `report tables A.json`: the tables of a recorded run. The latency table is rebuilt from the file's
 * benchmarks (km_latency_table, as the run printed it); the byte table is printed from tables.bytes as
 * stored, since the model it was computed for is only in the file. */
#ifndef KM_REPORT_RUN_TABLES_H
#define KM_REPORT_RUN_TABLES_H

#include <stddef.h>
#include <stdio.h>

#include "run_file.h"
#include "table.h"

/* A km_table from stored rows: {"rows": [{"group": ..., key: value, ...}, ...]}; columns are the keys of
 * the first row (less "group"). NULL with one line in err when the shape is wrong. */
km_table *km_table_from_rows_json(const char *title, const cJSON *rows, char *err, size_t errlen);
/* 0 ok; -1 with one line in err (tables.bytes of the wrong shape). */
int km_run_tables_print(const km_run_file *f, km_format fmt, FILE *out, char *err, size_t errlen);
/* The technique table of a run (harness/techniques.h): its stored byte table beside its measured rows. */
int km_run_techniques_print(const km_run_file *f, km_format fmt, FILE *out, char *err, size_t errlen);

#endif
