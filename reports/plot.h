/* `report plot A.json [--prefix-sim SIM.json] --out DIR`: the charts of a run (gather GB/s vs block size;
 * host<->device copies vs size, and scattered KV blocks vs block size, against the PCIe link and the
 * contiguous copy; top-k time vs pages against the baselines; quant GB/s per format; decode step time vs
 * context per format and head layout against the read ceiling), the technique table as two bar charts
 * (capacity computed, decode step measured), and the prefix-cache cliff of a simulator file. Each
 * chart's data goes to DIR/<chart>.dat and one gnuplot script DIR/plots.gp draws them all as SVG and
 * PNG; gnuplot runs when it is on PATH. Which rows feed a row chart is a table of name patterns in
 * plot.c; the others are built in plot_tables.c. Titles name the run's GPU and revision. */
#ifndef KM_REPORT_PLOT_H
#define KM_REPORT_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "run_file.h"

enum { KM_PLOT_MAX_SERIES = 24, KM_PLOT_MAX_REFS = 4 };

typedef struct km_plot_series {
  char title[96];
  size_t n, cap;
  double *x, *y;
  char **labels; /* bar charts: the label of each bar */
  int baseline;  /* a baseline's (or a ceiling's) series: drawn dashed */
  char key[96];  /* series with the same key share a colour (a method and its baseline, a row and its ceiling) */
  int color;     /* 0, 1, ...: one per distinct key, in order of appearance */
} km_plot_series;

/* A horizontal line across the chart (a vertical one on horizontal bars): a ceiling, a link, a row. */
typedef struct km_plot_ref {
  char title[128];
  double y;     /* the value: y of a horizontal line, x of a vertical one */
  int vertical; /* line charts: a vertical line at x = y */
} km_plot_ref;

typedef struct km_plot_chart {
  const char *stem;    /* file names: <stem>.dat, <stem>.svg, <stem>.png */
  const char *title, *xlabel, *ylabel;
  char own_title[320]; /* a title built from the data (title points here) */
  char subtitle[256];  /* the run: GPU and revision */
  char needs[256];     /* the rows it is drawn from, for the message when there are none */
  int logx, logy;      /* 0 linear, else the log base of the axis */
  int bars;            /* one horizontal bar per point, labelled */
  int x_is_bytes;      /* tick labels with binary prefixes */
  size_t nrefs;
  km_plot_ref refs[KM_PLOT_MAX_REFS];
  size_t nseries;
  km_plot_series series[KM_PLOT_MAX_SERIES];
} km_plot_chart;

/* The row charts of plot.c, then the technique table's two and the prefix-cache cliff (plot_tables.c). */
enum { KM_PLOT_ROW_CHARTS = 7, KM_PLOT_CHART_COUNT = KM_PLOT_ROW_CHARTS + 3 };

/* Fill the charts from the file's rows and tables and, when sim is not NULL, a prefix-sim document
 * (points sorted by x). Charts without data have nseries 0. */
void km_plot_collect(const km_run_file *f, const cJSON *sim, km_plot_chart charts[KM_PLOT_CHART_COUNT]);
void km_plot_charts_free(km_plot_chart charts[KM_PLOT_CHART_COUNT]);

/* Write DIR/<stem>.dat for each chart with rows and DIR/plots.gp. Returns the number of charts
 * written, or -1 with one line in err. */
int km_plot_write_files(const km_plot_chart charts[KM_PLOT_CHART_COUNT], const char *source, const char *dir,
                        char *err, size_t errlen);

/* The full path of gnuplot on PATH into buf; 0 found, -1 not found. */
int km_plot_find_gnuplot(char *buf, size_t len);
/* Run gnuplot on DIR/plots.gp, writing temporaries renamed into place only when it succeeds.
 * 0 ok; -1 with one line in err (no partial images left). */
int km_plot_run_gnuplot(const char *gnuplot, const km_plot_chart charts[KM_PLOT_CHART_COUNT], const char *dir,
                        char *err, size_t errlen);

/* The whole command: collect, write, run gnuplot when present, report on out.
 * 0 ok, 1 gnuplot failed, 2 bad input (err holds one line). */
int km_plot_command(const km_run_file *f, const cJSON *sim, const char *dir, FILE *out, char *err, size_t errlen);

/* ---- building charts (plot.c; used by plot_tables.c) */
/* A point of the series titled `series` (created on first use; key NULL: the title), x and y, a bar's label. */
void km_plot_add_point(km_plot_chart *c, const char *series, const char *key, int baseline, double x, double y,
                       const char *label);
/* A reference line titled by fmt with what and y ("%s %.0f GB/s"); ignored when y is not positive. */
void km_plot_add_ref(km_plot_chart *c, double y, int vertical, const char *fmt, const char *what);
/* "<GPU>, kvmicro revision <rev>": every chart's subtitle. */
void km_plot_subtitle(const km_run_file *f, char *buf, size_t len);
/* The charts of the technique table (capacity computed, decode step measured) and of the cliff. */
void km_plot_collect_techniques(const km_run_file *f, km_plot_chart *capacity, km_plot_chart *step);
void km_plot_collect_cliff(const km_run_file *f, const cJSON *sim, km_plot_chart *cliff);
/* A `micro --prefix-sim ... --sweep --json` file: NULL with one line in err when it is not one. */
cJSON *km_plot_read_prefix_sim(const char *path, char *err, size_t errlen);

#endif
