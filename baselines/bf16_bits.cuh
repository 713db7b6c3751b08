// bf16 <-> fp32 by bit manipulation for the simple baseline kernels (round to nearest even, NaN kept a
// quiet NaN), written apart from the fast kernels' conversions so the two do not share a mistake.
#ifndef KM_BASELINES_BF16_BITS_CUH
#define KM_BASELINES_BF16_BITS_CUH

#include <stdint.h>

__device__ __forceinline__ float bf16f(uint16_t x) { return __uint_as_float((uint32_t)x << 16); }

__device__ __forceinline__ uint16_t f2bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#endif
