/* What a micro case sees of the harness while it runs: its options, the device, buffers that are
 * freed for it, fresh random seeds, verification reporting, and one call that times an enqueue
 * function and turns the median into GB/s and a share of the ceiling. Nothing here knows a kernel. */
#ifndef KM_BENCH_H
#define KM_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "model.h"

typedef struct km_bench km_bench;

/* ---- the run's settings, read-only for a case */
int km_bench_quick(const km_bench *b);          /* --quick: smallest sweep points, fewer samples */
int km_bench_smoke(const km_bench *b);          /* --smoke: one launch, small working sets, no figures */
int km_bench_verify_enabled(const km_bench *b); /* false under --no-verify */
const km_model *km_bench_model(const km_bench *b); /* the --model shape (default qwen3-8b) */
cudaStream_t km_bench_stream(const km_bench *b);
const struct cudaDeviceProp *km_bench_device(const km_bench *b);
int km_bench_device_id(const km_bench *b);
double km_bench_ceiling_gbps(const km_bench *b);   /* d2d cudaMemcpyAsync, read + write */
double km_bench_link_gbps(const km_bench *b);      /* PCIe link from hwloc, 0 when unknown */
size_t km_bench_l2_bytes(const km_bench *b);
/* Bytes a working set should have so that L2 does not serve it: 8x L2 (at least 64 MiB); KM_SMOKE_BYTES
 * under --smoke. */
size_t km_bench_big_bytes(const km_bench *b);
/* Bytes of each of the start-up ceiling's two buffers, so a copy row can move exactly as much. */
size_t km_bench_ceiling_bytes(const km_bench *b);
/* How many copies of a working set of `bytes` to rotate through so the rotation is >= 4x L2 (1 under
 * --smoke). */
int km_bench_rotation(const km_bench *b, size_t bytes);
/* A fresh seed for each call (time- and counter-based): never the same data twice. */
uint64_t km_bench_seed(km_bench *b);
/* The hwloc topology of this run (harness/topo.h); NULL when it could not be loaded. */
struct km_topo *km_bench_topo(km_bench *b);

/* ---- memory owned by the case's run: freed by the harness after the case returns.
 * A device allocation larger than free memory marks the case skipped with its reason and returns NULL. */
void *km_bench_device_alloc(km_bench *b, size_t bytes);
void *km_bench_host_alloc(km_bench *b, size_t bytes);   /* malloc'ed, 64-byte aligned */
void *km_bench_pinned_alloc(km_bench *b, size_t bytes); /* cudaHostAlloc on the GPU's nearest NUMA node */
/* Run fn(arg) when the case ends (for memory the case obtained some other way). */
void km_bench_defer(km_bench *b, void (*fn)(void *), void *arg);

/* ---- outcome. A failure is an error row and a non-zero exit; a skip is a row with its reason. */
void km_bench_fail(km_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void km_bench_skip(km_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int km_bench_ok(const km_bench *b); /* neither failed nor skipped so far */

/* Report a verification outcome: nbad mismatches out of n checked with the tolerance stated.
 * Prints up to the first few mismatches the case passed to km_bench_mismatch. Returns ok. */
int km_bench_verified(km_bench *b, size_t nbad, size_t n, const char *tolerance);
void km_bench_mismatch(km_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- measuring. The case enqueues one instance of its work on `stream`; `rep` counts launches so
 * the case can rotate input buffers. Returns the launch's error (check cudaGetLastError()). */
typedef cudaError_t (*km_enqueue_fn)(void *arg, int rep, cudaStream_t stream);

typedef struct km_work {
  double bytes_read;    /* device (or host) bytes read by one instance, each once */
  double bytes_written; /* bytes written by one instance, each once */
  double tokens;        /* KV tokens one instance handles (0: none) */
  double layers;        /* layers those tokens span (ns per token per layer divides by it; 0 -> 1) */
  int host_link;        /* 1: bytes cross PCIe; the share is also given of the link speed */
} km_work;

/* Warm up, pick a batch so each timed sample lasts >= 200 us, time samples with CUDA events while
 * Google Benchmark keeps the loop running, and set the counters: median_us, cv, noisy, GB/s,
 * pct_of_ceiling, tokens_per_second, ns_per_token_layer, bytes_per_token. Returns the median in
 * seconds per instance (0 on failure). */
double km_bench_measure(km_bench *b, km_enqueue_fn fn, void *arg, const km_work *work);

/* A second timing inside a case, beside its own measurement (a stage of a pipeline, a ceiling timed next
 * to the row): the median of `samples` samples of >= 200 us each, in seconds per launch, counters untouched.
 * 0 on failure (the case is then failed). */
double km_bench_time_extra(km_bench *b, km_enqueue_fn fn, void *arg, int samples);

/* CPU work of a case flagged KM_CASE_HOST_ONLY: fn does one instance (0 ok, non-zero a failure), `rep`
 * counts calls. Timed like km_bench_measure with the host clock; the same counters, less the share of the
 * device ceiling. Returns the median in seconds per instance (0 on failure). */
typedef int (*km_host_fn)(void *arg, int rep);
double km_bench_measure_host(km_bench *b, km_host_fn fn, void *arg, const km_work *work);

/* Extra figures: accuracy, recall, stage times. Shown as counters and stored in the results. */
void km_bench_counter(km_bench *b, const char *name, double value);
void km_bench_label(km_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
