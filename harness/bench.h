/* What a micro case sees of the harness while it runs: its options, the device, buffers that are
 * freed for it, fresh random seeds, verification reporting, one call that times an enqueue function and
 * turns the median into GB/s and shares of the ceilings, and one that times a stage of the case on its
 * own. Nothing here knows a kernel. */
#ifndef KM_BENCH_H
#define KM_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "model.h"
#include "shares.h"

typedef struct km_bench km_bench;

/* ---- the run's settings, read-only for a case */
int km_bench_quick(const km_bench *b);          /* --quick: smallest sweep points, fewer samples */
int km_bench_smoke(const km_bench *b);          /* --smoke: one launch, small working sets, no figures */
int km_bench_verify_enabled(const km_bench *b); /* false under --no-verify */
const km_model *km_bench_model(const km_bench *b); /* the --model shape (default qwen3-8b) */
cudaStream_t km_bench_stream(const km_bench *b);
const struct cudaDeviceProp *km_bench_device(const km_bench *b);
int km_bench_device_id(const km_bench *b);
double km_bench_ceiling_gbps(const km_bench *b);   /* the copy ceiling: d2d cudaMemcpyAsync, read + write */
double km_bench_link_gbps(const km_bench *b);      /* PCIe link from hwloc, 0 when unknown */
/* Every start-up ceiling (copy, read, write, peak, link, host copies); figures not measured are 0. */
const km_ceilings *km_bench_ceilings(const km_bench *b);
size_t km_bench_l2_bytes(const km_bench *b);
/* Bytes a working set should have so that L2 does not serve it: 8x L2 (at least 64 MiB); KM_SMOKE_BYTES
 * under --smoke. */
size_t km_bench_big_bytes(const km_bench *b);
/* Bytes of each of the start-up ceiling's two buffers, so a copy row can move exactly as much. */
size_t km_bench_ceiling_bytes(const km_bench *b);
/* How many copies of a working set of `bytes` to rotate through so the rotation is >= 4x L2 (1 under
 * --smoke), at most KM_MAX_ROTATION. The case is then taken to rotate through that many copies (rep %
 * copies): the rotated bytes count as its working set for the L2 check, and a graph-replayed sample holds
 * whole rotations. */
#define KM_MAX_ROTATION 64
int km_bench_rotation(km_bench *b, size_t bytes);
/* A fresh seed for each call (time- and counter-based): never the same data twice. */
uint64_t km_bench_seed(km_bench *b);
/* One seed for the whole run (the same in every case, fresh each run): the data an accuracy sweep shares
 * across its cases, so that its points differ only by the swept parameter. */
uint64_t km_bench_run_seed(const km_bench *b);
/* The hwloc topology of this run (harness/topo.h); NULL when it could not be loaded. */
struct km_topo *km_bench_topo(km_bench *b);

/* ---- memory owned by the case's run: freed by the harness after the case returns.
 * A device allocation larger than free memory marks the case skipped with its reason and returns NULL. */
void *km_bench_device_alloc(km_bench *b, size_t bytes);
void *km_bench_host_alloc(km_bench *b, size_t bytes);   /* malloc'ed, 64-byte aligned */
void *km_bench_pinned_alloc(km_bench *b, size_t bytes); /* cudaHostAlloc on the GPU's nearest NUMA node */
/* Free a block km_bench_device_alloc returned before the case ends (a set-up whose scratch would not fit beside
 * what stays); p not freed already. */
void km_bench_device_free(km_bench *b, void *p);
/* Whether km_bench_device_alloc would give `bytes` more now (free memory less the margin it leaves). */
int km_bench_device_fits(const km_bench *b, size_t bytes);
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
  int host_link;        /* 1: bytes cross PCIe; shares are of the link and of the contiguous host copy */
  /* Device bytes the timed launches cycle through (every rotated copy). 0: what the case asked
   * km_bench_rotation for, else one instance's bytes read + written. Under 4x L2 the row is flagged
   * l2_resident: kept out of HBM shares and fits. */
  double working_set_bytes;
  int link_dir;         /* km_link_dir of a host_link row: H2D, D2H or both (0: not said) */
} km_work;

/* Warm up, pick a batch so each timed sample lasts >= KM_MIN_SAMPLE_SECONDS (graph replay for launches
 * under KM_GRAPH_BELOW_SECONDS), time samples with CUDA events while Google Benchmark keeps the loop
 * running, sample the GPU's clocks and throttle reasons around them, and set the counters (README,
 * "Result fields"): median_us, cv, noisy, samples, batch, graph, min_sample_us, bytes, bytes_read,
 * bytes_written, GB/s, pct_of_ceiling (of the row's traffic class), pct_of_peak, pct_of_link and
 * pct_of_host_copy (host rows), working_set_bytes, l2_resident, the GPU state and throttled,
 * tokens_per_second, ns_per_token_layer, bytes_per_token. Returns the median in seconds per instance
 * (0 on failure). */
double km_bench_measure(km_bench *b, km_enqueue_fn fn, void *arg, const km_work *work);

/* ---- stages: a part of a case timed on its own (a pipeline's stages, one size of a latency sweep) */
typedef enum km_stage_mode {
  KM_STAGE_BATCHED = 0, /* as rows are timed: samples >= KM_MIN_SAMPLE_SECONDS, graph replay when short */
  KM_STAGE_ISOLATED,    /* one launch per sample on an idle stream: a lone call's latency, host submission
                           included (so a sample is one launch, however short) */
} km_stage_mode;

typedef struct km_stage {
  double median_s; /* per launch */
  double cv;
  size_t samples;
  int noisy;       /* cv > KM_NOISY_CV */
} km_stage;

/* Time `fn` as the stage `name` (letters, digits, '_'): the run's sample count, after warm-up. Sets the
 * counters <name>_us (median), <name>_cv, <name>_noisy and, when work declares bytes, <name>_bytes and
 * <name>_gbps. A stage is part of a verified case: call it after the case's check. Returns 0 with *out
 * filled (out may be NULL); -1 after recording the failure in the case. */
int km_bench_measure_stage(km_bench *b, const char *name, km_enqueue_fn fn, void *arg, const km_work *work,
                           km_stage_mode mode, km_stage *out);
/* The same for a stage that moves no declared bytes, batched: its median in microseconds (0 after a
 * failure was recorded). */
double km_bench_stage_us(km_bench *b, const char *name, km_enqueue_fn fn, void *arg);

/* A stage that two events on the bench stream cannot bracket (one direction of a copy pair running on
 * two streams): fn enqueues one launch on `stream`, waits for it and gives its time in seconds. Taken
 * after warm-up, one launch per sample from an idle stream like KM_STAGE_ISOLATED, the run's sample
 * count; the same counters and return as km_bench_measure_stage. */
typedef cudaError_t (*km_sample_fn)(void *arg, cudaStream_t stream, double *seconds);
int km_bench_measure_stage_sampled(km_bench *b, const char *name, km_sample_fn fn, void *arg, const km_work *work,
                                   km_stage *out);

/* CPU work of a case flagged KM_CASE_HOST_ONLY: fn does one instance (0 ok, non-zero a failure), `rep`
 * counts calls. Timed like km_bench_measure with the host clock (the same loop); the same counters, less
 * the shares of the device ceilings and the GPU state. Returns the median in seconds per instance (0 on
 * failure). */
typedef int (*km_host_fn)(void *arg, int rep);
double km_bench_measure_host(km_bench *b, km_host_fn fn, void *arg, const km_work *work);
/* A stage of CPU work beside a row (hashing what a reused block saves), timed with the host clock like
 * km_bench_measure_host; the same counters and return as km_bench_measure_stage. */
int km_bench_measure_host_stage(km_bench *b, const char *name, km_host_fn fn, void *arg, const km_work *work,
                                km_stage *out);

/* Extra figures: accuracy, recall, stage times. Shown as counters and stored in the results. */
void km_bench_counter(km_bench *b, const char *name, double value);
void km_bench_label(km_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
