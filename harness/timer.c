/* CUDA event timing. Events bracket a batch of launches (or one replay of a graph holding the batch) on
 * one stream, so what is measured is device time for the batch, divided by its length; the host never
 * sits inside the timed region. */
#include "timer.h"

#include <math.h>
#include <stdio.h>

int km_timer_batch_for(double t1, double min_sample_s) {
  if (!(t1 > 0)) return KM_MAX_BATCH;
  double n = ceil(KM_BATCH_MARGIN * min_sample_s / t1);
  if (n < 1) n = 1;
  return n > KM_MAX_BATCH ? KM_MAX_BATCH : (int)n;
}

static int launch_error(km_timer *t, cudaError_t e, char *err, size_t errlen) {
  snprintf(err, errlen, "launch %d failed: %s", t->rep - 1, cudaGetErrorString(e));
  return -1;
}

static int enqueue_batch(km_timer *t, int count, char *err, size_t errlen) {
  for (int i = 0; i < count; i++) {
    cudaError_t e = t->fn(t->arg, t->rep++, t->stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) return launch_error(t, e, err, errlen);
  }
  return 0;
}

static void drop_graph(km_timer *t) {
  if (t->exec) cudaGraphExecDestroy(t->exec);
  t->exec = NULL;
}

/* Capture `batch` launches into a graph. A launch that cannot be captured (a host-synchronous call, a
 * pageable copy) makes the capture fail: the timer then keeps plain launches, which is not an error. */
static int build_graph(km_timer *t, char *err, size_t errlen) {
  drop_graph(t);
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal);
  int first = t->rep;
  for (int i = 0; e == cudaSuccess && i < t->batch; i++) e = t->fn(t->arg, first + i, t->stream);
  cudaError_t end = cudaStreamEndCapture(t->stream, &g);
  if (e == cudaSuccess) e = end;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&t->exec, g, 0);
  if (g) cudaGraphDestroy(g);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* the refusal is not sticky: clear it and launch plainly */
    t->exec = NULL;
    t->graph_failed = 1;
    return 0;
  }
  t->rep = first + t->batch;
  /* one replay outside the timed region uploads the graph */
  e = cudaGraphLaunch(t->exec, t->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(t->stream);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "graph warm-up failed: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

static int enqueue_sample(km_timer *t, int count, char *err, size_t errlen) {
  if (!t->exec) return enqueue_batch(t, count, err, errlen);
  cudaError_t e = cudaGraphLaunch(t->exec, t->stream);
  return e == cudaSuccess ? 0 : launch_error(t, e, err, errlen);
}

static int timed(km_timer *t, int count, double *seconds, char *err, size_t errlen) {
  cudaError_t e = cudaEventRecord(t->start, t->stream);
  if (e == cudaSuccess && enqueue_sample(t, count, err, errlen) != 0) return -1;
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

/* A new batch for launches measured at `per_launch` seconds; the graph follows it. */
static int resize(km_timer *t, double per_launch, char *err, size_t errlen) {
  t->batch = km_timer_batch_for(per_launch, t->min_sample_s);
  if (!t->graph_wanted || t->graph_failed) return 0; /* plain launches go on rotating from where they are */
  /* a graph replays the same launches: make them whole rotations, so every copy is touched */
  int cycles = (t->batch + t->cycle - 1) / t->cycle;
  if (cycles * t->cycle > KM_MAX_BATCH && t->cycle <= KM_MAX_BATCH) cycles = KM_MAX_BATCH / t->cycle;
  t->batch = cycles * t->cycle;
  return build_graph(t, err, errlen);
}

int km_timer_init(km_timer *t, cudaStream_t stream, km_enqueue_fn fn, void *arg, double min_sample_s, char *err,
                  size_t errlen) {
  return km_timer_init_rotating(t, stream, fn, arg, min_sample_s, 1, err, errlen);
}

int km_timer_init_rotating(km_timer *t, cudaStream_t stream, km_enqueue_fn fn, void *arg, double min_sample_s,
                           int cycle, char *err, size_t errlen) {
  t->stream = stream;
  t->cycle = cycle > 0 ? cycle : 1;
  t->fn = fn;
  t->arg = arg;
  t->rep = 0;
  t->batch = 1;
  t->min_sample_s = min_sample_s;
  t->graph_wanted = t->graph_failed = 0;
  t->exec = NULL;
  t->shortest_sample_s = INFINITY;
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
  t->graph_wanted = four / 4.0 < KM_GRAPH_BELOW_SECONDS;
  if (resize(t, four / 4.0, err, errlen) != 0) goto fail;
  return 0;
fail: /* the caller only destroys a timer that started */
  km_timer_destroy(t);
  return -1;
}

int km_timer_sample(km_timer *t, double *seconds_per_launch, char *err, size_t errlen) {
  double s = 0.0;
  for (int tries = 0;; tries++) {
    if (timed(t, t->batch, &s, err, errlen) != 0) return -1;
    if (s >= t->min_sample_s || t->batch >= KM_MAX_BATCH || tries == KM_BATCH_REGROW_TRIES) break;
    /* faster than calibrated (a graph replay, or clocks that rose): discard, grow the batch, retake */
    if (resize(t, s / t->batch, err, errlen) != 0) return -1;
  }
  if (s < t->shortest_sample_s) t->shortest_sample_s = s;
  *seconds_per_launch = s / t->batch;
  return 0;
}

int km_timer_graph(const km_timer *t) { return t->exec != NULL; }

void km_timer_destroy(km_timer *t) {
  drop_graph(t);
  if (t->start) cudaEventDestroy(t->start);
  if (t->stop) cudaEventDestroy(t->stop);
  t->start = t->stop = NULL;
}
