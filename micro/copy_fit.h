/* The copy families' latency-bandwidth fit. Its sizes are shared (offload times them as harness stages,
 * micro/offload.c; p2p with km_copy_fit_run below, which only it uses). Its declared sweep axis: bytes per
 * direction, 4 KiB .. 64 MiB in powers of 4, each point one transfer timed alone on an idle stream (what a
 * lone request pays, submission included; batched samples would hide that latency behind the next copy).
 * Past 64 MiB a copy is within 0.1% of its rate; the families' size rows up to 1 GiB show that directly. */
#ifndef KM_MICRO_COPY_FIT_H
#define KM_MICRO_COPY_FIT_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "bench.h"

enum { KM_COPY_FIT_POINTS = 8, KM_COPY_FIT_WARMUP = 2, KM_COPY_FIT_SAMPLES = 7 };
extern const size_t km_copy_fit_sizes[KM_COPY_FIT_POINTS];
#define KM_COPY_FIT_LARGEST ((size_t)64 << 20)

typedef struct km_copy_fit {
  double seconds[KM_COPY_FIT_POINTS]; /* median time of one transfer at each size */
  double alpha, beta, r2;             /* t = alpha + bytes / beta: seconds, bytes per second */
} km_copy_fit;

/* Median seconds of fn(arg) issued alone on stream s between ev[0] and ev[1] (events of s's device), after
 * warm-ups. 0 ok; -1 with the case failed. */
int km_copy_time_isolated(km_bench *b, km_enqueue_fn fn, void *arg, cudaStream_t s, cudaEvent_t ev[2],
                          double *seconds);

/* At each size: set_size(arg, size), then time fn alone; the bytes fitted are size x directions. Leaves
 * set_size(arg, KM_COPY_FIT_LARGEST). 0 ok; -1 with the case failed (a timing error, or no positive slope). */
int km_copy_fit_run(km_bench *b, km_enqueue_fn fn, void *arg, void (*set_size)(void *arg, size_t bytes),
                    double directions, cudaStream_t s, cudaEvent_t ev[2], km_copy_fit *f);

/* The points (us_4KiB .. us_64MiB, which --params stores beside the fit) and alpha_us, beta_gbps, r2. */
void km_copy_fit_counters(km_bench *b, const km_copy_fit *f);

#endif
