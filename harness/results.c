/* Result rows: a deep copy of each run Google Benchmark reports, so outputs are written after the
 * run from one list, and the same list can be read back from a JSON file. Google Benchmark's real_time
 * under manual timing is the mean of the samples and its cpu_time is per sample (a batch of launches);
 * a row keeps the median per launch as real_time and the CPU time per launch as cpu_time, the units
 * the tables use. */
#include "results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shares.h"

static char *dup_or_empty(const char *s) {
  size_t n = s ? strlen(s) : 0;
  char *d = malloc(n + 1);
  if (d) {
    if (n) memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static km_result *append(km_results *r) {
  if (r->count == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    km_result *rows = realloc(r->rows, cap * sizeof *rows);
    if (!rows) return NULL;
    r->rows = rows;
    r->cap = cap;
  }
  km_result *row = &r->rows[r->count++];
  memset(row, 0, sizeof *row);
  return row;
}

static int set_counters(km_result *row, size_t n, const char *const *names, const double *values) {
  row->ncounters = n;
  row->counter_names = calloc(n ? n : 1, sizeof *row->counter_names);
  row->counter_values = calloc(n ? n : 1, sizeof *row->counter_values);
  if (!row->counter_names || !row->counter_values) return -1;
  for (size_t i = 0; i < n; i++) {
    row->counter_names[i] = dup_or_empty(names[i]);
    row->counter_values[i] = values[i];
  }
  return 0;
}

cJSON *km_sweep_json(const km_sweep *s) {
  if (!s || !s->series) return NULL;
  cJSON *o = cJSON_CreateObject(), *axes = cJSON_CreateArray(), *at = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "series", s->series);
  for (size_t i = 0; i < KM_SWEEP_MAX_AXES && s->axes[i]; i++) {
    cJSON_AddItemToArray(axes, cJSON_CreateString(s->axes[i]));
    cJSON_AddItemToArray(at, strcmp(s->axes[i], "bytes") == 0 ? cJSON_CreateNull() : cJSON_CreateNumber(s->at[i]));
  }
  if (cJSON_GetArraySize(axes) == 0) { /* no axes declared: the copy model's one axis */
    cJSON_AddItemToArray(axes, cJSON_CreateString("bytes"));
    cJSON_AddItemToArray(at, cJSON_CreateNull());
  }
  cJSON_AddItemToObject(o, "axes", axes);
  cJSON_AddItemToObject(o, "at", at);
  cJSON_AddStringToObject(o, "model", s->model ? s->model : "bytes");
  if (s->stages) {
    cJSON *st = cJSON_AddArrayToObject(o, "stages");
    for (const char *const *n = s->stages; *n; n++) cJSON_AddItemToArray(st, cJSON_CreateString(*n));
  }
  return o;
}

/* Seconds per unit of Google Benchmark's time_unit names. */
static double unit_seconds(const char *unit) {
  if (strcmp(unit, "ns") == 0) return 1e-9;
  if (strcmp(unit, "us") == 0) return 1e-6;
  if (strcmp(unit, "ms") == 0) return 1e-3;
  return 1.0;
}

static void per_launch_times(km_result *row) {
  double median_us = km_result_counter(row, "median_us"), batch = km_result_counter(row, "batch");
  int percentage = strcmp(row->aggregate_unit, "percentage") == 0; /* a cv aggregate: a ratio, no unit */
  if (isfinite(median_us)) row->real_time = percentage ? median_us : median_us * 1e-6 / unit_seconds(row->time_unit);
  if (!percentage && isfinite(batch) && batch > 0) row->cpu_time /= batch;
}

int km_results_add(km_results *r, const gb_run *run, const km_case *c) {
  km_result *row = append(r);
  if (!row) return -1;
  row->name = dup_or_empty(run->name);
  row->full_name = dup_or_empty(run->full_name);
  row->run_name = dup_or_empty(run->run_name);
  row->aggregate_name = dup_or_empty(run->aggregate_name);
  row->aggregate_unit = dup_or_empty(run->aggregate_unit);
  row->time_unit = dup_or_empty(run->time_unit);
  row->message = dup_or_empty(run->message);
  row->label = dup_or_empty(run->label);
  row->technique = dup_or_empty(c ? c->technique : "");
  row->baseline = dup_or_empty(c && c->baseline ? c->baseline : "");
  row->representative = c && (c->flags & KM_CASE_REPRESENTATIVE);
  row->sweep = c ? km_sweep_json(c->sweep) : NULL;
  row->is_aggregate = run->is_aggregate;
  row->error = run->error;
  row->skipped = run->skipped;
  row->family_index = run->family_index;
  row->per_family_instance_index = run->per_family_instance_index;
  row->repetitions = run->repetitions;
  row->repetition_index = run->repetition_index;
  row->threads = run->threads;
  row->iterations = run->iterations;
  row->real_time = run->real_time;
  row->cpu_time = run->cpu_time;
  row->c = c;
  if (set_counters(row, run->ncounters, run->counter_names, run->counter_values) != 0) return -1;
  per_launch_times(row);
  return 0;
}

void km_results_free(km_results *r) {
  for (size_t i = 0; i < r->count; i++) {
    km_result *row = &r->rows[i];
    char *strs[] = {row->name, row->full_name, row->run_name, row->aggregate_name, row->aggregate_unit,
                    row->time_unit, row->message, row->label, row->technique, row->baseline};
    for (size_t s = 0; s < sizeof strs / sizeof strs[0]; s++) free(strs[s]);
    for (size_t k = 0; k < row->ncounters; k++) free(row->counter_names[k]);
    free(row->counter_names);
    free(row->counter_values);
    cJSON_Delete(row->sweep);
  }
  free(r->rows);
  memset(r, 0, sizeof *r);
}

double km_result_counter(const km_result *row, const char *name) {
  for (size_t i = 0; i < row->ncounters; i++)
    if (strcmp(row->counter_names[i], name) == 0) return row->counter_values[i];
  return NAN;
}

static int flag(const km_result *row, const char *name) { return km_result_counter(row, name) == 1.0; }

const char *km_result_traffic(const km_result *row) {
  static const char *const link[KM_LINK_DIR_COUNT] = {"link", "link_h2d", "link_d2h", "link_both"};
  if (flag(row, "host_link")) {
    double d = km_result_counter(row, "link_dir");
    return isfinite(d) && d >= 0 && d < KM_LINK_DIR_COUNT ? link[(int)d] : link[0];
  }
  double r = km_result_counter(row, "bytes_read"), w = km_result_counter(row, "bytes_written");
  if (!isfinite(r) || !isfinite(w)) return "unknown";
  return km_traffic_name(km_traffic_of(r, w));
}

double km_result_vs_baseline(const km_result *row, const km_result *base) {
  if (!base || row->error || row->skipped || base->error || base->skipped) return NAN;
  double g = km_result_counter(row, "GB/s"), gb = km_result_counter(base, "GB/s");
  if (g > 0 && gb > 0) return g / gb;
  /* no bytes on either side: time is comparable only when both move the same (no) bytes */
  double b1 = km_result_counter(row, "bytes"), b2 = km_result_counter(base, "bytes");
  double t1 = km_result_counter(row, "median_us"), t2 = km_result_counter(base, "median_us");
  if (b1 == b2 && t1 > 0 && t2 > 0) return t2 / t1;
  return NAN;
}

/* The row that stands for a case: its only iteration, or the median aggregate when repeated. */
int km_result_is_primary(const km_result *row) {
  if (row->repetitions > 1) return row->is_aggregate && strcmp(row->aggregate_name, "median") == 0;
  return !row->is_aggregate;
}

const km_result *km_results_find(const km_results *r, const char *name) {
  for (size_t i = 0; i < r->count; i++)
    if (km_result_is_primary(&r->rows[i]) && strcmp(r->rows[i].name, name) == 0) return &r->rows[i];
  return NULL;
}

cJSON *km_results_benchmarks_json(const km_results *r) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; arr && i < r->count; i++) {
    const km_result *row = &r->rows[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", row->full_name);
    cJSON_AddNumberToObject(o, "family_index", (double)row->family_index);
    cJSON_AddNumberToObject(o, "per_family_instance_index", (double)row->per_family_instance_index);
    cJSON_AddStringToObject(o, "run_name", row->run_name);
    cJSON_AddStringToObject(o, "run_type", row->is_aggregate ? "aggregate" : "iteration");
    cJSON_AddNumberToObject(o, "repetitions", (double)row->repetitions);
    cJSON_AddNumberToObject(o, "repetition_index", (double)row->repetition_index);
    cJSON_AddNumberToObject(o, "threads", (double)row->threads);
    if (row->is_aggregate) {
      cJSON_AddStringToObject(o, "aggregate_name", row->aggregate_name);
      cJSON_AddStringToObject(o, "aggregate_unit", row->aggregate_unit);
    }
    /* Google Benchmark 1.8's JSON reporter: an error is error_occurred + error_message, a skip is
     * skipped + skip_message */
    if (row->error) {
      cJSON_AddBoolToObject(o, "error_occurred", 1);
      cJSON_AddStringToObject(o, "error_message", row->message);
    } else if (row->skipped) {
      cJSON_AddBoolToObject(o, "skipped", 1);
      cJSON_AddStringToObject(o, "skip_message", row->message);
    }
    cJSON_AddNumberToObject(o, "iterations", (double)row->iterations);
    cJSON_AddNumberToObject(o, "real_time", row->real_time);
    cJSON_AddNumberToObject(o, "cpu_time", row->cpu_time);
    cJSON_AddStringToObject(o, "time_unit", row->time_unit);
    if (row->label[0]) cJSON_AddStringToObject(o, "label", row->label);
    for (size_t k = 0; k < row->ncounters; k++)
      if (isfinite(row->counter_values[k])) cJSON_AddNumberToObject(o, row->counter_names[k], row->counter_values[k]);
    /* kvmicro's own fields, beside Google Benchmark's */
    cJSON_AddStringToObject(o, "kvmicro_name", row->name);
    cJSON_AddStringToObject(o, "technique", row->technique);
    if (!row->error && !row->skipped && isfinite(km_result_counter(row, "bytes")))
      cJSON_AddStringToObject(o, "traffic_class", km_result_traffic(row));
    if (row->baseline[0]) cJSON_AddStringToObject(o, "baseline", row->baseline);
    cJSON_AddBoolToObject(o, "representative", row->representative);
    if (row->sweep) cJSON_AddItemToObject(o, "sweep", cJSON_Duplicate(row->sweep, 1));
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

/* ---- reading back */
static const char *json_str(const cJSON *o, const char *key, const char *fallback) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : fallback;
}

static int json_num(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) return -1;
  *out = v->valuedouble;
  return 0;
}

/* Fields Google Benchmark writes that are not counters. */
static int is_standard_field(const char *k) {
  static const char *const std_keys[] = {"family_index", "per_family_instance_index", "repetitions",
                                         "repetition_index", "threads", "iterations", "real_time", "cpu_time"};
  for (size_t i = 0; i < sizeof std_keys / sizeof std_keys[0]; i++)
    if (strcmp(k, std_keys[i]) == 0) return 1;
  return 0;
}

static int row_from_json(const cJSON *o, km_results *out, size_t index, char *err, size_t errlen) {
  const char *full = json_str(o, "name", NULL);
  double real_time, cpu_time;
  if (!full || json_num(o, "real_time", &real_time) || json_num(o, "cpu_time", &cpu_time)) {
    snprintf(err, errlen, "benchmarks[%zu]: missing name, real_time or cpu_time", index);
    return -1;
  }
  km_result *row = append(out);
  if (!row) return -1;
  double v = 0;
  row->full_name = dup_or_empty(full);
  row->name = dup_or_empty(json_str(o, "kvmicro_name", full));
  row->run_name = dup_or_empty(json_str(o, "run_name", full));
  row->is_aggregate = strcmp(json_str(o, "run_type", "iteration"), "aggregate") == 0;
  row->aggregate_name = dup_or_empty(json_str(o, "aggregate_name", ""));
  row->aggregate_unit = dup_or_empty(json_str(o, "aggregate_unit", "time"));
  row->time_unit = dup_or_empty(json_str(o, "time_unit", "ns"));
  row->message = dup_or_empty(json_str(o, "skip_message", json_str(o, "error_message", "")));
  row->label = dup_or_empty(json_str(o, "label", ""));
  row->technique = dup_or_empty(json_str(o, "technique", ""));
  row->baseline = dup_or_empty(json_str(o, "baseline", ""));
  row->representative = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "representative"));
  const cJSON *sweep = cJSON_GetObjectItemCaseSensitive(o, "sweep");
  row->sweep = cJSON_IsObject(sweep) ? cJSON_Duplicate(sweep, 1) : NULL;
  row->skipped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "skipped"));
  row->error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "error_occurred")) && !row->skipped;
  row->real_time = real_time;
  row->cpu_time = cpu_time;
  row->repetitions = json_num(o, "repetitions", &v) ? 1 : (int64_t)v;
  row->repetition_index = json_num(o, "repetition_index", &v) ? 0 : (int64_t)v;
  row->iterations = json_num(o, "iterations", &v) ? 0 : (int64_t)v;
  row->threads = json_num(o, "threads", &v) ? 1 : (int64_t)v;
  row->family_index = json_num(o, "family_index", &v) ? (int64_t)index : (int64_t)v;
  row->per_family_instance_index = json_num(o, "per_family_instance_index", &v) ? 0 : (int64_t)v;
  size_t n = 0;
  for (const cJSON *c = o->child; c; c = c->next)
    if (cJSON_IsNumber(c) && !is_standard_field(c->string)) n++;
  row->counter_names = calloc(n ? n : 1, sizeof *row->counter_names);
  row->counter_values = calloc(n ? n : 1, sizeof *row->counter_values);
  if (!row->counter_names || !row->counter_values) return -1;
  for (const cJSON *c = o->child; c; c = c->next)
    if (cJSON_IsNumber(c) && !is_standard_field(c->string)) {
      row->counter_names[row->ncounters] = dup_or_empty(c->string);
      row->counter_values[row->ncounters++] = c->valuedouble;
    }
  return 0;
}

int km_results_from_json(const cJSON *benchmarks, km_results *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsArray(benchmarks)) {
    snprintf(err, errlen, "\"benchmarks\" is missing or not an array");
    return -1;
  }
  size_t i = 0;
  for (const cJSON *o = benchmarks->child; o; o = o->next, i++) {
    if (!cJSON_IsObject(o)) {
      snprintf(err, errlen, "benchmarks[%zu] is not an object", i);
      km_results_free(out);
      return -1;
    }
    if (row_from_json(o, out, i, err, errlen) != 0) {
      km_results_free(out);
      return -1;
    }
  }
  return 0;
}

/* ---- the latency table */
const char *const km_technique_order[] = {"roofline", "gqa", "cross_layer", "mla", "sliding_window",
                                              "hybrid_mamba", "kv_quant", "eviction", "compressed",
                                              "prefix_reuse", "sparse_read", "paged", "offload"};

size_t km_technique_rank(const char *t) {
  for (size_t i = 0; i < KM_TECHNIQUE_COUNT; i++)
    if (strcmp(t, km_technique_order[i]) == 0) return i;
  return KM_TECHNIQUE_COUNT;
}

static int wanted(const km_results *r, const km_result *row, int any_representative) {
  if (!km_result_is_primary(row)) return 0;
  if (!any_representative || row->representative || strcmp(row->technique, "roofline") == 0) return 1;
  for (size_t i = 0; i < r->count; i++) /* a baseline some representative row is compared with */
    if (r->rows[i].representative && strcmp(r->rows[i].baseline, row->name) == 0) return 1;
  return 0;
}

/* The row's flags, "ok" when it has none: noisy (CV above 5%), throttled (the GPU pulled its clocks
 * down during the samples), l2_resident (working set under 4x L2: not an HBM figure). */
static void flags_text(const km_result *row, char *buf, size_t len) {
  static const char *const names[] = {"noisy", "throttled", "l2_resident"};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0] && used + 1 < len; i++)
    if (flag(row, names[i])) used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i]);
  if (!used) snprintf(buf, len, "ok");
}

void km_result_status_text(const km_result *row, char *buf, size_t len) {
  char flags[96];
  flags_text(row, flags, sizeof flags);
  if (row->error)
    snprintf(buf, len, "ERROR %s", row->message);
  else if (row->skipped)
    snprintf(buf, len, "%s", row->message);
  else if (km_result_counter(row, "verified") != 1.0)
    snprintf(buf, len, "unverified, %s", flags);
  else
    snprintf(buf, len, "%s%s%s", flags, row->label[0] ? "; " : "", row->label);
}

/* A host row's ceiling is the contiguous host copy; a device row's, its traffic class's. */
double km_result_share(const km_result *row) {
  return flag(row, "host_link") ? km_result_counter(row, "pct_of_host_copy") : km_result_counter(row, "pct_of_ceiling");
}

km_table *km_latency_table(const km_results *r) {
  static const km_column cols[] = {
      {"case", "case", 0},
      {"median_us", "median us", 1},
      {"cv_pct", "CV %", 1},
      {"gbps", "GB/s", 1},
      {"traffic_class", "class", 0},
      {"pct_of_ceiling", "% class ceiling", 1},
      {"pct_of_peak", "% peak", 1},
      {"ns_per_token_layer", "ns/token/layer", 1},
      {"gbps_vs_baseline", "x baseline (GB/s)", 1},
      {"status", "status", 0},
  };
  /* the classes (copy, read, write, mixed; the contiguous host copy for link rows): README "How it measures" */
  km_table *t = km_table_new("Latency and bandwidth (median per launch; bytes read + written; share of the row's class ceiling)",
                             cols, sizeof cols / sizeof cols[0]);
  if (!t) return NULL;
  int any_rep = 0;
  for (size_t i = 0; i < r->count; i++) any_rep |= r->rows[i].representative && km_result_is_primary(&r->rows[i]);
  for (size_t rank = 0; rank <= KM_TECHNIQUE_COUNT; rank++)
    for (size_t i = 0; i < r->count; i++) {
      const km_result *row = &r->rows[i];
      if (km_technique_rank(row->technique) != rank || !wanted(r, row, any_rep)) continue;
      size_t k = km_table_add_row(t, row->technique[0] ? row->technique : "other");
      char status[512];
      km_table_set_text(t, k, 0, row->name);
      if (!row->error && !row->skipped) {
        double med = km_result_counter(row, "median_us");
        km_table_set_number(t, k, 1, med, med < 100 ? 2 : 1);
        km_table_set_number(t, k, 2, 100.0 * km_result_counter(row, "cv"), 1);
        km_table_set_number(t, k, 3, km_result_counter(row, "GB/s"), 1);
        km_table_set_text(t, k, 4, km_result_traffic(row));
        km_table_set_number(t, k, 5, km_result_share(row), 1);
        km_table_set_number(t, k, 6, km_result_counter(row, "pct_of_peak"), 1);
        km_table_set_number(t, k, 7, km_result_counter(row, "ns_per_token_layer"), 3);
        const km_result *base = row->baseline[0] ? km_results_find(r, row->baseline) : NULL;
        km_table_set_number(t, k, 8, km_result_vs_baseline(row, base), 2);
      }
      km_result_status_text(row, status, sizeof status);
      km_table_set_text(t, k, 9, status);
    }
  return t;
}
