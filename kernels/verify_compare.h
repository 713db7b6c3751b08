/* Checks of a whole timed output on the device, for outputs too large to copy back and compare on the
 * CPU: count the elements where the output differs from a reference made by a simple trusted kernel,
 * keeping a few of them to report. The per-element rule is inline here so that the CPU (slice checks,
 * tests) applies exactly the same one. */
#ifndef KM_KERNELS_VERIFY_COMPARE_H
#define KM_KERNELS_VERIFY_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __CUDACC__
#define KM_VERIFY_HD __host__ __device__ __forceinline__
#else
#define KM_VERIFY_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Mismatches kept for the report: enough to see a pattern, few enough to read. */
#define KM_DIFF_KEPT 8

/* What a comparison found. The compare kernels add to it (zero it first); the CPU version fills it the
 * same way, in index order. */
typedef struct km_diff {
  unsigned long long count;               /* elements outside the tolerance */
  unsigned long long index[KM_DIFF_KEPT]; /* element index (not byte offset) of the first ones found */
  uint32_t got[KM_DIFF_KEPT], want[KM_DIFF_KEPT];
} km_diff;

/* A 16-bit float (bf16 or fp16, both sign-magnitude) as a position on the number line in units in the
 * last place: -0 and +0 are both 0, neighbours differ by 1. */
KM_VERIFY_HD int32_t km_verify_ulp_position16(uint32_t h) {
  return (h & 0x8000u) ? -(int32_t)(h & 0x7fffu) : (int32_t)(h & 0x7fffu);
}

/* The element rule: bitwise equality, except that 2-byte elements with max_ulp > 0 are 16-bit floats
 * allowed to sit within max_ulp units in the last place of each other. */
KM_VERIFY_HD int km_verify_differs(uint32_t got, uint32_t want, int elem_bytes, int max_ulp) {
  if (got == want) return 0;
  if (elem_bytes != 2 || max_ulp <= 0) return 1;
  int32_t d = km_verify_ulp_position16(got) - km_verify_ulp_position16(want);
  return d > max_ulp || -d > max_ulp;
}

/* Compare element i * stride of got and want for i < n (elem_bytes 1, 2 or 4, pointers aligned to it)
 * by km_verify_differs, adding what differs to *diff (device memory). cudaErrorInvalidValue for a bad
 * size, stride 0 or a misaligned pointer. */
cudaError_t km_verify_compare(const void *got, const void *want, size_t n, int elem_bytes, size_t stride, int max_ulp,
                              km_diff *diff, cudaStream_t stream);

/* fp32 values that come from sums in another order: element i passes when
 * |got - want| <= rel_tol * mag[i] (mag: the sum of the terms' magnitudes); NaN never passes. */
cudaError_t km_verify_compare_close(const float *got, const float *want, const float *mag, size_t n, float rel_tol,
                                    km_diff *diff, cudaStream_t stream);

/* Code i of a row of 3-bit codes packed in element order, 3 bits each, LSB first (8 codes per 3 bytes, as
 * the uniform and TurboQuant 3-bit formats store them). */
KM_VERIFY_HD uint32_t km_verify_code3(const uint8_t *row, int i) {
  const uint8_t *g = row + 3 * (i / 8);
  const uint32_t v = (uint32_t)g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16;
  return (v >> (3 * (i % 8))) & 7u;
}

/* The code rule for quantizers whose sums round differently from the reference (codes in level order, so
 * neighbours differ by 1): 0 equal, 1 the adjacent code, 2 anything else. */
KM_VERIFY_HD int km_verify_code3_distance(uint32_t got, uint32_t want) {
  if (got == want) return 0;
  return (got == want + 1 || want == got + 1) ? 1 : 2;
}

/* Compare every code of `rows` packed rows of d 3-bit codes (d a multiple of 8; 3d/8 bytes a row) by
 * km_verify_code3_distance: adjacent codes are added to *near, the others that differ to *far (device
 * memory, both zeroed by the caller), each by element index row * d + i with the code values as got and
 * want. cudaErrorInvalidValue for d not a positive multiple of 8, or a null pointer when rows > 0. */
cudaError_t km_verify_compare_codes3(const uint8_t *got, const uint8_t *want, size_t rows, int d, km_diff *far,
                                     km_diff *near, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
