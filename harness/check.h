/* Error checks used by micro files: each CUDA call is checked, and a failure becomes an error row
 * (the case stops, the run exits non-zero). Statement-safe: do { } while (0). */
#ifndef KM_CHECK_H
#define KM_CHECK_H

#include <cuda_runtime_api.h>

#include "bench.h"

/* In a void case function: on error record "expr failed at file:line: reason" and return. */
#define KM_CUDA(b, expr)                                                                       \
  do {                                                                                         \
    cudaError_t km_err_ = (expr);                                                              \
    if (km_err_ != cudaSuccess) {                                                              \
      km_bench_fail((b), "%s failed at %s:%d: %s", #expr, __FILE__, __LINE__,                  \
                    cudaGetErrorString(km_err_));                                              \
      return;                                                                                  \
    }                                                                                          \
  } while (0)

/* The same in a function returning int: returns -1 after recording the error. */
#define KM_CUDA_OR_FAIL(b, expr)                                                               \
  do {                                                                                         \
    cudaError_t km_err_ = (expr);                                                              \
    if (km_err_ != cudaSuccess) {                                                              \
      km_bench_fail((b), "%s failed at %s:%d: %s", #expr, __FILE__, __LINE__,                  \
                    cudaGetErrorString(km_err_));                                              \
      return -1;                                                                               \
    }                                                                                          \
  } while (0)

/* Return from a void case function if anything before failed or was skipped. */
#define KM_RETURN_IF_STOPPED(b) \
  do {                          \
    if (!km_bench_ok(b)) return; \
  } while (0)

#endif
