/* The case registry: each micro file exports one constant table of km_case rows; micro/main.c
 * hands every table to the harness, which filters, lists and registers them with Google Benchmark.
 * Adding a case is one row, not a new code path. */
#ifndef KM_REGISTRY_H
#define KM_REGISTRY_H

#include <stddef.h>

typedef struct km_bench km_bench;

/* One measured case. `run` sets up, verifies against a CPU reference, then times through km_bench. */
typedef void (*km_case_fn)(km_bench *b, const void *params);

enum km_case_flags {
  KM_CASE_QUICK = 1u << 0,          /* part of --quick: the smallest sweep points */
  KM_CASE_BASELINE = 1u << 1,       /* what a user would use instead (named baseline/...) */
  KM_CASE_REPRESENTATIVE = 1u << 2, /* the model shape's case: shown in the latency table */
  KM_CASE_HOST_MEMORY = 1u << 3,    /* moves bytes over PCIe: its share is of the link, not of HBM */
  KM_CASE_HOST_ONLY = 1u << 4,      /* CPU work timed with the host clock: runs with no CUDA device */
};

/* A case's place on a sweep a simulator can fit (reports/PARAMS.md, harness/params.c). Optional: a case
 * without one is written to --params as a point of its own. Every case of a series declares the same
 * series name, axes and model; each gives its own coordinates. */
enum { KM_SWEEP_MAX_AXES = 4 };
typedef struct km_sweep {
  const char *series;                  /* the series key, e.g. "offload/h2d/pinned" or "attn/decode/bf16/gqa" */
  const char *axes[KM_SWEEP_MAX_AXES]; /* the series' axes, unused ones NULL; "bytes" is the row's measured
                                          bytes read + written (its coordinate is not declared) */
  double at[KM_SWEEP_MAX_AXES];        /* this case's coordinate on each axis (ignored for "bytes") */
  /* The time model's terms after the intercept, joined by '+', each a product of axes joined by '*':
   * "batch + batch*context" fits time = c0 + c1 batch + c2 batch context. NULL means "bytes":
   * time = alpha + bytes / beta. */
  const char *model;
  /* NULL-terminated stage names: the series' points are these stages of the row, each timed with
   * km_bench_measure_stage at its own bytes (axis "bytes"), instead of the row itself. */
  const char *const *stages;
} km_sweep;

typedef struct km_case {
  const char *name;      /* stable key primitive/variant/params, e.g. paged/gather/nhd/bs16/d128/bf16 */
  const char *technique; /* byte-table technique it serves: paged, kv_quant, sparse_read, offload, roofline */
  const char *summary;   /* one sentence for --list --verbose and the tables */
  km_case_fn run;
  const void *params;    /* the micro file's own parameter struct for this row */
  unsigned flags;        /* enum km_case_flags */
  const char *baseline;  /* name of the case this one is compared with (GB/s ratio), or NULL */
  const km_sweep *sweep; /* its place on a fitted sweep, or NULL */
} km_case;

struct km_ceiling_set;
/* A figure a family derives from measured rows (its own and other families'), shown in the technique
 * table: what a technique costs in the unit of the step it changes. Rows are named by case; a figure whose
 * rows did not run (filtered out, skipped, no GPU) is shown as missing with the case it lacks. */
typedef enum km_derived_kind {
  KM_DERIVED_RATIO = 0,   /* scale x a / b */
  KM_DERIVED_BREAK_EVEN,  /* a / (b - c): steps until a one-off cost a pays back the per-step saving b - c */
  KM_DERIVED_CROSSOVER,   /* the x where the line through (xb, b) and (xc, c) reaches a: xb + (a - b)(xc - xb)/(c - b) */
} km_derived_kind;

typedef struct km_derived {
  const char *technique;    /* the byte table's technique it belongs to */
  const char *what;         /* what the figure is, with its unit */
  km_derived_kind kind;
  const char *a, *b, *c;    /* case names (c: break-even and crossover) */
  const char *counter[3];   /* the counter read from a, b, c; NULL: median_us */
  double scale;             /* ratio only; 0 means 1 */
  double xb, xc;            /* crossover only: the x (e.g. context tokens) of rows b and c */
} km_derived;

typedef struct km_case_table {
  const km_case *cases;
  size_t count;
  /* Kernels this family offers as start-up ceilings (harness/ceiling.h), or NULL. */
  const struct km_ceiling_set *ceilings;
  /* Figures derived from measured rows (the technique table), or NULL; derived_count of them. */
  const km_derived *derived;
  size_t derived_count;
} km_case_table;

/* A family's command, run instead of the suite when its flag is on the command line (e.g. a simulator
 * that needs no GPU): `micro FLAG ...`. It parses the whole command line itself. */
typedef struct km_command {
  const char *flag;  /* e.g. "--prefix-sim" */
  const char *usage; /* its lines for micro --help, each indented two spaces and ending in '\n' */
  int (*main)(int argc, char **argv); /* returns the exit status (0 ok, 2 bad input) */
} km_command;

/* Filter with Google Benchmark's semantics: a regular expression searched in the name,
 * a leading '-' negates it. Returns 0 on success, -1 (with a message in err) for a bad regex. */
typedef struct km_filter km_filter;
int km_filter_compile(const char *pattern, km_filter **out, char *err, size_t errlen);
int km_filter_match(const km_filter *f, const char *name);
void km_filter_free(km_filter *f);

/* Selected cases, in table order. */
typedef struct km_selection {
  const km_case **cases;
  size_t count;
} km_selection;

/* Select the cases of `tables` that match `filter` (NULL: all) and, when quick, carry KM_CASE_QUICK. */
int km_select(const km_case_table *const *tables, size_t ntables, const km_filter *filter, int quick,
              km_selection *out);
void km_selection_free(km_selection *s);
const km_case *km_find_case(const km_case_table *const *tables, size_t ntables, const char *name);

#endif
