/* The --json file is a superset of Google Benchmark's JSON: every row of the recorded H200 run carries
 * the fields Google Benchmark's tools/compare.py reads (name, run_name, run_type, repetitions,
 * repetition_index, family_index, per_family_instance_index, threads, iterations, real_time, cpu_time,
 * time_unit; aggregate_name on aggregates), and reading the rows back and writing them again keeps them. */
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

int main(void) {
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
