/* CPU test of the technique table (harness/techniques.c): the byte table's rows appear as computed rows
 * under their technique, the run's representative rows as measured rows with their figures and accuracy,
 * a technique without one says so in words, the roofline is not a technique, and the order is the byte
 * table's. Built from a byte-table object and benchmark rows written here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "techniques.h"
#include "test_util.h"

static const char *bytes_json =
    "{\"model\": {\"name\": \"qwen3-8b\"}, \"rows\": ["
    "{\"technique\": \"gqa\", \"variant\": \"as_configured\", \"kv_cache_tokens\": 400032, \"max_concurrency\": 9.77,"
    " \"capacity_x\": 1},"
    "{\"technique\": \"gqa\", \"variant\": \"mha\", \"kv_cache_tokens\": 100000, \"max_concurrency\": 2.44,"
    " \"capacity_x\": 0.25},"
    "{\"technique\": \"kv_quant\", \"variant\": \"fp8_e4m3\", \"kv_cache_tokens\": 800064, \"max_concurrency\": 19.53,"
    " \"capacity_x\": 2}]}";

static const char *bench_json =
    "[{\"name\": \"attn/decode/model/bf16/b16/ctx32k\", \"kvmicro_name\": \"attn/decode/model/bf16/b16/ctx32k\","
    " \"run_type\": \"iteration\", \"real_time\": 578.6, \"cpu_time\": 578.6, \"technique\": \"gqa\","
    " \"representative\": true, \"median_us\": 578.6, \"GB/s\": 3721, \"pct_of_ceiling\": 86.1, \"verified\": 1},"
    "{\"name\": \"attn/decode/model/fp8/b16/ctx32k\", \"kvmicro_name\": \"attn/decode/model/fp8/b16/ctx32k\","
    " \"run_type\": \"iteration\", \"real_time\": 440.6, \"cpu_time\": 440.6, \"technique\": \"kv_quant\","
    " \"representative\": true, \"median_us\": 440.6, \"GB/s\": 2526, \"pct_of_ceiling\": 58.4, \"verified\": 1,"
    " \"cosine_vs_bf16\": 0.9973, \"cosine_rows_median_vs_bf16\": 0.9981},"
    "{\"name\": \"roofline/sm_copy\", \"kvmicro_name\": \"roofline/sm_copy\", \"run_type\": \"iteration\","
    " \"real_time\": 1, \"cpu_time\": 1, \"technique\": \"roofline\", \"representative\": true, \"median_us\": 1,"
    " \"verified\": 1},"
    "{\"name\": \"paged/gather/x\", \"kvmicro_name\": \"paged/gather/x\", \"run_type\": \"iteration\","
    " \"real_time\": 5, \"cpu_time\": 5, \"technique\": \"paged\", \"representative\": false, \"median_us\": 5,"
    " \"verified\": 1}]";

/* Row index of the first row whose column `col` reads `text` under group `group` (-1: none). */
static long find_row(const km_table *t, const char *group, size_t col, const char *text) {
  char buf[512];
  for (size_t i = 0; i < t->nrows; i++) {
    km_table_cell_text(t, i, col, 0, buf, sizeof buf);
    if (strcmp(t->group[i] ? t->group[i] : "", group) == 0 && strstr(buf, text)) return (long)i;
  }
  return -1;
}

/* Derived figures: a ratio of two rows, a break-even over three, and one whose row did not run. */
static const km_derived derived[] = {
    {"kv_quant", "fp8 step time / bf16 step time", KM_DERIVED_RATIO, "attn/decode/model/fp8/b16/ctx32k",
     "attn/decode/model/bf16/b16/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"gqa", "steps to repay", KM_DERIVED_BREAK_EVEN, "attn/decode/model/bf16/b16/ctx32k",
     "attn/decode/model/fp8/b16/ctx32k", "paged/gather/x", {NULL}, 0, 0, 0},
    {"eviction", "event / decode", KM_DERIVED_RATIO, "evict/event/missing", "attn/decode/model/bf16/b16/ctx32k", NULL,
     {NULL}, 0, 0, 0},
    /* 440.6 lies between (1000, 5) and (5000, 578.6): x = 1000 + 435.6 x 4000 / 573.6 */
    {"hybrid_mamba", "crossover", KM_DERIVED_CROSSOVER, "attn/decode/model/fp8/b16/ctx32k", "paged/gather/x",
     "attn/decode/model/bf16/b16/ctx32k", {NULL}, 0, 1000, 5000},
    /* a counter other than the median: GB/s ratio */
    {"kv_quant", "GB/s ratio", KM_DERIVED_RATIO, "attn/decode/model/fp8/b16/ctx32k", "attn/decode/model/bf16/b16/ctx32k",
     NULL, {"GB/s", "GB/s"}, 0, 0, 0},
};
static const km_case_table derived_table = {NULL, 0, NULL, derived, 5};
static const km_case_table *const tables[] = {&derived_table};

int main(void) {
  cJSON *bytes = cJSON_Parse(bytes_json), *bench = cJSON_Parse(bench_json);
  KM_EXPECT(bytes && bench);
  km_results r;
  char err[200];
  KM_EXPECT(km_results_from_json(bench, &r, err, sizeof err) == 0);
  km_table *t = km_techniques_table(bytes, &r, tables, 1);
  KM_EXPECT(t != NULL);
  if (!t) return km_test_finish("cpu_techniques");
  /* computed rows of the byte table under their technique, with vLLM's numbers */
  long mha = find_row(t, "gqa", 0, "mha");
  KM_EXPECT(mha >= 0);
  if (mha >= 0) {
    char buf[64];
    km_table_cell_text(t, (size_t)mha, 1, 0, buf, sizeof buf);
    KM_EXPECT(strcmp(buf, "computed") == 0);
    km_table_cell_text(t, (size_t)mha, 2, 0, buf, sizeof buf);
    KM_EXPECT(strstr(buf, "100") != NULL);
  }
  /* measured rows: figures and accuracy */
  long fp8 = find_row(t, "kv_quant", 0, "attn/decode/model/fp8");
  KM_EXPECT(fp8 >= 0);
  if (fp8 >= 0) {
    char buf[128];
    km_table_cell_text(t, (size_t)fp8, 1, 0, buf, sizeof buf);
    KM_EXPECT(strcmp(buf, "measured") == 0);
    km_table_cell_text(t, (size_t)fp8, 8, 0, buf, sizeof buf);
    KM_EXPECT(strstr(buf, "cosine_vs_bf16 0.9973, cosine_rows_median_vs_bf16 0.9981") != NULL);
  }
  /* a technique with no measured row says so; a non-representative row is not shown; no roofline group */
  KM_EXPECT(find_row(t, "paged", 10, "no measured row") >= 0);
  KM_EXPECT(find_row(t, "paged", 0, "paged/gather/x") < 0);
  KM_EXPECT(find_row(t, "roofline", 0, "") < 0);
  KM_EXPECT(find_row(t, "offload", 10, "no measured row") >= 0);
  /* the byte table's order: gqa before kv_quant before offload */
  KM_EXPECT(find_row(t, "gqa", 0, "") < find_row(t, "kv_quant", 0, ""));
  KM_EXPECT(find_row(t, "kv_quant", 0, "") < find_row(t, "offload", 1, ""));
  /* derived: 440.6 / 578.6, 578.6 / (440.6 - 5), the missing row named */
  long ratio = find_row(t, "kv_quant", 1, "derived");
  KM_EXPECT(ratio >= 0);
  if (ratio >= 0) {
    char buf[64];
    km_table_cell_text(t, (size_t)ratio, 9, 0, buf, sizeof buf);
    KM_EXPECT_NEAR(atof(buf), 440.6 / 578.6, 1e-3);
  }
  double v = 0;
  char why[300];
  KM_EXPECT(km_derived_value(&derived[1], &r, &v, why, sizeof why) == 0);
  KM_EXPECT_NEAR(v, 578.6 / (440.6 - 5.0), 1e-9);
  KM_EXPECT(km_derived_value(&derived[2], &r, &v, why, sizeof why) == -1 && strstr(why, "evict/event/missing"));
  KM_EXPECT(km_derived_value(&derived[3], &r, &v, why, sizeof why) == 0);
  KM_EXPECT_NEAR(v, 1000 + (440.6 - 5) * 4000 / (578.6 - 5), 1e-9);
  KM_EXPECT(km_derived_value(&derived[4], &r, &v, why, sizeof why) == 0);
  KM_EXPECT_NEAR(v, 2526.0 / 3721.0, 1e-12);
  KM_EXPECT(find_row(t, "eviction", 10, "did not run") >= 0);
  /* with no run at all, every technique still has a row that says why it has no number */
  km_results none;
  memset(&none, 0, sizeof none);
  km_table *t0 = km_techniques_table(NULL, &none, NULL, 0);
  KM_EXPECT(t0 && find_row(t0, "gqa", 10, "no benchmark ran") >= 0);
  km_table_free(t0);
  km_table_free(t);
  km_results_free(&r);
  cJSON_Delete(bytes);
  cJSON_Delete(bench);
  return km_test_finish("cpu_techniques");
}
