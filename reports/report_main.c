/* The `report` program: reads result files written by `micro --json` / `--params` and compares,
 * prints, plots or predicts from them. Exit 0 ok, 1 a tool it ran failed (gnuplot), 2 bad input
 * (one line on stderr). */
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "params_predict.h"
#include "plot.h"
#include "report_usage.h"
#include "run_file.h"
#include "run_tables.h"
#include "version.h"

enum { KM_REPORT_OK = 0, KM_REPORT_TOOL_FAILED = 1, KM_REPORT_BAD_INPUT = 2 };
enum { MAX_POSITIONAL = 10 }; /* predict: the file, the series and up to 8 axis values */

typedef struct report_args {
  const char *command;
  const char *pos[MAX_POSITIONAL];
  int npos;
  km_format format;
  const char *out_dir;
  char err[1024];
} report_args;

static int fail(report_args *a, const char *what) {
  snprintf(a->err, sizeof a->err, "%s (run 'report --help')", what);
  return -1;
}

static int parse_option(report_args *a, int argc, char **argv, int *i) {
  const char *flag = argv[*i];
  const char *value = NULL;
  size_t n = strcspn(flag, "=");
  if (flag[n] == '=')
    value = flag + n + 1;
  else if (*i + 1 < argc)
    value = argv[++*i];
  if (strncmp(flag, "--format", n) == 0 && n == 8) {
    if (!value || km_format_parse(value, &a->format)) return fail(a, "--format: expected text, markdown, csv or json");
  } else if (strncmp(flag, "--out", n) == 0 && n == 5) {
    if (!value || !value[0]) return fail(a, "--out: expected a folder");
    a->out_dir = value;
  } else {
    snprintf(a->err, sizeof a->err, "unknown option '%.*s' (run 'report --help')", (int)n, flag);
    return -1;
  }
  return 0;
}

static int parse_args(report_args *a, int argc, char **argv) {
  a->format = KM_FORMAT_MARKDOWN;
  if (argc < 2) return fail(a, "missing command: compare, tables, plot or predict");
  a->command = argv[1];
  for (int i = 2; i < argc; i++) {
    if (strncmp(argv[i], "--", 2) == 0 && argv[i][2]) {
      if (parse_option(a, argc, argv, &i)) return -1;
    } else if (a->npos == MAX_POSITIONAL) {
      snprintf(a->err, sizeof a->err, "unexpected argument '%s' (run 'report --help')", argv[i]);
      return -1;
    } else {
      a->pos[a->npos++] = argv[i];
    }
  }
  return 0;
}

static int expect(report_args *a, int npos, const char *shape) {
  if (a->npos == npos) return 0;
  snprintf(a->err, sizeof a->err, "%s takes %s, got %d argument(s)", a->command, shape, a->npos);
  return -1;
}

static int cmd_compare(report_args *a) {
  if (expect(a, 2, "two result files (A.json B.json)")) return KM_REPORT_BAD_INPUT;
  km_run_file fa, fb;
  if (km_run_file_load(a->pos[0], &fa, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  if (km_run_file_load(a->pos[1], &fb, a->err, sizeof a->err)) {
    km_run_file_free(&fa);
    return KM_REPORT_BAD_INPUT;
  }
  int rc = km_compare_print(&fa, &fb, a->format, stdout);
  if (rc) snprintf(a->err, sizeof a->err, "compare: out of memory");
  km_run_file_free(&fa);
  km_run_file_free(&fb);
  return rc ? KM_REPORT_TOOL_FAILED : KM_REPORT_OK;
}

static int cmd_tables(report_args *a) {
  if (expect(a, 1, "one result file")) return KM_REPORT_BAD_INPUT;
  km_run_file f;
  if (km_run_file_load(a->pos[0], &f, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  int rc = km_run_tables_print(&f, a->format, stdout, a->err, sizeof a->err);
  km_run_file_free(&f);
  return rc ? KM_REPORT_BAD_INPUT : KM_REPORT_OK;
}

static int cmd_techniques(report_args *a) {
  if (expect(a, 1, "one result file")) return KM_REPORT_BAD_INPUT;
  km_run_file f;
  if (km_run_file_load(a->pos[0], &f, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  int rc = km_run_techniques_print(&f, a->format, stdout, a->err, sizeof a->err);
  km_run_file_free(&f);
  return rc ? KM_REPORT_BAD_INPUT : KM_REPORT_OK;
}

static int cmd_plot(report_args *a) {
  if (expect(a, 1, "one result file and --out DIR")) return KM_REPORT_BAD_INPUT;
  if (!a->out_dir) {
    snprintf(a->err, sizeof a->err, "plot needs --out DIR (the folder for the data, script and images)");
    return KM_REPORT_BAD_INPUT;
  }
  km_run_file f;
  if (km_run_file_load(a->pos[0], &f, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  int rc = km_plot_command(&f, a->out_dir, stdout, a->err, sizeof a->err);
  km_run_file_free(&f);
  return rc;
}

static int cmd_predict(report_args *a) {
  if (a->npos < 3) {
    snprintf(a->err, sizeof a->err, "predict takes PARAMS.json SERIES and BYTES or AXIS=VALUE..., got %d argument(s)",
             a->npos);
    return KM_REPORT_BAD_INPUT;
  }
  return km_params_predict_command(a->pos[0], a->pos[1], a->pos + 2, a->npos - 2, stdout, a->err, sizeof a->err);
}

static int dispatch(report_args *a) {
  static const struct { const char *name; int (*run)(report_args *); } commands[] = {
      {"compare", cmd_compare},       {"tables", cmd_tables},   {"techniques", cmd_techniques},
      {"plot", cmd_plot},             {"predict", cmd_predict}};
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(a->command, commands[i].name) == 0) return commands[i].run(a);
  snprintf(a->err, sizeof a->err, "unknown command '%s': expected compare, tables, techniques, plot or predict", a->command);
  return KM_REPORT_BAD_INPUT;
}

int main(int argc, char **argv) {
  report_args args = {0};
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(km_report_usage_text, stdout);
    return KM_REPORT_OK;
  }
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    km_version_print("report", stdout);
    return KM_REPORT_OK;
  }
  int rc = parse_args(&args, argc, argv) ? KM_REPORT_BAD_INPUT : dispatch(&args);
  if (rc != KM_REPORT_OK) fprintf(stderr, "report: %s\n", args.err);
  fflush(stdout);
  return rc;
}
