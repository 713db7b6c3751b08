/* The state of one ./micro run that every case shares: options, device, ceiling, model, topology,
 * stream, and the error count that decides the exit status. Passed around, never global. */
#ifndef KM_RUN_CTX_H
#define KM_RUN_CTX_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ceiling.h"
#include "cli.h"
#include "host_cpu.h"
#include "model.h"
#include "registry.h"

struct km_topo;
struct km_nvml;

/* Each timed sample lasts at least this long, so launch overhead and event resolution
 * (about 0.5 us) stay under 1% of it; short kernels are batched (graph-replayed) to reach it. The
 * start-up ceilings are timed with the same minimum. */
#define KM_MIN_SAMPLE_SECONDS 200e-6
/* Samples per case: enough for a stable median and a meaningful CV at ~10 ms per case. */
#define KM_SAMPLES_DEFAULT 20
#define KM_SAMPLES_QUICK 7
/* --smoke: working sets that scale with L2 are cut to this (inside L2, so nothing is a measurement),
 * and each case takes one sample; compute-sanitizer's cost grows with the bytes each launch touches. */
#define KM_SMOKE_BYTES ((size_t)16 << 20)

typedef struct km_run_ctx {
  const km_options *opts;
  const km_model *model;
  struct km_topo *topo;        /* NULL when hwloc could not load */
  km_host_cpu cpu;             /* the host CPU, read once at start-up (banner and JSON) */
  int device;
  struct cudaDeviceProp prop;
  cudaStream_t stream;
  double ceiling_gbps;         /* d2d cudaMemcpyAsync measured at start-up (= ceilings.copy_gbps) */
  size_t ceiling_bytes;        /* its buffer size: the SM copy rows use the same */
  double link_gbps;            /* PCIe link from hwloc, 0 unknown */
  km_ceiling_report ceilings;  /* every start-up ceiling; rows' shares are of ceilings.c */
  int shares;                  /* 0 under --smoke: the ceilings are L2's, no share is published */
  struct km_nvml *nvml;        /* GPU state around each row; unavailable NVML answers nothing */
  int samples;                 /* timed samples per case */
  uint64_t seed_base;
  int errors;                  /* cases that failed their check or a CUDA call */
  int skips;
  int not_run;                 /* cases a SIGINT stopped or kept from running */
  void **registrations;        /* what km_bench_register handed Google Benchmark */
  size_t nregistrations;
} km_run_ctx;

/* Register one case with Google Benchmark; the harness wraps it in a km_bench. */
int km_bench_register(km_run_ctx *ctx, const km_case *c);
/* Free what the registrations hold, once Google Benchmark has shut down. */
void km_bench_registrations_free(km_run_ctx *ctx);

#endif
