/* km_bench: one case's run. It owns the case's buffers, records failure or skip, and turns CUDA event
 * samples into Google Benchmark iterations and counters. Knows nothing of what the case computes. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gbench_shim.h"
#include "host_timer.h"
#include "run_ctx.h"
#include "stats.h"
#include "timer.h"

enum { KM_MISMATCHES_SHOWN = 10 };

typedef struct km_deferred {
  void (*fn)(void *);
  void *arg;
} km_deferred;

struct km_bench {
  km_run_ctx *ctx;
  const km_case *c;
  gb_state *st;
  int failed, skipped, measured, verified;
  char message[768];
  km_deferred *deferred;
  size_t ndeferred, cap_deferred;
  uint64_t seeds_drawn;
  size_t mismatches_shown;
};

typedef struct km_registered {
  km_run_ctx *ctx;
  const km_case *c;
} km_registered;

/* ---- settings */
static int host_only(const km_bench *b) { return (b->c->flags & KM_CASE_HOST_ONLY) != 0; }
int km_bench_quick(const km_bench *b) { return b->ctx->opts->quick; }
int km_bench_verify_enabled(const km_bench *b) { return b->ctx->opts->verify; }
const km_model *km_bench_model(const km_bench *b) { return b->ctx->model; }
cudaStream_t km_bench_stream(const km_bench *b) { return b->ctx->stream; }
const struct cudaDeviceProp *km_bench_device(const km_bench *b) { return &b->ctx->prop; }
int km_bench_device_id(const km_bench *b) { return b->ctx->device; }
double km_bench_ceiling_gbps(const km_bench *b) { return b->ctx->ceiling_gbps; }
double km_bench_link_gbps(const km_bench *b) { return b->ctx->link_gbps; }
size_t km_bench_l2_bytes(const km_bench *b) { return (size_t)b->ctx->prop.l2CacheSize; }
struct km_topo *km_bench_topo(km_bench *b) { return b->ctx->topo; }

size_t km_bench_ceiling_bytes(const km_bench *b) { return b->ctx->ceiling_bytes; }
int km_bench_smoke(const km_bench *b) { return b->ctx->opts->smoke; }

size_t km_bench_big_bytes(const km_bench *b) {
  if (km_bench_smoke(b)) return KM_SMOKE_BYTES;
  size_t big = 8 * km_bench_l2_bytes(b);
  const size_t floor_bytes = (size_t)64 << 20;
  return big > floor_bytes ? big : floor_bytes;
}

int km_bench_rotation(const km_bench *b, size_t bytes) {
  const int max_copies = 64;
  if (bytes == 0 || km_bench_smoke(b)) return 1;
  size_t want = 4 * km_bench_l2_bytes(b);
  size_t n = (want + bytes - 1) / bytes;
  if (n < 1) n = 1;
  return n > (size_t)max_copies ? max_copies : (int)n;
}

static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t km_bench_seed(km_bench *b) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return mix64(b->ctx->seed_base ^ mix64((uint64_t)ts.tv_nsec + (++b->seeds_drawn << 32)));
}

/* ---- outcome */
static void set_message(km_bench *b, const char *prefix, const char *fmt, va_list ap) {
  int n = snprintf(b->message, sizeof b->message, "%s", prefix);
  vsnprintf(b->message + n, sizeof b->message - (size_t)n, fmt, ap);
}

void km_bench_fail(km_bench *b, const char *fmt, ...) {
  if (b->failed) return; /* the first failure is the cause; later ones follow from it */
  va_list ap;
  va_start(ap, fmt);
  set_message(b, "error: ", fmt, ap);
  va_end(ap);
  b->failed = 1;
}

void km_bench_skip(km_bench *b, const char *fmt, ...) {
  if (b->failed || b->skipped) return;
  va_list ap;
  va_start(ap, fmt);
  set_message(b, "skipped: ", fmt, ap);
  va_end(ap);
  b->skipped = 1;
}

int km_bench_ok(const km_bench *b) { return !b->failed && !b->skipped; }

void km_bench_mismatch(km_bench *b, const char *fmt, ...) {
  if (b->mismatches_shown++ >= KM_MISMATCHES_SHOWN) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  %s: mismatch: ", b->c->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int km_bench_verified(km_bench *b, size_t nbad, size_t n, const char *tolerance) {
  if (nbad == 0 && n > 0) {
    b->verified = 1;
    return 1;
  }
  if (n == 0)
    km_bench_fail(b, "verification checked nothing (tolerance %s)", tolerance);
  else
    km_bench_fail(b, "verification failed: %zu of %zu values outside tolerance (%s)", nbad, n, tolerance);
  return 0;
}

/* ---- memory */
void km_bench_defer(km_bench *b, void (*fn)(void *), void *arg) {
  if (b->ndeferred == b->cap_deferred) {
    size_t cap = b->cap_deferred ? 2 * b->cap_deferred : 16;
    km_deferred *d = realloc(b->deferred, cap * sizeof *d);
    if (!d) {
      fn(arg); /* cannot keep it: release now rather than leak; the case fails */
      km_bench_fail(b, "out of host memory tracking allocations");
      return;
    }
    b->deferred = d;
    b->cap_deferred = cap;
  }
  b->deferred[b->ndeferred++] = (km_deferred){fn, arg};
}

static void free_device(void *p) { cudaFree(p); }
static void free_pinned(void *p) { cudaFreeHost(p); }

void *km_bench_device_alloc(km_bench *b, size_t bytes) {
  if (!km_bench_ok(b)) return NULL;
  size_t free_b = 0, total_b = 0;
  const size_t margin = (size_t)256 << 20; /* left for the runtime, CUB temp storage and the ceiling buffers */
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && bytes + margin > free_b) {
    km_bench_skip(b, "needs %.2f GiB of device memory, %.2f GiB free", bytes / 1073741824.0, free_b / 1073741824.0);
    return NULL;
  }
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    km_bench_skip(b, "cudaMalloc of %.2f GiB failed: out of device memory", bytes / 1073741824.0);
    return NULL;
  }
  if (e != cudaSuccess) {
    km_bench_fail(b, "cudaMalloc(%zu) failed: %s", bytes, cudaGetErrorString(e));
    return NULL;
  }
  km_bench_defer(b, free_device, p);
  return p;
}

void *km_bench_host_alloc(km_bench *b, size_t bytes) {
  if (!km_bench_ok(b)) return NULL;
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) {
    km_bench_skip(b, "needs %.2f GiB of host memory", bytes / 1073741824.0);
    return NULL;
  }
  km_bench_defer(b, free, p);
  return p;
}

void *km_bench_pinned_alloc(km_bench *b, size_t bytes) {
  if (!km_bench_ok(b)) return NULL;
  void *p = NULL;
  /* the run's thread is bound to the GPU's nearest NUMA node (main.c), so first touch places it there */
  cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped);
  if (e != cudaSuccess) {
    cudaGetLastError();
    km_bench_skip(b, "cudaHostAlloc of %.2f GiB failed: %s", bytes / 1073741824.0, cudaGetErrorString(e));
    return NULL;
  }
  km_bench_defer(b, free_pinned, p);
  return p;
}

static void release_all(km_bench *b) {
  if (!host_only(b)) cudaStreamSynchronize(b->ctx->stream);
  for (size_t i = b->ndeferred; i-- > 0;) b->deferred[i].fn(b->deferred[i].arg);
  free(b->deferred);
  b->deferred = NULL;
  b->ndeferred = b->cap_deferred = 0;
}

/* ---- measuring */
void km_bench_counter(km_bench *b, const char *name, double value) { gb_counter(b->st, name, value); }

void km_bench_label(km_bench *b, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  gb_label(b->st, buf);
}

static void set_rate_counters(km_bench *b, const km_stats *s, const km_work *w) {
  double sec = s->median;
  double bytes = w->bytes_read + w->bytes_written;
  double gbps = bytes / sec / 1e9;
  gb_counter(b->st, "median_us", sec * 1e6);
  gb_counter(b->st, "cv", s->cv);
  gb_counter(b->st, "noisy", km_stats_noisy(s) ? 1.0 : 0.0);
  gb_counter(b->st, "samples", (double)s->n);
  gb_counter(b->st, "bytes", bytes);
  gb_counter(b->st, "GB/s", gbps);
  if (b->ctx->ceiling_gbps > 0 && !host_only(b)) /* a host row is no share of a device ceiling */
    gb_counter(b->st, "pct_of_ceiling", 100.0 * gbps / b->ctx->ceiling_gbps);
  if (w->host_link && b->ctx->link_gbps > 0) gb_counter(b->st, "pct_of_link", 100.0 * gbps / b->ctx->link_gbps);
  if (w->tokens > 0) {
    double layers = w->layers > 0 ? w->layers : 1.0;
    gb_counter(b->st, "tokens_per_second", w->tokens / sec);
    gb_counter(b->st, "ns_per_token_layer", sec * 1e9 / (w->tokens * layers));
    gb_counter(b->st, "bytes_per_token", bytes / w->tokens);
  }
  gb_counter(b->st, "verified", b->verified ? 1.0 : 0.0);
}

/* Both clocks: a timer that gives one sample (seconds per instance) at a time. */
typedef int (*sample_fn)(void *timer, double *seconds, char *err, size_t errlen);

static int measure_allowed(km_bench *b) {
  if (!km_bench_ok(b)) return 0;
  if (b->measured) {
    km_bench_fail(b, "km_bench_measure called twice in one case");
    return 0;
  }
  if (!b->verified && km_bench_verify_enabled(b)) {
    km_bench_fail(b, "case timed before it was verified");
    return 0;
  }
  b->measured = 1;
  return 1;
}

/* Samples while Google Benchmark keeps the loop running; the counters from their statistics. */
static double measure_samples(km_bench *b, sample_fn sample, void *timer, int batch, const km_work *work) {
  char err[256];
  size_t cap = 64, n = 0;
  double *samples = malloc(cap * sizeof *samples);
  while (samples && gb_keep_running(b->st)) {
    double sec = 0.0;
    if (sample(timer, &sec, err, sizeof err) != 0) {
      km_bench_fail(b, "%s", err);
      gb_skip_with_error(b->st, b->message);
      break;
    }
    gb_set_iteration_time(b->st, sec);
    if (n == cap) {
      double *grown = realloc(samples, 2 * cap * sizeof *grown);
      if (!grown) break;
      samples = grown;
      cap *= 2;
    }
    samples[n++] = sec;
  }
  km_stats s;
  double median = 0.0;
  if (!b->failed && samples && km_stats_compute(samples, n, &s) == 0) {
    set_rate_counters(b, &s, work);
    gb_counter(b->st, "batch", (double)batch);
    median = s.median;
  } else if (!b->failed) {
    km_bench_fail(b, "no timing samples were taken");
  }
  free(samples);
  return median;
}

static int cuda_sample(void *timer, double *seconds, char *err, size_t errlen) {
  return km_timer_sample(timer, seconds, err, errlen);
}

static int host_sample(void *timer, double *seconds, char *err, size_t errlen) {
  return km_host_timer_sample(timer, seconds, err, errlen);
}

static double min_sample_seconds(const km_bench *b) { return km_bench_smoke(b) ? 0.0 : KM_MIN_SAMPLE_SECONDS; }

double km_bench_measure(km_bench *b, km_enqueue_fn fn, void *arg, const km_work *work) {
  if (!measure_allowed(b)) return 0.0;
  km_timer t;
  char err[256];
  if (km_timer_init(&t, b->ctx->stream, fn, arg, min_sample_seconds(b), err, sizeof err) != 0) {
    km_bench_fail(b, "%s", err);
    return 0.0;
  }
  double median = measure_samples(b, cuda_sample, &t, t.batch, work);
  km_timer_destroy(&t);
  return median;
}

double km_bench_time_extra(km_bench *b, km_enqueue_fn fn, void *arg, int samples) {
  if (!km_bench_ok(b) || samples < 1) return 0.0;
  km_timer t;
  char err[256];
  double *s = malloc((size_t)samples * sizeof *s);
  if (!s) {
    km_bench_fail(b, "out of host memory");
    return 0.0;
  }
  int n = 0;
  if (km_timer_init(&t, b->ctx->stream, fn, arg, KM_MIN_SAMPLE_SECONDS, err, sizeof err) == 0) {
    while (n < samples && km_timer_sample(&t, &s[n], err, sizeof err) == 0) n++;
    km_timer_destroy(&t);
  }
  double median = n == samples ? km_median_of(s, (size_t)n) : 0.0;
  if (n < samples) km_bench_fail(b, "%s", err);
  free(s);
  return median;
}

double km_bench_measure_host(km_bench *b, km_host_fn fn, void *arg, const km_work *work) {
  if (!measure_allowed(b)) return 0.0;
  km_host_timer t;
  char err[256];
  if (km_host_timer_init(&t, fn, arg, min_sample_seconds(b), err, sizeof err) != 0) {
    km_bench_fail(b, "%s", err);
    return 0.0;
  }
  return measure_samples(b, host_sample, &t, t.batch, work);
}

/* ---- the trampoline Google Benchmark calls */
static void run_case(gb_state *st, void *arg) {
  km_registered *r = arg;
  km_bench b;
  memset(&b, 0, sizeof b);
  b.ctx = r->ctx;
  b.c = r->c;
  b.st = st;
  r->c->run(&b, r->c->params);
  if (!host_only(&b)) { /* a host-only case may run where there is no device */
    cudaError_t sticky = cudaStreamSynchronize(b.ctx->stream);
    if (sticky == cudaSuccess) sticky = cudaGetLastError();
    if (sticky != cudaSuccess) km_bench_fail(&b, "CUDA error after the case: %s", cudaGetErrorString(sticky));
  }
  if (!b.failed && !b.skipped && !b.measured) km_bench_fail(&b, "the case returned without measuring");
  if (b.failed) {
    fprintf(stderr, "%s: %s\n", r->c->name, b.message);
    if (!gb_error_occurred(st)) gb_skip_with_error(st, b.message);
    b.ctx->errors++;
  } else if (b.skipped) {
    gb_skip_with_message(st, b.message);
    b.ctx->skips++;
  }
  release_all(&b);
}

int km_bench_register(km_run_ctx *ctx, const km_case *c) {
  km_registered *r = malloc(sizeof *r); /* lives as long as the registration: km_bench_registrations_free */
  void **grown = realloc(ctx->registrations, (ctx->nregistrations + 1) * sizeof *grown);
  if (!r || !grown) {
    free(r);
    if (grown) ctx->registrations = grown;
    return -1;
  }
  ctx->registrations = grown;
  ctx->registrations[ctx->nregistrations++] = r;
  r->ctx = ctx;
  r->c = c;
  long long iterations = ctx->opts->min_time > 0 ? 0 : ctx->samples;
  return gb_register(c->name, run_case, r, ctx->opts->repetitions, ctx->opts->min_time, iterations);
}

void km_bench_registrations_free(km_run_ctx *ctx) {
  for (size_t i = 0; i < ctx->nregistrations; i++) free(ctx->registrations[i]);
  free(ctx->registrations);
  ctx->registrations = NULL;
  ctx->nregistrations = 0;
}
