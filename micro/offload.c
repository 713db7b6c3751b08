/* Offload family: host<->device copies for KV offloading. Contiguous H2D, D2H and both at once from
 * pinned, registered and pageable memory with a latency-bandwidth fit per series; scattered KV blocks
 * moved four ways; every host buffer placed with hwloc on the GPU's nearest (and farthest) NUMA node. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "bytes_table.h"
#include "check.h"
#include "copy_fit.h"
#include "fit.h"
#include "host_mem.h"
#include "micro_tables.h"
#include "offload_baselines.h"
#include "pattern.h"
#include "offload_copy.h"
#include "topo.h"
#include "verify.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* Why no buffer rotation or L2 flush here: every case is bounded by PCIe (~55 GB/s), about 80x below
 * what L2 or HBM serve, so where the device side of a copy lives cannot change its time. */

typedef enum off_dir { OFF_H2D = 0, OFF_D2H, OFF_BIDIR, OFF_DIR_COUNT } off_dir;
typedef enum off_method { OFF_PER_BLOCK = 0, OFF_BATCH, OFF_STAGING, OFF_MAPPED, OFF_METHOD_COUNT } off_method;
typedef enum off_place { OFF_NEAR = 0, OFF_FAR } off_place;

static const char *const method_names[OFF_METHOD_COUNT] = {"memcpy_per_block", "batch_async", "staging",
                                                           "sm_mapped"};

typedef struct off_contig {
  off_dir dir;
  km_host_kind mem;
  off_place place;
  size_t bytes;  /* per direction */
  int per_token; /* report the --model shape's reload cost per token */
} off_contig;

typedef struct off_fit {
  off_dir dir;
  km_host_kind mem;
} off_fit;

typedef struct off_scatter {
  off_dir dir; /* OFF_H2D (reload) or OFF_D2H (offload) */
  off_method method;
  off_place place;
  size_t block_bytes;
  size_t nblocks;
  int per_token;
} off_scatter;

/* ---------------------------------------------------------------- pattern fill and bitwise check */

/* ---------------------------------------------------------------- placement and host buffers */

static void appendf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

/* Bind the thread next to the GPU and choose the node for `place`, describing it in `where`.
 * Returns the node's os index, -1 for no placement (no topology), -2 when the case is skipped. */
static int pick_node(km_bench *b, off_place place, char *where, size_t len) {
  struct km_topo *t = km_bench_topo(b);
  where[0] = '\0';
  if (!t) {
    if (place == OFF_FAR) {
      km_bench_skip(b, "no hwloc topology: no far NUMA node to repeat on");
      return -2;
    }
    snprintf(where, len, "no hwloc topology: host memory not placed, thread not bound");
    return -1;
  }
  char err[160] = "";
  int bound = km_host_bind_thread(t, err, sizeof err);
  int near = km_topo_gpu_near_node(t), far = km_topo_gpu_far_node(t);
  if (place == OFF_FAR && (km_topo_numa_count(t) < 2 || far < 0)) {
    km_bench_skip(b, "single NUMA node: no far node to repeat on");
    return -2;
  }
  int node = place == OFF_FAR ? far : near;
  if (node < 0) {
    snprintf(where, len, "the GPU's NUMA node is unknown: host memory not placed");
    return -1;
  }
  char cpus[64];
  km_topo_cpuset_string(t, cpus, sizeof cpus);
  snprintf(where, len, "%s node %d, thread on cpus %s", place == OFF_FAR ? "far" : "near", node,
           bound == 0 ? cpus : "unbound");
  if (km_topo_numa_count(t) < 2) appendf(where, len, ", single NUMA node");
  if (bound < 0) appendf(where, len, " (%s)", err);
  return node;
}

static void release_host_buf(void *p) {
  km_host_free(p);
  free(p);
}

/* A host buffer freed when the case ends; its placement goes into `where` when it is not as asked. */
static void *host_buf(km_bench *b, km_host_kind kind, int node, size_t bytes, char *where, size_t wlen) {
  if (!km_bench_ok(b)) return NULL;
  km_host_buf *h = calloc(1, sizeof *h);
  char err[200];
  if (!h || km_host_alloc(km_bench_topo(b), kind, node, bytes, h, err, sizeof err) != 0) {
    km_bench_skip(b, "%s", h ? err : "out of host memory");
    free(h);
    return NULL;
  }
  km_bench_defer(b, release_host_buf, h);
  /* said once per case: every buffer of a case is placed the same way */
  if (h->node_wanted >= 0 && h->node_found != h->node_wanted && !strstr(where, "pages")) {
    if (h->node_found < 0)
      appendf(where, wlen, ", pages' node unverified");
    else
      appendf(where, wlen, ", pages found on node %d", h->node_found);
  }
  return h->ptr;
}

/* A host-link row counts the bytes that cross PCIe, once: the harness divides (read + written) by the
 * link speed for pct_of_link, and the link speed and every published H2D/D2H rate count a copied byte
 * once, so counting the device-side write as well would double every figure. */
static km_work link_work(double bytes, off_dir dir) {
  km_work w;
  memset(&w, 0, sizeof w);
  w.bytes_read = bytes;
  w.host_link = 1;
  w.link_dir = dir == OFF_H2D ? KM_LINK_H2D : dir == OFF_D2H ? KM_LINK_D2H : KM_LINK_BOTH;
  return w;
}

/* K+V bytes of one token over all layers of the --model shape, in bf16: what a reload moves per token. */
static double model_bytes_per_token(km_bench *b) {
  const km_model *m = km_bench_model(b);
  return m ? km_model_kv_bytes_per_token(m, 2) : 0.0;
}

static void set_tokens(km_bench *b, km_work *w) {
  double bpt = model_bytes_per_token(b);
  const km_model *m = km_bench_model(b);
  if (bpt <= 0) return;
  w->tokens = w->bytes_read / bpt;
  w->layers = m && m->num_layers > 0 ? m->num_layers : 0;
}

static void report_per_token(km_bench *b, double bytes, double seconds) {
  double bpt = model_bytes_per_token(b);
  if (bpt > 0 && bytes > 0 && seconds > 0) km_bench_counter(b, "us_per_token", bpt * seconds / bytes * 1e6);
  /* the byte table's offload row takes its reload cost from the best of these host-to-device rates */
  if (bytes > 0 && seconds > 0) km_bench_counter(b, "reload_gbps", bytes / seconds / 1e9);
}

static void destroy_stream(void *p) { cudaStreamDestroy((cudaStream_t)p); }
static void destroy_event(void *p) { cudaEventDestroy((cudaEvent_t)p); }

static int make_event(km_bench *b, cudaEvent_t *ev, unsigned flags) {
  KM_CUDA_OR_FAIL(b, cudaEventCreateWithFlags(ev, flags));
  km_bench_defer(b, destroy_event, *ev);
  return 0;
}

/* ---------------------------------------------------------------- contiguous copies */

typedef struct contig_ctx {
  off_dir dir;
  size_t bytes;   /* per direction; the fit case changes it between sizes */
  size_t cap;     /* bytes allocated per buffer (the largest size) */
  void *host[2];  /* [0] H2D source, [1] D2H destination */
  void *dev[2];   /* [0] H2D destination, [1] D2H source */
  cudaStream_t side;        /* bidirectional: the D2H half runs here */
  cudaEvent_t fork, join;   /* bidirectional: side starts after, and the bench stream waits for, it */
} contig_ctx;

static cudaError_t copy_h2d(contig_ctx *c, cudaStream_t s) {
  return cudaMemcpyAsync(c->dev[0], c->host[0], c->bytes, cudaMemcpyHostToDevice, s);
}

static cudaError_t copy_d2h(contig_ctx *c, cudaStream_t s) {
  return cudaMemcpyAsync(c->host[1], c->dev[1], c->bytes, cudaMemcpyDeviceToHost, s);
}

/* Both directions at once. The D2H half runs on a second stream forked from and joined back to the
 * bench stream, so the harness's two events on the bench stream bracket both halves. */
static cudaError_t copy_both(contig_ctx *c, cudaStream_t s, cudaEvent_t h2d_done, cudaEvent_t d2h_done) {
  cudaError_t e = cudaEventRecord(c->fork, s);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(c->side, c->fork, 0);
  if (e == cudaSuccess) e = copy_h2d(c, s);
  if (e == cudaSuccess && h2d_done) e = cudaEventRecord(h2d_done, s);
  if (e == cudaSuccess) e = copy_d2h(c, c->side);
  if (e == cudaSuccess && d2h_done) e = cudaEventRecord(d2h_done, c->side);
  if (e == cudaSuccess) e = cudaEventRecord(c->join, c->side);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(s, c->join, 0);
  return e;
}

static cudaError_t enqueue_contig(void *arg, int rep, cudaStream_t s) {
  contig_ctx *c = arg;
  switch (c->dir) {
  case OFF_H2D: return copy_h2d(c, s);
  case OFF_D2H: return copy_d2h(c, s);
  default: return copy_both(c, s, NULL, NULL);
  }
}

static int contig_setup(km_bench *b, off_dir dir, km_host_kind mem, int node, size_t bytes, contig_ctx *c,
                        char *where, size_t wlen) {
  memset(c, 0, sizeof *c);
  c->dir = dir;
  c->bytes = c->cap = bytes;
  for (int k = 0; k < 2; k++) {
    if ((k == 0 && dir == OFF_D2H) || (k == 1 && dir == OFF_H2D)) continue;
    c->host[k] = host_buf(b, mem, node, bytes, where, wlen);
    c->dev[k] = km_bench_device_alloc(b, bytes);
    if (!c->host[k] || !c->dev[k]) return -1;
  }
  if (dir != OFF_BIDIR) return 0;
  KM_CUDA_OR_FAIL(b, cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking));
  km_bench_defer(b, destroy_stream, c->side);
  if (make_event(b, &c->fork, cudaEventDisableTiming) || make_event(b, &c->join, cudaEventDisableTiming)) return -1;
  return 0;
}

/* Run one instance of c->bytes on fresh patterns, the whole destination buffers poisoned; when verifying,
 * add to k the copied bytes compared bitwise on the CPU and the rest of each destination, which must still
 * be poison. A D2H pattern starts at a different word, so swapped buffers cannot pass. */
static int contig_check(km_bench *b, contig_ctx *c, km_check *k) {
  cudaStream_t s = km_bench_stream(b);
  const uint64_t seed = km_bench_seed(b), d2h_first = 1ull << 40;
  const int h2d = c->dir != OFF_D2H, d2h = c->dir != OFF_H2D;
  const size_t n = c->bytes, rest = c->cap - c->bytes;
  if (h2d) {
    km_pattern_fill(c->host[0], n, seed, 0);
    KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->dev[0], 0xFF, c->cap, s));
  }
  if (d2h) {
    km_pattern_fill(c->host[1], n, seed, d2h_first);
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->dev[1], c->host[1], n, cudaMemcpyHostToDevice, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
    memset(c->host[1], 0xFF, c->cap);
  }
  KM_CUDA_OR_FAIL(b, enqueue_contig(c, 0, s));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  if (!km_bench_verify_enabled(b)) return 0;
  if (d2h) {
    km_check_add(k, km_pattern_check(b, c->host[1], n, seed, d2h_first, "d2h host"), n / 8);
    km_check_add(k, km_poison_check(b, (unsigned char *)c->host[1] + n, rest, "d2h host past the copy"), rest / 8);
  }
  if (h2d) {
    memset(c->host[0], 0xFF, c->cap); /* so only the device's bytes can pass the check */
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->host[0], c->dev[0], c->cap, cudaMemcpyDeviceToHost, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
    km_check_add(k, km_pattern_check(b, c->host[0], n, seed, 0, "h2d device"), n / 8);
    km_check_add(k, km_poison_check(b, (unsigned char *)c->host[0] + n, rest, "h2d device past the copy"), rest / 8);
  }
  return km_bench_ok(b) ? 0 : -1;
}

#define CONTIG_TOLERANCE "bitwise (8-byte words), the rest of each destination untouched"

/* One direction of a bidirectional copy, timed from the pair's start event to that direction's end:
 * the harness's events on the bench stream only see the pair's total. */
typedef struct bidir_direction {
  contig_ctx *c;
  int d2h; /* which end to time */
  cudaEvent_t start, h2d_done, d2h_done;
} bidir_direction;

static cudaError_t sample_direction(void *arg, cudaStream_t s, double *seconds) {
  bidir_direction *x = arg;
  float ms = 0.0f;
  cudaError_t e = cudaEventRecord(x->start, s);
  if (e == cudaSuccess) e = copy_both(x->c, s, x->h2d_done, x->d2h_done);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, x->start, x->d2h ? x->d2h_done : x->h2d_done);
  *seconds = ms * 1e-3;
  return e;
}

/* Stages h2d and d2h (counters h2d_us, h2d_gbps, ...): each direction's bytes over its own time. */
static void bidir_directions(km_bench *b, contig_ctx *c) {
  bidir_direction x = {c, 0, NULL, NULL, NULL};
  if (make_event(b, &x.start, cudaEventDefault) || make_event(b, &x.h2d_done, cudaEventDefault) ||
      make_event(b, &x.d2h_done, cudaEventDefault))
    return;
  km_work w = link_work((double)c->bytes, OFF_H2D);
  if (km_bench_measure_stage_sampled(b, "h2d", sample_direction, &x, &w, NULL) != 0) return;
  x.d2h = 1;
  w = link_work((double)c->bytes, OFF_D2H);
  km_bench_measure_stage_sampled(b, "d2h", sample_direction, &x, &w, NULL);
}

static void run_contig(km_bench *b, const void *params) {
  const off_contig *p = params;
  char where[200];
  int node = pick_node(b, p->place, where, sizeof where);
  if (node == -2) return;
  contig_ctx c;
  km_check k;
  if (contig_setup(b, p->dir, p->mem, node, p->bytes, &c, where, sizeof where) != 0 || km_check_init(&k, b) != 0) return;
  if (contig_check(b, &c, &k) != 0 || (km_bench_verify_enabled(b) && !km_check_done(&k, CONTIG_TOLERANCE))) return;
  const double link_bytes = (double)p->bytes * (p->dir == OFF_BIDIR ? 2 : 1);
  km_work w = link_work(link_bytes, p->dir);
  if (p->per_token) set_tokens(b, &w);
  double t = km_bench_measure(b, enqueue_contig, &c, &w);
  if (t <= 0) return;
  if (p->dir == OFF_BIDIR) {
    km_bench_counter(b, "sum_gbps", link_bytes / t / 1e9);
    bidir_directions(b, &c);
  }
  if (p->per_token) report_per_token(b, link_bytes, t);
  km_bench_label(b, "%s", where);
}

/* ---------------------------------------------------------------- latency-bandwidth fit per series */

/* The fit's sizes are the copy families' declared axis (copy_fit.h: 4 KiB .. 64 MiB in powers of 4; past
 * 64 MiB a copy is within 0.1% of the link rate, and the sweep rows up to 1 GiB show that directly). */
enum { KM_OFFLOAD_FIT_POINTS = KM_COPY_FIT_POINTS };
static const size_t *const fit_bytes = km_copy_fit_sizes;
/* Stage names of the fit's points: each size is timed as a stage (counters copy_4KiB_us, _bytes, ...),
 * and the FIT rows declare these stages as their series, so --params exports the isolated-copy fit. */
static const char *const fit_stage_names[KM_OFFLOAD_FIT_POINTS + 1] = {
    "copy_4KiB", "copy_16KiB", "copy_64KiB", "copy_256KiB", "copy_1MiB", "copy_4MiB", "copy_16MiB", "copy_64MiB", NULL};

/* Time each fit size as an isolated stage (one copy issued on an idle stream: what a lone reload
 * costs, host-side submission included; batched samples would hide that latency behind the next copy)
 * and fit t = alpha + bytes / beta (bytes crossing the link). 0 ok, -1 failed. */
static int fit_series(km_bench *b, contig_ctx *c, double y[KM_OFFLOAD_FIT_POINTS], double *alpha, double *beta,
                      double *r2) {
  double x[KM_OFFLOAD_FIT_POINTS];
  const size_t keep = c->bytes;
  for (int i = 0; i < KM_OFFLOAD_FIT_POINTS; i++) {
    c->bytes = fit_bytes[i];
    x[i] = (double)fit_bytes[i] * (c->dir == OFF_BIDIR ? 2 : 1);
    km_work w = link_work(x[i], c->dir);
    km_stage st;
    if (km_bench_measure_stage(b, fit_stage_names[i], enqueue_contig, c, &w, KM_STAGE_ISOLATED, &st) != 0) return -1;
    y[i] = st.median_s;
  }
  c->bytes = keep;
  double slope = 0.0;
  if (km_fit_linear(x, y, KM_OFFLOAD_FIT_POINTS, alpha, &slope, r2) != 0 || !(slope > 0)) {
    km_bench_fail(b, "latency-bandwidth fit failed (slope %g s/byte)", slope);
    return -1;
  }
  *beta = 1.0 / slope;
  return 0;
}

static void run_fit(km_bench *b, const void *params) {
  const off_fit *p = params;
  char where[200];
  int node = pick_node(b, OFF_NEAR, where, sizeof where);
  const size_t largest = fit_bytes[KM_OFFLOAD_FIT_POINTS - 1];
  contig_ctx c;
  km_check k;
  if (contig_setup(b, p->dir, p->mem, node, largest, &c, where, sizeof where) != 0 || km_check_init(&k, b) != 0) return;
  for (int i = 0; i < KM_OFFLOAD_FIT_POINTS; i++) { /* every size timed, the row's (the largest) last */
    c.bytes = fit_bytes[i];
    if (contig_check(b, &c, &k) != 0) return;
  }
  if (km_bench_verify_enabled(b) && !km_check_done(&k, CONTIG_TOLERANCE)) return;
  double alpha = 0.0, beta = 0.0, r2 = 0.0, y[KM_OFFLOAD_FIT_POINTS];
  if (fit_series(b, &c, y, &alpha, &beta, &r2) != 0) return;
  km_work w = link_work((double)largest * (p->dir == OFF_BIDIR ? 2 : 1), p->dir);
  if (km_bench_measure(b, enqueue_contig, &c, &w) <= 0) return;
  km_bench_counter(b, "alpha_us", alpha * 1e6);
  km_bench_counter(b, "beta_gbps", beta / 1e9);
  km_bench_counter(b, "r2", r2);
  km_bench_label(b, "t = %.2f us + bytes / %.2f GB/s (r2 %.4f, one copy each, 4KiB..64MiB); %s", alpha * 1e6,
                 beta / 1e9, r2, where);
}

/* ---------------------------------------------------------------- scattered KV blocks */

/* The pool holds twice the moved blocks, so the block table is a random subset in random order and
 * the untouched half guards against stray writes (it must still hold its poison after an H2D). */
enum { KM_OFFLOAD_POOL_FACTOR = 2 };

typedef struct scatter_ctx {
  off_dir dir;
  off_method method;
  size_t n, bs, pool_blocks;
  int sms;                /* the block kernels' persistent grid fills these SMs */
  unsigned char *pool;    /* device: pool_blocks * bs */
  unsigned char *staging; /* device: n * bs (staging method) */
  unsigned char *host;    /* pinned, mapped: n * bs, block i of the moved run */
  void *host_dev;         /* host's device address (mapped method) */
  int32_t *perm;          /* host: a permutation of the pool; the first n are the block table */
  int32_t *ids_dev;       /* device copy of the block table */
  void **dsts;            /* per-block lists (per-block and batch methods) */
  const void **srcs;
  size_t *sizes;
} scatter_ctx;

static cudaError_t stage_in(scatter_ctx *c, cudaStream_t s) {
  cudaError_t e = cudaMemcpyAsync(c->staging, c->host, c->n * c->bs, cudaMemcpyHostToDevice, s);
  return e != cudaSuccess ? e : km_offload_scatter_blocks(c->pool, c->staging, c->ids_dev, c->n, c->bs, c->sms, s);
}

static cudaError_t stage_out(scatter_ctx *c, cudaStream_t s) {
  cudaError_t e = km_offload_gather_blocks(c->staging, c->pool, c->ids_dev, c->n, c->bs, c->sms, s);
  return e != cudaSuccess ? e : cudaMemcpyAsync(c->host, c->staging, c->n * c->bs, cudaMemcpyDeviceToHost, s);
}

static cudaError_t enqueue_scatter(void *arg, int rep, cudaStream_t s) {
  scatter_ctx *c = arg;
  const int in = c->dir == OFF_H2D;
  switch (c->method) {
  case OFF_PER_BLOCK: return km_offload_copy_per_block(c->dsts, c->srcs, c->sizes, c->n, s);
  case OFF_BATCH: return km_offload_copy_batch(c->dsts, c->srcs, c->sizes, c->n, s);
  case OFF_STAGING: return in ? stage_in(c, s) : stage_out(c, s);
  default:
    return in ? km_offload_host_to_blocks(c->pool, c->host_dev, c->ids_dev, c->n, c->bs, c->sms, s)
              : km_offload_blocks_to_host(c->host_dev, c->pool, c->ids_dev, c->n, c->bs, c->sms, s);
  }
}

static int scatter_lists(km_bench *b, scatter_ctx *c) {
  c->dsts = km_bench_host_alloc(b, c->n * sizeof *c->dsts);
  c->srcs = km_bench_host_alloc(b, c->n * sizeof *c->srcs);
  c->sizes = km_bench_host_alloc(b, c->n * sizeof *c->sizes);
  if (!c->dsts || !c->srcs || !c->sizes) return -1;
  for (size_t i = 0; i < c->n; i++) {
    unsigned char *dev = c->pool + (size_t)c->perm[i] * c->bs, *host = c->host + i * c->bs;
    c->dsts[i] = c->dir == OFF_H2D ? (void *)dev : (void *)host;
    c->srcs[i] = c->dir == OFF_H2D ? (const void *)host : (const void *)dev;
    c->sizes[i] = c->bs;
  }
  return 0;
}

/* Why a method cannot run on this build or device, or NULL. */
static const char *method_unavailable(km_bench *b, off_method m) {
  if (m == OFF_BATCH && !km_offload_batch_available())
    return "cudaMemcpyBatchAsync needs a CUDA runtime >= 12.8, this build's is older";
  if (m == OFF_MAPPED && !km_bench_device(b)->canMapHostMemory) return "the device cannot map host memory";
  return NULL;
}

static int scatter_setup(km_bench *b, const off_scatter *p, int node, scatter_ctx *c, char *where, size_t wlen) {
  memset(c, 0, sizeof *c);
  c->dir = p->dir;
  c->method = p->method;
  c->n = p->nblocks;
  c->bs = p->block_bytes;
  c->sms = km_bench_device(b)->multiProcessorCount;
  c->pool_blocks = p->nblocks * KM_OFFLOAD_POOL_FACTOR;
  c->pool = km_bench_device_alloc(b, c->pool_blocks * c->bs);
  if (p->method == OFF_STAGING) c->staging = km_bench_device_alloc(b, c->n * c->bs);
  c->host = host_buf(b, KM_HOST_PINNED, node, c->n * c->bs, where, wlen);
  c->perm = km_bench_host_alloc(b, c->pool_blocks * sizeof *c->perm);
  c->ids_dev = km_bench_device_alloc(b, c->n * sizeof *c->ids_dev);
  if (!c->pool || (p->method == OFF_STAGING && !c->staging) || !c->host || !c->perm || !c->ids_dev) return -1;
  km_pattern_permutation(c->perm, c->pool_blocks, km_bench_seed(b));
  /* on the bench stream: a legacy-stream cudaMemcpy from pageable memory may return before its DMA
   * lands, and the (non-blocking) bench stream would not wait for it */
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->ids_dev, c->perm, c->n * sizeof *c->ids_dev, cudaMemcpyHostToDevice,
                                     km_bench_stream(b)));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(km_bench_stream(b)));
  if (p->method == OFF_MAPPED) KM_CUDA_OR_FAIL(b, cudaHostGetDevicePointer(&c->host_dev, c->host, 0));
  if (p->method == OFF_PER_BLOCK || p->method == OFF_BATCH) return scatter_lists(b, c);
  return 0;
}

/* Reload: pool block perm[k] must hold host block k for k < n, and its poison for k >= n. */
static size_t scatter_check_in(km_bench *b, scatter_ctx *c, const unsigned char *pool_copy, uint64_t seed) {
  size_t bad = 0;
  for (size_t k = 0; k < c->pool_blocks; k++) {
    const unsigned char *blk = pool_copy + (size_t)c->perm[k] * c->bs;
    bad += k < c->n ? km_pattern_check(b, blk, c->bs, seed, k * c->bs / 8, "pool block")
                    : km_poison_check(b, blk, c->bs, "unlisted pool block");
  }
  return bad;
}

/* Offload: host block i must hold pool block perm[i]. */
static size_t scatter_check_out(km_bench *b, scatter_ctx *c, uint64_t seed) {
  size_t bad = 0;
  for (size_t i = 0; i < c->n; i++)
    bad += km_pattern_check(b, c->host + i * c->bs, c->bs, seed, (size_t)c->perm[i] * c->bs / 8, "host block");
  return bad;
}

/* Fill the source with the pattern and poison the destination, run one instance, compare bitwise.
 * A runtime or driver without cudaMemcpyBatchAsync answers the first call: the case is then skipped. */
static int scatter_verify(km_bench *b, scatter_ctx *c) {
  cudaStream_t s = km_bench_stream(b);
  const uint64_t seed = km_bench_seed(b);
  const size_t pool_bytes = c->pool_blocks * c->bs, run_bytes = c->n * c->bs;
  unsigned char *pool_copy = km_bench_host_alloc(b, pool_bytes);
  if (!pool_copy) return -1;
  if (c->dir == OFF_H2D) {
    km_pattern_fill(c->host, run_bytes, seed, 0);
    KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->pool, 0xFF, pool_bytes, s));
  } else {
    km_pattern_fill(pool_copy, pool_bytes, seed, 0);
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->pool, pool_copy, pool_bytes, cudaMemcpyHostToDevice, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
    memset(c->host, 0xFF, run_bytes);
  }
  cudaError_t e = enqueue_scatter(c, 0, s);
  if (c->method == OFF_BATCH && (e == cudaErrorNotSupported || e == cudaErrorCallRequiresNewerDriver)) {
    cudaGetLastError();
    km_bench_skip(b, "cudaMemcpyBatchAsync: %s", cudaGetErrorString(e));
    return -1;
  }
  if (e != cudaSuccess) {
    km_bench_fail(b, "moving the blocks by %s failed: %s", method_names[c->method], cudaGetErrorString(e));
    return -1;
  }
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  if (!km_bench_verify_enabled(b)) return 0;
  size_t bad;
  if (c->dir == OFF_H2D) {
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(pool_copy, c->pool, pool_bytes, cudaMemcpyDeviceToHost, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
    bad = scatter_check_in(b, c, pool_copy, seed);
  } else {
    bad = scatter_check_out(b, c, seed);
  }
  size_t words = (c->dir == OFF_H2D ? pool_bytes : run_bytes) / 8;
  return km_bench_verified(b, bad, words, "bitwise (8-byte words), unlisted pool blocks untouched") ? 0 : -1;
}

static void run_scatter(km_bench *b, const void *params) {
  const off_scatter *p = params;
  const char *why = method_unavailable(b, p->method);
  if (why) {
    km_bench_skip(b, "%s", why);
    return;
  }
  char where[200];
  int node = pick_node(b, p->place, where, sizeof where);
  if (node == -2) return;
  scatter_ctx c;
  if (scatter_setup(b, p, node, &c, where, sizeof where) != 0) return;
  if (scatter_verify(b, &c) != 0) return;
  const double bytes = (double)p->nblocks * (double)p->block_bytes;
  km_work w = link_work(bytes, p->dir);
  if (p->per_token) set_tokens(b, &w);
  double t = km_bench_measure(b, enqueue_scatter, &c, &w);
  if (t <= 0) return;
  if (p->per_token) report_per_token(b, bytes, t);
  km_bench_label(b, "%zu blocks of %zu KiB in random pool order; %s", p->nblocks, p->block_bytes / KIB, where);
}

/* ---------------------------------------------------------------- the sweep */

#define KM_OFF_Q KM_CASE_QUICK
#define KM_OFF_H KM_CASE_HOST_MEMORY

#define CONTIG(dir_s, dir_e, mem_s, mem_e, size_s, size_v, flags_, tok_)                                      \
  {"offload/" dir_s "/" mem_s "/" size_s, "offload",                                                         \
   dir_s " of one contiguous " size_s " buffer, " mem_s " host memory on the GPU's nearest NUMA node",        \
   run_contig, &(const off_contig){dir_e, mem_e, OFF_NEAR, size_v, tok_}, KM_OFF_H | (flags_), NULL,           \
   &(const km_sweep){"offload/" dir_s "/" mem_s}}

#define CONTIG_FAR(dir_s, dir_e, size_s, size_v)                                                             \
  {"offload/" dir_s "/pinned/" size_s "/far_node", "offload",                                                \
   dir_s " of one contiguous " size_s " pinned buffer on the NUMA node farthest from the GPU", run_contig,    \
   &(const off_contig){dir_e, KM_HOST_PINNED, OFF_FAR, size_v, 0}, KM_OFF_H, NULL}

#define FIT(dir_s, dir_e, mem_s, mem_e, flags_)                                                              \
  {"offload/fit/" dir_s "/" mem_s, "offload",                                                                \
   "latency-bandwidth fit t = alpha + bytes/beta of single " dir_s " copies, 4 KiB..64 MiB, " mem_s " memory", \
   run_fit, &(const off_fit){dir_e, mem_e}, KM_OFF_H | (flags_), NULL,                                         \
   &(const km_sweep){"offload/fit/" dir_s "/" mem_s, .stages = fit_stage_names}}

#define BASE_NAME(dir_s, bs_s, n_s) "baseline/offload/scatter/" dir_s "/memcpy_per_block/" bs_s "/n" n_s

#define SCATTER_BASE(dir_s, dir_e, bs_s, bs_v, n_s, n_v, flags_, tok_)                                       \
  {BASE_NAME(dir_s, bs_s, n_s), "offload",                                                                   \
   dir_s " of " n_s " scattered " bs_s " KV blocks, one cudaMemcpyAsync per block (vLLM swap_blocks)",        \
   run_scatter, &(const off_scatter){dir_e, OFF_PER_BLOCK, OFF_NEAR, bs_v, n_v, tok_},                        \
   KM_OFF_H | KM_CASE_BASELINE | (flags_), NULL}

#define SCATTER(dir_s, dir_e, m_s, m_e, bs_s, bs_v, n_s, n_v, flags_, tok_)                                  \
  {"offload/scatter/" dir_s "/" m_s "/" bs_s "/n" n_s, "offload",                                            \
   dir_s " of " n_s " scattered " bs_s " KV blocks by " m_s, run_scatter,                                     \
   &(const off_scatter){dir_e, m_e, OFF_NEAR, bs_v, n_v, tok_}, KM_OFF_H | (flags_), BASE_NAME(dir_s, bs_s, n_s)}

#define SCATTER_FAR(dir_s, dir_e, m_s, m_e, bs_s, bs_v, n_s, n_v)                                            \
  {"offload/scatter/" dir_s "/" m_s "/" bs_s "/n" n_s "/far_node", "offload",                                \
   dir_s " of " n_s " scattered " bs_s " KV blocks by " m_s ", host memory on the farthest NUMA node",        \
   run_scatter, &(const off_scatter){dir_e, m_e, OFF_FAR, bs_v, n_v, 0}, KM_OFF_H, BASE_NAME(dir_s, bs_s, n_s)}

/* One block size, every method, one direction. Each point moves 64 MiB so rows compare directly. */
#define SCATTER_ALL(dir_s, dir_e, bs_s, bs_v, n_s, n_v, quick_, tok_, rep_)                                  \
  SCATTER_BASE(dir_s, dir_e, bs_s, bs_v, n_s, n_v, quick_, tok_),                                            \
      SCATTER(dir_s, dir_e, "batch_async", OFF_BATCH, bs_s, bs_v, n_s, n_v, 0, tok_),                          \
      SCATTER(dir_s, dir_e, "staging", OFF_STAGING, bs_s, bs_v, n_s, n_v, (quick_) | (rep_), tok_),            \
      SCATTER(dir_s, dir_e, "sm_mapped", OFF_MAPPED, bs_s, bs_v, n_s, n_v, 0, tok_)

#define SIZES_PINNED(dir_s, dir_e)                                                                            \
  CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "4KiB", 4 * KIB, KM_OFF_Q, 0),                               \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "16KiB", 16 * KIB, 0, 0),                                 \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "64KiB", 64 * KIB, 0, 0),                                 \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "256KiB", 256 * KIB, 0, 0),                               \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "1MiB", 1 * MIB, 0, 0),                                   \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "4MiB", 4 * MIB, 0, 0),                                   \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "16MiB", 16 * MIB, 0, 0),                                 \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "64MiB", 64 * MIB, 0, dir_e == OFF_H2D),                  \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "256MiB", 256 * MIB, 0, 0),                               \
      CONTIG(dir_s, dir_e, "pinned", KM_HOST_PINNED, "1GiB", 1 * GIB, 0, 0)

/* Registered and pageable at three points each (small, middle, large): pageable runs at ~8 GB/s, so
 * its large point stays at 64 MiB to keep the family near 20 s. */
#define SIZES_OTHER(dir_s, dir_e, mem_s, mem_e, big_s, big_v, quick_)                                        \
  CONTIG(dir_s, dir_e, mem_s, mem_e, "64KiB", 64 * KIB, quick_, 0),                                          \
      CONTIG(dir_s, dir_e, mem_s, mem_e, "4MiB", 4 * MIB, 0, 0),                                               \
      CONTIG(dir_s, dir_e, mem_s, mem_e, big_s, big_v, 0, 0)

static const km_case offload_rows[] = {
    SIZES_PINNED("h2d", OFF_H2D),
    SIZES_PINNED("d2h", OFF_D2H),
    CONTIG("bidir", OFF_BIDIR, "pinned", KM_HOST_PINNED, "64KiB", 64 * KIB, KM_OFF_Q, 0),
    CONTIG("bidir", OFF_BIDIR, "pinned", KM_HOST_PINNED, "4MiB", 4 * MIB, 0, 0),
    CONTIG("bidir", OFF_BIDIR, "pinned", KM_HOST_PINNED, "64MiB", 64 * MIB, 0, 0),
    CONTIG("bidir", OFF_BIDIR, "pinned", KM_HOST_PINNED, "256MiB", 256 * MIB, 0, 0),
    SIZES_OTHER("h2d", OFF_H2D, "registered", KM_HOST_REGISTERED, "256MiB", 256 * MIB, KM_OFF_Q),
    SIZES_OTHER("d2h", OFF_D2H, "registered", KM_HOST_REGISTERED, "256MiB", 256 * MIB, 0),
    SIZES_OTHER("h2d", OFF_H2D, "pageable", KM_HOST_PAGEABLE, "64MiB", 64 * MIB, KM_OFF_Q),
    SIZES_OTHER("d2h", OFF_D2H, "pageable", KM_HOST_PAGEABLE, "64MiB", 64 * MIB, 0),
    CONTIG_FAR("h2d", OFF_H2D, "256MiB", 256 * MIB),
    CONTIG_FAR("d2h", OFF_D2H, "256MiB", 256 * MIB),
    FIT("h2d", OFF_H2D, "pinned", KM_HOST_PINNED, KM_OFF_Q),
    FIT("d2h", OFF_D2H, "pinned", KM_HOST_PINNED, 0),
    FIT("bidir", OFF_BIDIR, "pinned", KM_HOST_PINNED, 0),
    FIT("h2d", OFF_H2D, "registered", KM_HOST_REGISTERED, 0),
    FIT("d2h", OFF_D2H, "registered", KM_HOST_REGISTERED, 0),
    FIT("h2d", OFF_H2D, "pageable", KM_HOST_PAGEABLE, 0),
    FIT("d2h", OFF_D2H, "pageable", KM_HOST_PAGEABLE, 0),
    /* scattered blocks: 64 MiB per instance at every block size; 32 KiB = 16 tokens x 2 KiB is the
     * default shape (qwen3-8b, one layer's K or V for 16 tokens) and carries the per-token cost */
    SCATTER_ALL("h2d", OFF_H2D, "16KiB", 16 * KIB, "4096", 4096, 0, 0, 0),
    SCATTER_ALL("h2d", OFF_H2D, "32KiB", 32 * KIB, "2048", 2048, KM_OFF_Q, 1, KM_CASE_REPRESENTATIVE),
    SCATTER_ALL("h2d", OFF_H2D, "128KiB", 128 * KIB, "512", 512, 0, 0, 0),
    SCATTER_ALL("h2d", OFF_H2D, "512KiB", 512 * KIB, "128", 128, 0, 0, 0),
    SCATTER_ALL("h2d", OFF_H2D, "2MiB", 2 * MIB, "32", 32, 0, 0, 0),
    SCATTER_ALL("d2h", OFF_D2H, "16KiB", 16 * KIB, "4096", 4096, 0, 0, 0),
    SCATTER_ALL("d2h", OFF_D2H, "32KiB", 32 * KIB, "2048", 2048, KM_OFF_Q, 0, 0),
    SCATTER_ALL("d2h", OFF_D2H, "128KiB", 128 * KIB, "512", 512, 0, 0, 0),
    SCATTER_ALL("d2h", OFF_D2H, "512KiB", 512 * KIB, "128", 128, 0, 0, 0),
    SCATTER_ALL("d2h", OFF_D2H, "2MiB", 2 * MIB, "32", 32, 0, 0, 0),
    SCATTER_FAR("h2d", OFF_H2D, "staging", OFF_STAGING, "32KiB", 32 * KIB, "2048", 2048),
    SCATTER_FAR("d2h", OFF_D2H, "staging", OFF_STAGING, "32KiB", 32 * KIB, "2048", 2048),
};

const km_case_table km_offload_table = {offload_rows, sizeof offload_rows / sizeof offload_rows[0]};
