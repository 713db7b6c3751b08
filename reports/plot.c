/* The charts of `report plot`: which rows feed each one (a constant table of chart definitions), and
 * the data files and gnuplot script written for them. Running gnuplot is in plot_gnuplot.c. */
#include "plot.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "output_file.h"

/* Which value of a row a chart plots. */
typedef enum plot_y { Y_GBPS = 0, Y_TIME_US, Y_COUNT } plot_y;

/* Rows whose name matches `pattern` become points of the series named by `series`. A pattern is
 * '/'-separated segments: a literal, '*' (any one segment), or a literal prefix then {x} (the rest of the
 * segment is the point's x: a number or a size such as 64KiB), {s} (the rest is a series part, {1}..{3}
 * in `series`, {^1} in capitals), or {l} as the last segment (the rest of the name is the bar's label). */
typedef struct feed {
  const char *pattern, *series;
  int baseline;    /* drawn dashed: what a user would use instead */
  const char *key; /* the colour key, a template as series (NULL: the series title) */
} feed;

/* A row drawn as a reference line: its value, titled `title` and the value. */
typedef struct ref_row {
  const char *name, *title;
} ref_row;

enum { MAX_FEEDS = 4, MAX_REF_ROWS = 2, MAX_PARTS = 3, PART_MAX = 64 };

typedef struct chart_def {
  const char *stem, *title, *xlabel, *ylabel;
  plot_y y;
  int logx, logy, bars, x_is_bytes, with_ceiling, with_link;
  const char *prefer; /* bars: when some labels contain this, only those are kept */
  feed feeds[MAX_FEEDS];
  ref_row refs[MAX_REF_ROWS];
  /* each series also drawn dashed at the time the run's read ceiling takes for the row's bytes read */
  int read_roofline;
} chart_def;

#define SCATTER_FEEDS(dir)                                                                                \
  {{"offload/scatter/" dir "/{s}/{x}/*", "{1}", 0}, {"baseline/offload/scatter/" dir "/{s}/{x}/*", "{1} (baseline)", 1}}

static const chart_def chart_defs[KM_PLOT_ROW_CHARTS] = {
    {"gather_block_size", "Paged gather: GB/s vs block size (d128, 8 KV heads, bf16, random table)",
     "block size (tokens)", "GB/s (read + written)", Y_GBPS, 2, 0, 0, 0, 1, 0, NULL,
     {{"paged/gather/{s}/bs{x}/d128/h8/bf16/random", "{^1} layout", 0}}, {{NULL, NULL}}},
    {"offload_size", "Host <-> device copies: GB/s vs transfer size (pinned host memory)", "transfer size",
     "GB/s", Y_GBPS, 2, 0, 0, 1, 0, 1, NULL, {{"offload/{s}/pinned/{x}", "{^1} pinned", 0}}, {{NULL, NULL}}},
    {"offload_scatter_h2d", "Scattered KV blocks to the GPU (H2D, 64 MiB in all): GB/s vs block size",
     "block size", "GB/s", Y_GBPS, 2, 0, 0, 1, 0, 1, NULL, SCATTER_FEEDS("h2d"),
     {{"offload/h2d/pinned/64MiB", "contiguous copy of 64 MiB"}}},
    {"offload_scatter_d2h", "Scattered KV blocks to the host (D2H, 64 MiB in all): GB/s vs block size",
     "block size", "GB/s", Y_GBPS, 2, 0, 0, 1, 0, 1, NULL, SCATTER_FEEDS("d2h"),
     {{"offload/d2h/pinned/64MiB", "contiguous copy of 64 MiB"}}},
    {"topk_pages", "Top-k page selection: time vs pages, against the baselines (dashed, same colour: same rows and k)",
     "pages per row", "median time (us)", Y_TIME_US, 2, 10, 0, 0, 0, 0, NULL,
     {{"sparse/topk/r{s}/p{x}/k{s}", "radix select, {1} rows, k = {2}", 0, "{1} rows, k = {2}"},
      {"baseline/sparse/{s}/r{s}/p{x}/k{s}", "{1}, {2} rows, k = {3}", 1, "{2} rows, k = {3}"}},
     {{NULL, NULL}}},
    {"quant_formats", "KV quantization: GB/s per format (head_dim 128 where present)", "GB/s (read + written)", "",
     Y_GBPS, 0, 0, 1, 0, 1, 0, "/d128", {{"quant/{l}", "GB/s", 0}}, {{NULL, NULL}}},
    {"decode_context", "Decode attention step vs context per KV format and head layout (batch 16, head_dim 128)",
     "context (tokens per sequence)", "median time per step (us)",
     Y_TIME_US, 2, 10, 0, 0, 0, 0, NULL, {{"attn/decode/{s}/d128/{s}/b16/ctx{x}", "{2} {1}", 0}}, {{NULL, NULL}}, 1},
};

static char *dup_label(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void km_plot_add_point(km_plot_chart *c, const char *series, const char *key, int baseline, double x, double y,
                       const char *label) {
  size_t s = 0;
  while (s < c->nseries && strcmp(c->series[s].title, series) != 0) s++;
  if (s == KM_PLOT_MAX_SERIES) return; /* more series than a chart can show legibly */
  km_plot_series *p = &c->series[s];
  if (s == c->nseries) {
    memset(p, 0, sizeof *p);
    snprintf(p->title, sizeof p->title, "%s", series);
    snprintf(p->key, sizeof p->key, "%s", key ? key : series);
    p->baseline = baseline;
    int colors = 0;
    p->color = -1;
    for (size_t o = 0; o < s; o++) {
      if (strcmp(c->series[o].key, p->key) == 0) p->color = c->series[o].color;
      colors = c->series[o].color + 1 > colors ? c->series[o].color + 1 : colors;
    }
    if (p->color < 0) p->color = colors;
    c->nseries++;
  }
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 16;
    double *nx = realloc(p->x, cap * sizeof *nx);
    if (nx) p->x = nx;
    double *ny = realloc(p->y, cap * sizeof *ny);
    if (ny) p->y = ny;
    char **nl = realloc(p->labels, cap * sizeof *nl);
    if (nl) p->labels = nl;
    if (!nx || !ny || !nl) return;
    p->cap = cap;
  }
  p->x[p->n] = x;
  p->y[p->n] = y;
  p->labels[p->n] = label ? dup_label(label) : NULL;
  p->n++;
}

typedef struct match {
  int has_x;
  double x;
  size_t nparts;
  char parts[MAX_PARTS][PART_MAX];
  const char *label; /* {l}: points into the name */
} match;

/* A point's x from a name: a size (64KiB) or a count, with k for 1024 tokens as names write contexts (ctx32k). */
static int parse_x(const char *s, double *x) {
  size_t n = strlen(s);
  if (km_report_parse_bytes(s, x) == 0) return 0;
  if (n < 2 || s[n - 1] != 'k') return -1;
  char num[PART_MAX];
  snprintf(num, sizeof num, "%.*s", (int)(n - 1), s);
  if (km_report_parse_bytes(num, x) != 0) return -1;
  *x *= 1024.0;
  return 0;
}

/* One pattern segment [p, pe) against one name segment [n, ne). */
static int match_segment(const char *p, const char *pe, const char *n, const char *ne, match *m) {
  if (pe - p == 1 && *p == '*') return 1;
  const char *brace = memchr(p, '{', (size_t)(pe - p));
  size_t lit = brace ? (size_t)(brace - p) : (size_t)(pe - p);
  if ((size_t)(ne - n) < lit || memcmp(p, n, lit) != 0) return 0;
  if (!brace) return (size_t)(ne - n) == lit;
  char rest[PART_MAX];
  snprintf(rest, sizeof rest, "%.*s", (int)(ne - n - (ptrdiff_t)lit), n + lit);
  if (pe - brace == 3 && brace[1] == 'x') {
    m->has_x = 1;
    return rest[0] && parse_x(rest, &m->x) == 0;
  }
  if (pe - brace == 3 && brace[1] == 's' && m->nparts < MAX_PARTS && rest[0]) {
    snprintf(m->parts[m->nparts++], PART_MAX, "%s", rest);
    return 1;
  }
  return 0;
}

/* The whole name against the pattern (see feed). */
static int match_name(const char *pattern, const char *name, match *m) {
  memset(m, 0, sizeof *m);
  const char *p = pattern, *n = name;
  for (;;) {
    const char *pe = p + strcspn(p, "/"), *ne = n + strcspn(n, "/");
    if (pe - p == 3 && strncmp(p, "{l}", 3) == 0 && !*pe) {
      m->label = n;
      return *n != '\0';
    }
    if (!match_segment(p, pe, n, ne, m)) return 0;
    if (!*pe || !*ne) return !*pe && !*ne;
    p = pe + 1, n = ne + 1;
  }
}

/* The series title: the template with {1}..{3} (or {^1}.. in capitals) replaced by the parts. */
static void series_title(const char *tmpl, const match *m, char *buf, size_t len) {
  size_t o = 0;
  for (const char *t = tmpl; *t && o + 1 < len; t++) {
    int upper = t[0] == '{' && t[1] == '^';
    const char *d = t + 1 + upper;
    if (t[0] == '{' && *d >= '1' && *d <= '0' + MAX_PARTS && d[1] == '}' && (size_t)(*d - '1') < m->nparts) {
      for (const char *q = m->parts[*d - '1']; *q && o + 1 < len; q++)
        buf[o++] = upper ? (char)toupper((unsigned char)*q) : *q;
      t = d + 1;
    } else {
      buf[o++] = *t;
    }
  }
  buf[o] = '\0';
}

static double row_value(const km_result *row, plot_y y) {
  return y == Y_TIME_US ? km_run_row_time_us(row) : km_run_row_gbps(row);
}

/* The time the read ceiling takes for the row's bytes read, in microseconds; NaN without either. */
static double read_ceiling_us(const km_result *row, double read_gbps) {
  double bytes = km_result_counter(row, "bytes_read");
  return read_gbps > 0 && bytes > 0 ? bytes / (read_gbps * 1e3) : NAN;
}

static void collect_row(const chart_def *d, const km_result *row, double read_gbps, km_plot_chart *c) {
  for (size_t f = 0; f < MAX_FEEDS && d->feeds[f].pattern; f++) {
    match m;
    if (!match_name(d->feeds[f].pattern, row->name, &m)) continue;
    char series[96], key[96];
    series_title(d->feeds[f].series, &m, series, sizeof series);
    series_title(d->feeds[f].key ? d->feeds[f].key : d->feeds[f].series, &m, key, sizeof key);
    double y = row_value(row, d->y);
    if (!isfinite(y)) return;
    int base = d->feeds[f].baseline;
    if (d->bars) {
      km_plot_add_point(c, series, key, base, c->nseries ? (double)c->series[0].n : 0.0, y, m.label);
    } else if (m.has_x) {
      km_plot_add_point(c, series, key, base, m.x, y, NULL);
      double roof = d->read_roofline ? read_ceiling_us(row, read_gbps) : NAN;
      char title[96];
      snprintf(title, sizeof title, "%.60s at the read ceiling", series);
      if (isfinite(roof)) km_plot_add_point(c, title, key, 1, m.x, roof, NULL);
    }
    return;
  }
}

void km_plot_add_ref(km_plot_chart *c, double y, int vertical, const char *fmt, const char *what) {
  if (!isfinite(y) || y <= 0 || c->nrefs == KM_PLOT_MAX_REFS) return;
  km_plot_ref *r = &c->refs[c->nrefs++];
  r->y = y;
  r->vertical = vertical;
  snprintf(r->title, sizeof r->title, fmt, what, y);
}

/* The feeds' patterns as a reader writes them: {x} as N, {s} and {l} as a star. */
static void needs_text(const chart_def *d, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t f = 0; f < MAX_FEEDS && d->feeds[f].pattern && o + 1 < len; f++) {
    if (f) o += (size_t)snprintf(buf + o, len - o, " or ");
    for (const char *p = d->feeds[f].pattern; *p && o + 1 < len; p++) {
      if (p[0] == '{' && p[1] && p[2] == '}') {
        buf[o++] = p[1] == 'x' ? 'N' : '*';
        p += 2;
      } else {
        buf[o++] = *p;
      }
    }
    buf[o < len ? o : len - 1] = '\0';
  }
}

static void set_up_chart(const chart_def *d, const km_run_file *f, km_plot_chart *ch) {
  memset(ch, 0, sizeof *ch);
  ch->stem = d->stem, ch->title = d->title, ch->xlabel = d->xlabel, ch->ylabel = d->ylabel;
  ch->logx = d->logx, ch->logy = d->logy, ch->bars = d->bars, ch->x_is_bytes = d->x_is_bytes;
  km_plot_subtitle(f, ch->subtitle, sizeof ch->subtitle);
  needs_text(d, ch->needs, sizeof ch->needs);
  if (d->with_ceiling) km_plot_add_ref(ch, f->ceiling_gbps, 0, "%s %.0f GB/s", "copy ceiling");
  if (d->with_link) km_plot_add_ref(ch, f->link_gbps, 0, "%s %.1f GB/s", "PCIe link, each direction");
  for (size_t r = 0; r < MAX_REF_ROWS && d->refs[r].name; r++) {
    const km_result *row = km_results_find(&f->results, d->refs[r].name);
    if (row) km_plot_add_ref(ch, row_value(row, d->y), 0, "%s: %.1f GB/s", d->refs[r].title);
  }
}

void km_plot_subtitle(const km_run_file *f, char *buf, size_t len) {
  snprintf(buf, len, "%s, kvmicro revision %s", f->gpu_name, f->revision);
}

static void sort_series(km_plot_series *s) {
  for (size_t i = 1; i < s->n; i++) /* insertion sort: a sweep has a few dozen points */
    for (size_t j = i; j > 0 && s->x[j - 1] > s->x[j]; j--) {
      double tx = s->x[j], ty = s->y[j];
      char *tl = s->labels[j];
      s->x[j] = s->x[j - 1], s->y[j] = s->y[j - 1], s->labels[j] = s->labels[j - 1];
      s->x[j - 1] = tx, s->y[j - 1] = ty, s->labels[j - 1] = tl;
    }
}

/* Bar charts keep the preferred points (e.g. head_dim 128) when there are any, renumbered. */
static void keep_preferred(km_plot_series *s, const char *prefer) {
  size_t any = 0, k = 0;
  for (size_t i = 0; i < s->n; i++) any += s->labels[i] && strstr(s->labels[i], prefer);
  if (!any) return;
  for (size_t i = 0; i < s->n; i++) {
    if (s->labels[i] && strstr(s->labels[i], prefer)) {
      s->labels[k] = s->labels[i], s->y[k] = s->y[i], s->x[k] = (double)k;
      k++;
    } else {
      free(s->labels[i]);
    }
  }
  s->n = k;
}

void km_plot_collect(const km_run_file *f, const cJSON *sim, km_plot_chart charts[KM_PLOT_CHART_COUNT]) {
  const double read_gbps = km_run_file_ceilings(f).read_gbps;
  for (size_t c = 0; c < KM_PLOT_ROW_CHARTS; c++) {
    const chart_def *d = &chart_defs[c];
    km_plot_chart *ch = &charts[c];
    set_up_chart(d, f, ch);
    for (size_t i = 0; i < f->results.count; i++) {
      const km_result *row = &f->results.rows[i];
      /* a row that did not run has no y: leaving it out keeps the line through the measured points */
      if (km_run_row_is_primary(&f->results, row) && !row->error && !row->skipped) collect_row(d, row, read_gbps, ch);
    }
    for (size_t s = 0; s < ch->nseries; s++) {
      if (d->prefer) keep_preferred(&ch->series[s], d->prefer);
      if (!d->bars) sort_series(&ch->series[s]);
    }
  }
  km_plot_collect_techniques(f, &charts[KM_PLOT_ROW_CHARTS], &charts[KM_PLOT_ROW_CHARTS + 1]);
  km_plot_collect_cliff(f, sim, &charts[KM_PLOT_ROW_CHARTS + 2]);
}

void km_plot_charts_free(km_plot_chart charts[KM_PLOT_CHART_COUNT]) {
  for (size_t c = 0; c < KM_PLOT_CHART_COUNT; c++)
    for (size_t s = 0; s < charts[c].nseries; s++) {
      km_plot_series *p = &charts[c].series[s];
      for (size_t i = 0; i < p->n; i++) free(p->labels[i]);
      free(p->labels);
      free(p->x);
      free(p->y);
      memset(p, 0, sizeof *p);
    }
}

/* ---- text of the data files and the script */
typedef struct text_buf {
  char *s;
  size_t n, cap;
  int oom;
} text_buf;

static void tb_printf(text_buf *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (t->oom || need < 0) return;
  if (t->n + (size_t)need + 1 > t->cap) {
    size_t cap = (t->n + (size_t)need + 1) * 2;
    char *s = realloc(t->s, cap);
    if (!s) {
      t->oom = 1;
      return;
    }
    t->s = s, t->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
  va_end(ap);
  t->n += (size_t)need;
}

/* A string for gnuplot's double quotes: backslash and quote escaped, so a GPU name cannot break the script. */
static void gp_string(text_buf *t, const char *s) {
  tb_printf(t, "\"");
  for (; *s; s++) tb_printf(t, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
  tb_printf(t, "\"");
}

/* gnuplot's data format: one block per series, blocks separated by two blank lines (plot ... index i). */
static void data_text(const km_plot_chart *c, const char *source, text_buf *t) {
  tb_printf(t, "# kvmicro: %s\n# run: %s\n# source: %s\n", c->title, c->subtitle, source);
  for (size_t r = 0; r < c->nrefs; r++) tb_printf(t, "# line: %s\n", c->refs[r].title);
  for (size_t s = 0; s < c->nseries; s++) {
    const km_plot_series *p = &c->series[s];
    tb_printf(t, "%s# series %zu: %s\n# x y%s\n", s ? "\n\n" : "", s, p->title, c->bars ? " label" : "");
    for (size_t i = 0; i < p->n; i++) {
      tb_printf(t, "%.15g %.9g", p->x[i], p->y[i]);
      tb_printf(t, c->bars ? " \"%s\"\n" : "\n", p->labels[i] ? p->labels[i] : "");
    }
  }
}

static double top_value(const km_plot_chart *c) {
  double top = 0.0;
  for (size_t r = 0; r < c->nrefs; r++) /* a vertical line's value is an x */
    if (!c->refs[r].vertical) top = c->refs[r].y > top ? c->refs[r].y : top;
  for (size_t s = 0; s < c->nseries; s++)
    for (size_t i = 0; i < c->series[s].n; i++) top = c->series[s].y[i] > top ? c->series[s].y[i] : top;
  return top > 0 ? top : 1.0;
}

/* Bars: one horizontal bar per point, its label beside it in the reading direction, the first on top. */
static void bars_text(const km_plot_chart *c, text_buf *t) {
  size_t n = c->nseries ? c->series[0].n : 0;
  tb_printf(t, "set grid xtics\nset key below\nset style fill solid 0.6 border\nset ytics scale 0\n");
  tb_printf(t, "set yrange [%.1f:-0.6]\nset xrange [0:%.6g]\n", (double)n - 0.4, top_value(c) * 1.05);
  for (size_t r = 0; r < c->nrefs; r++) /* the line here; its key entry in plot_line_text */
    tb_printf(t, "set arrow from %.6g, graph 0 to %.6g, graph 1 nohead dashtype %zu linewidth 1.5\n", c->refs[r].y,
              c->refs[r].y, r + 2);
}

/* Lines: y from 0 (or log), headroom above the highest line so it does not hide under the key. */
static void lines_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "set grid\nset key below\n");
  if (c->logx) tb_printf(t, "set logscale x %d\n", c->logx);
  if (c->logy)
    tb_printf(t, "set logscale y %d\nset yrange [*:*]\n", c->logy);
  else
    tb_printf(t, "set yrange [0:%.6g]\n", top_value(c) * 1.15);
  if (c->x_is_bytes) tb_printf(t, "set format x \"%%.0b %%BB\"\n");
  for (size_t r = 0; r < c->nrefs; r++) /* a vertical line here; its key entry in plot_line_text */
    if (c->refs[r].vertical)
      tb_printf(t, "set arrow from %.6g, graph 0 to %.6g, graph 1 nohead dashtype %zu linewidth 1.5 linecolor rgb "
                "'black'\n", c->refs[r].y, c->refs[r].y, r + 2);
}

static void axes_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "reset\nset title ");
  gp_string(t, c->title);
  tb_printf(t, " . \"\\n\" . ");
  gp_string(t, c->subtitle);
  tb_printf(t, "\nset xlabel ");
  gp_string(t, c->xlabel);
  tb_printf(t, "\nset ylabel ");
  gp_string(t, c->ylabel);
  tb_printf(t, "\n");
  if (c->bars)
    bars_text(c, t);
  else
    lines_text(c, t);
}

static void plot_line_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "plot ");
  for (size_t s = 0; s < c->nseries; s++) {
    tb_printf(t, "%s'%s.dat' index %zu ", s ? ", " : "", c->stem, s);
    if (c->bars)
      tb_printf(t, "using ($2/2):1:($2/2):(0.35):yticlabels(3) with boxxyerror title ");
    else
      tb_printf(t, "using 1:2 with linespoints pointtype 7 linecolor %d%s title ", c->series[s].color + 1,
                c->series[s].baseline ? " dashtype 4" : "");
    gp_string(t, c->series[s].title);
  }
  for (size_t r = 0; r < c->nrefs; r++) { /* bars, vertical: a key entry only (NaN draws nothing), the line is an arrow */
    if (c->bars || c->refs[r].vertical)
      tb_printf(t, ", NaN with lines dashtype %zu linewidth 1.5 linecolor rgb 'black' title ", r + 2);
    else
      tb_printf(t, ", %.6g with lines dashtype %zu linewidth 1.5 title ", c->refs[r].y, r + 2);
    gp_string(t, c->refs[r].title);
  }
  tb_printf(t, "\n");
}

/* Taller images for many bars, so each label has its line, and for a long key below a line chart. */
static int image_height(const km_plot_chart *c) {
  size_t n = c->bars && c->nseries ? c->series[0].n : 0;
  if (!c->bars) n = c->nseries + c->nrefs > 8 ? (c->nseries + c->nrefs) - 8 + 15 : 0;
  return n * 26 + 200 > 600 ? (int)(n * 26 + 200) : 600;
}

/* Wider images for long bar labels, so the bars keep the width of a chart with short ones. */
static int image_width(const km_plot_chart *c) {
  size_t longest = 0;
  for (size_t i = 0; c->bars && c->nseries && i < c->series[0].n; i++) {
    size_t n = c->series[0].labels[i] ? strlen(c->series[0].labels[i]) : 0;
    longest = n > longest ? n : longest;
  }
  return longest > 40 ? (int)(600 + 9 * longest) : 960;
}

static void script_chart_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "\n# ---- %s\n", c->stem);
  axes_text(c, t);
  tb_printf(t, "set terminal svg size %d,%d dynamic noenhanced\nset output '%s.svg'.out_suffix\n", image_width(c),
            image_height(c), c->stem);
  plot_line_text(c, t);
  tb_printf(t, "eval png_terminal(%d, %d)\nset output '%s.png'.out_suffix\nreplot\nunset output\n", image_width(c),
            image_height(c), c->stem);
}

static int write_text(const char *dir, const char *name, text_buf *t, char *err, size_t errlen) {
  char path[4096];
  if (t->oom || !t->s) {
    snprintf(err, errlen, "%s/%s: out of memory", dir, name);
    return -1;
  }
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return km_output_write_text(path, t->s, err, errlen);
}

int km_plot_write_files(const km_plot_chart charts[KM_PLOT_CHART_COUNT], const char *source, const char *dir,
                        char *err, size_t errlen) {
  text_buf gp = {0};
  int written = 0, rc = 0;
  tb_printf(&gp, "# Charts of %s, written by `report plot`. Run in this folder: gnuplot plots.gp\n"
                 "# (report passes out_suffix='.tmp' and renames the images once gnuplot succeeds)\n"
                 "if (!exists(\"out_suffix\")) out_suffix = ''\n"
                 "png_terminal(w, h) = sprintf(strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? "
                 "'set terminal pngcairo size %%d,%%d noenhanced' : 'set terminal png size %%d,%%d noenhanced', w, h)\n"
                 "# twelve distinct line colours (gnuplot's default set repeats after eight)\n"
                 "set linetype 1 linecolor rgb '#9400d3'\nset linetype 2 linecolor rgb '#009e73'\n"
                 "set linetype 3 linecolor rgb '#56b4e9'\nset linetype 4 linecolor rgb '#e69f00'\n"
                 "set linetype 5 linecolor rgb '#f0e442'\nset linetype 6 linecolor rgb '#0072b2'\n"
                 "set linetype 7 linecolor rgb '#e51e10'\nset linetype 8 linecolor rgb '#000000'\n"
                 "set linetype 9 linecolor rgb '#8c564b'\nset linetype 10 linecolor rgb '#ff69b4'\n"
                 "set linetype 11 linecolor rgb '#7f7f7f'\nset linetype 12 linecolor rgb '#17becf'\n"
                 "set linetype cycle 12\n",
            source);
  for (size_t c = 0; rc == 0 && c < KM_PLOT_CHART_COUNT; c++) {
    if (!charts[c].nseries) continue;
    text_buf dat = {0};
    char name[128];
    data_text(&charts[c], source, &dat);
    snprintf(name, sizeof name, "%s.dat", charts[c].stem);
    rc = write_text(dir, name, &dat, err, errlen);
    free(dat.s);
    script_chart_text(&charts[c], &gp);
    written++;
  }
  if (rc == 0 && written) rc = write_text(dir, "plots.gp", &gp, err, errlen);
  free(gp.s);
  return rc ? -1 : written;
}
