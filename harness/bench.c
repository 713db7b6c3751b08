/* km_bench: one case's run. It owns the case's buffers, records failure or skip, and turns CUDA event
 * samples into Google Benchmark iterations and counters: GB/s, shares of the start-up ceilings, the L2
 * check, and the GPU's state around the samples. Knows nothing of what the case computes. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gbench_shim.h"
#include "host_timer.h"
#include "interrupt.h"
#include "nvml.h"
#include "row_figures.h"
#include "run_ctx.h"
#include "stats.h"
#include "timer.h"

enum { KM_MISMATCHES_SHOWN = 10 };

typedef struct km_deferred {
  void (*fn)(void *);
  void *arg;
  size_t bytes; /* a device block's size (0 for everything else) */
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
  double rotated_bytes; /* the largest copies x bytes a km_bench_rotation call handed out */
  int rotation;         /* the largest copy count it handed out */
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
const km_ceilings *km_bench_ceilings(const km_bench *b) { return &b->ctx->ceilings.c; }
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

int km_bench_rotation(km_bench *b, size_t bytes) {
  if (bytes == 0 || km_bench_smoke(b)) return 1;
  size_t want = 4 * km_bench_l2_bytes(b);
  size_t n = (want + bytes - 1) / bytes;
  if (n < 1) n = 1;
  int copies = n > (size_t)KM_MAX_ROTATION ? KM_MAX_ROTATION : (int)n;
  if (copies * (double)bytes > b->rotated_bytes) b->rotated_bytes = copies * (double)bytes;
  if (copies > b->rotation) b->rotation = copies;
  return copies;
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

uint64_t km_bench_run_seed(const km_bench *b) { return mix64(b->ctx->seed_base); }

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
  b->deferred[b->ndeferred++] = (km_deferred){fn, arg, 0};
}

static void free_device(void *p) { cudaFree(p); }
static void free_pinned(void *p) { cudaFreeHost(p); }

static void freed_already(void *p) { (void)p; }

/* The device bytes the case holds now (its blocks not yet freed). */
static size_t device_bytes_held(const km_bench *b) {
  size_t held = 0;
  for (size_t i = 0; i < b->ndeferred; i++)
    if (b->deferred[i].fn == free_device) held += b->deferred[i].bytes;
  return held;
}

enum { KM_DEVICE_MARGIN_MIB = 256 }; /* left for the runtime, CUB temp storage and the ceiling buffers */

/* 1 where `bytes` more fit in free device memory beside the margin, 0 where they do not, -1 where the free memory is
 * not known; *free_b: the free bytes (0 when not known). */
static int device_room(size_t bytes, size_t *free_b) {
  size_t total_b = 0;
  *free_b = 0;
  if (cudaMemGetInfo(free_b, &total_b) != cudaSuccess) return -1;
  return bytes + ((size_t)KM_DEVICE_MARGIN_MIB << 20) <= *free_b;
}

int km_bench_device_fits(const km_bench *b, size_t bytes) {
  (void)b;
  size_t free_b;
  return device_room(bytes, &free_b) == 1;
}

void km_bench_device_free(km_bench *b, void *p) {
  for (size_t i = b->ndeferred; i-- > 0;)
    if (b->deferred[i].fn == free_device && b->deferred[i].arg == p) {
      cudaFree(p);
      b->deferred[i].fn = freed_already;
      return;
    }
  km_bench_fail(b, "km_bench_device_free: %p is not a block of this case's", p);
}

void *km_bench_device_alloc(km_bench *b, size_t bytes) {
  if (!km_bench_ok(b)) return NULL;
  size_t free_b;
  if (device_room(bytes, &free_b) == 0) {
    /* the failed block and, where the case holds others, what it needs in all */
    const size_t held = device_bytes_held(b);
    if (held)
      km_bench_skip(b, "needs %.2f GiB of device memory (%.2f GiB more beside the %.2f GiB it holds), %.2f GiB free",
                    (held + bytes) / 1073741824.0, bytes / 1073741824.0, held / 1073741824.0, free_b / 1073741824.0);
    else
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
  if (b->ndeferred && b->deferred[b->ndeferred - 1].arg == p) b->deferred[b->ndeferred - 1].bytes = bytes;
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
  char buf[1536]; /* a label may carry a breakdown (the attn stamps rows: ~800 characters) */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  gb_label(b->st, buf);
}

static void emit_counter(void *user, const char *name, double value) { gb_counter(user, name, value); }

/* The GPU's state around the samples: the lower clocks, the higher temperature, the power at the end,
 * and the throttle reasons seen at either end or violation time that grew in between. */
static void set_state_counters(km_bench *b, const km_gpu_state *before, const km_gpu_state *after) {
  if (!before->valid || !after->valid) return;
  gb_counter(b->st, "gpu_sm_mhz", before->sm_mhz < after->sm_mhz ? before->sm_mhz : after->sm_mhz);
  gb_counter(b->st, "gpu_mem_mhz", before->mem_mhz < after->mem_mhz ? before->mem_mhz : after->mem_mhz);
  gb_counter(b->st, "gpu_temp_c", before->temp_c > after->temp_c ? before->temp_c : after->temp_c);
  gb_counter(b->st, "gpu_power_w", after->power_w);
  gb_counter(b->st, "throttle_reasons", (double)km_throttle_reasons(before, after));
  gb_counter(b->st, "throttled", km_throttled(before, after) ? 1.0 : 0.0);
}

/* How the samples were taken, for the row's counters: the batch, graph replay, the shortest sample. */
typedef struct sample_shape {
  int batch, graph;
  double shortest_sample_s;
} sample_shape;

/* A host-only row is no share of a device ceiling and never L2-resident on the device. */
static void set_row_counters(km_bench *b, const km_stats *s, const sample_shape *shape, const km_work *w) {
  km_row_figures f;
  const int host = host_only(b);
  km_row_figures_compute(w, s->median, b->rotated_bytes, &b->ctx->ceilings.c, host ? 0 : km_bench_l2_bytes(b),
                         host ? 0 : b->ctx->shares, &f);
  km_row_figures_emit(&f, emit_counter, b->st);
  gb_counter(b->st, "cv", s->cv);
  gb_counter(b->st, "noisy", km_stats_noisy(s) ? 1.0 : 0.0);
  gb_counter(b->st, "samples", (double)s->n);
  gb_counter(b->st, "batch", (double)shape->batch);
  gb_counter(b->st, "graph", shape->graph ? 1.0 : 0.0);
  gb_counter(b->st, "min_sample_us", shape->shortest_sample_s * 1e6);
  gb_counter(b->st, "verified", b->verified ? 1.0 : 0.0);
}

/* Samples appended to a growing array; 0 ok, -1 out of memory. */
typedef struct sample_list {
  double *v;
  size_t n, cap;
} sample_list;

static int sample_push(sample_list *l, double x) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    double *grown = realloc(l->v, cap * sizeof *grown);
    if (!grown) return -1;
    l->v = grown;
    l->cap = cap;
  }
  l->v[l->n++] = x;
  return 0;
}

static int interrupted(km_bench *b) {
  if (km_interrupt_count() == 0) return 0;
  km_bench_skip(b, "%s", KM_INTERRUPTED_MESSAGE);
  gb_skip_with_message(b->st, b->message);
  return 1;
}

/* Both clocks: a timer that gives one sample (seconds per instance) at a time, and how it takes them. */
typedef struct sampler {
  int (*sample)(void *timer, double *seconds, char *err, size_t errlen);
  void (*shape)(const void *timer, sample_shape *out);
  void *timer;
} sampler;

static int cuda_sample(void *timer, double *seconds, char *err, size_t errlen) {
  return km_timer_sample(timer, seconds, err, errlen);
}

static void cuda_shape(const void *timer, sample_shape *out) {
  const km_timer *t = timer;
  *out = (sample_shape){t->batch, km_timer_graph(t), t->shortest_sample_s};
}

static int host_sample(void *timer, double *seconds, char *err, size_t errlen) {
  return km_host_timer_sample(timer, seconds, err, errlen);
}

static void host_shape(const void *timer, sample_shape *out) {
  const km_host_timer *t = timer;
  *out = (sample_shape){t->batch, 0, t->shortest_sample_s};
}

static double min_sample_seconds(const km_bench *b) { return km_bench_smoke(b) ? 0.0 : KM_MIN_SAMPLE_SECONDS; }

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

/* Samples while Google Benchmark keeps the loop running (the GPU's state sampled around them on a device
 * row); the row's counters from their statistics. Returns the median (0 on failure). */
static double measure_samples(km_bench *b, const sampler *sm, const km_work *work) {
  char err[256];
  sample_list l = {NULL, 0, 0};
  km_gpu_state before, after;
  const int device = !host_only(b);
  if (device) km_nvml_sample(b->ctx->nvml, &before);
  while (gb_keep_running(b->st)) {
    double sec = 0.0;
    if (interrupted(b)) break;
    if (sm->sample(sm->timer, &sec, err, sizeof err) != 0) {
      km_bench_fail(b, "%s", err);
      gb_skip_with_error(b->st, b->message);
      break;
    }
    gb_set_iteration_time(b->st, sec);
    if (sample_push(&l, sec) != 0) {
      km_bench_fail(b, "out of host memory keeping samples");
      gb_skip_with_error(b->st, b->message);
      break;
    }
  }
  if (device) km_nvml_sample(b->ctx->nvml, &after);
  km_stats s;
  double median = 0.0;
  if (km_bench_ok(b) && km_stats_compute(l.v, l.n, &s) == 0) {
    sample_shape shape;
    sm->shape(sm->timer, &shape);
    set_row_counters(b, &s, &shape, work);
    if (device) set_state_counters(b, &before, &after);
    median = s.median;
  } else if (km_bench_ok(b)) {
    km_bench_fail(b, "no timing samples were taken");
  }
  free(l.v);
  return median;
}

double km_bench_measure(km_bench *b, km_enqueue_fn fn, void *arg, const km_work *work) {
  if (!measure_allowed(b)) return 0.0;
  km_timer t;
  char err[256];
  if (km_timer_init_rotating(&t, b->ctx->stream, fn, arg, min_sample_seconds(b), b->rotation, err, sizeof err) != 0) {
    km_bench_fail(b, "%s", err);
    return 0.0;
  }
  const sampler sm = {cuda_sample, cuda_shape, &t};
  double median = measure_samples(b, &sm, work);
  km_timer_destroy(&t);
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
  const sampler sm = {host_sample, host_shape, &t};
  return measure_samples(b, &sm, work);
}

/* ---- stages */
static int stage_name_ok(const char *name) {
  if (!name || !name[0]) return 0;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) return 0;
  return 1;
}

/* One launch per sample from an idle stream: what a lone call costs, submission included. */
static int time_isolated(km_bench *b, km_enqueue_fn fn, void *arg, sample_list *l, int n, char *err, size_t errlen) {
  cudaStream_t s = b->ctx->stream;
  cudaEvent_t ev[2] = {NULL, NULL};
  cudaError_t e = cudaEventCreate(&ev[0]);
  if (e == cudaSuccess) e = cudaEventCreate(&ev[1]);
  for (int k = -KM_WARMUP_LAUNCHES; e == cudaSuccess && k < n; k++) {
    float ms = 0.0f;
    e = cudaStreamSynchronize(s);
    if (e == cudaSuccess) e = cudaEventRecord(ev[0], s);
    if (e == cudaSuccess) e = fn(arg, k < 0 ? 0 : k, s);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaEventRecord(ev[1], s);
    if (e == cudaSuccess) e = cudaEventSynchronize(ev[1]);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, ev[0], ev[1]);
    if (e == cudaSuccess && k >= 0 && sample_push(l, ms * 1e-3) != 0) e = cudaErrorMemoryAllocation;
  }
  for (int i = 0; i < 2; i++)
    if (ev[i]) cudaEventDestroy(ev[i]);
  if (e == cudaSuccess) return 0;
  snprintf(err, errlen, "%s", cudaGetErrorString(e));
  return -1;
}

/* n samples from a calibrated timer of either clock. */
static int take_samples(const sampler *sm, sample_list *l, int n, char *err, size_t errlen) {
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    double sec = 0.0;
    rc = sm->sample(sm->timer, &sec, err, errlen);
    if (rc == 0 && sample_push(l, sec) != 0) {
      snprintf(err, errlen, "out of host memory keeping samples");
      rc = -1;
    }
  }
  return rc;
}

static int time_batched(km_bench *b, km_enqueue_fn fn, void *arg, sample_list *l, int n, char *err, size_t errlen) {
  km_timer t;
  if (km_timer_init_rotating(&t, b->ctx->stream, fn, arg, min_sample_seconds(b), b->rotation, err, errlen) != 0)
    return -1;
  const sampler sm = {cuda_sample, cuda_shape, &t};
  int rc = take_samples(&sm, l, n, err, errlen);
  km_timer_destroy(&t);
  return rc;
}

/* May stage `name` be timed now? Fails the case when not. */
static int stage_allowed(km_bench *b, const char *name) {
  if (!km_bench_ok(b)) return 0;
  if (!stage_name_ok(name)) {
    km_bench_fail(b, "stage name '%s': expected letters, digits and '_'", name ? name : "(null)");
    return 0;
  }
  if (!b->verified && km_bench_verify_enabled(b)) {
    km_bench_fail(b, "stage %s timed before the case was verified", name);
    return 0;
  }
  return 1;
}

/* A stage's counters from its samples (rc: how taking them went, err its reason); frees the samples. */
static int stage_report(km_bench *b, const char *name, sample_list *l, int rc, char *err, size_t errlen,
                        const km_work *work, km_stage *out) {
  km_stats s;
  if (rc == 0 && km_stats_compute(l->v, l->n, &s) != 0) {
    snprintf(err, errlen, "no valid samples");
    rc = -1;
  }
  free(l->v);
  if (rc != 0) {
    if (km_bench_ok(b)) km_bench_fail(b, "stage %s: %s", name, err);
    return -1;
  }
  char key[128];
  const double bytes = work ? work->bytes_read + work->bytes_written : 0.0;
  snprintf(key, sizeof key, "%s_us", name);
  gb_counter(b->st, key, s.median * 1e6);
  snprintf(key, sizeof key, "%s_cv", name);
  gb_counter(b->st, key, s.cv);
  snprintf(key, sizeof key, "%s_noisy", name);
  gb_counter(b->st, key, km_stats_noisy(&s) ? 1.0 : 0.0);
  if (bytes > 0 && s.median > 0) {
    snprintf(key, sizeof key, "%s_bytes", name);
    gb_counter(b->st, key, bytes);
    snprintf(key, sizeof key, "%s_gbps", name);
    gb_counter(b->st, key, bytes / s.median / 1e9);
  }
  if (out) *out = (km_stage){s.median, s.cv, s.n, km_stats_noisy(&s)};
  return 0;
}

static int stage_sample_count(const km_bench *b) { return b->ctx->samples > 0 ? b->ctx->samples : 1; }

int km_bench_measure_stage(km_bench *b, const char *name, km_enqueue_fn fn, void *arg, const km_work *work,
                           km_stage_mode mode, km_stage *out) {
  if (!stage_allowed(b, name)) return -1;
  sample_list l = {NULL, 0, 0};
  char err[256] = "";
  const int n = stage_sample_count(b);
  int rc = mode == KM_STAGE_ISOLATED ? time_isolated(b, fn, arg, &l, n, err, sizeof err)
                                     : time_batched(b, fn, arg, &l, n, err, sizeof err);
  return stage_report(b, name, &l, rc, err, sizeof err, work, out);
}

int km_bench_measure_stage_sampled(km_bench *b, const char *name, km_sample_fn fn, void *arg, const km_work *work,
                                   km_stage *out) {
  if (!stage_allowed(b, name)) return -1;
  sample_list l = {NULL, 0, 0};
  char err[256] = "";
  const int n = stage_sample_count(b);
  cudaError_t e = cudaSuccess;
  for (int k = -KM_WARMUP_LAUNCHES; e == cudaSuccess && k < n; k++) {
    double sec = 0.0;
    e = cudaStreamSynchronize(b->ctx->stream);
    if (e == cudaSuccess) e = fn(arg, b->ctx->stream, &sec);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess && k >= 0 && sample_push(&l, sec) != 0) e = cudaErrorMemoryAllocation;
  }
  if (e != cudaSuccess) snprintf(err, sizeof err, "%s", cudaGetErrorString(e));
  return stage_report(b, name, &l, e == cudaSuccess ? 0 : -1, err, sizeof err, work, out);
}

int km_bench_measure_host_stage(km_bench *b, const char *name, km_host_fn fn, void *arg, const km_work *work,
                                km_stage *out) {
  if (!stage_allowed(b, name)) return -1;
  sample_list l = {NULL, 0, 0};
  char err[256] = "";
  km_host_timer t;
  int rc = km_host_timer_init(&t, fn, arg, min_sample_seconds(b), err, sizeof err);
  if (rc == 0) {
    const sampler sm = {host_sample, host_shape, &t};
    rc = take_samples(&sm, &l, stage_sample_count(b), err, sizeof err);
  }
  return stage_report(b, name, &l, rc, err, sizeof err, work, out);
}

double km_bench_stage_us(km_bench *b, const char *name, km_enqueue_fn fn, void *arg) {
  km_work w;
  memset(&w, 0, sizeof w);
  km_stage st;
  return km_bench_measure_stage(b, name, fn, arg, &w, KM_STAGE_BATCHED, &st) == 0 ? st.median_s * 1e6 : 0.0;
}

/* ---- the trampoline Google Benchmark calls */
static void run_case(gb_state *st, void *arg) {
  km_registered *r = arg;
  km_bench b;
  const double t0 = km_host_now_s();
  memset(&b, 0, sizeof b);
  b.ctx = r->ctx;
  b.c = r->c;
  b.st = st;
  if (!interrupted(&b)) r->c->run(&b, r->c->params);
  if (!host_only(&b)) { /* a host-only case may run where there is no device */
    cudaError_t sticky = cudaStreamSynchronize(b.ctx->stream);
    if (sticky == cudaSuccess) sticky = cudaGetLastError();
    if (sticky != cudaSuccess) km_bench_fail(&b, "CUDA error after the case: %s", cudaGetErrorString(sticky));
  }
  if (!b.failed && !b.skipped && !b.measured) km_bench_fail(&b, "the case returned without measuring");
  /* what the case cost the run, set-up and checks included (where a full run's time goes) */
  if (!b.failed && !b.skipped) gb_counter(st, "case_wall_s", km_host_now_s() - t0);
  if (b.failed) {
    fprintf(stderr, "%s: %s\n", r->c->name, b.message);
    if (!gb_error_occurred(st)) gb_skip_with_error(st, b.message);
    b.ctx->errors++;
  } else if (b.skipped) {
    gb_skip_with_message(st, b.message);
    if (strstr(b.message, KM_INTERRUPTED_MESSAGE))
      b.ctx->not_run++;
    else
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
