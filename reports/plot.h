/* `report plot A.json --out DIR`: four charts of a run (gather GB/s vs block size, H2D/D2H GB/s vs
 * transfer size, top-k time vs pages, quant GB/s per format). Each chart's data goes to DIR/<chart>.dat
 * and one gnuplot script DIR/plots.gp draws them all as SVG and PNG; gnuplot runs when it is on PATH. */
#ifndef KM_REPORT_PLOT_H
#define KM_REPORT_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "run_file.h"

enum { KM_PLOT_MAX_SERIES = 16 };

typedef struct km_plot_series {
  char title[96];
  size_t n, cap;
  double *x, *y;
  char **labels; /* bar charts: the x tick label of each point */
} km_plot_series;

typedef struct km_plot_chart {
  const char *stem;   /* file names: <stem>.dat, <stem>.svg, <stem>.png */
  const char *title, *xlabel, *ylabel, *needs;
  int logx;           /* 0 linear, else the log base of the x axis */
  int bars;           /* one bar per point, labelled */
  int x_is_bytes;     /* tick labels with binary prefixes */
  double ceiling_gbps; /* drawn as a line when finite */
  size_t nseries;
  km_plot_series series[KM_PLOT_MAX_SERIES];
} km_plot_chart;

enum { KM_PLOT_CHART_COUNT = 4 };

/* Fill the four charts from the file's rows (points sorted by x). Charts without rows have nseries 0. */
void km_plot_collect(const km_run_file *f, km_plot_chart charts[KM_PLOT_CHART_COUNT]);
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
int km_plot_command(const km_run_file *f, const char *dir, FILE *out, char *err, size_t errlen);

#endif
