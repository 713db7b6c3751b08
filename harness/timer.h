/* CUDA event timing of an enqueue function: warm-up (excluded), a batch size chosen so one sample
 * lasts at least a minimum time, then samples of `batch` launches between two events. Launches shorter
 * than KM_GRAPH_BELOW_SECONDS are captured once into a CUDA graph and the graph is replayed, so the
 * host's launch rate is not what is measured. The start-up ceilings and every row use this one timer. */
#ifndef KM_TIMER_H
#define KM_TIMER_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "bench.h"

/* Warm-up launches before anything is timed: module load, first-touch and clock ramp stay out. */
#define KM_WARMUP_LAUNCHES 3
/* Upper bound on launches per sample, so a near-empty kernel cannot make a sample last minutes. */
#define KM_MAX_BATCH 4096
/* A launch shorter than this is replayed from a CUDA graph: back-to-back launches from the host space
 * kernels of a few microseconds by the launch rate (about 2-4 us per launch), not by the device. */
#define KM_GRAPH_BELOW_SECONDS 20e-6
/* The batch is sized for this much more than the minimum, so one sample that runs a little faster than
 * the calibration does not fall under the minimum. */
#define KM_BATCH_MARGIN 1.15
/* Re-sizing a batch whose sample fell under the minimum is tried this many times per sample. */
#define KM_BATCH_REGROW_TRIES 4

typedef struct km_timer {
  cudaStream_t stream;
  km_enqueue_fn fn;
  void *arg;
  int rep;          /* launches so far: passed to fn so it can rotate buffers */
  int batch;        /* launches per sample */
  int cycle;        /* launches per rotation of the input buffers: a batch is a whole number of cycles */
  double min_sample_s;
  int graph_wanted; /* the launch is short: replay it from a graph when capture works */
  int graph_failed; /* capture was refused (a call that cannot be captured): plain launches */
  cudaGraphExec_t exec;
  double shortest_sample_s; /* the shortest sample returned so far (whole batch) */
  cudaEvent_t start, stop;
} km_timer;

/* Warm up and calibrate. min_sample_s <= 0 (smoke runs): one warm-up launch, no calibration, batch 1.
 * 0 ok; -1 with the message in err (launch or event failure). */
int km_timer_init(km_timer *t, cudaStream_t stream, km_enqueue_fn fn, void *arg, double min_sample_s, char *err,
                  size_t errlen);
/* The same for an enqueue function that rotates through `cycle` copies of its input (rep % cycle): each
 * sample (and so each graph) holds whole cycles, so a replay touches every copy. */
int km_timer_init_rotating(km_timer *t, cudaStream_t stream, km_enqueue_fn fn, void *arg, double min_sample_s,
                           int cycle, char *err, size_t errlen);
/* One sample: seconds per launch. A sample under the minimum is discarded and the batch grown (up to
 * KM_MAX_BATCH), so every returned sample lasts >= the minimum unless the batch is at its bound.
 * 0 ok; -1 with the message in err. */
int km_timer_sample(km_timer *t, double *seconds_per_launch, char *err, size_t errlen);
/* 1 when samples are graph replays. */
int km_timer_graph(const km_timer *t);
void km_timer_destroy(km_timer *t);
/* Launches per sample for a single-launch time t1 (seconds): ceil(margin x min / t1), within
 * [1, KM_MAX_BATCH]. */
int km_timer_batch_for(double t1, double min_sample_s);

#endif
