/* Host-clock timing: a batch of calls between two CLOCK_MONOTONIC reads, divided by its length. */
#include "host_timer.h"

#include <stdio.h>
#include <time.h>

#include "timer.h"

double km_host_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int timed(km_host_timer *t, int count, double *seconds, char *err, size_t errlen) {
  double t0 = km_host_now_s();
  for (int i = 0; i < count; i++)
    if (t->fn(t->arg, t->rep++) != 0) {
      snprintf(err, errlen, "host call %d failed", t->rep - 1);
      return -1;
    }
  *seconds = km_host_now_s() - t0;
  return 0;
}

int km_host_timer_init(km_host_timer *t, km_host_fn fn, void *arg, double min_sample_s, char *err, size_t errlen) {
  t->fn = fn;
  t->arg = arg;
  t->rep = 0;
  t->batch = 1;
  t->shortest_sample_s = 0.0;
  const int smoke = !(min_sample_s > 0);
  double s = 0.0;
  if (timed(t, smoke ? 1 : KM_WARMUP_LAUNCHES, &s, err, errlen) != 0) return -1;
  if (smoke) return 0;
  if (timed(t, 4, &s, err, errlen) != 0) return -1;
  t->batch = km_timer_batch_for(s / 4.0, min_sample_s);
  return 0;
}

int km_host_timer_sample(km_host_timer *t, double *seconds_per_call, char *err, size_t errlen) {
  double s = 0.0;
  if (timed(t, t->batch, &s, err, errlen) != 0) return -1;
  if (t->shortest_sample_s == 0.0 || s < t->shortest_sample_s) t->shortest_sample_s = s;
  *seconds_per_call = s / t->batch;
  return 0;
}
