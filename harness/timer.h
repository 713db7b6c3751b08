/* CUDA event timing of an enqueue function: warm-up (excluded), a batch size chosen so one sample
 * lasts at least a minimum time, then samples of `batch` back-to-back launches between two events. */
#ifndef KM_TIMER_H
#define KM_TIMER_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "bench.h"

/* Warm-up launches before anything is timed: module load, first-touch and clock ramp stay out. */
#define KM_WARMUP_LAUNCHES 3
/* Upper bound on launches per sample, so a near-empty kernel cannot make a sample last minutes. */
#define KM_MAX_BATCH 4096
/* The ceiling copy moves >= 1 GiB per launch; a sample of 2 ms keeps it to one or two copies. */
#define KM_MIN_SAMPLE_SECONDS_CEILING 2e-3

typedef struct km_timer {
  cudaStream_t stream;
  km_enqueue_fn fn;
  void *arg;
  int rep;          /* launches so far: passed to fn so it can rotate buffers */
  int batch;        /* launches per sample */
  cudaEvent_t start, stop;
} km_timer;

/* Warm up and calibrate. min_sample_s <= 0 (smoke runs): one warm-up launch, no calibration, batch 1.
 * 0 ok; -1 with the message in err (launch or event failure). */
int km_timer_init(km_timer *t, cudaStream_t stream, km_enqueue_fn fn, void *arg, double min_sample_s, char *err,
                  size_t errlen);
/* One sample: seconds per launch. 0 ok; -1 with the message in err. */
int km_timer_sample(km_timer *t, double *seconds_per_launch, char *err, size_t errlen);
void km_timer_destroy(km_timer *t);
/* Launches per sample for a single-launch time t1 (seconds): ceil(min / t1), within [1, KM_MAX_BATCH]. */
int km_timer_batch_for(double t1, double min_sample_s);

#endif
