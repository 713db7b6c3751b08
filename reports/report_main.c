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
#include "scaling.h"
#include "techniques_model.h"
#include "version.h"

enum { KM_REPORT_OK = 0, KM_REPORT_TOOL_FAILED = 1, KM_REPORT_BAD_INPUT = 2 };
enum { MAX_POSITIONAL = 10 }; /* predict: the file, the series and up to 8 axis values; compare: 10 runs */

typedef struct report_args {
  const char *command;
  const char *pos[MAX_POSITIONAL];
  int npos;
  km_format format;
  const char *out_dir;
  const char *model;      /* techniques --model */
  const char *prefix_sim; /* plot --prefix-sim */
  int scaling_only;       /* compare --scaling */
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
  if (strncmp(flag, "--scaling", n) == 0 && n == 9) { /* a switch: takes no value */
    if (flag[n] == '=') return fail(a, "--scaling takes no value");
    a->scaling_only = 1;
    return 0;
  }
  if (flag[n] == '=')
    value = flag + n + 1;
  else if (*i + 1 < argc)
    value = argv[++*i];
  if (strncmp(flag, "--format", n) == 0 && n == 8) {
    if (!value || km_format_parse(value, &a->format)) return fail(a, "--format: expected text, markdown, csv or json");
  } else if (strncmp(flag, "--out", n) == 0 && n == 5) {
    if (!value || !value[0]) return fail(a, "--out: expected a folder");
    a->out_dir = value;
  } else if (strncmp(flag, "--model", n) == 0 && n == 7) {
    if (!value || !value[0]) return fail(a, "--model: expected a preset name or a config.json path");
    a->model = value;
  } else if (strncmp(flag, "--prefix-sim", n) == 0 && n == 12) {
    if (!value || !value[0]) return fail(a, "--prefix-sim: expected a micro --prefix-sim ... --sweep --json file");
    a->prefix_sim = value;
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

/* Options that only one command takes are refused elsewhere, so a misplaced one is not silently dropped. */
static int refuse_options(report_args *a, int model, int prefix_sim, int scaling, int out) {
  const char *bad = a->model && !model ? "--model" : a->prefix_sim && !prefix_sim ? "--prefix-sim"
                    : a->scaling_only && !scaling ? "--scaling" : a->out_dir && !out ? "--out" : NULL;
  if (!bad) return 0;
  snprintf(a->err, sizeof a->err, "%s does not go with %s (run 'report --help')", bad, a->command);
  return -1;
}

static int cmd_compare(report_args *a) {
  if (refuse_options(a, 0, 0, 1, 0)) return KM_REPORT_BAD_INPUT;
  if (a->npos < 2) {
    snprintf(a->err, sizeof a->err, "compare takes two or more result files (A.json B.json [C.json ...]), got %d",
             a->npos);
    return KM_REPORT_BAD_INPUT;
  }
  km_run_file files[MAX_POSITIONAL];
  const km_run_file *runs[MAX_POSITIONAL];
  int loaded = 0, rc = KM_REPORT_OK;
  for (; loaded < a->npos; loaded++) {
    if (km_run_file_load(a->pos[loaded], &files[loaded], a->err, sizeof a->err)) {
      rc = KM_REPORT_BAD_INPUT;
      break;
    }
    runs[loaded] = &files[loaded];
  }
  if (rc == KM_REPORT_OK) {
    int bad = 0;
    if (a->npos == 2 && !a->scaling_only) {
      bad = km_compare_print(&files[0], &files[1], a->format, stdout);
      /* text and markdown: the verdicts follow; JSON carries them in its own document (--scaling); CSV
       * stays one table */
      if (!bad && (a->format == KM_FORMAT_TEXT || a->format == KM_FORMAT_MARKDOWN)) {
        fputc('\n', stdout);
        bad = km_scaling_print(runs, 2, a->format, stdout);
      }
    } else {
      bad = km_scaling_print(runs, (size_t)a->npos, a->format, stdout);
    }
    if (bad) {
      snprintf(a->err, sizeof a->err, "compare: out of memory");
      rc = KM_REPORT_TOOL_FAILED;
    }
  }
  for (int i = 0; i < loaded; i++) km_run_file_free(&files[i]);
  return rc;
}

static int cmd_tables(report_args *a) {
  if (refuse_options(a, 0, 0, 0, 0) || expect(a, 1, "one result file")) return KM_REPORT_BAD_INPUT;
  km_run_file f;
  if (km_run_file_load(a->pos[0], &f, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  int rc = km_run_tables_print(&f, a->format, stdout, a->err, sizeof a->err);
  km_run_file_free(&f);
  return rc ? KM_REPORT_BAD_INPUT : KM_REPORT_OK;
}

static int cmd_techniques(report_args *a) {
  if (refuse_options(a, 1, 0, 0, 0) || expect(a, 1, "one result file")) return KM_REPORT_BAD_INPUT;
  km_run_file f;
  if (km_run_file_load(a->pos[0], &f, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  int rc = a->model ? km_techniques_for_model_print(&f, a->model, a->format, stdout, a->err, sizeof a->err)
                    : km_run_techniques_print(&f, a->format, stdout, a->err, sizeof a->err);
  km_run_file_free(&f);
  return rc ? KM_REPORT_BAD_INPUT : KM_REPORT_OK;
}

static int cmd_plot(report_args *a) {
  if (refuse_options(a, 0, 1, 0, 1) || expect(a, 1, "one result file and --out DIR")) return KM_REPORT_BAD_INPUT;
  if (!a->out_dir) {
    snprintf(a->err, sizeof a->err, "plot needs --out DIR (the folder for the data, script and images)");
    return KM_REPORT_BAD_INPUT;
  }
  km_run_file f;
  if (km_run_file_load(a->pos[0], &f, a->err, sizeof a->err)) return KM_REPORT_BAD_INPUT;
  cJSON *sim = NULL;
  if (a->prefix_sim && !(sim = km_plot_read_prefix_sim(a->prefix_sim, a->err, sizeof a->err))) {
    km_run_file_free(&f);
    return KM_REPORT_BAD_INPUT;
  }
  int rc = km_plot_command(&f, sim, a->out_dir, stdout, a->err, sizeof a->err);
  cJSON_Delete(sim);
  km_run_file_free(&f);
  return rc;
}

static int cmd_predict(report_args *a) {
  if (refuse_options(a, 0, 0, 0, 0)) return KM_REPORT_BAD_INPUT;
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
