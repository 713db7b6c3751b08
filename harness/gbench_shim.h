/* The C API over Google Benchmark: it owns the run loop, filtering, repetitions and aggregates; the
 * harness registers C functions, reports manual (CUDA event) time and counters, and receives every
 * finished run through a callback so it writes all outputs itself. No C++ exception crosses here. */
#ifndef KM_GBENCH_SHIM_H
#define KM_GBENCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gb_state gb_state; /* a benchmark::State */
typedef void (*gb_fn)(gb_state *st, void *arg);

typedef struct gb_run {
  const char *name;            /* the registered name (stable key) */
  const char *full_name;       /* Google Benchmark's name, with /manual_time etc. */
  const char *run_name;        /* full name without the aggregate suffix */
  int is_aggregate;
  const char *aggregate_name;  /* mean, median, stddev, cv ("" for iterations) */
  const char *aggregate_unit;  /* "time" or "percentage" */
  int64_t family_index, per_family_instance_index;
  int64_t repetitions, repetition_index, threads, iterations;
  double real_time, cpu_time;  /* per iteration, in time_unit */
  const char *time_unit;       /* "ns", "us", "ms", "s" */
  int error;                   /* skipped with an error */
  int skipped;                 /* skipped with a message (not an error) */
  const char *message;
  const char *label;
  size_t ncounters;
  const char *const *counter_names;
  const double *counter_values;
} gb_run;

typedef void (*gb_run_cb)(const gb_run *run, void *user);

/* Hand flags to Google Benchmark (argv[0] plus flags such as --benchmark_filter=...).
 * Returns 0, or -1 with one line in err naming the first flag it did not recognise. */
int gb_init(int argc, char **argv, char *err, size_t errlen);
/* Register fn under name. iterations > 0: that many iterations; else min_time seconds (> 0) or the
 * library default. Times are manual, in microseconds. 0 ok, -1 on failure. */
int gb_register(const char *name, gb_fn fn, void *arg, int repetitions, double min_time, long long iterations);
/* Console output while running: none, plain lines, or lines with colour codes. */
enum { GB_CONSOLE_NONE = 0, GB_CONSOLE_PLAIN = 1, GB_CONSOLE_COLOR = 2 };
/* Whether Google Benchmark's flags (argv[0] first) ask for colour: the last --benchmark_color=V, read as
 * the library reads it; "auto" or none means stdout is a terminal (and TERM is not dumb). */
int gb_color_wanted(int argc, char *const *argv);
/* Run everything registered, printing a console line per run as `console` says (GB_CONSOLE_*); each
 * finished run and aggregate goes to cb. Returns the number of runs, or -1 on failure (message in err). */
long gb_run_all(gb_run_cb cb, void *user, int console, char *err, size_t errlen);
void gb_add_context(const char *key, const char *value);
void gb_shutdown(void);
const char *gb_library_version(void);

int gb_keep_running(gb_state *st);
void gb_set_iteration_time(gb_state *st, double seconds);
void gb_counter(gb_state *st, const char *name, double value);
void gb_label(gb_state *st, const char *label);
void gb_skip_with_error(gb_state *st, const char *message);
void gb_skip_with_message(gb_state *st, const char *message); /* an error on libraries before 1.8 */
int gb_error_occurred(gb_state *st);

#ifdef __cplusplus
}
#endif

#endif
