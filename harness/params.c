/* Simulator parameters: rows grouped into series (a primitive's sweep over one axis), each fitted
 * to a latency-bandwidth line. A series of one point, or of points that all move the same bytes,
 * has no fit and says so; its points are still written. */
#include "params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "output_file.h"

/* A component that names a point on a swept axis: 64MiB, 4KiB, 1GiB, or a prefix and a count. */
static int is_swept(const char *c, size_t n) {
  static const char *const prefixes[] = {"bs", "ctx", "budget", "p", "n", "b", "r", "k", ""};
  static const char *const units[] = {"KiB", "MiB", "GiB", ""};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    size_t pl = strlen(prefixes[i]);
    if (n <= pl || strncmp(c, prefixes[i], pl) != 0) continue;
    size_t d = pl;
    while (d < n && c[d] >= '0' && c[d] <= '9') d++;
    if (d == pl) continue;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
      size_t ul = strlen(units[u]);
      if (d + ul == n && strncmp(c + d, units[u], ul) == 0 && (pl > 0 || ul > 0)) return 1;
    }
  }
  return 0;
}

void km_params_series_of(const char *name, char *buf, size_t len) {
  size_t o = 0;
  const char *c = name;
  while (*c && o + 2 < len) {
    size_t n = strcspn(c, "/");
    if (is_swept(c, n)) {
      buf[o++] = '*';
    } else {
      size_t take = n < len - o - 1 ? n : len - o - 1;
      memcpy(buf + o, c, take);
      o += take;
    }
    c += n;
    if (*c == '/' && o + 1 < len) buf[o++] = *c++;
  }
  buf[o] = '\0';
}

static int usable(const km_result *row) {
  if (row->error || row->skipped) return 0;
  if (row->repetitions > 1) return row->is_aggregate && strcmp(row->aggregate_name, "median") == 0;
  return !row->is_aggregate && isfinite(km_result_counter(row, "median_us")) && isfinite(km_result_counter(row, "bytes"));
}

static cJSON *series_json(const km_results *r, const char *series) {
  size_t n = 0;
  char key[512];
  for (size_t i = 0; i < r->count; i++) {
    km_params_series_of(r->rows[i].name, key, sizeof key);
    if (usable(&r->rows[i]) && strcmp(key, series) == 0) n++;
  }
  double *x = calloc(n ? n : 1, sizeof *x), *y = calloc(n ? n : 1, sizeof *y);
  cJSON *o = cJSON_CreateObject(), *points = cJSON_CreateArray();
  const char *technique = "";
  size_t k = 0;
  for (size_t i = 0; x && y && i < r->count; i++) {
    const km_result *row = &r->rows[i];
    km_params_series_of(row->name, key, sizeof key);
    if (!usable(row) || strcmp(key, series) != 0) continue;
    technique = row->technique;
    x[k] = km_result_counter(row, "bytes");
    y[k] = km_result_counter(row, "median_us");
    cJSON *pt = cJSON_CreateObject();
    cJSON_AddStringToObject(pt, "name", row->name);
    cJSON_AddNumberToObject(pt, "bytes", x[k]);
    cJSON_AddNumberToObject(pt, "time_us", y[k]);
    cJSON_AddNumberToObject(pt, "gbps", km_result_counter(row, "GB/s"));
    cJSON_AddItemToArray(points, pt);
    k++;
  }
  cJSON_AddStringToObject(o, "series", series);
  cJSON_AddStringToObject(o, "technique", technique);
  double alpha = NAN, slope = NAN, r2 = NAN;
  if (k >= 2 && km_fit_linear(x, y, k, &alpha, &slope, &r2) == 0 && slope > 0) {
    double lo = x[0], hi = x[0];
    for (size_t i = 1; i < k; i++) lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
    cJSON *fit = cJSON_CreateObject();
    cJSON_AddNumberToObject(fit, "alpha_us", alpha);
    cJSON_AddNumberToObject(fit, "beta_GBps", 1.0 / (slope * 1e3)); /* us per byte -> GB/s */
    cJSON_AddNumberToObject(fit, "r2", r2);
    cJSON_AddNumberToObject(fit, "min_bytes", lo);
    cJSON_AddNumberToObject(fit, "max_bytes", hi);
    cJSON_AddItemToObject(o, "fit", fit);
  } else {
    cJSON_AddNullToObject(o, "fit");
    cJSON_AddStringToObject(o, "no_fit_reason", k < 2 ? "fewer than two points" : "points do not vary in bytes or time falls with bytes");
  }
  cJSON_AddItemToObject(o, "points", points);
  free(x);
  free(y);
  return o;
}

cJSON *km_params_json(const km_results *r, const km_model *m, const km_bytes_params *p, double ceiling_gbps) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "schema", KM_PARAMS_SCHEMA);
  cJSON_AddNumberToObject(doc, "ceiling_gbps", ceiling_gbps);
  cJSON_AddStringToObject(doc, "time_model", "time_us = alpha_us + bytes / (beta_GBps * 1e3)");
  cJSON *series = cJSON_CreateArray();
  char key[512], prev[512];
  for (size_t i = 0; i < r->count; i++) {
    if (!usable(&r->rows[i])) continue;
    km_params_series_of(r->rows[i].name, key, sizeof key);
    int seen = 0; /* each series once, at its first row */
    for (size_t j = 0; j < i && !seen; j++) {
      km_params_series_of(r->rows[j].name, prev, sizeof prev);
      seen = usable(&r->rows[j]) && strcmp(prev, key) == 0;
    }
    if (!seen) cJSON_AddItemToArray(series, series_json(r, key));
  }
  cJSON_AddItemToObject(doc, "series", series);
  km_table *t = NULL;
  char err[256];
  if (km_bytes_table_build(m, p, &t, err, sizeof err) == 0) {
    cJSON_AddItemToObject(doc, "bytes_table", km_bytes_table_json(m, p, t));
    km_table_free(t);
  }
  return doc;
}

int km_params_write(const char *path, const km_results *r, const km_model *m, const km_bytes_params *p,
                    double ceiling_gbps, char *err, size_t errlen) {
  cJSON *doc = km_params_json(r, m, p, ceiling_gbps);
  int rc = km_output_write_json(path, doc, err, errlen);
  cJSON_Delete(doc);
  return rc;
}
