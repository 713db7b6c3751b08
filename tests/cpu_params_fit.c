/* The --params path without a GPU: km_fit_linear on synthetic points (checked against normal equations
 * solved in long double), km_params_json on synthetic result rows (skipped rows and repetitions left
 * out, one-point series without a fit), and a recorded H200 file parsed back into the same fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "fit.h"
#include "params.h"
#include "results.h"
#include "test_util.h"

/* The synthetic copy: 100 GB/s = 1e5 bytes per microsecond, 10 us fixed cost. */
#define SYN_ALPHA_US 10.0
#define SYN_BYTES_PER_US 1e5

static void test_exact_line(void) {
  const double x[] = {4096, 65536, 1 << 20, 1 << 26, 1 << 30, 17179869184.0};
  double y[6], alpha = 0, slope = 0, r2 = 0;
  for (int i = 0; i < 6; i++) y[i] = 7.5 + x[i] / 25e3; /* 25 GB/s */
  KM_EXPECT(km_fit_linear(x, y, 6, &alpha, &slope, &r2) == 0);
  KM_EXPECT_NEAR(alpha, 7.5, 1e-6);
  KM_EXPECT_NEAR(1.0 / (slope * 1e3), 25.0, 1e-9);
  KM_EXPECT_NEAR(r2, 1.0, 1e-12);
}

/* Reference: the 2x2 normal equations in long double, a different route from the centred sums. */
static void reference_fit(const double *x, const double *y, int n, double *alpha, double *slope, double *r2) {
  long double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  for (int i = 0; i < n; i++) {
    sx += x[i], sy += y[i], sxx += (long double)x[i] * x[i], sxy += (long double)x[i] * y[i];
    syy += (long double)y[i] * y[i];
  }
  long double det = n * sxx - sx * sx;
  long double b = (n * sxy - sx * sy) / det, a = (sy * sxx - sx * sxy) / det;
  long double ss_tot = syy - sy * sy / n, ss_res = 0;
  for (int i = 0; i < n; i++) ss_res += (y[i] - a - b * x[i]) * (y[i] - a - b * x[i]);
  *slope = (double)b, *alpha = (double)a, *r2 = (double)(1 - ss_res / ss_tot);
}

static void test_noisy_line(void) {
  double x[9], y[9], alpha = 0, slope = 0, r2 = 0, ra, rs, rr;
  for (int i = 0; i < 9; i++) {
    x[i] = 1e3 * (double)(1 << i);
    y[i] = 3.0 + x[i] / 2e4 + ((i % 2) ? 0.4 : -0.4) * (1 + i % 3);
  }
  KM_EXPECT(km_fit_linear(x, y, 9, &alpha, &slope, &r2) == 0);
  reference_fit(x, y, 9, &ra, &rs, &rr);
  KM_EXPECT_NEAR(alpha, ra, 1e-9);
  KM_EXPECT_NEAR(slope / rs, 1.0, 1e-12);
  KM_EXPECT_NEAR(r2, rr, 1e-9);
  KM_EXPECT(r2 < 1.0 && r2 > 0.9);
}

static void test_degenerate_inputs(void) {
  const double x[] = {1, 2, 3}, same_x[] = {5, 5, 5}, flat[] = {4, 4, 4}, with_nan[] = {1, NAN, 3};
  double alpha = -1, slope = -1, r2 = -1;
  KM_EXPECT(km_fit_linear(x, flat, 1, &alpha, &slope, &r2) == -1);
  KM_EXPECT(km_fit_linear(same_x, x, 3, &alpha, &slope, &r2) == -1);
  KM_EXPECT(km_fit_linear(x, with_nan, 3, &alpha, &slope, &r2) == -1);
  KM_EXPECT(alpha == -1 && slope == -1 && r2 == -1); /* outputs untouched on failure */
  KM_EXPECT(km_fit_linear(x, flat, 3, &alpha, &slope, &r2) == 0);
  KM_EXPECT_NEAR(alpha, 4.0, 1e-12);
  KM_EXPECT_NEAR(slope, 0.0, 1e-12);
  KM_EXPECT_NEAR(r2, 1.0, 0);
}

static void test_series_of(void) {
  char buf[64];
  km_params_series_of("paged/gather/nhd/bs16/d128/h8/bf16/random", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "paged/gather/nhd/*/d128/h8/bf16/random") == 0);
  km_params_series_of("roofline/sm_copy", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "roofline/sm_copy") == 0);
  km_params_series_of("offload/h2d/pinned/64MiB", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "offload/h2d/pinned/*") == 0);
  km_params_series_of("offload/scatter/h2d/staging/32KiB/n2048", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "offload/scatter/h2d/staging/*/*") == 0);
  km_params_series_of("sparse/topk/r512/p8192/k128", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "sparse/topk/*/*/*") == 0);
  km_params_series_of("quant/fp8_e4m3/quantize/per_token_head/d128", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "quant/fp8_e4m3/quantize/per_token_head/d128") == 0); /* d128 is a shape, not a sweep */
  km_params_series_of("offload/h2d/pinned/256MiB/far_node", buf, sizeof buf);
  KM_EXPECT(strcmp(buf, "offload/h2d/pinned/*/far_node") == 0);
}

/* One benchmarks[] entry as micro --json writes it; extra_json adds fields (JSON keys must not repeat:
 * cJSON reads the first of duplicates). */
static void add_row(cJSON *arr, const char *name, double bytes, double us, const char *extra_json) {
  char text[1024];
  snprintf(text, sizeof text,
           "{\"name\": \"%s/manual_time\", \"kvmicro_name\": \"%s\", \"technique\": \"roofline\", "
           "\"real_time\": %.17g, \"cpu_time\": %.17g, \"time_unit\": \"us\", "
           "\"median_us\": %.17g, \"bytes\": %.17g, \"GB/s\": %.17g %s}",
           name, name, us, us, us, bytes, bytes / us / 1e3, extra_json);
  cJSON *o = cJSON_Parse(text);
  KM_EXPECT(o != NULL);
  if (o) cJSON_AddItemToArray(arr, o);
}

static cJSON *synthetic_benchmarks(void) {
  cJSON *arr = cJSON_CreateArray();
  const double sizes[] = {1e3, 1e6, 1e8};
  char name[64];
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "syn/copy/n%.0f", sizes[i]);
    add_row(arr, name, sizes[i], SYN_ALPHA_US + sizes[i] / SYN_BYTES_PER_US, "");
  }
  add_row(arr, "syn/copy/skipped", 5e8, 1.0, ", \"skipped\": true, \"error_occurred\": true");
  add_row(arr, "syn/single/x", 4096, 3.0, "");
  /* repetitions: only the median aggregate stands for the case; iterations and the mean are ignored */
  for (int i = 0; i < 2; i++) {
    const char *n = i ? "syn/rep/b2" : "syn/rep/b1";
    double bytes = i ? 2e6 : 1e6, us = 1.0 + bytes / 5e4;
    add_row(arr, n, bytes, us * 3, ", \"repetitions\": 3, \"run_type\": \"iteration\"");
    add_row(arr, n, bytes, us * 7, ", \"repetitions\": 3, \"run_type\": \"aggregate\", \"aggregate_name\": \"mean\"");
    add_row(arr, n, bytes, us, ", \"repetitions\": 3, \"run_type\": \"aggregate\", \"aggregate_name\": \"median\"");
  }
  return arr;
}

static const cJSON *find_series(const cJSON *doc, const char *name) {
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc, "series")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "series");
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return s;
  }
  return NULL;
}

static double fit_value(const cJSON *series, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(series, "fit"), key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_params_json(void) {
  km_results r;
  km_model m;
  km_bytes_params p;
  char err[256] = "";
  cJSON *arr = synthetic_benchmarks();
  KM_EXPECT(km_results_from_json(arr, &r, err, sizeof err) == 0);
  KM_EXPECT(km_model_preset("qwen3-8b", &m) == 0);
  km_bytes_params_default(&p);
  cJSON *doc = km_params_json(&r, &m, &p, 2000.0);
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
  KM_EXPECT(cJSON_IsString(schema) && strcmp(schema->valuestring, KM_PARAMS_SCHEMA) == 0);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "series")) == 3);
  const cJSON *copy = find_series(doc, "syn/copy/*"), *single = find_series(doc, "syn/single/x");
  const cJSON *rep = find_series(doc, "syn/rep/*");
  KM_EXPECT(copy && single && rep);
  KM_EXPECT_NEAR(fit_value(copy, "alpha_us"), SYN_ALPHA_US, 1e-6);
  KM_EXPECT_NEAR(fit_value(copy, "beta_GBps"), 100.0, 1e-6);
  KM_EXPECT_NEAR(fit_value(copy, "r2"), 1.0, 1e-12);
  KM_EXPECT(fit_value(copy, "min_bytes") == 1e3 && fit_value(copy, "max_bytes") == 1e8);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(copy, "points")) == 3);
  KM_EXPECT(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(single, "fit")));
  KM_EXPECT(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(single, "no_fit_reason")));
  KM_EXPECT_NEAR(fit_value(rep, "alpha_us"), 1.0, 1e-9);
  KM_EXPECT_NEAR(fit_value(rep, "beta_GBps"), 50.0, 1e-9);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "points")) == 2);
  KM_EXPECT(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "bytes_table"), "rows")));
  cJSON_Delete(doc);
  cJSON_Delete(arr);
  km_results_free(&r);
}

/* A recorded H200 sweep (pinned host-to-device copies, 4 KiB .. 1 GiB) read back fits the link:
 * about 55 GB/s (PCIe Gen5 x16) with a few microseconds of latency. */
static void test_recorded_file(void) {
  cJSON *run = km_test_read_json("runs/h200-h2d-sweep.json");
  KM_EXPECT(run != NULL);
  if (!run) return;
  km_results r;
  char err[256] = "";
  KM_EXPECT(km_results_from_json(cJSON_GetObjectItemCaseSensitive(run, "benchmarks"), &r, err, sizeof err) == 0);
  KM_EXPECT(r.count == 10);
  const km_result *big = km_results_find(&r, "offload/h2d/pinned/1GiB");
  KM_EXPECT(big && strcmp(big->technique, "offload") == 0 && !big->error);
  km_model m;
  km_bytes_params p;
  KM_EXPECT(km_model_preset("qwen3-8b", &m) == 0);
  km_bytes_params_default(&p);
  cJSON *doc = km_params_json(&r, &m, &p, 4210.0);
  const cJSON *h2d = find_series(doc, "offload/h2d/pinned/*");
  KM_EXPECT(h2d != NULL);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(h2d, "points")) == 10);
  double beta = fit_value(h2d, "beta_GBps"), alpha = fit_value(h2d, "alpha_us");
  KM_EXPECT(beta > 50.0 && beta < 60.0);
  KM_EXPECT(alpha > 0.0 && alpha < 20.0);
  KM_EXPECT(fit_value(h2d, "r2") > 0.999);
  KM_EXPECT(fit_value(h2d, "min_bytes") == 4096.0 && fit_value(h2d, "max_bytes") == 1073741824.0);
  cJSON_Delete(doc);
  km_results_free(&r);
  cJSON_Delete(run);
}

int main(void) {
  test_exact_line();
  test_noisy_line();
  test_degenerate_inputs();
  test_series_of();
  test_params_json();
  test_recorded_file();
  return km_test_finish("cpu_params_fit");
}
