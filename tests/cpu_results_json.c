/* The --json file is a superset of Google Benchmark's JSON: every row of the recorded H200 run carries
 * the fields Google Benchmark's tools/compare.py reads (name, run_name, run_type, repetitions,
 * repetition_index, family_index, per_family_instance_index, threads, iterations, real_time, cpu_time,
 * time_unit; aggregate_name on aggregates), and reading the rows back and writing them again keeps them.
 * Rows made from runs as the shim hands them over: real_time is the median per launch, cpu_time per
 * launch, errors and skips spelled as Google Benchmark 1.8's JSON reporter spells them, the traffic
 * class written, and x baseline a ratio of GB/s. */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results.h"
#include "test_util.h"

static void expect_gbench_fields(const cJSON *benchmarks, const char *which) {
  static const char *const strings[] = {"name", "run_name", "run_type", "time_unit"};
  static const char *const numbers[] = {"repetitions", "repetition_index", "family_index",
                                        "per_family_instance_index", "threads", "iterations", "real_time",
                                        "cpu_time"};
  int rows = 0;
  const cJSON *b;
  cJSON_ArrayForEach(b, benchmarks) {
    rows++;
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
      KM_EXPECT_MSG(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(b, strings[i])), "%s row %d lacks string %s",
                    which, rows, strings[i]);
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
      KM_EXPECT_MSG(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(b, numbers[i])), "%s row %d lacks number %s",
                    which, rows, numbers[i]);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "run_type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "aggregate") == 0)
      KM_EXPECT_MSG(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(b, "aggregate_name")), "%s row %d", which, rows);
  }
  KM_EXPECT_MSG(rows > 100, "%s has %d rows", which, rows);
}

static gb_run make_run(const char *name, size_t n, const char *const *names, const double *values) {
  gb_run g;
  memset(&g, 0, sizeof g);
  g.name = g.full_name = g.run_name = name;
  g.aggregate_name = "";
  g.aggregate_unit = "time";
  g.time_unit = "us";
  g.message = g.label = "";
  g.repetitions = g.threads = 1;
  g.iterations = 20;
  g.real_time = 130.0; /* Google Benchmark's mean of the samples */
  g.cpu_time = 400.0;  /* per sample of 4 launches */
  g.ncounters = n;
  g.counter_names = names;
  g.counter_values = values;
  return g;
}

static const cJSON *row_of(const cJSON *arr, const char *name) {
  const cJSON *o;
  cJSON_ArrayForEach(o, arr) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "kvmicro_name");
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return o;
  }
  return NULL;
}

static void test_rows_from_runs(void) {
  static const char *const names[] = {"median_us", "batch", "bytes", "bytes_read", "bytes_written", "GB/s"};
  static const double read_row[] = {100.0, 4, 1e9, 1e9, 0, 10000.0}, base_row[] = {50.0, 1, 1e8, 5e7, 5e7, 2000.0};
  km_results r = {0};
  gb_run g = make_run("t/read", 6, names, read_row);
  KM_EXPECT(km_results_add(&r, &g, NULL) == 0);
  g = make_run("t/base", 6, names, base_row);
  KM_EXPECT(km_results_add(&r, &g, NULL) == 0);
  g = make_run("t/skipped", 0, NULL, NULL);
  g.skipped = 1;
  g.message = "skipped: single NUMA node";
  KM_EXPECT(km_results_add(&r, &g, NULL) == 0);
  g = make_run("t/error", 0, NULL, NULL);
  g.error = 1;
  g.message = "error: verification failed";
  KM_EXPECT(km_results_add(&r, &g, NULL) == 0);
  cJSON *arr = km_results_benchmarks_json(&r);
  const cJSON *rd = row_of(arr, "t/read"), *sk = row_of(arr, "t/skipped"), *er = row_of(arr, "t/error");
  KM_EXPECT(rd && sk && er);
  KM_EXPECT_NEAR(cJSON_GetObjectItemCaseSensitive(rd, "real_time")->valuedouble, 100.0, 0); /* the median */
  KM_EXPECT_NEAR(cJSON_GetObjectItemCaseSensitive(rd, "cpu_time")->valuedouble, 100.0, 0);  /* 400 / 4 */
  KM_EXPECT(strcmp(cJSON_GetObjectItemCaseSensitive(rd, "traffic_class")->valuestring, "read") == 0);
  KM_EXPECT(!cJSON_GetObjectItemCaseSensitive(rd, "error_occurred") && !cJSON_GetObjectItemCaseSensitive(rd, "skipped"));
  KM_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sk, "skipped")));
  KM_EXPECT(strcmp(cJSON_GetObjectItemCaseSensitive(sk, "skip_message")->valuestring, "skipped: single NUMA node") == 0);
  KM_EXPECT(!cJSON_GetObjectItemCaseSensitive(sk, "error_occurred") && !cJSON_GetObjectItemCaseSensitive(sk, "error_message"));
  KM_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(er, "error_occurred")));
  KM_EXPECT(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(er, "error_message")) && !cJSON_GetObjectItemCaseSensitive(er, "skipped"));
  /* read back: the skip stays a skip with its message, the error an error */
  km_results back;
  char err[256];
  KM_EXPECT(km_results_from_json(arr, &back, err, sizeof err) == 0);
  const km_result *bs = km_results_find(&back, "t/skipped"), *be = km_results_find(&back, "t/error");
  KM_EXPECT(bs && bs->skipped && !bs->error && strcmp(bs->message, "skipped: single NUMA node") == 0);
  KM_EXPECT(be && be->error && !be->skipped);
  /* x baseline: 10,000 GB/s against 2,000 is 5.00, although the time ratio is 0.50 */
  KM_EXPECT_NEAR(km_result_vs_baseline(km_results_find(&back, "t/read"), km_results_find(&back, "t/base")), 5.0, 1e-12);
  KM_EXPECT(isnan(km_result_vs_baseline(km_results_find(&back, "t/read"), bs)));
  km_results_free(&back);
  cJSON_Delete(arr);
  km_results_free(&r);
}

int main(void) {
  test_rows_from_runs();
  cJSON *doc = km_test_read_json("../../reports/runs/h200.json");
  KM_EXPECT(doc != NULL);
  if (!doc) return km_test_finish("cpu_results_json");
  const cJSON *benchmarks = cJSON_GetObjectItemCaseSensitive(doc, "benchmarks");
  expect_gbench_fields(benchmarks, "recorded run");
  const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "context"), "gpu");
  KM_EXPECT(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(gpu, "ceiling_gbps")));

  km_results r;
  char err[256] = "";
  KM_EXPECT(km_results_from_json(benchmarks, &r, err, sizeof err) == 0);
  cJSON *again = km_results_benchmarks_json(&r);
  KM_EXPECT(cJSON_GetArraySize(again) == cJSON_GetArraySize(benchmarks));
  expect_gbench_fields(again, "rewritten rows");
  const km_result *copy = km_results_find(&r, "roofline/sm_copy");
  KM_EXPECT(copy && km_result_counter(copy, "verified") == 1.0 && km_result_counter(copy, "GB/s") > 0);
  cJSON_Delete(again);
  km_results_free(&r);
  cJSON_Delete(doc);
  return km_test_finish("cpu_results_json");
}
