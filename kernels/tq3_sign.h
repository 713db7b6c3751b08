/* TurboQuant's fixed random sign flip (kernels/quant_3bit.h) and its codebook levels in fp16, for host and
 * device code alike: the quantize/dequantize kernels, the decode kernel's rotated-domain path and its host
 * set-up. */
#ifndef KM_KERNELS_TQ3_SIGN_H
#define KM_KERNELS_TQ3_SIGN_H

#include <stdint.h>

#include "quant_3bit.h"

#ifdef __CUDACC__
#define KM_TQ3_HD __host__ __device__ constexpr inline /* constexpr: a constant index folds at compile time */
#else
#define KM_TQ3_HD static inline
#endif

/* 1 when element i's sign is flipped: bit 63 of splitmix64(KM_TQ_SIGN_SEED + i). */
KM_TQ3_HD uint32_t km_tq3_negative(uint32_t i) {
  uint64_t z = KM_TQ_SIGN_SEED + i;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (uint32_t)(z >> 63);
}

/* The 8 levels of codes 0..7 (-L3 -L2 -L1 -L0 +L0 +L1 +L2 +L3) rounded to fp16, as byte tables for
 * __byte_perm: the low bytes of codes 0-3 and 4-7, then the high bytes (cpu_quant_ref checks them against
 * the fp16 rounding of KM_TQ_L0..L3). */
#define KM_TQ3_F16_LO0 0xd80c604eu
#define KM_TQ3_F16_LO1 0x4e600cd8u
#define KM_TQ3_F16_HI0 0xb3babdc0u
#define KM_TQ3_F16_HI1 0x403d3a33u

#endif
