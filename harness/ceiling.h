/* The ceilings every row is a share of, measured at start-up in the same process with the timer and
 * sample count the rows use: copy (device-to-device cudaMemcpyAsync), read-only and write-only (the best
 * of the kernels the case tables declare for each), all on buffers >= 8x L2 so L2 cannot serve them,
 * and the contiguous pinned host copies each way over the PCIe link. The harness knows no kernel: a
 * family (micro/roofline.c) declares its ceiling kernels in its case table (km_case_table.ceilings). */
#ifndef KM_CEILING_H
#define KM_CEILING_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "shares.h"

/* Device bytes handed to a ceiling kernel for its own results (a reduction's word), zeroed first. */
#define KM_CEILING_SCRATCH_BYTES (256 * 1024) /* a grid's per-warp partials (the dense read: <= 65,536) */
/* Bytes of each contiguous host copy of the link ceilings: past 64 MiB a pinned copy is within 0.1% of
 * the link's rate, so 256 MiB is the asymptote, at ~5 ms a copy. */
#define KM_CEILING_HOST_BYTES ((size_t)256 << 20)

typedef struct km_ceiling_kernel {
  const char *name;   /* shown in the banner and the context, e.g. "read_xor (kernels/roofline.cu)" */
  km_traffic traffic; /* KM_TRAFFIC_READ (reads src) or KM_TRAFFIC_WRITE (writes dst) */
  /* One launch over `bytes` (a multiple of 64 KiB; 256-byte aligned buffers). */
  cudaError_t (*launch)(void *dst, const void *src, size_t bytes, void *scratch, int sms, cudaStream_t s);
  /* Check what one launch did, before it is timed: src holds random bits, dst was poisoned with 0xFF
   * and scratch zeroed before the launch. 0 ok; -1 with one line in err. */
  int (*check)(const void *dst, const void *src, size_t bytes, const void *scratch, cudaStream_t s, char *err,
               size_t errlen);
} km_ceiling_kernel;

typedef struct km_ceiling_set {
  const km_ceiling_kernel *kernels;
  size_t count;
  /* Fills device memory with random bits (the rows time random data, so the ceilings do too). */
  cudaError_t (*fill_random)(void *p, size_t bytes, uint64_t seed, cudaStream_t s);
} km_ceiling_set;

/* What to measure. */
typedef struct km_ceiling_plan {
  cudaStream_t stream;
  size_t bytes;        /* each device buffer: km_ceiling_bytes, or the smoke size */
  int sms;
  int samples;         /* the rows' sample count */
  double min_sample_s; /* the rows' minimum sample length (0: smoke, one launch) */
  uint64_t seed;
  const km_ceiling_set *const *sets; /* every table's declaration (NULL entries skipped) */
  size_t nsets;
  int host_copies;     /* also the pinned contiguous copies over the link */
  double link_gbps;    /* from hwloc, 0 unknown */
  double peak_gbps;    /* theoretical, 0 unknown */
} km_ceiling_plan;

typedef struct km_ceiling_figure {
  double gbps, cv;   /* bytes read + written per second (median of samples); 0 when not measured */
  const char *method;
  int graph;         /* samples were graph replays */
} km_ceiling_figure;

typedef struct km_ceiling_report {
  km_ceilings c;                  /* the figures shares are computed against */
  km_ceiling_figure copy, read, write, h2d, d2h;
  size_t bytes;
} km_ceiling_report;

/* Size of each of the two buffers: max(8 x L2, 8 GiB), reduced to fit a quarter of free memory. */
size_t km_ceiling_bytes(size_t l2_bytes, size_t free_bytes);
/* Measure everything the plan asks for. 0 ok; -1 with one line in err (a kernel that fails its check is
 * an error: no ceiling is taken from an unchecked kernel). */
int km_ceilings_measure(const km_ceiling_plan *plan, km_ceiling_report *out, char *err, size_t errlen);
cJSON *km_ceilings_json(const km_ceiling_report *r);

#endif
