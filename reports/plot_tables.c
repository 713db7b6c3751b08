/* The charts of `report plot` that come from tables rather than result rows: the run's technique table
 * as two bar charts (capacity vs the model as configured, computed from the byte table; decode step
 * time of the measured attention rows, each bar naming its case), and the prefix-cache cliff from a
 * `micro --prefix-sim ... --sweep --json` file (hit rate of the repeat pass vs working set / capacity). */
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "techniques.h"

static void set_up(km_plot_chart *c, const km_run_file *f, const char *stem, const char *title, const char *xlabel,
                   const char *ylabel, const char *needs) {
  memset(c, 0, sizeof *c);
  c->stem = stem, c->title = title, c->xlabel = xlabel, c->ylabel = ylabel;
  km_plot_subtitle(f, c->subtitle, sizeof c->subtitle);
  snprintf(c->needs, sizeof c->needs, "%s", needs);
}

static const char *text_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double number_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* tables.techniques as stored, else rebuilt from tables.bytes and the rows (caller frees *owned). */
static const cJSON *technique_rows(const km_run_file *f, cJSON **owned) {
  *owned = NULL;
  const cJSON *tables = cJSON_GetObjectItemCaseSensitive(f->doc, "tables");
  const cJSON *stored = cJSON_IsObject(tables) ? cJSON_GetObjectItemCaseSensitive(tables, "techniques") : NULL;
  if (cJSON_IsArray(stored)) return stored;
  const cJSON *bytes = cJSON_IsObject(tables) ? cJSON_GetObjectItemCaseSensitive(tables, "bytes") : NULL;
  if (!cJSON_IsObject(bytes)) return NULL;
  km_table *t = km_techniques_table(bytes, &f->results, NULL, 0);
  if (t) *owned = km_table_rows_json(t);
  km_table_free(t);
  return *owned;
}

/* A bar's label: "group: variant [kind]", with any double quote turned single (the data file quotes it). */
static void bar_label(const char *group, const char *variant, const char *kind, char *buf, size_t len) {
  snprintf(buf, len, "%s: %s [%s]", group ? group : "?", variant, kind);
  for (char *p = buf; *p; p++)
    if (*p == '"') *p = '\'';
}

void km_plot_collect_techniques(const km_run_file *f, km_plot_chart *capacity, km_plot_chart *step) {
  set_up(capacity, f, "techniques_capacity",
         "Technique table: capacity (computed, vLLM's rules)",
         "max concurrency / the model as configured's (x)", "", "tables.techniques or tables.bytes rows of kind computed");
  set_up(step, f, "techniques_step",
         "Technique table: decode attention step (measured)",
         "median time per step (us)", "", "tables.techniques rows of kind measured named attn/*");
  capacity->bars = step->bars = 1;
  km_plot_add_ref(capacity, 1.0, 0, "%s (%.2fx)", "the model as configured");
  cJSON *owned = NULL;
  const cJSON *rows = technique_rows(f, &owned), *r;
  char label[256];
  cJSON_ArrayForEach(r, rows) {
    const char *kind = text_of(r, "kind"), *variant = text_of(r, "variant"), *group = text_of(r, "group");
    double x = number_of(r, "capacity_x"), us = number_of(r, "median_us");
    if (!kind || !variant) continue;
    bar_label(group, variant, kind, label, sizeof label);
    if (strcmp(kind, "computed") == 0 && x > 0)
      km_plot_add_point(capacity, "capacity (computed)", NULL, 0, capacity->nseries ? (double)capacity->series[0].n : 0, x,
                        label);
    else if (strcmp(kind, "measured") == 0 && strncmp(variant, "attn/", 5) == 0 && us > 0)
      km_plot_add_point(step, "time per step (measured)", NULL, 0, step->nseries ? (double)step->series[0].n : 0, us,
                        label);
  }
  cJSON_Delete(owned);
}

cJSON *km_plot_read_prefix_sim(const char *path, char *err, size_t errlen) {
  cJSON *doc = km_report_read_json(path, err, errlen);
  if (!doc) return NULL;
  const cJSON *sim = cJSON_GetObjectItemCaseSensitive(doc, "prefix_sim");
  const cJSON *sweep = cJSON_IsObject(sim) ? cJSON_GetObjectItemCaseSensitive(sim, "sweep") : NULL;
  const char *what = !cJSON_IsObject(sim) ? "no \"prefix_sim\" object (expected a micro --prefix-sim --json file)"
                     : !cJSON_IsArray(sweep) ? "no \"prefix_sim.sweep\" array (run micro --prefix-sim with --sweep)"
                                             : NULL;
  const cJSON *row;
  size_t i = 0;
  cJSON_ArrayForEach(row, sweep) {
    if (what) break;
    if (!(number_of(row, "working_set_x") > 0) || !isfinite(number_of(row, "lru_hit_rate_pct")) ||
        !isfinite(number_of(row, "mru_hit_rate_pct")))
      what = "a prefix_sim.sweep row lacks working_set_x > 0, lru_hit_rate_pct or mru_hit_rate_pct";
    i++;
  }
  if (!what && i == 0) what = "prefix_sim.sweep is empty";
  if (!what) return doc;
  snprintf(err, errlen, "--prefix-sim %s: %s", path, what);
  cJSON_Delete(doc);
  return NULL;
}

void km_plot_collect_cliff(const km_run_file *f, const cJSON *sim, km_plot_chart *c) {
  char title[sizeof c->own_title];
  const cJSON *s = sim ? cJSON_GetObjectItemCaseSensitive(sim, "prefix_sim") : NULL;
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(s, "config");
  const char *model = text_of(config, "model"), *rev = text_of(config, "revision");
  double tokens = number_of(config, "capacity_tokens"), budget = number_of(config, "kv_budget_bytes");
  snprintf(title, sizeof title, "Prefix-cache cliff (%s, %.0f-token cache): hit rate of the repeat pass vs working set",
           model ? model : "?", tokens);
  set_up(c, f, "prefix_cliff", title, "working set / cache capacity (x)", "hit rate, last pass (%)",
         "--prefix-sim FILE from micro --prefix-sim cliff --sweep --json FILE");
  snprintf(c->own_title, sizeof c->own_title, "%s", title);
  c->title = c->own_title;
  size_t used = strlen(c->subtitle); /* the GPU ran nothing here: the simulator replays vLLM's block pool */
  snprintf(c->subtitle + used, sizeof c->subtitle - used, "; simulated on the host (KV budget %.0f B%s%s)", budget,
           rev ? ", simulator revision " : "", rev ? rev : "");
  km_plot_add_ref(c, 1.0, 1, "%s (%.0fx)", "working set = cache");
  const cJSON *row;
  cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(s, "sweep")) {
    double x = number_of(row, "working_set_x");
    km_plot_add_point(c, "LRU: vLLM's free queue", NULL, 0, x, number_of(row, "lru_hit_rate_pct"), NULL);
    km_plot_add_point(c, "MRU: keep what fitted", NULL, 1, x, number_of(row, "mru_hit_rate_pct"), NULL);
  }
}
