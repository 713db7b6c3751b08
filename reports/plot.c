/* The charts of `report plot`: which rows feed each one (a constant table of chart definitions), and
 * the data files and gnuplot script written for them. Running gnuplot is in plot_gnuplot.c. */
#include "plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "output_file.h"

typedef void (*collect_fn)(const km_result *row, km_plot_chart *c);

typedef struct chart_def {
  const char *stem, *title, *xlabel, *ylabel, *needs;
  int logx, bars, x_is_bytes, with_ceiling;
  const char *prefer; /* when some points' labels contain this, only those are kept */
  collect_fn collect;
} chart_def;

static char *dup_label(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void add_point(km_plot_chart *c, const char *series, double x, double y, const char *label) {
  size_t s = 0;
  while (s < c->nseries && strcmp(c->series[s].title, series) != 0) s++;
  if (s == KM_PLOT_MAX_SERIES) return; /* more series than a chart can show legibly */
  km_plot_series *p = &c->series[s];
  if (s == c->nseries) {
    memset(p, 0, sizeof *p);
    snprintf(p->title, sizeof p->title, "%s", series);
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

/* A name matches a pattern exactly when sscanf consumed it to the end (%n set at the last byte). */
static int whole(const char *name, int consumed) { return consumed > 0 && name[consumed] == '\0'; }

static void collect_gather(const km_result *row, km_plot_chart *c) {
  char layout[4] = "";
  unsigned bs = 0;
  int n = 0;
  sscanf(row->name, "paged/gather/%3[a-z]/bs%u/d128/h8/bf16/random%n", layout, &bs, &n);
  if (!whole(row->name, n) || (strcmp(layout, "nhd") && strcmp(layout, "hnd"))) return;
  add_point(c, strcmp(layout, "nhd") == 0 ? "NHD layout" : "HND layout", bs, km_run_row_gbps(row), NULL);
}

static void collect_offload(const km_result *row, km_plot_chart *c) {
  char dir[4] = "", size[32] = "";
  int n = 0;
  double bytes = 0;
  sscanf(row->name, "offload/%3[a-z0-9]/pinned/%31[^/]%n", dir, size, &n);
  if (!whole(row->name, n) || km_report_parse_bytes(size, &bytes)) return;
  if (strcmp(dir, "h2d") == 0) add_point(c, "H2D pinned", bytes, km_run_row_gbps(row), NULL);
  if (strcmp(dir, "d2h") == 0) add_point(c, "D2H pinned", bytes, km_run_row_gbps(row), NULL);
}

static void collect_topk(const km_result *row, km_plot_chart *c) {
  unsigned r = 0, p = 0, k = 0;
  int n = 0;
  char series[96];
  sscanf(row->name, "sparse/topk/r%u/p%u/k%u%n", &r, &p, &k, &n);
  if (!whole(row->name, n)) return;
  snprintf(series, sizeof series, "%u rows, k = %u", r, k);
  add_point(c, series, p, km_run_row_time_us(row), NULL);
}

static void collect_quant(const km_result *row, km_plot_chart *c) {
  if (strncmp(row->name, "quant/", 6) != 0) return;
  km_plot_series *s = c->nseries ? &c->series[0] : NULL;
  add_point(c, "GB/s", s ? (double)s->n : 0.0, km_run_row_gbps(row), row->name + 6);
}

static const chart_def chart_defs[KM_PLOT_CHART_COUNT] = {
    {"gather_block_size", "Paged gather: GB/s vs block size (d128, 8 KV heads, bf16, random table)",
     "block size (tokens)", "GB/s (read + written)", "paged/gather/{nhd,hnd}/bs*/d128/h8/bf16/random", 2, 0, 0, 1,
     NULL, collect_gather},
    {"offload_size", "Host <-> device copies: GB/s vs transfer size (pinned host memory)", "transfer size",
     "GB/s", "offload/{h2d,d2h}/pinned/SIZE", 2, 0, 1, 0, NULL, collect_offload},
    {"topk_pages", "Top-k page selection: time vs pages", "pages per row", "median time (us)",
     "sparse/topk/r*/p*/k*", 2, 0, 0, 0, NULL, collect_topk},
    {"quant_formats", "KV quantization: GB/s per format (head_dim 128 where present)", "", "GB/s (read + written)",
     "quant/*", 0, 1, 0, 1, "/d128", collect_quant},
};

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

void km_plot_collect(const km_run_file *f, km_plot_chart charts[KM_PLOT_CHART_COUNT]) {
  for (size_t c = 0; c < KM_PLOT_CHART_COUNT; c++) {
    const chart_def *d = &chart_defs[c];
    km_plot_chart *ch = &charts[c];
    memset(ch, 0, sizeof *ch);
    ch->stem = d->stem, ch->title = d->title, ch->xlabel = d->xlabel, ch->ylabel = d->ylabel, ch->needs = d->needs;
    ch->logx = d->logx, ch->bars = d->bars, ch->x_is_bytes = d->x_is_bytes;
    ch->ceiling_gbps = d->with_ceiling ? f->ceiling_gbps : NAN;
    for (size_t i = 0; i < f->results.count; i++) {
      const km_result *row = &f->results.rows[i];
      /* a row that did not run has no y: leaving it out keeps the line through the measured points */
      if (km_run_row_is_primary(&f->results, row) && !row->error && !row->skipped) d->collect(row, ch);
    }
    for (size_t s = 0; s < ch->nseries; s++) {
      if (d->prefer) keep_preferred(&ch->series[s], d->prefer);
      if (!d->bars) sort_series(&ch->series[s]);
    }
  }
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

/* gnuplot's data format: one block per series, blocks separated by two blank lines (plot ... index i). */
static void data_text(const km_plot_chart *c, const char *source, text_buf *t) {
  tb_printf(t, "# kvmicro: %s\n# source: %s\n", c->title, source);
  for (size_t s = 0; s < c->nseries; s++) {
    const km_plot_series *p = &c->series[s];
    tb_printf(t, "%s# series %zu: %s\n# x y%s\n", s ? "\n\n" : "", s, p->title, c->bars ? " label" : "");
    for (size_t i = 0; i < p->n; i++) {
      tb_printf(t, "%.15g %.9g", p->x[i], p->y[i]);
      tb_printf(t, c->bars ? " \"%s\"\n" : "\n", p->labels[i] ? p->labels[i] : "");
    }
  }
}

/* y from 0, with headroom above the ceiling line (or the bars) so neither hides under the border or key. */
static void yrange_text(const km_plot_chart *c, text_buf *t) {
  double top = isfinite(c->ceiling_gbps) ? c->ceiling_gbps : 0.0;
  for (size_t s = 0; s < c->nseries; s++)
    for (size_t i = 0; i < c->series[s].n; i++) top = c->series[s].y[i] > top ? c->series[s].y[i] : top;
  if (isfinite(c->ceiling_gbps) || c->bars)
    tb_printf(t, "set yrange [0:%.6g]\n", top > 0 ? top * (c->bars ? 1.3 : 1.15) : 1.0);
  else
    tb_printf(t, "set yrange [0:*]\n");
}

static void axes_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "reset\nset title \"%s\"\nset xlabel \"%s\"\nset ylabel \"%s\"\nset grid\nset key top left\n",
            c->title, c->xlabel, c->ylabel);
  yrange_text(c, t);
  if (c->logx) tb_printf(t, "set logscale x %d\n", c->logx);
  if (c->x_is_bytes) tb_printf(t, "set format x \"%%.0b %%BB\"\n");
  if (c->bars)
    tb_printf(t, "set style fill solid 0.6 border\nset boxwidth 0.7\nset xtics rotate by -40 left\n"
                 "set xrange [-0.6:*]\nset bmargin 10\nset key top right\n");
}

static void plot_line_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "plot ");
  for (size_t s = 0; s < c->nseries; s++) {
    if (c->bars)
      tb_printf(t, "%s'%s.dat' index %zu using 1:2:xtic(3) with boxes title \"%s\"", s ? ", " : "", c->stem, s,
                c->series[s].title);
    else
      tb_printf(t, "%s'%s.dat' index %zu using 1:2 with linespoints pointtype 7 title \"%s\"", s ? ", " : "",
                c->stem, s, c->series[s].title);
  }
  if (isfinite(c->ceiling_gbps))
    tb_printf(t, ", %.1f with lines dashtype 2 title \"ceiling %.0f GB/s\"", c->ceiling_gbps, c->ceiling_gbps);
  tb_printf(t, "\n");
}

static void script_chart_text(const km_plot_chart *c, text_buf *t) {
  tb_printf(t, "\n# ---- %s\n", c->stem);
  axes_text(c, t);
  tb_printf(t, "set terminal svg size 960,600 dynamic noenhanced\nset output '%s.svg'.out_suffix\n", c->stem);
  plot_line_text(c, t);
  tb_printf(t, "eval png_terminal\nset output '%s.png'.out_suffix\nreplot\nunset output\n", c->stem);
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
                 "png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? "
                 "'set terminal pngcairo size 960,600 noenhanced' : 'set terminal png size 960,600 noenhanced'\n",
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
