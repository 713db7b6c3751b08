/* The technique table (see techniques.h). */
#include "techniques.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
  COL_VARIANT, COL_KIND, COL_TOKENS, COL_CONC, COL_X, COL_TIME, COL_GBPS, COL_SHARE, COL_ACC, COL_DERIVED, COL_WHAT,
  COL_COUNT
};

static const km_column columns[COL_COUNT] = {
    {"variant", "variant or measured case", 0},
    {"kind", "kind", 0},
    {"kv_cache_tokens", "token slots (vLLM)", 1},
    {"max_concurrency", "conc (vLLM)", 1},
    {"capacity_x", "vs cfg", 1},
    {"median_us", "time us/call", 1},
    {"gbps", "GB/s", 1},
    {"pct_of_ceiling", "% class ceiling", 1},
    {"accuracy", "accuracy", 0},
    {"derived", "derived", 1},
    {"what", "what", 0},
};

/* Accuracy figures a case may report, each present one shown in this order: the error of a lossy format against
 * the exact one (over the checked slice, and the median of its output rows' own cosines), or a sparse selection's
 * recall. */
static const char *const accuracy_counters[] = {"cosine_vs_bf16", "cosine_rows_median_vs_bf16", "rel_err_vs_bf16",
                                                "cosine", "rel_mse", "recall", "oracle_recall"};

static void accuracy_text(const km_result *row, char *buf, size_t len) {
  buf[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < sizeof accuracy_counters / sizeof accuracy_counters[0] && used + 1 < len; i++) {
    double v = km_result_counter(row, accuracy_counters[i]);
    if (!isnan(v)) used += (size_t)snprintf(buf + used, len - used, "%s%s %.4g", used ? ", " : "", accuracy_counters[i], v);
  }
}

static double json_number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *json_text(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* The byte table's rows of one technique: computed capacity in vLLM's units. */
static void add_computed(km_table *t, const cJSON *rows, const char *technique) {
  for (const cJSON *o = cJSON_IsArray(rows) ? rows->child : NULL; o; o = o->next) {
    if (strcmp(json_text(o, "technique"), technique) != 0) continue;
    size_t k = km_table_add_row(t, technique);
    km_table_set_text(t, k, COL_VARIANT, json_text(o, "variant"));
    km_table_set_text(t, k, COL_KIND, "computed");
    double slots = json_number(o, "kv_cache_tokens");
    if (isnan(slots)) slots = json_number(o, "capacity_tokens"); /* files before the vLLM-exact byte table */
    km_table_set_integer(t, k, COL_TOKENS, slots);
    km_table_set_number(t, k, COL_CONC, json_number(o, "max_concurrency"), 2);
    km_table_set_number(t, k, COL_X, json_number(o, "capacity_x"), 2);
    const char *per = json_text(o, "per_request");
    km_table_set_text(t, k, COL_WHAT, per[0] ? per : "capacity under vLLM's rules");
  }
}

/* The run's representative rows of one technique; returns how many were added. */
static size_t add_measured(km_table *t, const km_results *r, const char *technique) {
  size_t added = 0;
  for (size_t i = 0; i < r->count; i++) {
    const km_result *row = &r->rows[i];
    if (!row->representative || !km_result_is_primary(row) || strcmp(row->technique, technique) != 0) continue;
    size_t k = km_table_add_row(t, technique);
    char buf[512];
    km_table_set_text(t, k, COL_VARIANT, row->name);
    km_table_set_text(t, k, COL_KIND, "measured");
    if (!row->error && !row->skipped) {
      double med = km_result_counter(row, "median_us");
      km_table_set_number(t, k, COL_TIME, med, med < 100 ? 2 : 1);
      km_table_set_number(t, k, COL_GBPS, km_result_counter(row, "GB/s"), 1);
      km_table_set_number(t, k, COL_SHARE, km_result_share(row), 1);
      accuracy_text(row, buf, sizeof buf);
      km_table_set_text(t, k, COL_ACC, buf);
      km_table_set_text(t, k, COL_WHAT, row->c ? row->c->summary : row->label);
    } else {
      km_result_status_text(row, buf, sizeof buf);
      km_table_set_text(t, k, COL_WHAT, buf);
    }
    added++;
  }
  return added;
}

/* A measured row usable for a derived figure: the case ran, was verified and has the counter. */
static int row_value(const km_results *r, const char *name, const char *counter, double *v) {
  if (!name) return -1;
  const km_result *row = name ? km_results_find(r, name) : NULL;
  if (!row || row->error || row->skipped) return -1;
  *v = km_result_counter(row, counter ? counter : "median_us");
  return isnan(*v) ? -1 : 0;
}

int km_derived_value(const km_derived *d, const km_results *r, double *value, char *why, size_t whylen) {
  const char *names[3] = {d->a, d->b, d->c};
  double v[3] = {0, 0, 0};
  const int n = d->kind == KM_DERIVED_RATIO ? 2 : 3;
  for (int i = 0; i < n; i++)
    if (row_value(r, names[i], d->counter[i], &v[i]) != 0) {
      snprintf(why, whylen, "not derived: %s did not run in this run (or has no %s)", names[i] ? names[i] : "(none)",
               d->counter[i] ? d->counter[i] : "median_us");
      return -1;
    }
  const double den = d->kind == KM_DERIVED_RATIO ? v[1] : d->kind == KM_DERIVED_BREAK_EVEN ? v[1] - v[2] : v[2] - v[1];
  if (!(den > 0)) {
    snprintf(why, whylen, "not derived: the denominator is %g", den);
    return -1;
  }
  if (d->kind == KM_DERIVED_RATIO)
    *value = (d->scale ? d->scale : 1.0) * v[0] / den;
  else if (d->kind == KM_DERIVED_BREAK_EVEN)
    *value = v[0] / den;
  else
    *value = d->xb + (v[0] - v[1]) * (d->xc - d->xb) / den;
  return 0;
}

static void add_derived(km_table *t, const km_results *r, const km_case_table *const *tables, size_t ntables,
                        const char *technique) {
  for (size_t i = 0; i < ntables; i++)
    for (size_t j = 0; tables[i] && j < tables[i]->derived_count; j++) {
      const km_derived *d = &tables[i]->derived[j];
      if (strcmp(d->technique, technique) != 0) continue;
      size_t k = km_table_add_row(t, technique);
      char why[400];
      double v = 0;
      km_table_set_text(t, k, COL_VARIANT, d->b);
      km_table_set_text(t, k, COL_KIND, "derived");
      if (km_derived_value(d, r, &v, why, sizeof why) == 0) {
        km_table_set_number(t, k, COL_DERIVED, v, v < 10 ? 3 : 1);
        km_table_set_text(t, k, COL_WHAT, d->what);
      } else {
        char text[800];
        snprintf(text, sizeof text, "%s: %s", d->what, why);
        km_table_set_text(t, k, COL_WHAT, text);
      }
    }
}

km_table *km_techniques_table(const cJSON *bytes, const km_results *r, const km_case_table *const *tables,
                              size_t ntables) {
  char title[256];
  const cJSON *model = bytes ? cJSON_GetObjectItemCaseSensitive(bytes, "model") : NULL;
  snprintf(title, sizeof title, "Techniques side by side for %s: capacity computed (vLLM's rules), primitives measured; no rank",
           model ? json_text(model, "name") : "the model");
  km_table *t = km_table_new(title, columns, COL_COUNT);
  if (!t) return NULL;
  km_table_set_text_mode(t, COL_WHAT, KM_TEXT_NOTE); /* text: numbered notes under the table */
  const cJSON *rows = bytes ? cJSON_GetObjectItemCaseSensitive(bytes, "rows") : NULL;
  for (size_t rank = 1; rank < KM_TECHNIQUE_COUNT; rank++) { /* rank 0 is the roofline: not a technique */
    const char *tech = km_technique_order[rank];
    add_computed(t, rows, tech);
    const size_t measured = add_measured(t, r, tech);
    add_derived(t, r, tables, ntables, tech);
    if (measured == 0) {
      size_t k = km_table_add_row(t, tech);
      km_table_set_text(t, k, COL_KIND, "measured");
      km_table_set_text(t, k, COL_WHAT, r->count ? "no measured row: its family was filtered out or has no "
                                                   "representative case in this run"
                                                 : "no measured row: no benchmark ran (no GPU, or --table bytes)");
    }
  }
  return t;
}
