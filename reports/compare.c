/* Side-by-side comparison of two result files. Ratios are B over A throughout; a row that did not
 * run on one side keeps its measured cells and leaves the ratios empty, with the reason in "note". A
 * row whose medians are more than 3% apart is flagged, with both sides' measured GPU state and what
 * differs between them (reports/row_state.h): evidence, never a guess from the case's name. */
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "row_state.h"

enum { C_CASE, C_A_US, C_B_US, C_TIME_RATIO, C_A_GBPS, C_B_GBPS, C_GBPS_RATIO, C_A_PCT, C_B_PCT, C_SHARE_RATIO,
       C_FLAG, C_A_STATE, C_B_STATE, C_DIFFERS, C_NOTE, C_COUNT };

static const km_column compare_cols[C_COUNT] = {
    {"case", "case", 0},
    {"a_us", "A us", 1},
    {"b_us", "B us", 1},
    {"time_ratio", "time B/A", 1},
    {"a_gbps", "A GB/s", 1},
    {"b_gbps", "B GB/s", 1},
    {"gbps_ratio", "GB/s B/A", 1},
    {"a_pct_of_ceiling", "A % own ceiling", 1},
    {"b_pct_of_ceiling", "B % own ceiling", 1},
    {"share_ratio", "share B/A", 1},
    {"flag", "> 3% apart", 0},
    {"a_state", "A GPU state", 0},
    {"b_state", "B GPU state", 0},
    {"differs", "measured difference", 0},
    {"note", "note", 0},
};

static int time_decimals(double us) { return us < 100 ? 2 : 1; }

/* Ratios print with two decimals: the same file against itself gives exactly 1.00. */
static void set_ratio(km_table *t, size_t k, size_t col, double b, double a) {
  if (isfinite(a) && isfinite(b) && a > 0) km_table_set_number(t, k, col, b / a, 2);
}

static void side_note(const km_result *row, const char *side, char *buf, size_t len) {
  size_t used = strlen(buf);
  const char *what = row->error ? "error" : row->skipped ? "skipped" : NULL;
  if (what) snprintf(buf + used, len - used, "%s%s %s", used ? "; " : "", side, what);
}

/* The row's share of its own run's ceiling: the class share micro wrote, else (older files) GB/s over
 * the file's copy ceiling. */
static double own_share(const km_run_file *f, const km_result *row) {
  double own = km_result_counter(row, km_result_counter(row, "host_link") == 1.0 ? "pct_of_host_copy" : "pct_of_ceiling");
  if (isfinite(own) || km_result_counter(row, "l2_resident") == 1.0) return own;
  return 100.0 * km_run_row_gbps(row) / f->ceiling_gbps;
}

static const char *gpu_text(const km_run_file *f, const char *key) {
  const cJSON *v = f->gpu ? cJSON_GetObjectItemCaseSensitive(f->gpu, key) : NULL;
  return cJSON_IsString(v) ? v->valuestring : "unknown";
}

static void append_text(char *buf, size_t len, const char *text) {
  size_t used = strlen(buf);
  if (used < len) snprintf(buf + used, len - used, "%s%s", used ? "; " : "", text);
}

/* What differs between the two runs themselves, as their files record it: the card (UUID), the code
 * (git revision) and the ceiling(s) of the row's traffic class (more than 1% apart). */
static void run_differences(const km_run_file *a, const km_run_file *b, const km_result *row, char *buf, size_t len) {
  char text[160];
  const char *ua = gpu_text(a, "uuid"), *ub = gpu_text(b, "uuid");
  if (strcmp(ua, "unknown") && strcmp(ub, "unknown") && strcmp(ua, ub)) {
    snprintf(text, sizeof text, "another card (UUID %.12s -> %.12s)", ua, ub);
    append_text(buf, len, text);
  }
  if (strcmp(a->revision, b->revision)) {
    snprintf(text, sizeof text, "code revision %s -> %s", a->revision, b->revision);
    append_text(buf, len, text);
  }
  const km_ceilings ca = km_run_file_ceilings(a), cb = km_run_file_ceilings(b);
  const char *cls = km_result_traffic(row);
  const int mixed = !strcmp(cls, "mixed");
  const struct { const char *name; double x, y; int applies; } ceil[] = {
      {"copy", ca.copy_gbps, cb.copy_gbps, !strcmp(cls, "copy")},
      {"read", ca.read_gbps, cb.read_gbps, mixed || !strcmp(cls, "read")},
      {"write", ca.write_gbps, cb.write_gbps, mixed || !strcmp(cls, "write")},
  };
  for (size_t i = 0; i < sizeof ceil / sizeof ceil[0]; i++) {
    if (!ceil[i].applies || !(ceil[i].x > 0 && ceil[i].y > 0) || fabs(ceil[i].y / ceil[i].x - 1.0) <= 0.01) continue;
    snprintf(text, sizeof text, "%s ceiling %.0f -> %.0f GB/s", ceil[i].name, ceil[i].x, ceil[i].y);
    append_text(buf, len, text);
  }
}

/* Flag rows more than KM_COMPARE_FLAG_RATIO apart and say what was measured on both sides and what
 * differs between the runs themselves. */
static void fill_state(km_table *t, size_t k, const km_run_file *a, const km_result *ra, const km_run_file *b,
                       const km_result *rb, double ta, double tb) {
  char sa[192], sb[192], diff[512];
  if (ra->error || ra->skipped || rb->error || rb->skipped) return;
  km_row_state_text(ra, sa, sizeof sa);
  km_row_state_text(rb, sb, sizeof sb);
  km_table_set_text(t, k, C_A_STATE, sa);
  km_table_set_text(t, k, C_B_STATE, sb);
  if (!(ta > 0 && tb > 0) || fabs(tb / ta - 1.0) <= KM_COMPARE_FLAG_RATIO) return;
  km_table_set_text(t, k, C_FLAG, tb > ta ? "B slower" : "B faster");
  km_row_state_differences(ra, rb, diff, sizeof diff);
  run_differences(a, b, ra, diff, sizeof diff);
  km_table_set_text(t, k, C_DIFFERS, diff);
}

static void fill_row(km_table *t, size_t k, const km_run_file *a, const km_result *ra, const km_run_file *b,
                     const km_result *rb) {
  double ta = km_run_row_time_us(ra), tb = km_run_row_time_us(rb);
  double ga = km_run_row_gbps(ra), gb = km_run_row_gbps(rb);
  double pa = own_share(a, ra), pb = own_share(b, rb);
  km_table_set_text(t, k, C_CASE, ra->name);
  km_table_set_number(t, k, C_A_US, ta, time_decimals(ta));
  km_table_set_number(t, k, C_B_US, tb, time_decimals(tb));
  set_ratio(t, k, C_TIME_RATIO, tb, ta);
  km_table_set_number(t, k, C_A_GBPS, ga, 1);
  km_table_set_number(t, k, C_B_GBPS, gb, 1);
  set_ratio(t, k, C_GBPS_RATIO, gb, ga);
  km_table_set_number(t, k, C_A_PCT, pa, 1);
  km_table_set_number(t, k, C_B_PCT, pb, 1);
  set_ratio(t, k, C_SHARE_RATIO, pb, pa);
  fill_state(t, k, a, ra, b, rb, ta, tb);
  char note[128] = "";
  side_note(ra, "A", note, sizeof note);
  side_note(rb, "B", note, sizeof note);
  km_table_set_text(t, k, C_NOTE, note);
}

km_table *km_compare_table(const km_run_file *a, const km_run_file *b) {
  km_table *t = km_table_new("Matched cases (ratios B/A; shares of each card's own ceiling)", compare_cols, C_COUNT);
  for (size_t i = 0; t && i < a->results.count; i++) {
    const km_result *ra = &a->results.rows[i];
    const km_result *rb = km_results_find(&b->results, ra->name);
    if (!km_run_row_is_primary(&a->results, ra) || !rb) continue;
    const char *tech = ra->technique[0] ? ra->technique : rb->technique[0] ? rb->technique : "other";
    fill_row(t, km_table_add_row(t, tech), a, ra, b, rb);
  }
  return t;
}

static void add_unmatched(km_table *t, const km_run_file *from, const km_run_file *other, const char *side) {
  for (size_t i = 0; i < from->results.count; i++) {
    const km_result *row = &from->results.rows[i];
    if (!km_run_row_is_primary(&from->results, row) || km_results_find(&other->results, row->name)) continue;
    size_t k = km_table_add_row(t, NULL);
    double us = km_run_row_time_us(row);
    km_table_set_text(t, k, 0, row->name);
    km_table_set_text(t, k, 1, side);
    km_table_set_text(t, k, 2, from->path);
    km_table_set_number(t, k, 3, us, time_decimals(us));
    km_table_set_number(t, k, 4, km_run_row_gbps(row), 1);
  }
}

km_table *km_compare_unmatched_table(const km_run_file *a, const km_run_file *b) {
  static const km_column cols[] = {
      {"case", "case", 0}, {"only_in", "only in", 0}, {"file", "file", 0}, {"median_us", "median us", 1},
      {"gbps", "GB/s", 1},
  };
  km_table *t = km_table_new("Cases in only one file", cols, sizeof cols / sizeof cols[0]);
  if (!t) return NULL;
  add_unmatched(t, a, b, "A");
  add_unmatched(t, b, a, "B");
  return t;
}

/* The unmatched cases as rows of the matched table, their one side filled (CSV). */
static void append_unmatched(km_table *t, const km_run_file *from, const km_run_file *other, const char *side,
                             int is_b) {
  for (size_t i = 0; i < from->results.count; i++) {
    const km_result *row = &from->results.rows[i];
    if (!km_run_row_is_primary(&from->results, row) || km_results_find(&other->results, row->name)) continue;
    size_t k = km_table_add_row(t, row->technique[0] ? row->technique : "other");
    double us = km_run_row_time_us(row), g = km_run_row_gbps(row);
    char note[64];
    snprintf(note, sizeof note, "only in %s", side);
    km_table_set_text(t, k, C_CASE, row->name);
    km_table_set_number(t, k, is_b ? C_B_US : C_A_US, us, time_decimals(us));
    km_table_set_number(t, k, is_b ? C_B_GBPS : C_A_GBPS, g, 1);
    km_table_set_number(t, k, is_b ? C_B_PCT : C_A_PCT, own_share(from, row), 1);
    km_table_set_text(t, k, C_NOTE, note);
  }
}

static cJSON *side_json(const km_run_file *f) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "file", f->path);
  cJSON_AddStringToObject(o, "gpu", f->gpu_name);
  if (isfinite(f->ceiling_gbps))
    cJSON_AddNumberToObject(o, "ceiling_gbps", f->ceiling_gbps);
  else
    cJSON_AddNullToObject(o, "ceiling_gbps");
  return o;
}

static int print_json(const km_run_file *a, const km_run_file *b, const km_table *m, const km_table *u,
                      FILE *out) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddItemToObject(doc, "a", side_json(a));
  cJSON_AddItemToObject(doc, "b", side_json(b));
  cJSON_AddStringToObject(doc, "ratios", "B / A");
  cJSON_AddItemToObject(doc, "matched", km_table_rows_json(m));
  cJSON_AddItemToObject(doc, "only_in_one", km_table_rows_json(u));
  return km_json_print_delete(doc, out);
}

static void print_side(const km_run_file *f, const char *side, int markdown, FILE *out) {
  fprintf(out, "%s%s: %s: %s (UUID %s, driver %s), ceiling ", markdown ? "- " : "", side, f->path, f->gpu_name,
          gpu_text(f, "uuid"), gpu_text(f, "driver_release"));
  if (isfinite(f->ceiling_gbps))
    fprintf(out, "%.0f GB/s copy", f->ceiling_gbps);
  else
    fprintf(out, "unknown (no context.gpu.ceiling_gbps: shares left empty)");
  km_ceilings c = km_run_file_ceilings(f);
  if (c.read_gbps > 0 && c.write_gbps > 0) fprintf(out, ", %.0f read, %.0f write", c.read_gbps, c.write_gbps);
  fputc('\n', out);
}

int km_compare_print(const km_run_file *a, const km_run_file *b, km_format f, FILE *out) {
  km_table *m = km_compare_table(a, b), *u = km_compare_unmatched_table(a, b);
  int rc = m && u ? 0 : -1;
  if (rc == 0 && f == KM_FORMAT_JSON) {
    rc = print_json(a, b, m, u, out);
  } else if (rc == 0 && f == KM_FORMAT_CSV) {
    /* CSV stays one table: the unmatched cases become rows with one side empty */
    append_unmatched(m, a, b, "A", 0);
    append_unmatched(m, b, a, "B", 1);
    km_table_print(m, f, out);
  } else if (rc == 0) {
    int md = f == KM_FORMAT_MARKDOWN;
    fprintf(out, "%s", md ? "## Comparison B / A\n\n" : "Comparison B / A\n");
    print_side(a, "A", md, out);
    print_side(b, "B", md, out);
    fprintf(out, "%stime B/A above 1: B is slower; GB/s B/A below 1: B moves fewer bytes per second.\n\n",
            md ? "\n" : "");
    km_table_print(m, f, out);
    fputc('\n', out);
    if (u->nrows)
      km_table_print(u, f, out);
    else
      fprintf(out, "Every case is in both files.\n");
  }
  km_table_free(m);
  km_table_free(u);
  return rc;
}
