/* The scaling verdicts of `report compare` (see scaling.h). Every figure is a ratio of measured rows to
 * their own run's measured ceilings; the verdict reads nothing into a case's name. */
#include "scaling.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RUNS = 16, COL_KEY = 32, COL_TITLE = 48 };

const char *km_scaling_name(km_scaling s) {
  static const char *const names[KM_SCALES_COUNT] = {"memory bandwidth", "PCIe", "neither", "undetermined"};
  return s < KM_SCALES_COUNT ? names[s] : "?";
}

/* One run's side of a case. */
typedef struct side {
  const km_result *row; /* NULL: not in that run, or it did not run there */
  double gbps, ceiling, share;
} side;

typedef struct verdict {
  km_scaling s;
  char why[256];
  double gbps_spread, ceiling_spread, share_spread;
} verdict;

static int is_link(const char *cls) { return strncmp(cls, "link", 4) == 0; }

/* The GB/s the row's own card's ceilings give for the row's bytes: the direction's pinned copy for a
 * link row, the class model of harness/shares.h otherwise; 0 when a ceiling it needs is unknown. */
static double class_ceiling(const km_ceilings *c, const km_result *row, const char *cls) {
  if (is_link(cls)) {
    double dir = km_result_counter(row, "link_dir");
    return km_host_copy_gbps(c, isfinite(dir) && dir >= 0 && dir < KM_LINK_DIR_COUNT ? (km_link_dir)dir : KM_LINK_ANY);
  }
  double r = km_result_counter(row, "bytes_read"), w = km_result_counter(row, "bytes_written");
  if (!isfinite(r) || !isfinite(w)) { /* files before bytes_read/bytes_written: counted as a copy */
    double b = km_result_counter(row, "bytes");
    r = w = b / 2;
  }
  double s = km_ceiling_seconds(c, r, w);
  return isfinite(s) && s > 0 ? (r + w) / s / 1e9 : 0.0;
}

static side side_of(const km_run_file *f, const char *name, const char *cls) {
  side s = {NULL, NAN, NAN, NAN};
  const km_result *row = km_results_find(&f->results, name);
  if (!row || row->error || row->skipped) return s;
  km_ceilings c = km_run_file_ceilings(f);
  s.row = row;
  s.gbps = km_run_row_gbps(row);
  s.ceiling = class_ceiling(&c, row, cls);
  if (s.gbps > 0 && s.ceiling > 0) s.share = 100.0 * s.gbps / s.ceiling;
  return s;
}

/* Largest over smallest of the finite positive values; NaN when there are fewer than two. */
static double spread(const side *sides, size_t n, size_t offset) {
  double lo = INFINITY, hi = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    double v = *(const double *)((const char *)&sides[i] + offset);
    if (!sides[i].row || !(v > 0) || !isfinite(v)) continue;
    lo = v < lo ? v : lo, hi = v > hi ? v : hi, k++;
  }
  return k >= 2 ? hi / lo : NAN;
}

static void share_range(const side *sides, size_t n, char *buf, size_t len) {
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < n; i++)
    if (sides[i].row && isfinite(sides[i].share)) lo = sides[i].share < lo ? sides[i].share : lo, hi = sides[i].share > hi ? sides[i].share : hi;
  snprintf(buf, len, "%.3g%%..%.3g%%", lo, hi);
}

/* A reason a row cannot be normalised in some run, or NULL. */
static const char *unusable(const side *sides, size_t n, const char *cls, size_t *which) {
  for (size_t i = 0; i < n; i++) {
    const km_result *row = sides[i].row;
    *which = i;
    if (!row) continue;
    if (!(sides[i].gbps > 0)) return "no bytes counted: nothing to normalise";
    if (km_result_counter(row, "l2_resident") == 1.0) return "L2-resident: L2, not HBM, served it";
    if (!is_link(cls) && !isfinite(km_result_counter(row, "pct_of_ceiling")))
      return "host-side work: the run counts it against no GPU ceiling";
    if (!(sides[i].ceiling > 0)) return "no ceiling of its class in the file";
  }
  return NULL;
}

static verdict judge(const side *sides, size_t n, const char *cls, double copy_spread) {
  verdict v = {KM_SCALES_UNDETERMINED, "", NAN, NAN, NAN};
  size_t measured = 0, which = 0;
  for (size_t i = 0; i < n; i++) measured += sides[i].row != NULL;
  if (measured < 2) {
    snprintf(v.why, sizeof v.why, "measured in %zu of %zu runs", measured, n);
    return v;
  }
  const char *why = unusable(sides, n, cls, &which);
  v.gbps_spread = spread(sides, n, offsetof(side, gbps));
  v.ceiling_spread = spread(sides, n, offsetof(side, ceiling));
  v.share_spread = spread(sides, n, offsetof(side, share));
  if (why) {
    v.s = strncmp(why, "host", 4) == 0 ? KM_SCALES_NEITHER : KM_SCALES_UNDETERMINED;
    snprintf(v.why, sizeof v.why, "R%zu: %s", which + 1, why);
    return v;
  }
  char range[64];
  share_range(sides, n, range, sizeof range);
  const double tol = KM_SCALING_TOLERANCE;
  const int same_share = v.share_spread - 1.0 <= tol;
  if (v.ceiling_spread - 1.0 > tol) {
    v.s = same_share ? (is_link(cls) ? KM_SCALES_PCIE : KM_SCALES_MEMORY) : KM_SCALES_NEITHER;
    if (same_share)
      snprintf(v.why, sizeof v.why, "GB/s moved %.2fx with its %s ceiling (%.2fx): %s of it on every card",
               v.gbps_spread, cls, v.ceiling_spread, range);
    else
      snprintf(v.why, sizeof v.why, "its %s ceiling moved %.2fx, its GB/s %.2fx: %s of the ceiling%s", cls,
               v.ceiling_spread, v.gbps_spread, range,
               v.gbps_spread - 1.0 <= tol ? " (bound by something else: latency, compute, the host)" : "");
    return v;
  }
  /* A link row on cards with the same link: PCIe-bound when it kept its share of the link while the
   * memory ceilings moved (so HBM does not bound it). */
  if (is_link(cls) && same_share && copy_spread - 1.0 > tol) {
    v.s = KM_SCALES_PCIE;
    snprintf(v.why, sizeof v.why, "the links are within %.0f%% of each other and it kept %s of them while the "
             "copy ceilings moved %.2fx", 100 * tol, range, copy_spread);
    return v;
  }
  snprintf(v.why, sizeof v.why, "the cards' %s ceilings are within %.0f%% (%.2fx): no test", cls, 100 * tol,
           v.ceiling_spread);
  return v;
}

/* Every case of every run, primary rows only, first seen first. */
static const char **case_names(const km_run_file *const *runs, size_t n, size_t *count) {
  size_t cap = 0, k = 0;
  for (size_t i = 0; i < n; i++) cap += runs[i]->results.count;
  const char **names = malloc((cap ? cap : 1) * sizeof *names);
  if (!names) return NULL;
  for (size_t i = 0; i < n; i++)
    for (size_t r = 0; r < runs[i]->results.count; r++) {
      const km_result *row = &runs[i]->results.rows[r];
      if (!km_run_row_is_primary(&runs[i]->results, row)) continue;
      size_t j = 0;
      while (j < k && strcmp(names[j], row->name) != 0) j++;
      if (j == k) names[k++] = row->name;
    }
  *count = k;
  return names;
}

typedef struct columns {
  km_column cols[4 + 2 * MAX_RUNS + 3];
  char keys[2 * MAX_RUNS][COL_KEY], titles[2 * MAX_RUNS][COL_TITLE];
  size_t n;
} columns;

static void make_columns(columns *c, size_t runs) {
  size_t k = 0;
  c->cols[k++] = (km_column){"case", "case", 0};
  c->cols[k++] = (km_column){"class", "class", 0};
  for (size_t i = 0; i < runs; i++) {
    snprintf(c->keys[2 * i], COL_KEY, "r%zu_gbps", i + 1);
    snprintf(c->titles[2 * i], COL_TITLE, "R%zu GB/s", i + 1);
    snprintf(c->keys[2 * i + 1], COL_KEY, "r%zu_share_pct", i + 1);
    snprintf(c->titles[2 * i + 1], COL_TITLE, "R%zu %% own ceiling", i + 1);
    c->cols[k++] = (km_column){c->keys[2 * i], c->titles[2 * i], 1};
    c->cols[k++] = (km_column){c->keys[2 * i + 1], c->titles[2 * i + 1], 1};
  }
  c->cols[k++] = (km_column){"gbps_spread", "GB/s max/min", 1};
  c->cols[k++] = (km_column){"ceiling_spread", "ceiling max/min", 1};
  c->cols[k++] = (km_column){"share_spread", "share max/min", 1};
  c->cols[k++] = (km_column){"scales_with", "scales with", 0};
  c->cols[k++] = (km_column){"why", "why", 0};
  c->n = k;
}

/* Largest over smallest copy ceiling of the runs (NaN when a run has none). */
static double copy_spread(const km_run_file *const *runs, size_t n) {
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < n; i++) {
    double c = km_run_file_ceilings(runs[i]).copy_gbps;
    if (!(c > 0)) return NAN;
    lo = c < lo ? c : lo, hi = c > hi ? c : hi;
  }
  return hi / lo;
}

static void fill_row(km_table *t, const char *name, const side *sides, size_t n, const char *cls, const verdict *v) {
  size_t k = km_table_add_row(t, km_scaling_name(v->s));
  km_table_set_text(t, k, 0, name);
  km_table_set_text(t, k, 1, cls);
  for (size_t i = 0; i < n; i++) {
    if (!sides[i].row) continue;
    km_table_set_number(t, k, 2 + 2 * i, sides[i].gbps, 1);
    km_table_set_number(t, k, 3 + 2 * i, sides[i].share, 1);
  }
  size_t c = 2 + 2 * n;
  km_table_set_number(t, k, c, v->gbps_spread, 2);
  km_table_set_number(t, k, c + 1, v->ceiling_spread, 2);
  km_table_set_number(t, k, c + 2, v->share_spread, 2);
  km_table_set_text(t, k, c + 3, km_scaling_name(v->s));
  km_table_set_text(t, k, c + 4, v->why);
}

km_table *km_scaling_table(const km_run_file *const *runs, size_t n) {
  if (n < 2 || n > MAX_RUNS) return NULL;
  columns c;
  make_columns(&c, n);
  char title[160];
  snprintf(title, sizeof title, "What each primitive scales with across %zu runs (share of each card's own class "
           "ceiling; same share = within %.0f%%)", n, 100 * KM_SCALING_TOLERANCE);
  km_table *t = km_table_new(title, c.cols, c.n);
  size_t count = 0;
  const char **names = t ? case_names(runs, n, &count) : NULL;
  side *sides = names ? calloc(n, sizeof *sides) : NULL;
  verdict *vs = sides ? calloc(count ? count : 1, sizeof *vs) : NULL;
  if (!vs) {
    km_table_free(t);
    free(names);
    free(sides);
    return NULL;
  }
  km_table_set_text_mode(t, c.n - 1, KM_TEXT_NOTE);
  const double hbm = copy_spread(runs, n);
  for (size_t s = 0; s < KM_SCALES_COUNT; s++) /* grouped by verdict, each group in the runs' order */
    for (size_t i = 0; i < count; i++) {
      /* the class is the case's, from the first run that records it (older files lack the counters) */
      const char *row_cls = "unknown";
      for (size_t r = 0; r < n && strcmp(row_cls, "unknown") == 0; r++) {
        const km_result *row = km_results_find(&runs[r]->results, names[i]);
        if (row) row_cls = km_result_traffic(row);
      }
      for (size_t r = 0; r < n; r++) sides[r] = side_of(runs[r], names[i], row_cls);
      if (s == 0) vs[i] = judge(sides, n, row_cls, hbm);
      if (vs[i].s == s) fill_row(t, names[i], sides, n, row_cls, &vs[i]);
    }
  free(vs);
  free(sides);
  free(names);
  return t;
}

static void print_run(const km_run_file *f, size_t i, int md, FILE *out) {
  km_ceilings c = km_run_file_ceilings(f);
  fprintf(out, "%sR%zu: %s: %s, revision %s; ceilings GB/s: copy %.0f, read %.0f, write %.0f, h2d %.1f, d2h %.1f\n",
          md ? "- " : "", i + 1, f->path, f->gpu_name, f->revision, c.copy_gbps, c.read_gbps, c.write_gbps,
          c.h2d_gbps, c.d2h_gbps);
}

static int print_json(const km_run_file *const *runs, size_t n, const km_table *t, FILE *out) {
  cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "runs");
  for (size_t i = 0; i < n; i++) {
    km_ceilings c = km_run_file_ceilings(runs[i]);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", runs[i]->path);
    cJSON_AddStringToObject(o, "gpu", runs[i]->gpu_name);
    cJSON_AddStringToObject(o, "revision", runs[i]->revision);
    const struct { const char *key; double v; } ceil[] = {{"copy_gbps", c.copy_gbps}, {"read_gbps", c.read_gbps},
        {"write_gbps", c.write_gbps}, {"h2d_gbps", c.h2d_gbps}, {"d2h_gbps", c.d2h_gbps}};
    for (size_t k = 0; k < sizeof ceil / sizeof ceil[0]; k++)
      if (ceil[k].v > 0) cJSON_AddNumberToObject(o, ceil[k].key, ceil[k].v);
      else cJSON_AddNullToObject(o, ceil[k].key);
    cJSON_AddItemToArray(arr, o);
  }
  cJSON_AddNumberToObject(doc, "tolerance", KM_SCALING_TOLERANCE);
  cJSON_AddItemToObject(doc, "scaling", km_table_rows_json(t));
  return km_json_print_delete(doc, out);
}

int km_scaling_print(const km_run_file *const *runs, size_t n, km_format f, FILE *out) {
  km_table *t = km_scaling_table(runs, n);
  if (!t) return -1;
  int rc = 0;
  if (f == KM_FORMAT_JSON) {
    rc = print_json(runs, n, t, out);
  } else if (f == KM_FORMAT_CSV) {
    km_table_print(t, f, out);
  } else {
    int md = f == KM_FORMAT_MARKDOWN;
    size_t counts[KM_SCALES_COUNT] = {0};
    for (size_t r = 0; r < t->nrows; r++)
      for (size_t s = 0; s < KM_SCALES_COUNT; s++) counts[s] += t->group[r] && strcmp(t->group[r], km_scaling_name(s)) == 0;
    fprintf(out, "%s", md ? "## Scaling across runs\n\n" : "Scaling across runs\n");
    for (size_t i = 0; i < n; i++) print_run(runs[i], i, md, out);
    fprintf(out, "%s%zu cases: %zu scale with memory bandwidth, %zu with PCIe, %zu with neither, %zu undetermined.\n\n",
            md ? "\n" : "", t->nrows, counts[KM_SCALES_MEMORY], counts[KM_SCALES_PCIE], counts[KM_SCALES_NEITHER],
            counts[KM_SCALES_UNDETERMINED]);
    km_table_print(t, f, out);
  }
  km_table_free(t);
  return rc;
}
