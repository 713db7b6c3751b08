// TurboQuant 3-bit codes on the device, shared by the quantize kernels (quant_tq3_rows.cu, quant_tq3_mma.cu):
// the threshold tests as FFMA.SAT, the per-row square root, reciprocal and folded thresholds without branches,
// and the tables the code words are assembled with. Every function rounds as micro/quant_ref.c does.
#ifndef KM_KERNELS_TQ3_CODES_CUH
#define KM_KERNELS_TQ3_CODES_CUH

#include <cstdint>

#include "quant_3bit.h"

namespace {

// The code magnitude's comparisons as arithmetic: for a float a >= 0 or NaN and a threshold T > 0,
// sat(a * big + off) with big = 2^(24 - e) (T in [2^e, 2^(e+1))) and off = -big * prev(T) (exact) is
// exactly 1.0 when a >= T and 0.0 otherwise: a > prev(T) means a - prev(T) >= ulp below T >= 2^(e-24), so
// big (a - prev(T)) >= 1, and a <= prev(T) gives a non-positive fma; NaN saturates to 0, as the CPU's
// a >= B is false. One FFMA.SAT on the FMA pipe instead of FSETP + SEL on the ALU. T NaN (never reached):
// big = off = 0.
struct Step {
  float big, off;
};

__device__ __forceinline__ Step step_of(float t) {
  if (!(t > 0.0f)) return Step{0.0f, 0.0f};
  const uint32_t tb = __float_as_uint(t);
  const float big = __uint_as_float((278u - (tb >> 23)) << 23);
  return Step{big, -__fmul_rn(__uint_as_float(tb - 1u), big)};
}

__device__ __forceinline__ float reaches(float a, Step s) {
  float r;
  asm("fma.rn.sat.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(s.big), "f"(s.off));
  return r;
}

// v5 (LEAN): the per-row scalar work without branches, so ptxas can schedule it among the rotation's FADDs
// (the library's __fsqrt_rn / __fdiv_rn put their slow paths behind BSSY regions that nothing crosses).
// sqrt: the fast path ptxas emits for __fsqrt_rn (MUFU.RSQ, 2 FMUL.FTZ, 2 FFMA), correctly rounded for
// inputs in [2^-101, FLT_MAX]; s2 below 2^-100 (never negative: a sum of squares) is scaled by 2^100 first
// and the root by 2^-50 after (both exact); 0 and inf are selected. Equal to __fsqrt_rn(s2) for s2 >= 0.
__device__ __forceinline__ float sqrt_rn_nobranch(float s2) {
  const bool small = s2 < 7.88860905e-31f;  // 2^-100
  const float x = small ? __fmul_rn(s2, 1.26765060e30f) : s2;  // 2^100
  float r, s, h;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  asm("mul.ftz.f32 %0, %1, %2;" : "=f"(s) : "f"(x), "f"(r));
  asm("mul.ftz.f32 %0, %1, 0f3F000000;" : "=f"(h) : "f"(r));
  const float e = __fmaf_rn(-s, s, x);
  float root = __fmaf_rn(e, h, s);
  if (small) root = __fmul_rn(root, 8.88178420e-16f);  // 2^-50
  if (s2 == 0.0f) root = s2;
  if (s2 == __int_as_float(0x7f800000)) root = s2;
  return root;
}

// 1 / norm for norm = sqrt(s2) in [2^-74.5, 2^64) (s2 > 0 finite): the fast path ptxas emits for
// __fdiv_rn(1, norm) (MUFU.RCP, 5 FFMA), correct to nearest wherever its FCHK passes, which this range of
// divisors (quotients in [2^-64, 2^75], far from overflow and underflow) always does; 0 for s2 = 0 or inf,
// as the reference.
__device__ __forceinline__ float inv_rn_nobranch(float s2, float norm) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(norm));
  const float e = __fmaf_rn(r, -norm, 1.0f);
  const float r1 = __fmaf_rn(r, e, r);
  const float rem = __fmaf_rn(r1, -norm, 1.0f);
  const float q = __fmaf_rn(r1, rem, r1);
  return s2 > 0.0f && s2 < __int_as_float(0x7f800000) ? q : 0.0f;
}

// fold_threshold without the division: T = the smallest float with fl(T * inv) >= b lies within
// [c - 2, c + 1] steps of c = fl(b * norm) (checked exhaustively over every norm mantissa for the three
// boundaries; the offset is scale-invariant, since norm, inv, c and T all move by the same power of two),
// so a two-step binary search over those four candidates finds it. NaN where inv is 0, as fold_threshold.
__device__ __forceinline__ float fold_threshold_near(float b, float norm, float inv) {
  uint32_t t = __float_as_uint(__fmul_rn(b, norm)) - 2u;
  if (!(__fmul_rn(__uint_as_float(t + 1u), inv) >= b)) t += 2u;
  if (!(__fmul_rn(__uint_as_float(t), inv) >= b)) t += 1u;
  return inv > 0.0f ? __uint_as_float(t) : __uint_as_float(0x7fc00000u);
}

// Tables filled once per block: the sign word of 8 codes for each pattern of 8 sign bits (7 << 3j for each set
// bit j), and the level magnitudes 127 floats apart (the codes' step sums index them).
struct CodeTables {
  uint32_t spread7[256];
  float level[3 * 127 + 1];  // level magnitude k at [127 k]
};

__device__ __forceinline__ void fill_code_tables(CodeTables &t, int tid, int threads) {
  for (int b = tid; b < 256; b += threads) {
    uint32_t w = 0;
    for (int j = 0; j < 8; ++j) w |= ((b >> j) & 1) ? 7u << (3 * j) : 0u;
    t.spread7[b] = w;
  }
  if (tid < 4) t.level[127 * tid] = tid == 0 ? KM_TQ_L0 : tid == 1 ? KM_TQ_L1 : tid == 2 ? KM_TQ_L2 : KM_TQ_L3;
}

}  // namespace

#endif
