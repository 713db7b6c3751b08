/* Every finished run, as Google Benchmark handed it over (plus the case it came from), and what is
 * made of them: the benchmarks array of the JSON file and the latency table. */
#ifndef KM_RESULTS_H
#define KM_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gbench_shim.h"
#include "registry.h"
#include "table.h"

typedef struct km_result {
  char *name, *full_name, *run_name, *aggregate_name, *aggregate_unit, *time_unit, *message, *label;
  int is_aggregate, error, skipped;
  int64_t family_index, per_family_instance_index, repetitions, repetition_index, threads, iterations;
  double real_time, cpu_time;
  size_t ncounters;
  char **counter_names;
  double *counter_values;
  const km_case *c; /* NULL for a result read from a file */
  char *technique;  /* the case's, or the file's */
  char *baseline;   /* name of the case it is compared with, "" for none */
  int representative;
  /* The case's declared sweep (km_sweep) as written to the file: {"series", "axes", "at", "model",
   * "stages"}; NULL when it declares none. */
  cJSON *sweep;
} km_result;

typedef struct km_results {
  km_result *rows;
  size_t count, cap;
} km_results;

int km_results_add(km_results *r, const gb_run *run, const km_case *c);
/* A case's sweep declaration as JSON (NULL when it has none or out of memory). */
cJSON *km_sweep_json(const km_sweep *s);
void km_results_free(km_results *r);
/* The value of a counter, or NaN when the run has none. */
double km_result_counter(const km_result *row, const char *name);
const km_result *km_results_find(const km_results *r, const char *name);
/* The row's traffic class: "copy", "read", "write", "mixed" (device rows, from bytes_read and
 * bytes_written), "link_h2d", "link_d2h", "link_both", "link" (host rows), "unknown". */
const char *km_result_traffic(const km_result *row);
/* How the row compares with its baseline: the ratio of their GB/s (row / baseline), or of their times
 * (baseline / row) when neither moves bytes; NaN when they cannot be compared. */
double km_result_vs_baseline(const km_result *row, const km_result *base);

/* Google Benchmark's "benchmarks" array (names, run types, times, counters) plus kvmicro's fields. */
cJSON *km_results_benchmarks_json(const km_results *r);
/* Read a "benchmarks" array back (report tool). 0 ok; -1 with one line in err. */
int km_results_from_json(const cJSON *benchmarks, km_results *out, char *err, size_t errlen);

/* The techniques in the byte table's order (roofline first), and a technique's place in it (KM_TECHNIQUE_COUNT
 * for any other). */
#define KM_TECHNIQUE_COUNT 13
extern const char *const km_technique_order[KM_TECHNIQUE_COUNT];
size_t km_technique_rank(const char *technique);
/* The row that stands for a case: its only iteration, or the median aggregate when repeated. */
int km_result_is_primary(const km_result *row);
/* The row's status as the tables print it: an error or skip message, or its flags (noisy, throttled,
 * l2_resident; "ok" without) and label. */
void km_result_status_text(const km_result *row, char *buf, size_t len);
/* The row's share of its own ceiling: its traffic class's, or the contiguous host copy for a link row. */
double km_result_share(const km_result *row);

/* The latency table: the representative rows (and their baselines) when the run has any, else all;
 * grouped by technique in the byte table's order. */
km_table *km_latency_table(const km_results *r);

#endif
