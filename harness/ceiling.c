/* Start-up ceiling measurement. It uses the event timer, the minimum sample length and the sample count
 * of the rows, so a row that does what a ceiling does (roofline/d2d_memcpy) reads 100% of it. */
#include "ceiling.h"

#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "timer.h"

typedef struct ceiling_job {
  const km_ceiling_kernel *k; /* NULL: cudaMemcpyAsync */
  enum cudaMemcpyKind kind;
  void *dst;
  const void *src;
  size_t bytes;
  void *scratch;
  int sms;
} ceiling_job;

static cudaError_t enqueue_job(void *arg, int rep, cudaStream_t stream) {
  const ceiling_job *j = arg;
  if (!j->k) return cudaMemcpyAsync(j->dst, j->src, j->bytes, j->kind, stream);
  return j->k->launch(j->dst, j->src, j->bytes, j->scratch, j->sms, stream);
}

size_t km_ceiling_bytes(size_t l2_bytes, size_t free_bytes) {
  size_t want = 8 * l2_bytes;
  /* 8 GiB: a launch of the read kernel then lasts ~1.9 ms on an H200, so its fixed cost per launch (~7 us
   * measured: ramp-up, tail, gap) is 0.4% of it; at 1 GiB it was 3%, and rows that stream for milliseconds
   * read up to 103% of a ceiling measured over 1 GiB */
  const size_t floor_bytes = (size_t)8 << 30;
  if (want < floor_bytes) want = floor_bytes;
  size_t limit = free_bytes / 4;
  if (want > limit) want = limit;
  return want & ~(size_t)0xFFFF; /* whole 64 KiB pieces */
}

/* Median GB/s of `plan->samples` samples of the job, counting `moved` bytes per launch. */
static int time_job(const km_ceiling_plan *plan, ceiling_job *j, double moved, km_ceiling_figure *f, char *err,
                    size_t errlen) {
  enum { MAX_SAMPLES = 256 };
  double samples[MAX_SAMPLES];
  int n = plan->samples < 1 ? 1 : plan->samples > MAX_SAMPLES ? MAX_SAMPLES : plan->samples;
  km_timer t;
  if (km_timer_init(&t, plan->stream, enqueue_job, j, plan->min_sample_s, err, errlen) != 0) return -1;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) rc = km_timer_sample(&t, &samples[i], err, errlen);
  f->graph = km_timer_graph(&t);
  km_timer_destroy(&t);
  km_stats s;
  if (rc == 0 && km_stats_compute(samples, (size_t)n, &s) == 0 && s.median > 0) {
    f->gbps = moved / s.median / 1e9;
    f->cv = s.cv;
    return 0;
  }
  if (rc == 0) snprintf(err, errlen, "no valid samples");
  return -1;
}

static int check_kernel(const km_ceiling_plan *plan, ceiling_job *j, char *err, size_t errlen) {
  cudaStream_t s = plan->stream;
  cudaError_t e = cudaMemsetAsync(j->dst, 0xFF, j->bytes, s);
  if (e == cudaSuccess) e = cudaMemsetAsync(j->scratch, 0, KM_CEILING_SCRATCH_BYTES, s);
  if (e == cudaSuccess) e = enqueue_job(j, 0, s);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "launch failed: %s", cudaGetErrorString(e));
    return -1;
  }
  return j->k->check(j->dst, j->src, j->bytes, j->scratch, s, err, errlen);
}

/* The best of the declared kernels of one traffic class. */
static int measure_class(const km_ceiling_plan *plan, ceiling_job base, km_traffic cls, km_ceiling_figure *best,
                         char *err, size_t errlen) {
  char inner[512];
  for (size_t si = 0; si < plan->nsets; si++) {
    const km_ceiling_set *set = plan->sets[si];
    for (size_t ki = 0; set && ki < set->count; ki++) {
      const km_ceiling_kernel *k = &set->kernels[ki];
      if (k->traffic != KM_TRAFFIC_READ && k->traffic != KM_TRAFFIC_WRITE) {
        snprintf(err, errlen, "ceiling kernel %s: traffic must be read or write (copy is cudaMemcpyAsync)", k->name);
        return -1;
      }
      if (k->traffic != cls) continue;
      ceiling_job j = base;
      j.k = k;
      km_ceiling_figure f = {0, 0, k->name, 0};
      if (check_kernel(plan, &j, inner, sizeof inner) != 0 || time_job(plan, &j, (double)j.bytes, &f, inner, sizeof inner)) {
        snprintf(err, errlen, "ceiling kernel %s: %s", k->name, inner);
        return -1;
      }
      if (f.gbps > best->gbps) *best = f;
    }
  }
  return 0;
}

static cudaError_t fill_source(const km_ceiling_plan *plan, void *src, size_t bytes) {
  for (size_t si = 0; si < plan->nsets; si++)
    if (plan->sets[si] && plan->sets[si]->fill_random)
      return plan->sets[si]->fill_random(src, bytes, plan->seed, plan->stream);
  return cudaMemsetAsync(src, 0x5A, bytes, plan->stream);
}

/* Contiguous pinned copies of KM_CEILING_HOST_BYTES each way, bytes counted once (what crosses the link). */
static int measure_host(const km_ceiling_plan *plan, void *dev, km_ceiling_report *out, char *err, size_t errlen) {
  void *host = NULL;
  const size_t n = KM_CEILING_HOST_BYTES < plan->bytes ? KM_CEILING_HOST_BYTES : plan->bytes;
  cudaError_t e = cudaHostAlloc(&host, n, cudaHostAllocDefault);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(err, errlen, "pinned host buffer of %zu MiB: %s", n >> 20, cudaGetErrorString(e));
    return -1;
  }
  memset(host, 0x5A, n);
  ceiling_job h2d = {NULL, cudaMemcpyHostToDevice, dev, host, n, NULL, plan->sms};
  ceiling_job d2h = {NULL, cudaMemcpyDeviceToHost, host, dev, n, NULL, plan->sms};
  out->h2d = (km_ceiling_figure){0, 0, "cudaMemcpyAsync host-to-device, pinned, contiguous", 0};
  out->d2h = (km_ceiling_figure){0, 0, "cudaMemcpyAsync device-to-host, pinned, contiguous", 0};
  int rc = time_job(plan, &h2d, (double)n, &out->h2d, err, errlen);
  if (rc == 0) rc = time_job(plan, &d2h, (double)n, &out->d2h, err, errlen);
  cudaStreamSynchronize(plan->stream);
  cudaFreeHost(host);
  return rc;
}

static int measure_all(const km_ceiling_plan *plan, ceiling_job base, km_ceiling_report *out, char *err,
                       size_t errlen) {
  char inner[512];
  cudaError_t e = fill_source(plan, (void *)base.src, base.bytes);
  if (e == cudaSuccess) e = cudaStreamSynchronize(plan->stream);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "ceiling: filling the source: %s", cudaGetErrorString(e));
    return -1;
  }
  out->copy.method = "cudaMemcpyAsync device-to-device";
  if (time_job(plan, &base, 2.0 * (double)base.bytes, &out->copy, inner, sizeof inner) != 0) {
    snprintf(err, errlen, "ceiling: cudaMemcpyAsync: %s", inner);
    return -1;
  }
  if (measure_class(plan, base, KM_TRAFFIC_READ, &out->read, err, errlen) ||
      measure_class(plan, base, KM_TRAFFIC_WRITE, &out->write, err, errlen))
    return -1;
  if (plan->host_copies && measure_host(plan, base.dst, out, inner, sizeof inner) != 0) {
    snprintf(err, errlen, "ceiling: host copies: %s", inner);
    return -1;
  }
  return 0;
}

int km_ceilings_measure(const km_ceiling_plan *plan, km_ceiling_report *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->bytes = plan->bytes;
  ceiling_job base = {NULL, cudaMemcpyDeviceToDevice, NULL, NULL, plan->bytes, NULL, plan->sms};
  void *src = NULL;
  cudaError_t e = cudaMalloc(&src, plan->bytes);
  if (e == cudaSuccess) e = cudaMalloc(&base.dst, plan->bytes);
  if (e == cudaSuccess) e = cudaMalloc(&base.scratch, KM_CEILING_SCRATCH_BYTES);
  base.src = src;
  int rc = -1;
  if (e != cudaSuccess)
    snprintf(err, errlen, "ceiling: allocating 2 x %zu bytes failed: %s", plan->bytes, cudaGetErrorString(e));
  else
    rc = measure_all(plan, base, out, err, errlen);
  cudaStreamSynchronize(plan->stream);
  cudaFree(src);
  cudaFree(base.dst);
  cudaFree(base.scratch);
  out->c.copy_gbps = out->copy.gbps;
  out->c.read_gbps = out->read.gbps;
  out->c.write_gbps = out->write.gbps;
  out->c.h2d_gbps = out->h2d.gbps;
  out->c.d2h_gbps = out->d2h.gbps;
  out->c.link_gbps = plan->link_gbps;
  out->c.peak_gbps = plan->peak_gbps;
  return rc;
}

static cJSON *figure_json(const km_ceiling_figure *f) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "gbps", f->gbps);
  cJSON_AddNumberToObject(o, "cv", f->cv);
  cJSON_AddStringToObject(o, "method", f->method ? f->method : "not measured");
  cJSON_AddBoolToObject(o, "graph_replay", f->graph);
  return o;
}

cJSON *km_ceilings_json(const km_ceiling_report *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "buffer_bytes", (double)r->bytes);
  cJSON_AddStringToObject(o, "bytes_counted", "read + written, each once; host copies: bytes crossing the link");
  cJSON_AddItemToObject(o, "copy", figure_json(&r->copy));
  cJSON_AddItemToObject(o, "read", figure_json(&r->read));
  cJSON_AddItemToObject(o, "write", figure_json(&r->write));
  cJSON_AddItemToObject(o, "h2d", figure_json(&r->h2d));
  cJSON_AddItemToObject(o, "d2h", figure_json(&r->d2h));
  cJSON_AddNumberToObject(o, "theoretical_gbps", r->c.peak_gbps);
  cJSON_AddNumberToObject(o, "link_gbps", r->c.link_gbps);
  cJSON_AddStringToObject(o, "mixed_model",
                          "t = 2 min(r, w) / copy + (r - min) / read + (w - min) / write (harness/shares.h)");
  return o;
}
