/* Isolated-transfer timing and the latency-bandwidth fit over the shared sizes (see copy_fit.h). */
#include "copy_fit.h"

#include "check.h"
#include "fit.h"
#include "stats.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

const size_t km_copy_fit_sizes[KM_COPY_FIT_POINTS] = {4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB,
                                                      1 * MIB, 4 * MIB,  16 * MIB, 64 * MIB};
static const char *const point_names[KM_COPY_FIT_POINTS] = {"us_4KiB", "us_16KiB", "us_64KiB", "us_256KiB",
                                                            "us_1MiB", "us_4MiB",  "us_16MiB", "us_64MiB"};

int km_copy_time_isolated(km_bench *b, km_enqueue_fn fn, void *arg, cudaStream_t s, cudaEvent_t ev[2],
                          double *seconds) {
  double t[KM_COPY_FIT_SAMPLES];
  for (int k = 0; k < KM_COPY_FIT_WARMUP + KM_COPY_FIT_SAMPLES; k++) {
    float ms = 0.0f;
    KM_CUDA_OR_FAIL(b, cudaEventRecord(ev[0], s));
    KM_CUDA_OR_FAIL(b, fn(arg, k, s));
    KM_CUDA_OR_FAIL(b, cudaEventRecord(ev[1], s));
    KM_CUDA_OR_FAIL(b, cudaEventSynchronize(ev[1]));
    KM_CUDA_OR_FAIL(b, cudaEventElapsedTime(&ms, ev[0], ev[1]));
    if (k >= KM_COPY_FIT_WARMUP) t[k - KM_COPY_FIT_WARMUP] = ms * 1e-3;
  }
  *seconds = km_median_of(t, KM_COPY_FIT_SAMPLES);
  return 0;
}

int km_copy_fit_run(km_bench *b, km_enqueue_fn fn, void *arg, void (*set_size)(void *arg, size_t bytes),
                    double directions, cudaStream_t s, cudaEvent_t ev[2], km_copy_fit *f) {
  double x[KM_COPY_FIT_POINTS], slope = 0.0;
  int rc = 0;
  for (int i = 0; rc == 0 && i < KM_COPY_FIT_POINTS; i++) {
    set_size(arg, km_copy_fit_sizes[i]);
    rc = km_copy_time_isolated(b, fn, arg, s, ev, &f->seconds[i]);
    x[i] = (double)km_copy_fit_sizes[i] * directions;
  }
  set_size(arg, KM_COPY_FIT_LARGEST);
  if (rc != 0) return -1;
  if (km_fit_linear(x, f->seconds, KM_COPY_FIT_POINTS, &f->alpha, &slope, &f->r2) != 0 || !(slope > 0)) {
    km_bench_fail(b, "latency-bandwidth fit failed (slope %g s/byte)", slope);
    return -1;
  }
  f->beta = 1.0 / slope;
  return 0;
}

void km_copy_fit_counters(km_bench *b, const km_copy_fit *f) {
  for (int i = 0; i < KM_COPY_FIT_POINTS; i++) km_bench_counter(b, point_names[i], f->seconds[i] * 1e6);
  km_bench_counter(b, "alpha_us", f->alpha * 1e6);
  km_bench_counter(b, "beta_gbps", f->beta / 1e9);
  km_bench_counter(b, "r2", f->r2);
}
