/* Host-clock timing of CPU work (cases flagged KM_CASE_HOST_ONLY), the way timer.c times launches:
 * warm-up calls excluded, a batch of calls per sample so each sample lasts at least a minimum time,
 * CLOCK_MONOTONIC around the batch. */
#ifndef KM_HOST_TIMER_H
#define KM_HOST_TIMER_H

#include <stddef.h>

#include "bench.h"

typedef struct km_host_timer {
  km_host_fn fn;
  void *arg;
  int rep;   /* calls so far: passed to fn */
  int batch; /* calls per sample */
  double shortest_sample_s; /* the shortest sample taken so far (whole batch) */
} km_host_timer;

/* CLOCK_MONOTONIC in seconds. */
double km_host_now_s(void);

/* Warm up and calibrate; min_sample_s <= 0 (smoke runs): one warm-up call, batch 1.
 * 0 ok; -1 with the message in err (a call failed). */
int km_host_timer_init(km_host_timer *t, km_host_fn fn, void *arg, double min_sample_s, char *err, size_t errlen);
/* One sample: seconds per call. 0 ok; -1 with the message in err. */
int km_host_timer_sample(km_host_timer *t, double *seconds_per_call, char *err, size_t errlen);

#endif
