/* Unpacking 3-bit codes (the uniform 3-bit record of kernels/quant_3bit.h: 32 codes, 3 bits each, LSB
 * first in bits 0..95, words w0..w2) two at a time into the fp16x2 form the decode kernel's mma operands
 * take, with as few integer instructions as the packing allows; host and device code alike, so that
 * tests/cpu_u3_unpack.c checks every extraction on the CPU.
 *
 * The form: a 32-bit word whose halves are 0x6400 | code, i.e. the fp16 values 1024 + code (code in the
 * mantissa of 1024.0, exact); the kernel subtracts 1024 and applies the group's scale and zero.
 *
 * Windows: the code field's 16-bit window k (0..5) is bits 16k..16k+15. Code positions repeat modulo 16
 * every 48 bits (lcm(3, 16)), so windows k and k + 3 hold codes i and i + 16 at the same offset; 14 of the
 * 16 codes i < 16 lie inside one window (i = 5 and i = 10, bits 15-17 and 30-32, cross one). Putting window
 * k in a word's low half and another in its high half (one byte permute), one shift and one mask then give
 * two codes at once.
 *   K (one row, all 32 codes of a group): pair (i, i + 16) from windows (k, k + 3); the order in which a
 *   thread's k-steps take the pairs is KM_U3_K_PAIR (the query's fragment takes its dims in the same order).
 *   V (two rows lo, hi; the 16 codes 16 h + j of half h of the group): pair (lo's code, hi's code) from
 *   window 3h + m of each row. */
#ifndef KM_KERNELS_U3_UNPACK_H
#define KM_KERNELS_U3_UNPACK_H

#include <stdint.h>

#include "tq3_sign.h"

#ifdef __CUDACC__
#define KM_U3_HD __host__ __device__ __forceinline__
#else
#define KM_U3_HD static inline
#endif

#define KM_U3_F16_ONES 0x64006400u /* two fp16 1024.0 */

/* The byte permute and the funnel shift, as the device does them (CUDA's __byte_perm, __funnelshift_r). */
KM_U3_HD uint32_t km_u3_prmt(uint32_t a, uint32_t b, uint32_t sel) {
#ifdef __CUDA_ARCH__
  return __byte_perm(a, b, sel);
#else
  const uint64_t x = ((uint64_t)b << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) r |= (uint32_t)((x >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}
KM_U3_HD uint32_t km_u3_shr2(uint32_t lo, uint32_t hi, int s) { /* bits s.. of hi:lo, 0 <= s < 32 */
#ifdef __CUDA_ARCH__
  return __funnelshift_r(lo, hi, s);
#else
  return (uint32_t)((((uint64_t)hi << 32) | lo) >> s);
#endif
}

/* (x & m) | o in one instruction: on the device one lop3 with all three operands in registers, where the
 * compiler, given the two constants, splits it into an AND and an OR (LOP3 takes one immediate); that split
 * was one instruction of every code pair (the decode kernel's SASS at fc24c22: 112 + 128 LOP3 for 128 pairs). */
KM_U3_HD uint32_t km_u3_and_or(uint32_t x, uint32_t m, uint32_t o) {
#ifdef __CUDA_ARCH__
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(x), "r"(m), "r"(o)); /* 0xEA: (a & b) | c */
  return d;
#else
  return (x & m) | o;
#endif
}

/* ---- K: code pairs (i, i + 16) of one record */

/* The order of the pairs a thread's k-steps take (k-step s: pairs 2s and 2s + 1): the codes i < 16 inside
 * windows 0, 1 and 2, then the two that cross a window. */
#define KM_U3_K_PAIRS 16
KM_U3_HD int km_u3_k_pair(int n) {
  /* 0-4 (window 0), 6-9 (window 1), 11-15 (window 2), 5 and 10 (crossing) */
  return n < 5 ? n : n < 9 ? n + 1 : n < 14 ? n + 2 : n == 14 ? 5 : 10;
}

/* Windows (k, k + 3) of record words w0..w2 in one word, k = 0, 1, 2. */
KM_U3_HD uint32_t km_u3_k_window(const uint32_t *w, int k) {
  return k == 0 ? km_u3_prmt(w[0], w[1], 0x7610)   /* w0 bits 0-15 | w1 bits 16-31 (bits 48-63) */
         : k == 1 ? km_u3_prmt(w[0], w[2], 0x5432) /* w0 bits 16-31 | w2 bits 0-15 (bits 64-79) */
                  : km_u3_prmt(w[1], w[2], 0x7610); /* w1 bits 0-15 (32-47) | w2 bits 16-31 (80-95) */
}

/* Pair n of KM_U3_K_PAIR as code i | code (i + 16) << 16, OR-ed with `ones` (KM_U3_F16_ONES: the fp16x2 form
 * (1024 + code i, 1024 + code i + 16); 0: the bare codes, which TurboQuant's level lookup takes). z: the three
 * windows of km_u3_k_window; w: the record's words (for the two crossing pairs). */
KM_U3_HD uint32_t km_u3_k_pair_or(const uint32_t *z, const uint32_t *w, int n, uint32_t ones) {
  const int i = km_u3_k_pair(n);
  if (i == 5) /* bits 15-17 and 63-65 */
    return ((w[0] >> 15) & 7u) | ((km_u3_shr2(w[1], w[2], 31) & 7u) << 16) | ones;
  if (i == 10) /* bits 30-32 and 78-80 */
    return (km_u3_shr2(w[0], w[1], 30) & 7u) | (((w[2] >> 14) & 7u) << 16) | ones;
  const int k = (3 * i) >> 4, o = (3 * i) & 15;
  return ones ? km_u3_and_or(z[k] >> o, 0x00070007u, ones) : (z[k] >> o) & 0x00070007u;
}
KM_U3_HD uint32_t km_u3_k_pair_bits(const uint32_t *z, const uint32_t *w, int n) {
  return km_u3_k_pair_or(z, w, n, KM_U3_F16_ONES);
}

/* ---- V: code j (0..15) of half h of two rows' records, as (1024 + lo's, 1024 + hi's) */

/* Window 3h + m (m = 0, 1, 2; h is a lane's, so every index below is a constant and h picks with a select)
 * of lo's record in the low half and of hi's in the high half: window k is half k & 1 of word k >> 1. */
KM_U3_HD uint32_t km_u3_v_window(const uint32_t *lo, const uint32_t *hi, int h, int m) {
  if (m == 0) /* window 0: w0 low half; window 3: w1 high half */
    return h ? km_u3_prmt(lo[1], hi[1], 0x7632) : km_u3_prmt(lo[0], hi[0], 0x5410);
  if (m == 1) /* window 1: w0 high; window 4: w2 low */
    return h ? km_u3_prmt(lo[2], hi[2], 0x5410) : km_u3_prmt(lo[0], hi[0], 0x7632);
  /* window 2: w1 low; window 5: w2 high */
  return h ? km_u3_prmt(lo[2], hi[2], 0x7632) : km_u3_prmt(lo[1], hi[1], 0x5410);
}
/* Code j of half h as a pair; z: the three windows of km_u3_v_window for this h; lo, hi: the records'
 * words (for codes 5 and 10, which cross a window: bits 15-17 | 63-65 and 30-32 | 78-80). */
KM_U3_HD uint32_t km_u3_v_cross(const uint32_t *r, int h, int j) {
  if (j == 5) return (h ? km_u3_shr2(r[1], r[2], 31) : (r[0] >> 15)) & 7u;
  return (h ? (r[2] >> 14) : km_u3_shr2(r[0], r[1], 30)) & 7u;
}
/* Code j of half h of both rows as lo's | hi's << 16, OR-ed with `ones` (as km_u3_k_pair_or). */
KM_U3_HD uint32_t km_u3_v_pair_or(const uint32_t *z, const uint32_t *lo, const uint32_t *hi, int h, int j, uint32_t ones) {
  if (j == 5 || j == 10) return km_u3_v_cross(lo, h, j) | (km_u3_v_cross(hi, h, j) << 16) | ones;
  const int m = (3 * j) >> 4, o = (3 * j) & 15;
  return ones ? km_u3_and_or(z[m] >> o, 0x00070007u, ones) : (z[m] >> o) & 0x00070007u;
}
KM_U3_HD uint32_t km_u3_v_pair_bits(const uint32_t *z, const uint32_t *lo, const uint32_t *hi, int h, int j) {
  return km_u3_v_pair_or(z, lo, hi, h, j, KM_U3_F16_ONES);
}

/* prmt.b32 as the instruction does it, for selectors whose nibbles 0-3 have bit 3 clear (no sign replication):
 * __byte_perm is defined to ignore bit 3, so on a selector whose bits the compiler cannot bound it masks it
 * first (an extra LOP3 for each level lookup from t + (t >> 8), seen in the SASS of the first build). */
KM_U3_HD uint32_t km_u3_prmt_sel(uint32_t a, uint32_t b, uint32_t sel) {
#ifdef __CUDA_ARCH__
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  return km_u3_prmt(a, b, sel);
#endif
}
/* ---- TurboQuant: a pair of codes to the fp16x2 of their levels (tq3_sign.h's byte tables), three byte permutes
 * on a selector whose nibbles 0 and 2 are the codes. km_u3_tq_levels takes the selector; km_u3_tq_levels16 a code
 * pair in the windows' form, a | b << 16 (km_u3_k_pair_or / km_u3_v_pair_or with ones 0), whose selector is
 * t + (t >> 8): b moves to bits 8..10 and a stays, since t has no other bits in 0..15 (one LEA.HI). */
KM_U3_HD uint32_t km_u3_tq_levels(uint32_t sel) {
  const uint32_t lo = km_u3_prmt_sel(KM_TQ3_F16_LO0, KM_TQ3_F16_LO1, sel);
  const uint32_t hi = km_u3_prmt_sel(KM_TQ3_F16_HI0, KM_TQ3_F16_HI1, sel);
  return km_u3_prmt(lo, hi, 0x6240);
}
KM_U3_HD uint32_t km_u3_tq_levels16(uint32_t t) { return km_u3_tq_levels(t + (t >> 8)); }
/* Two such pairs at once (unpack 3), t = a | b << 16 and u = c | d << 16: p = (level a, level b), q = (level c,
 * level d) by four byte permutes on one selector instead of three each. m = t | u << 8 holds a, c, b, d at bits 0,
 * 8, 16 and 24, so m + (m >> 12) has a, b, c, d in nibbles 0..3 (b and d move to bits 4 and 12, c's shift drops
 * it, nothing carries); the byte permutes read those 16 bits only. lo / hi: the four levels' low / high bytes. */
KM_U3_HD void km_u3_tq_levels2(uint32_t t, uint32_t u, uint32_t *p, uint32_t *q) {
  const uint32_t m = t | (u << 8), sel = m + (m >> 12);
  const uint32_t lo = km_u3_prmt_sel(KM_TQ3_F16_LO0, KM_TQ3_F16_LO1, sel);
  const uint32_t hi = km_u3_prmt_sel(KM_TQ3_F16_HI0, KM_TQ3_F16_HI1, sel);
  *p = km_u3_prmt(lo, hi, 0x5140);
  *q = km_u3_prmt(lo, hi, 0x7362);
}

/* ---- The same pairs with each code in mantissa bits 7..9 of fp16 1.0 (halves 0x3C00 | code << 7, i.e. the
 * values 1 + code / 8, exact), so that one fused multiply-add by (8 scale, zero - 8 scale) dequantizes them:
 * (1 + c / 8) 8 s + (z - 8 s) = c s + z, with no subtraction of 1024 first (the decode kernel's unpack 2, for V
 * only). The rounding of z - 8 s to fp16 (half an ulp of |z - 8 s|) is the only error beyond the result's own
 * rounding: within s / 64 for a group whose values span 0 (-7 s <= z <= 0; tests/cpu_u3_unpack.c, worst 0.015 s),
 * where the 1024 form's is within s / 290. 8 s and z - 8 s must be finite in fp16: |z| + 8 s < 65,504 (values
 * within about +-28,000), which the fp16 scale and zero of the record nearly imply already. Each pair takes one
 * shift (either way) and one mask, as the 1024 form does: code j's offset o in its window goes to bit 7 (o = 7,
 * code 13, needs no shift). The error is one per (token, group): harmless in P V, where the tokens' errors
 * average, but in Q K^T it would shift a whole group's share of the token's logit, so K keeps the 1024 form. */
#define KM_U3_F16_ONE8 0x3C003C00u /* two fp16 1.0 */
#define KM_U3_MASK7 0x03800380u    /* bits 7..9 of each half */

/* Bits o..o + 2 of each half of z, moved to bits 7..9 of the half and put into 1.0's mantissa. */
KM_U3_HD uint32_t km_u3_at7(uint32_t z, int o) {
  const uint32_t x = o >= 7 ? z >> (o - 7) : z << (7 - o);
  return km_u3_and_or(x, KM_U3_MASK7, KM_U3_F16_ONE8);
}

/* V: code j of half h of rows lo, hi as (1 + lo's / 8, 1 + hi's / 8); z, lo, hi as km_u3_v_pair_bits's. */
KM_U3_HD uint32_t km_u3_v_pair_bits7(const uint32_t *z, const uint32_t *lo, const uint32_t *hi, int h, int j) {
  if (j == 5 || j == 10) return (km_u3_v_cross(lo, h, j) << 7) | (km_u3_v_cross(hi, h, j) << 23) | KM_U3_F16_ONE8;
  return km_u3_at7(z[(3 * j) >> 4], (3 * j) & 15);
}

#endif
