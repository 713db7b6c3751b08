/* Start-up ceiling measurement. It uses the same event timer as every case, so the ceiling and the
 * rows that are a share of it are timed the same way. */
#include "ceiling.h"

#include <stdio.h>

#include "stats.h"
#include "timer.h"

enum { KM_CEILING_SAMPLES = 15 };

typedef struct copy_args {
  void *dst;
  const void *src;
  size_t bytes;
} copy_args;

static cudaError_t enqueue_copy(void *arg, int rep, cudaStream_t stream) {
  const copy_args *a = arg;
  return cudaMemcpyAsync(a->dst, a->src, a->bytes, cudaMemcpyDeviceToDevice, stream);
}

size_t km_ceiling_bytes(size_t l2_bytes, size_t free_bytes) {
  size_t want = 8 * l2_bytes;
  const size_t gib = (size_t)1 << 30;
  if (want < gib) want = gib;
  size_t limit = free_bytes / 4;
  if (want > limit) want = limit;
  return want & ~(size_t)0xFFFF; /* whole 64 KiB pieces */
}

int km_ceiling_measure(cudaStream_t stream, size_t bytes, double *gbps, double *cv, char *err, size_t errlen) {
  copy_args a = {NULL, NULL, bytes};
  void *src = NULL;
  cudaError_t e = cudaMalloc(&src, a.bytes);
  if (e == cudaSuccess) e = cudaMalloc(&a.dst, a.bytes);
  if (e == cudaSuccess) e = cudaMemsetAsync(src, 0x5A, a.bytes, stream);
  a.src = src;
  int rc = -1;
  if (e != cudaSuccess) {
    snprintf(err, errlen, "ceiling: allocating 2 x %zu bytes failed: %s", a.bytes, cudaGetErrorString(e));
  } else {
    km_timer t;
    double samples[KM_CEILING_SAMPLES];
    if (km_timer_init(&t, stream, enqueue_copy, &a, KM_MIN_SAMPLE_SECONDS_CEILING, err, errlen) == 0) {
      rc = 0;
      for (int i = 0; i < KM_CEILING_SAMPLES && rc == 0; i++) rc = km_timer_sample(&t, &samples[i], err, errlen);
      km_timer_destroy(&t);
    }
    km_stats s;
    if (rc == 0 && km_stats_compute(samples, KM_CEILING_SAMPLES, &s) == 0) {
      *gbps = 2.0 * (double)a.bytes / s.median / 1e9;
      *cv = s.cv;
    } else if (rc == 0) {
      snprintf(err, errlen, "ceiling: no valid samples");
      rc = -1;
    }
  }
  cudaStreamSynchronize(stream);
  cudaFree(src);
  cudaFree(a.dst);
  return rc;
}
