/* CUDA event timing. Events bracket a batch of launches on one stream, so what is measured is device
 * time for the batch, divided by its length; the host never sits inside the timed region. */
#include "timer.h"

#include <math.h>
#include <stdio.h>

int km_timer_batch_for(double t1, double min_sample_s) {
  if (!(t1 > 0)) return KM_MAX_BATCH;
  double n = ceil(min_sample_s / t1);
  if (n < 1) n = 1;
  return n > KM_MAX_BATCH ? KM_MAX_BATCH : (int)n;
}

static int enqueue_batch(km_timer *t, int count, char *err, size_t errlen) {
  for (int i = 0; i < count; i++) {
    cudaError_t e = t->fn(t->arg, t->rep++, t->stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) {
      snprintf(err, errlen, "launch %d failed: %s", t->rep - 1, cudaGetErrorString(e));
      return -1;
    }
  }
  return 0;
}

static int timed(km_timer *t, int count, double *seconds, char *err, size_t errlen) {
  cudaError_t e = cudaEventRecord(t->start, t->stream);
  if (e == cudaSuccess && enqueue_batch(t, count, err, errlen) != 0) return -1;
  if (e == cudaSuccess) e = cudaEventRecord(t->stop, t->stream);
  if (e == cudaSuccess) e = cudaEventSynchronize(t->stop);
  float ms = 0.0f;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, t->start, t->stop);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "timing failed: %s", cudaGetErrorString(e));
    return -1;
  }
  *seconds = (double)ms * 1e-3;
  return 0;
}

int km_timer_init(km_timer *t, cudaStream_t stream, km_enqueue_fn fn, void *arg, double min_sample_s, char *err,
                  size_t errlen) {
  t->stream = stream;
  t->fn = fn;
  t->arg = arg;
  t->rep = 0;
  t->batch = 1;
  t->start = t->stop = NULL;
  cudaError_t e = cudaEventCreate(&t->start);
  if (e == cudaSuccess) e = cudaEventCreate(&t->stop);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "cudaEventCreate failed: %s", cudaGetErrorString(e));
    km_timer_destroy(t);
    return -1;
  }
  const int smoke = !(min_sample_s > 0);
  if (enqueue_batch(t, smoke ? 1 : KM_WARMUP_LAUNCHES, err, errlen) != 0) goto fail;
  e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "warm-up failed: %s", cudaGetErrorString(e));
    goto fail;
  }
  if (smoke) return 0;
  /* calibrate on a batch of 4 so a sub-microsecond launch still gives a usable first estimate */
  double four = 0.0;
  if (timed(t, 4, &four, err, errlen) != 0) goto fail;
  t->batch = km_timer_batch_for(four / 4.0, min_sample_s);
  return 0;
fail: /* the caller only destroys a timer that started */
  km_timer_destroy(t);
  return -1;
}

int km_timer_sample(km_timer *t, double *seconds_per_launch, char *err, size_t errlen) {
  double s = 0.0;
  if (timed(t, t->batch, &s, err, errlen) != 0) return -1;
  *seconds_per_launch = s / t->batch;
  return 0;
}

void km_timer_destroy(km_timer *t) {
  if (t->start) cudaEventDestroy(t->start);
  if (t->stop) cudaEventDestroy(t->stop);
  t->start = t->stop = NULL;
}
