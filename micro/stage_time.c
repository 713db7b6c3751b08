/* Stage times with their spread (see stage_time.h): the harness's timer takes the samples, its
 * statistics give median, CV and the noisy flag. */
#include "stage_time.h"

#include <stdio.h>

#include "run_ctx.h"
#include "stats.h"
#include "timer.h"

/* Samples per stage: what --quick takes per row, enough for a median and a CV. */
#define KM_STAGE_SAMPLES KM_SAMPLES_QUICK
/* Sampled stages are warmed up by this many untimed samples (first-touch, clock ramp). */
#define KM_STAGE_WARMUP 2

static int stage_samples(const km_bench *b) { return km_bench_smoke(b) ? 1 : KM_STAGE_SAMPLES; }

/* The counters of one stage from its samples; returns the median. */
static double report(km_bench *b, const char *name, const double *s, int n) {
  km_stats st;
  if (km_stats_compute(s, (size_t)n, &st) != 0) {
    km_bench_fail(b, "stage %s: no usable samples", name);
    return 0.0;
  }
  char key[96];
  km_bench_counter(b, name, st.median * 1e6);
  snprintf(key, sizeof key, "%s_cv", name);
  km_bench_counter(b, key, st.cv);
  snprintf(key, sizeof key, "%s_noisy", name);
  km_bench_counter(b, key, km_stats_noisy(&st) ? 1.0 : 0.0);
  return st.median;
}

double km_stage_time(km_bench *b, const char *name, km_enqueue_fn fn, void *arg, int isolated) {
  if (!km_bench_ok(b)) return 0.0;
  km_timer t;
  char err[256];
  double s[KM_STAGE_SAMPLES];
  const int n = stage_samples(b);
  const double min_sample = isolated || km_bench_smoke(b) ? 0.0 : KM_MIN_SAMPLE_SECONDS;
  if (km_timer_init(&t, km_bench_stream(b), fn, arg, min_sample, err, sizeof err) != 0) {
    km_bench_fail(b, "stage %s: %s", name, err);
    return 0.0;
  }
  int got = 0;
  while (got < n && km_timer_sample(&t, &s[got], err, sizeof err) == 0) ++got;
  km_timer_destroy(&t);
  if (got < n) {
    km_bench_fail(b, "stage %s: %s", name, err);
    return 0.0;
  }
  return report(b, name, s, n);
}

double km_stage_sampled(km_bench *b, const char *name, km_stage_sample_fn fn, void *arg) {
  if (!km_bench_ok(b)) return 0.0;
  double s[KM_STAGE_SAMPLES];
  const int n = stage_samples(b), warm = km_bench_smoke(b) ? 0 : KM_STAGE_WARMUP;
  for (int k = 0; k < warm + n; k++)
    if (fn(b, arg, &s[k < warm ? 0 : k - warm]) != 0) return 0.0;
  return report(b, name, s, n);
}
