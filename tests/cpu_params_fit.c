/* The --params path without a GPU: km_fit_linear on synthetic points (checked against normal equations
 * solved in long double), the relative fit over several terms, km_params_json on synthetic result rows
 * (declared series, skipped and L2-resident rows and repetitions left out of the fit, an undeclared row
 * without a fit), the acceptance rules one at a time, and the degenerate series of a recorded H200 run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "fit.h"
#include "params.h"
#include "results.h"
#include "sweep_fit.h"
#include "test_util.h"

/* The synthetic copy: 100 GB/s = 1e5 bytes per microsecond, 10 us fixed cost. */
#define SYN_ALPHA_US 10.0
#define SYN_BYTES_PER_US 1e5

/* Exact data over two terms and an intercept, columns of very different sizes: recovered. */
static void test_relative_fit(void) {
  double X[5 * 3], y[5], c[3] = {-1, -1, -1};
  const double bytes[] = {4096, 1 << 20, 1 << 26, 1 << 30, 3e9}, blocks[] = {1, 256, 2048, 16, 999};
  for (int i = 0; i < 5; i++) {
    X[i * 3] = 1.0;
    X[i * 3 + 1] = bytes[i];
    X[i * 3 + 2] = blocks[i];
    y[i] = 3.0 + bytes[i] / 5e4 + 0.25 * blocks[i];
  }
  KM_EXPECT(km_fit_relative(X, y, 5, 3, c) == 0);
  KM_EXPECT_NEAR(c[0], 3.0, 1e-9);
  KM_EXPECT_NEAR(c[1], 2e-5, 1e-16);
  KM_EXPECT_NEAR(c[2], 0.25, 1e-9);
  double y0 = y[0];
  y[0] = 0.0;
  KM_EXPECT(km_fit_relative(X, y, 5, 3, c) == -1); /* a time of 0 has no relative error */
  y[0] = y0;
  KM_EXPECT(km_fit_relative(X, y, 2, 3, c) == -1); /* fewer points than coefficients */
  for (int i = 0; i < 5; i++) X[i * 3 + 2] = 2.0 * X[i * 3]; /* a column twice the intercept */
  KM_EXPECT(km_fit_relative(X, y, 5, 3, c) == -1);
}

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

/* One benchmarks[] entry as micro --json writes it; extra_json adds fields (JSON keys must not repeat:
 * cJSON reads the first of duplicates). */
static void add_row(cJSON *arr, const char *name, double bytes, double us, const char *extra_json) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"name\": \"%s/manual_time\", \"kvmicro_name\": \"%s\", \"technique\": \"roofline\", "
           "\"real_time\": %.17g, \"cpu_time\": %.17g, \"time_unit\": \"us\", "
           "\"median_us\": %.17g, \"bytes\": %.17g, \"GB/s\": %.17g %s}",
           name, name, us, us, us, bytes, bytes / us / 1e3, extra_json);
  cJSON *o = cJSON_Parse(text);
  KM_EXPECT_MSG(o != NULL, "%s", text);
  if (o) cJSON_AddItemToArray(arr, o);
}

#define COPY_SWEEP(series) ", \"sweep\": {\"series\": \"" series "\", \"axes\": [\"bytes\"], \"at\": [null]}"

static cJSON *synthetic_benchmarks(void) {
  cJSON *arr = cJSON_CreateArray();
  const double sizes[] = {1e3, 1e6, 1e8};
  char name[64], extra[512];
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "syn/copy/n%.0f", sizes[i]);
    add_row(arr, name, sizes[i], SYN_ALPHA_US + sizes[i] / SYN_BYTES_PER_US, COPY_SWEEP("syn/copy"));
  }
  add_row(arr, "syn/copy/skipped", 5e8, 1.0, ", \"skipped\": true" COPY_SWEEP("syn/copy"));
  /* an L2-resident point is written but not fitted: it would pull the line off */
  add_row(arr, "syn/copy/l2", 2e7, 1.0, ", \"l2_resident\": 1" COPY_SWEEP("syn/copy"));
  add_row(arr, "syn/single/x", 4096, 3.0, "");
  /* repetitions: only the median aggregate stands for the case; iterations and the mean are ignored */
  for (int i = 0; i < 3; i++) {
    const char *n = i == 0 ? "syn/rep/b1" : i == 1 ? "syn/rep/b2" : "syn/rep/b3";
    double bytes = i == 0 ? 1e6 : i == 1 ? 2e6 : 8e6, us = 1.0 + bytes / 5e4;
    add_row(arr, n, bytes, us * 3, ", \"repetitions\": 3, \"run_type\": \"iteration\"" COPY_SWEEP("syn/rep"));
    add_row(arr, n, bytes, us * 7,
            ", \"repetitions\": 3, \"run_type\": \"aggregate\", \"aggregate_name\": \"mean\"" COPY_SWEEP("syn/rep"));
    add_row(arr, n, bytes, us,
            ", \"repetitions\": 3, \"run_type\": \"aggregate\", \"aggregate_name\": \"median\"" COPY_SWEEP("syn/rep"));
  }
  /* a decode-like series over two axes: t = 5 + 0.002 batch + 1e-5 batch context (exact) */
  const double batch[] = {1, 4, 16, 64, 16, 4}, context[] = {4096, 4096, 4096, 4096, 65536, 131072};
  for (int i = 0; i < 6; i++) {
    double us = 5.0 + 0.002 * batch[i] + 1e-5 * batch[i] * context[i];
    snprintf(name, sizeof name, "syn/decode/b%.0f/ctx%.0f", batch[i], context[i]);
    snprintf(extra, sizeof extra,
             ", \"sweep\": {\"series\": \"syn/decode\", \"axes\": [\"batch\", \"context\"], \"at\": [%g, %g], "
             "\"model\": \"batch + batch*context\"}",
             batch[i], context[i]);
    add_row(arr, name, 1e6 * batch[i], us, extra);
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

static double coefficient(const cJSON *series, const char *term) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(series, "fit"), "coefficients_us");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, term);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *reason_of(const cJSON *series) {
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(series, "no_fit_reason");
  return cJSON_IsString(r) ? r->valuestring : "";
}

static cJSON *params_of(const cJSON *benchmarks, km_results *r) {
  km_model m;
  km_bytes_params p;
  char err[256] = "";
  KM_EXPECT(km_results_from_json(benchmarks, r, err, sizeof err) == 0);
  KM_EXPECT(km_model_preset("qwen3-8b", &m) == 0);
  km_bytes_params_default(&p);
  return km_params_json(r, &m, &p, NULL);
}

static void test_params_json(void) {
  km_results r;
  cJSON *arr = synthetic_benchmarks();
  cJSON *doc = params_of(arr, &r);
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
  KM_EXPECT(cJSON_IsString(schema) && strcmp(schema->valuestring, KM_PARAMS_SCHEMA) == 0);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "series")) == 4);
  const cJSON *copy = find_series(doc, "syn/copy"), *single = find_series(doc, "syn/single/x");
  const cJSON *rep = find_series(doc, "syn/rep"), *decode = find_series(doc, "syn/decode");
  KM_EXPECT(copy && single && rep && decode);
  KM_EXPECT_NEAR(fit_value(copy, "alpha_us"), SYN_ALPHA_US, 1e-6);
  KM_EXPECT_NEAR(fit_value(copy, "beta_GBps"), 100.0, 1e-6);
  KM_EXPECT_NEAR(fit_value(copy, "max_rel_error"), 0.0, 1e-9);
  KM_EXPECT(fit_value(copy, "min_bytes") == 1e3 && fit_value(copy, "max_bytes") == 1e8);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(copy, "points")) == 4); /* the L2 point too */
  KM_EXPECT(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(single, "fit")));
  KM_EXPECT(strstr(reason_of(single), "declares no sweep") != NULL);
  KM_EXPECT_NEAR(fit_value(rep, "alpha_us"), 1.0, 1e-9);
  KM_EXPECT_NEAR(fit_value(rep, "beta_GBps"), 50.0, 1e-9);
  KM_EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "points")) == 3);
  KM_EXPECT_NEAR(coefficient(decode, "1"), 5.0, 1e-9);
  KM_EXPECT_NEAR(coefficient(decode, "batch"), 0.002, 1e-12);
  KM_EXPECT_NEAR(coefficient(decode, "batch*context"), 1e-5, 1e-15);
  KM_EXPECT(isnan(fit_value(decode, "alpha_us"))); /* not the copy model */
  KM_EXPECT(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "bytes_table"), "rows")));
  cJSON_Delete(doc);
  cJSON_Delete(arr);
  km_results_free(&r);
}

/* The acceptance rules on their own, one failing rule at a time. */
static void test_rules(void) {
  const char *bytes_axis[] = {"bytes"};
  km_model_terms m;
  char err[200];
  KM_EXPECT(km_model_parse(NULL, bytes_axis, 1, &m, err, sizeof err) == 0 && m.nterms == 1);
  KM_EXPECT(km_model_parse("bytes + widgets", bytes_axis, 1, &m, err, sizeof err) == -1);
  KM_EXPECT(strstr(err, "widgets") != NULL);
  KM_EXPECT(km_model_parse("bytes + ", bytes_axis, 1, &m, err, sizeof err) == -1);
  KM_EXPECT(km_model_parse("bytes", bytes_axis, 1, &m, err, sizeof err) == 0);
  km_sweep_fit f;
  /* exact line, span 1000x: published */
  km_fit_point line[3] = {{{1e3}, 11.0}, {{1e5}, 110.0}, {{1e6}, 1010.0}};
  km_sweep_fit_compute(line, 3, bytes_axis, 1, &m, &f);
  KM_EXPECT(f.published && fabs(f.coef[0] - 10.0) < 1e-6);
  /* two points */
  km_sweep_fit_compute(line, 2, bytes_axis, 1, &m, &f);
  KM_EXPECT(!f.published && strstr(f.reason, "2 point(s)"));
  /* a span of 3x */
  km_fit_point narrow[3] = {{{1e6}, 11.0}, {{2e6}, 21.0}, {{3e6}, 31.0}};
  km_sweep_fit_compute(narrow, 3, bytes_axis, 1, &m, &f);
  KM_EXPECT(!f.published && strstr(f.reason, "spans 3x"));
  /* a fixed cost below zero */
  km_fit_point negative[3] = {{{1e4}, 1.0}, {{1e5}, 91.0}, {{1e6}, 991.0}}; /* exactly -9 us + bytes / 1 GB/s */
  km_sweep_fit_compute(negative, 3, bytes_axis, 1, &m, &f);
  KM_EXPECT(!f.published && strstr(f.reason, "negative"));
  /* a point 30% off the line the others make */
  km_fit_point bent[4] = {{{1e3}, 11.0}, {{1e5}, 110.0}, {{1e6}, 1010.0}, {{4e6}, 2800.0}};
  km_sweep_fit_compute(bent, 4, bytes_axis, 1, &m, &f);
  KM_EXPECT(!f.published && strstr(f.reason, "off"));
  /* a second axis that never varies independently of the first */
  const char *two[] = {"batch", "context"};
  KM_EXPECT(km_model_parse("batch + context", two, 2, &m, err, sizeof err) == 0);
  km_fit_point tied[4] = {{{1, 1}, 2.0}, {{4, 4}, 5.0}, {{16, 16}, 17.0}, {{64, 64}, 65.0}};
  km_sweep_fit_compute(tied, 4, two, 2, &m, &f);
  KM_EXPECT(!f.published && strstr(f.reason, "independently"));
}

/* The degenerate series of the recorded H200 run (issue 13): the old writer published a fit for each. */
static void test_recorded_degenerate(void) {
  cJSON *run = km_test_read_json("runs/h200-degenerate-series.json");
  KM_EXPECT(run != NULL);
  if (!run) return;
  km_results r;
  cJSON *doc = params_of(cJSON_GetObjectItemCaseSensitive(run, "benchmarks"), &r);
  /* two points 0.09% apart in bytes: alpha -46,123 us before */
  const cJSON *bulk = find_series(doc, "paged/gather_bulk/hnd");
  KM_EXPECT(bulk && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(bulk, "fit")) && strstr(reason_of(bulk), "2 point(s)"));
  /* three points 0.2% apart */
  const cJSON *read = find_series(doc, "paged/read/nhd");
  KM_EXPECT(read && strstr(reason_of(read), "bytes spans 1.00"));
  /* every series either has a fit that holds every point to 10% with no negative coefficient, or a reason */
  const cJSON *s;
  int published = 0;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc, "series")) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "series");
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(s, "fit"))) {
      KM_EXPECT_MSG(reason_of(s)[0] != '\0', "%s has neither fit nor reason", name->valuestring);
      continue;
    }
    published++;
    double alpha = fit_value(s, "alpha_us"), beta = fit_value(s, "beta_GBps");
    KM_EXPECT_MSG(alpha >= 0 && beta > 0, "%s: alpha %g beta %g", name->valuestring, alpha, beta);
    const cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(s, "points")) {
      double bytes = cJSON_GetObjectItemCaseSensitive(pt, "bytes")->valuedouble;
      double t = cJSON_GetObjectItemCaseSensitive(pt, "time_us")->valuedouble;
      double pred = alpha + bytes / (beta * 1e3);
      KM_EXPECT_MSG(fabs(pred - t) <= 0.10 * t, "%s at %g bytes: %g us predicted, %g measured", name->valuestring,
                    bytes, pred, t);
    }
  }
  /* the isolated-copy fit of pinned host-to-device copies is exported from the row's stages */
  const cJSON *iso = find_series(doc, "offload/fit/h2d/pinned");
  KM_EXPECT(iso && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(iso, "points")) == 8);
  KM_EXPECT_MSG(published >= 1, "no series of the recorded run has a fit");
  cJSON_Delete(doc);
  km_results_free(&r);
  cJSON_Delete(run);
}

int main(void) {
  test_exact_line();
  test_noisy_line();
  test_degenerate_inputs();
  test_relative_fit();
  test_params_json();
  test_rules();
  test_recorded_degenerate();
  return km_test_finish("cpu_params_fit");
}
