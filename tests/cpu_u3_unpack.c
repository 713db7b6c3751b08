/* CPU tests of the decode kernel's 3-bit code extraction (kernels/u3_unpack.h): on random records, every
 * K pair is (code i, code i + 16) with each i < 16 taken once in KM_U3_K_PAIR's order, and every V pair is
 * code 16 h + j of the two rows, for both halves; codes come back as 1024 + code in fp16, and V's in the unpack 2
 * form as 1 + code / 8, which one fp16 fused multiply-add by (8 s, z - 8 s) turns into c s + z within the
 * bound u3_unpack.h states (checked here with fp16 rounding emulated, over the gpu tests' record ranges and
 * the quant family's); the bare code pairs (ones 0) and TurboQuant's fp16 levels looked up from them. */
#include <stdint.h>
#include <math.h>
#include <stdio.h>

#include "quant_3bit.h"
#include "quant_ref.h"
#include "test_util.h"
#include "u3_unpack.h"

static int failures;

static uint32_t code_of(const uint32_t *w, int i) { /* code i: bits 3i..3i+2 of w0..w2 */
  const int b = 3 * i;
  const uint64_t x = b < 32 ? ((uint64_t)w[1] << 32 | w[0]) >> b : ((uint64_t)w[2] << 32 | w[1]) >> (b - 32);
  return (uint32_t)(x & 7u);
}
static uint32_t pair_of(uint32_t lo_code, uint32_t hi_code) { return (0x6400u | lo_code) | ((0x6400u | hi_code) << 16); }
static uint32_t pair7_of(uint32_t lo_code, uint32_t hi_code) {
  return (0x3C00u | lo_code << 7) | ((0x3C00u | hi_code << 7) << 16);
}
/* TurboQuant: the fp16 levels of codes a and b, as the decode kernel's fp16x2 (a low) */
static uint32_t tq_pair_of(uint32_t a, uint32_t b) {
  static const float lv[8] = {-KM_TQ_L3, -KM_TQ_L2, -KM_TQ_L1, -KM_TQ_L0, KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};
  return (uint32_t)km_ref_f32_to_f16(lv[a]) | (uint32_t)km_ref_f32_to_f16(lv[b]) << 16;
}
static float f16r(double x) { return km_ref_f16_to_f32(km_ref_f32_to_f16((float)x)); }

static void check(int ok, const char *what, int a, int b, uint32_t got, uint32_t want) {
  if (ok) return;
  if (failures++ < 10) fprintf(stderr, "FAIL: %s %d/%d: got %08x, want %08x\n", what, a, b, got, want);
}

int main(void) {
  uint64_t st = 0x3b1d5e7f11u;
  int seen[16] = {0};
  for (int n = 0; n < KM_U3_K_PAIRS; n++) {
    const int i = km_u3_k_pair(n);
    check(i >= 0 && i < 16, "k pair index", n, i, 0, 0);
    if (i >= 0 && i < 16) seen[i]++;
  }
  for (int i = 0; i < 16; i++) check(seen[i] == 1, "k pair taken once", i, seen[i], 0, 1);
  /* the byte permute against its definition on a few selectors */
  check(km_u3_prmt(0x33221100u, 0x77665544u, 0x7610) == 0x77661100u, "prmt", 0x7610, 0, km_u3_prmt(0x33221100u, 0x77665544u, 0x7610), 0x77661100u);
  check(km_u3_prmt(0x33221100u, 0x77665544u, 0x5432) == 0x55443322u, "prmt", 0x5432, 0, km_u3_prmt(0x33221100u, 0x77665544u, 0x5432), 0x55443322u);
  for (int t = 0; t < 20000; t++) {
    uint32_t lo[4], hi[4];
    for (int k = 0; k < 4; k++) lo[k] = (uint32_t)km_test_rng_next(&st), hi[k] = (uint32_t)km_test_rng_next(&st);
    if (t == 0) lo[0] = lo[1] = lo[2] = 0xFFFFFFFFu; /* every code 7 */
    if (t == 1) lo[0] = lo[1] = lo[2] = 0;
    uint32_t z[3];
    for (int k = 0; k < 3; k++) z[k] = km_u3_k_window(lo, k);
    for (int n = 0; n < KM_U3_K_PAIRS; n++) {
      const int i = km_u3_k_pair(n);
      const uint32_t got = km_u3_k_pair_bits(z, lo, n), want = pair_of(code_of(lo, i), code_of(lo, i + 16));
      check(got == want, "k pair", n, i, got, want);
      /* the bare codes (ones 0) and TurboQuant's levels from them (unpack 1) */
      const uint32_t gc = km_u3_k_pair_or(z, lo, n, 0), wc = code_of(lo, i) | code_of(lo, i + 16) << 16;
      check(gc == wc, "k pair codes", n, i, gc, wc);
      const uint32_t gl = km_u3_tq_levels16(gc), wl = tq_pair_of(code_of(lo, i), code_of(lo, i + 16));
      check(gl == wl, "k pair TurboQuant levels", n, i, gl, wl);
      if (n % 2 == 1) { /* unpack 3: a k-step's two pairs from one selector */
        const int i0 = km_u3_k_pair(n - 1);
        uint32_t p0, p1;
        km_u3_tq_levels2(km_u3_k_pair_or(z, lo, n - 1, 0), gc, &p0, &p1);
        const uint32_t w0 = tq_pair_of(code_of(lo, i0), code_of(lo, i0 + 16));
        check(p0 == w0, "k pairs' TurboQuant levels from one selector (first)", n - 1, i0, p0, w0);
        check(p1 == wl, "k pairs' TurboQuant levels from one selector (second)", n, i, p1, wl);
      }
    }
    for (int h = 0; h < 2; h++) {
      uint32_t zv[3];
      for (int m = 0; m < 3; m++) zv[m] = km_u3_v_window(lo, hi, h, m);
      for (int j = 0; j < 16; j++) {
        const uint32_t got = km_u3_v_pair_bits(zv, lo, hi, h, j);
        const uint32_t want = pair_of(code_of(lo, 16 * h + j), code_of(hi, 16 * h + j));
        check(got == want, "v pair (half, j)", h, j, got, want);
        const uint32_t gc = km_u3_v_pair_or(zv, lo, hi, h, j, 0);
        const uint32_t wc = code_of(lo, 16 * h + j) | code_of(hi, 16 * h + j) << 16;
        check(gc == wc, "v pair codes (half, j)", h, j, gc, wc);
        const uint32_t gl = km_u3_tq_levels16(gc), wl = tq_pair_of(code_of(lo, 16 * h + j), code_of(hi, 16 * h + j));
        check(gl == wl, "v pair TurboQuant levels (half, j)", h, j, gl, wl);
        if (j % 2 == 1) { /* unpack 3: codes j - 1 and j from one selector */
          uint32_t p0, p1;
          km_u3_tq_levels2(km_u3_v_pair_or(zv, lo, hi, h, j - 1, 0), gc, &p0, &p1);
          const uint32_t w0 = tq_pair_of(code_of(lo, 16 * h + j - 1), code_of(hi, 16 * h + j - 1));
          check(p0 == w0, "v pairs' TurboQuant levels from one selector (first; half, j)", h, j - 1, p0, w0);
          check(p1 == wl, "v pairs' TurboQuant levels from one selector (second; half, j)", h, j, p1, wl);
        }
        const uint32_t got7 = km_u3_v_pair_bits7(zv, lo, hi, h, j);
        const uint32_t want7 = pair7_of(code_of(lo, 16 * h + j), code_of(hi, 16 * h + j));
        check(got7 == want7, "v pair (unpack 2, half, j)", h, j, got7, want7);
      }
    }
  }
  /* the unpack 2 arithmetic: fp16 x = 1 + c / 8 (exact), s8 = 8 s (exact), z8 = fp16(z - 8 s) (one rounding, as
   * the kernel's fp16 fma makes it), v = fp16(x s8 + z8) (one rounding); against c s + z: always within half an
   * ulp of |c s + z| plus half an ulp of |z - 8 s|; and within s / 64 for a group whose values span 0 (the
   * quantizer's zero is the group's minimum: -7 s <= z <= 0), as the gpu tests' records (s 0.1..0.5, z -1.5..-0.5)
   * and centred data do. Modes: 0 the gpu tests' ranges, 1 groups spanning 0 with s 1e-3..40, 2 any z in +-120. */
  double worst = 0;
  for (int t = 0; t < 300000; t++) {
    const int mode = t % 3;
    const double u = (double)(km_test_rng_next(&st) % 100000) / 100000.0, r = (double)(km_test_rng_next(&st) % 100000) / 100000.0;
    const float sc = f16r(mode == 0 ? 0.1 + 0.4 * u : 1e-3 * pow(4e4, u));
    const float zr = f16r(mode == 0 ? -1.5 + r : mode == 1 ? -7.0 * sc * r : -120.0 + 240.0 * r);
    const float z8 = f16r((double)zr - 8.0 * sc);
    for (int c = 0; c < 8; c++) {
      const double x = 1.0 + c / 8.0, v = f16r(x * (8.0 * sc) + z8), exact = (double)c * sc + zr;
      const double ulp_v = fabs(exact) * 0x1p-10 + 0x1p-24, ulp_z = fabs((double)zr - 8.0 * sc) * 0x1p-10;
      const double e = fabs(v - exact);
      check(e <= 0.5 * ulp_v + 0.5 * ulp_z + 1e-12, "unpack 2 value (code, mode)", c, mode, 0, 0);
      if (mode < 2) {
        check(e <= sc / 64.0, "unpack 2 within s / 64 (code, mode)", c, mode, 0, 0);
        if (e / sc > worst) worst = e / sc;
      }
    }
  }
  printf("cpu_u3_unpack: unpack 2 worst error %.5f of a scale step (groups spanning 0)\n", worst);
  if (failures) {
    fprintf(stderr, "cpu_u3_unpack: %d failures\n", failures);
    return 1;
  }
  printf("cpu_u3_unpack: ok\n");
  return 0;
}
