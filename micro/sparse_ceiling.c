/* The dense read of the sparse family (kernels/sparse_topk.cu: a persistent grid, each warp XOR-ing the
 * 32-bit words it streams) declared as a candidate for the start-up read ceiling: the harness takes the
 * best read kernel any table declares, so no row of the family can read above its own class ceiling. */
#include <stdio.h>
#include <stdlib.h>

#include "ceiling.h"
#include "fill.h"
#include "sparse_ceiling.h"
#include "sparse_topk.h"

enum { DENSE_PARTIALS = KM_CEILING_SCRATCH_BYTES / 4 };

/* The plan holds the device's SM count; made on the first (checked, untimed) launch. */
static km_sparse_plan dense_plan;
static int dense_plan_made;

static cudaError_t launch_dense(void *dst, const void *src, size_t bytes, void *scratch, int sms, cudaStream_t s) {
  (void)dst, (void)sms;
  if (!dense_plan_made) {
    cudaError_t e = km_sparse_plan_make(&dense_plan);
    if (e != cudaSuccess) return e;
    dense_plan_made = 1;
  }
  const size_t half = bytes / 2; /* bytes is a multiple of 64 KiB: K the first half, V the second */
  int used = 0;
  return km_sparse_dense_read(&dense_plan, (const uint16_t *)src, (const uint16_t *)((const char *)src + half), half,
                              (uint32_t *)scratch, DENSE_PARTIALS, &used, s);
}

/* The XOR of every 32-bit word of src equals the XOR of the partials (scratch was zeroed before the launch,
 * so the partials the grid did not use add nothing). */
static int check_dense(const void *dst, const void *src, size_t bytes, const void *scratch, cudaStream_t s, char *err,
                       size_t errlen) {
  (void)dst;
  uint32_t *h = malloc(bytes), *part = malloc(DENSE_PARTIALS * sizeof *part);
  cudaError_t e = h && part ? cudaMemcpyAsync(h, src, bytes, cudaMemcpyDeviceToHost, s) : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = cudaMemcpyAsync(part, scratch, DENSE_PARTIALS * sizeof *part, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    free(h);
    free(part);
    snprintf(err, errlen, "copying the dense read's input and partials back: %s", cudaGetErrorString(e));
    return -1;
  }
  uint32_t want = 0, got = 0;
  for (size_t i = 0; i < bytes / 4; i++) want ^= h[i];
  for (int i = 0; i < DENSE_PARTIALS; i++) got ^= part[i];
  free(h);
  free(part);
  if (got == want) return 0;
  snprintf(err, errlen, "xor of every 32-bit word: got %08x, want %08x", got, want);
  return -1;
}

static const km_ceiling_kernel dense_kernels[] = {
    {"dense_read (kernels/sparse_topk.cu: persistent grid, 16-byte loads, XOR per warp)", KM_TRAFFIC_READ,
     launch_dense, check_dense},
};
const km_ceiling_set km_sparse_ceilings = {dense_kernels, 1, km_fill_random_bits};
