/* CPU tests of the quant/ reference (micro/quant_ref.c): fp8 encoder on known bit patterns (saturation,
 * subnormals, ties to even) and against a brute-force nearest search, fp16/bf16 encoders, FWHT
 * orthogonality, 3-bit packing, the embedded Lloyd-Max codebook, end-to-end accuracy figures, and the exact
 * rotated value and boundary rule that hold a TurboQuant quantizer which is not bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "quant_3bit.h"
#include "quant_ref.h"
#include "tq3_sign.h"
#include "test_util.h"

static int failures;

#define EXPECT(cond, ...)                                    \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);  \
      fprintf(stderr, __VA_ARGS__);                          \
      fprintf(stderr, "\n");                                 \
      failures++;                                            \
    }                                                        \
  } while (0)

#define rng_next km_test_rng_next
#define rng_normal km_test_rng_normal

static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_fp8_known(void) {
  struct { float x; int fmt; uint8_t code; } cases[] = {
      {1.0f, KM_REF_E4M3, 0x38}, {-2.0f, KM_REF_E4M3, 0xC0}, {448.0f, KM_REF_E4M3, 0x7E}, {240.0f, KM_REF_E4M3, 0x77},
      {464.0f, KM_REF_E4M3, 0x7E}, {1e6f, KM_REF_E4M3, 0x7E}, {-1e6f, KM_REF_E4M3, 0xFE},
      {INFINITY, KM_REF_E4M3, 0x7E}, {-INFINITY, KM_REF_E4M3, 0xFE}, {NAN, KM_REF_E4M3, 0x7F},
      {0.0f, KM_REF_E4M3, 0x00}, {-0.0f, KM_REF_E4M3, 0x80},
      {0x1p-9f, KM_REF_E4M3, 0x01}, {0x1p-10f, KM_REF_E4M3, 0x00}, {0x3p-10f, KM_REF_E4M3, 0x02},
      {0x5p-10f, KM_REF_E4M3, 0x02}, {0x7p-9f, KM_REF_E4M3, 0x07}, {0x1p-6f, KM_REF_E4M3, 0x08},
      {0xFp-10f, KM_REF_E4M3, 0x08}, /* 7.5 quanta: tie between 7 (odd) and 8 -> the min normal */
      {1.0625f, KM_REF_E4M3, 0x38}, {1.1875f, KM_REF_E4M3, 0x3A}, {1.0626f, KM_REF_E4M3, 0x39},
      {1.0f, KM_REF_E5M2, 0x3C}, {57344.0f, KM_REF_E5M2, 0x7B}, {61440.0f, KM_REF_E5M2, 0x7B},
      {INFINITY, KM_REF_E5M2, 0x7B}, {-INFINITY, KM_REF_E5M2, 0xFB}, {NAN, KM_REF_E5M2, 0x7F},
      {0x1p-16f, KM_REF_E5M2, 0x01}, {0x1p-17f, KM_REF_E5M2, 0x00}, {0x3p-17f, KM_REF_E5M2, 0x02},
      {1.125f, KM_REF_E5M2, 0x3C}, {1.375f, KM_REF_E5M2, 0x3E}, {-0x1p-14f, KM_REF_E5M2, 0x84},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const uint8_t got = km_ref_fp8_encode(cases[i].x, cases[i].fmt);
    EXPECT(got == cases[i].code, "fp8 %s(%a) = 0x%02X, want 0x%02X", cases[i].fmt ? "e5m2" : "e4m3", cases[i].x, got,
           cases[i].code);
  }
  EXPECT(isnan(km_ref_fp8_decode(0x7F, KM_REF_E4M3)) && km_ref_fp8_decode(0x7E, KM_REF_E4M3) == 448.0f, "e4m3 decode");
  EXPECT(isinf(km_ref_fp8_decode(0x7C, KM_REF_E5M2)) && km_ref_fp8_decode(0x7B, KM_REF_E5M2) == 57344.0f, "e5m2 decode");
}

/* The nearest finite code by exhaustive search, ties to the even code; beyond max: max. */
static uint8_t brute_fp8(float x, int fmt) {
  const float mx = km_ref_fp8_max(fmt);
  const int neg = signbit(x);
  const double a = fabs((double)x);
  if (a >= mx) return (uint8_t)((neg ? 0x80 : 0) | km_ref_fp8_encode(mx, fmt));
  int best = 0;
  double bd = INFINITY;
  for (int c = 0; c < 128; ++c) {
    const float v = km_ref_fp8_decode((uint8_t)c, fmt);
    if (isnan(v) || isinf(v)) continue;
    const double dd = fabs((double)v - a);
    if (dd < bd || (dd == bd && !(c & 1))) {
      bd = dd;
      best = c;
    }
  }
  return (uint8_t)((neg ? 0x80 : 0) | best);
}

static void test_fp8_brute(void) {
  uint64_t s = 1;
  for (int fmt = 0; fmt < 2; ++fmt) {
    int bad = 0;
    for (int i = 0; i < 200000; ++i) {
      const uint64_t h = rng_next(&s);
      /* exponents around the format's range, random mantissa bits (incl. exact ties) */
      const int e = (int)(h % 44) - (fmt ? 26 : 14);
      uint32_t man = (uint32_t)(h >> 8) & 0x7fffffu;
      if ((h >> 40) & 1) man &= 0x7f0000u; /* short mantissas make ties */
      const float x = ldexpf(1.0f + man / 8388608.0f, e) * (((h >> 41) & 1) ? -1.0f : 1.0f);
      const uint8_t got = km_ref_fp8_encode(x, fmt), want = brute_fp8(x, fmt);
      if (got != want && bad++ < 5) fprintf(stderr, "fp8 fmt %d x=%a got 0x%02X want 0x%02X\n", fmt, x, got, want);
    }
    EXPECT(bad == 0, "fp8 fmt %d: %d mismatches against the brute-force nearest search", fmt, bad);
    for (int c = 0; c < 256; ++c) { /* every finite code survives decode + encode */
      const float v = km_ref_fp8_decode((uint8_t)c, fmt);
      if (!isnan(v) && !isinf(v)) EXPECT(km_ref_fp8_encode(v, fmt) == c, "fp8 fmt %d code 0x%02X round trip", fmt, c);
    }
  }
}

static void test_f16_bf16(void) {
  uint64_t s = 7;
  int bad = 0;
  for (int i = 0; i < 500000; ++i) {
    const uint64_t h = rng_next(&s);
    const float x = ldexpf(1.0f + ((uint32_t)h & 0x7fffffu) / 8388608.0f, (int)((h >> 32) % 50) - 30) *
                    (((h >> 40) & 1) ? -1.0f : 1.0f);
    const _Float16 hw = (_Float16)x;
    uint16_t want;
    memcpy(&want, &hw, 2);
    const uint16_t got = km_ref_f32_to_f16(x);
    if (got != want && bad++ < 5) fprintf(stderr, "f16 x=%a got 0x%04X want 0x%04X\n", x, got, want);
    if (!isinf((float)hw)) EXPECT(km_ref_f16_to_f32(got) == (float)hw, "f16 decode %a", x);
  }
  EXPECT(bad == 0, "f16: %d mismatches against the compiler's _Float16 conversion", bad);
  EXPECT(km_ref_f32_to_bf16(1.0f) == 0x3F80, "bf16 1.0");
  EXPECT(km_ref_f32_to_bf16(bits_f(0x3F808000u)) == 0x3F80, "bf16 tie to even (down)");
  EXPECT(km_ref_f32_to_bf16(bits_f(0x3F818000u)) == 0x3F82, "bf16 tie to even (up)");
  EXPECT(km_ref_f32_to_bf16(bits_f(0x3F808001u)) == 0x3F81, "bf16 above tie");
}

static void test_fwht(void) {
  for (int d = 64; d <= 256; d *= 2) {
    float rows[256][256];
    for (int i = 0; i < d; ++i) { /* H e_i = row i of H: +-1 entries, pairwise orthogonal */
      memset(rows[i], 0, sizeof rows[i]);
      rows[i][i] = 1.0f;
      km_ref_fwht(rows[i], d);
    }
    int bad = 0;
    for (int i = 0; i < d; ++i)
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int k = 0; k < d; ++k) dot += (double)rows[i][k] * rows[j][k];
        if (dot != (i == j ? d : 0)) bad++;
      }
    EXPECT(bad == 0, "FWHT d=%d: %d row pairs not orthogonal", d, bad);
    float x[256], y[256];
    uint64_t s = (uint64_t)d;
    for (int i = 0; i < d; ++i) x[i] = y[i] = rng_normal(&s);
    km_ref_fwht(y, d);
    km_ref_fwht(y, d);
    double err = 0;
    for (int i = 0; i < d; ++i) err = fmax(err, fabs(y[i] / d - x[i]));
    EXPECT(err < 1e-5, "FWHT d=%d: H H x != d x (max err %g)", d, err);
  }
}

static void test_pack(void) {
  const uint8_t seq[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  uint8_t packed[96], back[256], codes[256];
  km_ref_pack3(seq, 8, packed);
  EXPECT(packed[0] == 0x88 && packed[1] == 0xC6 && packed[2] == 0xFA, "pack3 0..7 = %02X %02X %02X", packed[0],
         packed[1], packed[2]);
  uint64_t s = 3;
  for (int i = 0; i < 256; ++i) codes[i] = (uint8_t)(rng_next(&s) & 7);
  km_ref_pack3(codes, 256, packed);
  km_ref_unpack3(packed, 256, back);
  EXPECT(memcmp(codes, back, 256) == 0, "pack3 round trip");
}

static void test_codebook(void) {
  double c[8], mse;
  km_ref_lloyd_max_gaussian(8, 500, c, &mse);
  const float emb[8] = {-KM_TQ_L3, -KM_TQ_L2, -KM_TQ_L1, -KM_TQ_L0, KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};
  for (int i = 0; i < 8; ++i) EXPECT(fabs(c[i] - emb[i]) < 2e-6, "Lloyd-Max level %d: %.7f vs embedded %.7f", i, c[i], emb[i]);
  EXPECT(fabs(mse - KM_TQ_LLOYD_MSE) < 1e-6, "Lloyd-Max MSE %.6f vs %.6f", mse, KM_TQ_LLOYD_MSE);
  EXPECT(fabsf(KM_TQ_B1 - 0.5f * (KM_TQ_L0 + KM_TQ_L1)) < 1e-6f, "B1 midpoint");
  EXPECT(fabsf(KM_TQ_B2 - 0.5f * (KM_TQ_L1 + KM_TQ_L2)) < 1e-6f, "B2 midpoint");
  EXPECT(fabsf(KM_TQ_B3 - 0.5f * (KM_TQ_L2 + KM_TQ_L3)) < 1e-6f, "B3 midpoint");
  printf("Lloyd-Max 3-bit N(0,1): %.4f %.4f %.4f %.4f, MSE %.6f\n", c[4], c[5], c[6], c[7], mse);
}

enum { ROWS = 2048 };

/* K-like rows: N(0,1) with every 32nd channel 10x (as kernels/fill.h's outlier option), or plain V. */
static void make_rows(uint16_t *x, int d, int outliers, uint64_t seed) {
  for (size_t i = 0; i < (size_t)ROWS * d; ++i) {
    float v = rng_normal(&seed);
    if (outliers && (i % d) % 32 == 7) v *= 10.0f;
    x[i] = km_ref_f32_to_bf16(v);
  }
}

static void test_accuracy(void) {
  static uint16_t x[ROWS * 256], y[ROWS * 256];
  static uint8_t q[ROWS * 256];
  uint16_t side[2];
  km_ref_accuracy acc;
  for (int d = 64; d <= 256; d *= 2) {
    make_rows(x, d, 1, 11 + d);
    for (int r = 0; r < ROWS; ++r) {
      float sc;
      km_ref_fp8_quantize_row(x + r * d, d, -1.0f, KM_REF_E4M3, q + r * d, &sc);
      km_ref_fp8_dequantize_row(q + r * d, d, sc, KM_REF_E4M3, y + r * d);
    }
    km_ref_measure_accuracy(x, y, ROWS, d, 5, &acc);
    printf("d%d fp8 e4m3 per-token-head (K outliers): rel_mse %.3g cosine %.6f qk %.3g\n", d, acc.rel_mse, acc.cosine,
           acc.qk_rel_err);
    EXPECT(acc.rel_mse < 1e-3, "fp8 e4m3 rel MSE %g >= 1e-3", acc.rel_mse);
    for (int r = 0; r < ROWS; ++r) {
      km_ref_u3_quantize_row(x + r * d, d, q + r * d / 2);
      km_ref_u3_dequantize_row(q + r * d / 2, d, y + r * d);
    }
    km_ref_measure_accuracy(x, y, ROWS, d, 5, &acc);
    printf("d%d uniform 3-bit g32 (K outliers): rel_mse %.3g cosine %.6f qk %.3g\n", d, acc.rel_mse, acc.cosine,
           acc.qk_rel_err);
    EXPECT(acc.rel_mse < 0.1, "uniform 3-bit rel MSE %g", acc.rel_mse);
    for (int pass = 0; pass < 2; ++pass) {
      make_rows(x, d, pass == 0, 17 + d);
      for (int r = 0; r < ROWS; ++r) {
        km_ref_tq3_quantize_row(x + r * d, d, pass, q + r * (3 * d / 8), side);
        km_ref_tq3_dequantize_row(q + r * (3 * d / 8), side[0], d, y + r * d);
      }
      km_ref_measure_accuracy(x, y, ROWS, d, 5, &acc);
      printf("d%d turboquant 3-bit (%s): rel_mse %.4f cosine %.6f qk %.3g\n", d, pass ? "V" : "K outliers",
             acc.rel_mse, acc.cosine, acc.qk_rel_err);
      /* Gaussian V must land within 10% of the Lloyd-Max figure; outlier-heavy K only must not be worse */
      if (pass)
        EXPECT(fabs(acc.rel_mse - KM_TQ_LLOYD_MSE) < 0.1 * KM_TQ_LLOYD_MSE,
               "TurboQuant V rel MSE %.4f not within 10%% of %.4f", acc.rel_mse, KM_TQ_LLOYD_MSE);
      else
        EXPECT(acc.rel_mse < 1.1 * KM_TQ_LLOYD_MSE, "TurboQuant K rel MSE %.4f", acc.rel_mse);
    }
  }
}

/* The shared sign flip and fp16 level tables (kernels/tq3_sign.h) agree with the reference's. */
static void test_tq3_tables(void) {
  for (int i = 0; i < 256; ++i) KM_EXPECT((int)km_tq3_negative((uint32_t)i) == km_ref_tq_negative(i));
  const float l[4] = {KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};
  const uint32_t lo[2] = {KM_TQ3_F16_LO0, KM_TQ3_F16_LO1}, hi[2] = {KM_TQ3_F16_HI0, KM_TQ3_F16_HI1};
  for (int code = 0; code < 8; ++code) {
    const float level = code < 4 ? -l[3 - code] : l[code - 4];
    const uint16_t h = km_ref_f32_to_f16(level);
    const uint16_t t = (uint16_t)(((lo[code / 4] >> (8 * (code % 4))) & 0xff) | ((hi[code / 4] >> (8 * (code % 4))) & 0xff) << 8);
    KM_EXPECT_MSG(t == h, "code %d: table %04x, fp16(level) %04x", code, t, h);
  }
}

/* The code of an exact rotated value by the reference's rule (its float boundaries). */
static int code_of(double u) {
  const double a = fabs(u);
  const int idx = (a >= KM_TQ_B1) + (a >= KM_TQ_B2) + (a >= KM_TQ_B3);
  return signbit(u) ? 3 - idx : 4 + idx;
}

/* Distance of |u| to the nearest code boundary (0, B1, B2, B3). */
static double boundary_gap(double u) {
  const double a = fabs(u);
  return fmin(fmin(a, fabs(a - KM_TQ_B1)), fmin(fabs(a - KM_TQ_B2), fabs(a - KM_TQ_B3)));
}

/* The exact rotated row agrees with the reference's float one: its codes are the reference's except within
 * 1e-5 of a boundary, and it keeps the length (sum u^2 = d: H is sqrt(d) times orthogonal). */
static void test_tq3_exact_u_random(void) {
  enum { N = 512 };
  static uint16_t x[ROWS * 256];
  uint8_t packed[96], ref[256];
  uint16_t side[2];
  double u[256];
  for (int d = 64; d <= 256; d *= 2)
    for (int pass = 0; pass < 2; ++pass) {
      make_rows(x, d, pass == 0, 29 + d + pass);
      int differ = 0, far = 0, len_bad = 0;
      for (int r = 0; r < N; ++r) {
        km_ref_tq3_quantize_row(x + r * d, d, pass, packed, side);
        km_ref_unpack3(packed, d, ref);
        km_ref_tq3_exact_u(x + r * d, d, u);
        double len = 0;
        for (int i = 0; i < d; ++i) {
          len += u[i] * u[i];
          if (code_of(u[i]) == ref[i]) continue;
          differ++;
          if (boundary_gap(u[i]) > 1e-5 && far++ < 5)
            fprintf(stderr, "d%d row %d [%d]: exact u %.9g gives code %d, reference %d\n", d, r, i, u[i],
                    code_of(u[i]), ref[i]);
        }
        if (fabs(len - d) > 1e-9 * d) len_bad++;
        /* the norm: the reference's fp16 norm is the exact one rounded (within an fp16 unit) */
        double s2 = 0;
        for (int i = 0; i < d; ++i) s2 += (double)km_ref_bf16_to_f32(x[r * d + i]) * km_ref_bf16_to_f32(x[r * d + i]);
        const double nh = km_ref_f16_to_f32(side[0]);
        if (fabs(nh - sqrt(s2)) > sqrt(s2) * 0x1p-10) len_bad++;
      }
      EXPECT(far == 0, "d%d %s: %d codes of the exact u differ from the reference away from a boundary", d,
             pass ? "V" : "K", far);
      EXPECT(len_bad == 0, "d%d %s: %d rows where sum u^2 != d or the fp16 norm is off", d, pass ? "V" : "K",
             len_bad);
      EXPECT(differ <= N * d / 10000, "d%d %s: %d codes differ (boundary cases should be rare)", d, pass ? "V" : "K",
             differ);
    }
}

/* Rows whose rotation is known: x = c S 1 (x_i = +-c by the sign flip) rotates to c d e_0, so u = sqrt(d) e_0;
 * x = e_j rotates to s_j times column j of H, norm 1; and a zero row is all 0 (not NaN). */
static void test_tq3_exact_u_known(void) {
  uint16_t x[256];
  double u[256];
  uint8_t packed[96], ref[256];
  uint16_t side[2];
  for (int d = 64; d <= 256; d *= 2) {
    for (int i = 0; i < d; ++i) x[i] = km_ref_f32_to_bf16(km_ref_tq_negative(i) ? -3.0f : 3.0f);
    km_ref_tq3_exact_u(x, d, u);
    EXPECT(fabs(u[0] - sqrt((double)d)) <= 1e-14 * d, "d%d: x = 3 S 1 gives u[0] = %.17g, want sqrt(d)", d, u[0]);
    int bad = 0;
    for (int i = 1; i < d; ++i) bad += u[i] != 0.0;
    EXPECT(bad == 0, "d%d: x = 3 S 1: %d of u[1..] not 0", d, bad);
    km_ref_tq3_quantize_row(x, d, 0, packed, side);
    km_ref_unpack3(packed, d, ref);
    EXPECT(ref[0] == 7 && ref[1] == 4 && ref[d - 1] == 4, "d%d: x = 3 S 1 codes %d %d .. %d", d, ref[0], ref[1],
           ref[d - 1]);

    const int j = 5;
    for (int i = 0; i < d; ++i) x[i] = 0;
    x[j] = km_ref_f32_to_bf16(-0.5f);
    km_ref_tq3_exact_u(x, d, u);
    bad = 0;
    for (int k = 0; k < d; ++k) {
      const double h = (__builtin_popcount((unsigned)(j & k)) & 1) ? -1.0 : 1.0; /* H[j][k] */
      bad += u[k] != (km_ref_tq_negative(j) ? h : -h);
    }
    EXPECT(bad == 0, "d%d: x = -e_%d: %d elements of u are not +-1 by column %d of H", d, j, bad, j);

    for (int i = 0; i < d; ++i) {
      x[i] = (i & 1) ? 0x8000 : 0; /* +0 and -0 */
      u[i] = NAN;
    }
    km_ref_tq3_exact_u(x, d, u);
    bad = 0;
    for (int i = 0; i < d; ++i) bad += u[i] != 0.0;
    EXPECT(bad == 0, "d%d: zero row: %d elements of u not 0", d, bad);
  }
}

static void test_tq3_code_near(void) {
  const double rel = 1.0 / 65536, b1 = KM_TQ_B1, b2 = KM_TQ_B2, b3 = KM_TQ_B3;
  struct { int got, want; double u; int ok; } cases[] = {
      {5, 5, 0.7, 1}, {0, 0, -3.0, 1},                                /* equal: any u */
      {5, 4, b1 * (1 + 0.5 * rel), 1}, {4, 5, b1 * (1 - 0.5 * rel), 1}, /* adjacent at their boundary */
      {5, 4, b1, 1}, {6, 5, b2 * (1 + 0.9 * rel), 1}, {7, 6, b3 * (1 - 0.9 * rel), 1},
      {2, 3, -b1 * (1 + 0.5 * rel), 1}, {1, 2, -b2, 1}, {0, 1, -b3 * (1 - 0.5 * rel), 1},
      {5, 4, b1 * (1 + 2 * rel), 0}, {4, 5, b1 * (1 - 2 * rel), 0},   /* adjacent, just outside */
      {5, 4, 0.7, 0}, {7, 6, 2.5, 0}, {1, 0, -b3 * (1 + 2 * rel), 0}, /* adjacent, far from it */
      {5, 4, -b1, 0}, {2, 3, b1, 0}, {6, 7, -b3, 0},                  /* the boundary of the other sign */
      {6, 4, b1, 0}, {4, 6, b2, 0}, {7, 0, 0.0, 0}, {0, 7, 0.0, 0}, {2, 5, 0.0, 0}, /* not adjacent */
      {4, 3, 0.0, 1}, {3, 4, 0.5 * rel, 1}, {4, 3, -0.9 * rel, 1}, {3, 4, -0.0, 1}, /* 3 | 4 at 0 */
      {3, 4, 2 * rel, 0}, {4, 3, -1e-3, 0}, {3, 4, b1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const int got = km_ref_tq3_code_near(cases[i].got, cases[i].want, cases[i].u, rel);
    EXPECT(got == cases[i].ok, "code_near(got %d, want %d, u %.12g) = %d, want %d", cases[i].got, cases[i].want,
           cases[i].u, got, cases[i].ok);
  }
  EXPECT(km_ref_tq3_code_near(5, 4, 0.7, 1.0), "a wide tolerance takes in u = 0.7 at B1");
}

/* km_ref_tq3_codes_outside over reference codes with three codes changed: row 1 element 5 to an adjacent code
 * (far from its boundary for rel 2^-16, inside it for rel 1), row 2 element 9 by two levels (outside either
 * way); the rows and indices reach the callback; a head_dim it cannot check makes every code break the rule. */
typedef struct outside_seen {
  int n;
  size_t row[4];
  int i[4];
} outside_seen;

static void note_outside(void *arg, size_t row, int i, int got, int want, double u) {
  outside_seen *o = arg;
  (void)got, (void)want, (void)u;
  if (o->n < 4) o->row[o->n] = row, o->i[o->n] = i;
  o->n++;
}

static void test_tq3_codes_outside(void) {
  enum { R = 4, D = 128, PQ = 3 * D / 8 };
  static uint16_t x[ROWS * 256];
  uint8_t want[R * PQ], got[R * PQ], c[D];
  uint16_t side[2];
  make_rows(x, D, 1, 77);
  for (int r = 0; r < R; ++r) km_ref_tq3_quantize_row(x + r * D, D, 0, want + r * PQ, side);
  memcpy(got, want, sizeof got);
  km_ref_unpack3(got + PQ, D, c);
  c[5] = (uint8_t)(c[5] == 7 ? 6 : c[5] + 1);
  km_ref_pack3(c, D, got + PQ);
  km_ref_unpack3(got + 2 * PQ, D, c);
  c[9] = (uint8_t)(c[9] >= 6 ? c[9] - 2 : c[9] + 2);
  km_ref_pack3(c, D, got + 2 * PQ);
  size_t near = 99;
  outside_seen o = {0, {0}, {0}};
  size_t n = km_ref_tq3_codes_outside(x, got, want, R, D, 1.0 / 65536, &near, note_outside, &o);
  EXPECT(n == 2 && near == 0 && o.n == 2, "tight rule: %zu outside (want 2), %zu adjacent allowed (want 0)", n, near);
  EXPECT(o.row[0] == 1 && o.i[0] == 5 && o.row[1] == 2 && o.i[1] == 9, "tight rule names rows %zu, %zu codes %d, %d",
         o.row[0], o.row[1], o.i[0], o.i[1]);
  n = km_ref_tq3_codes_outside(x, got, want, R, D, 1.0, &near, NULL, NULL);
  EXPECT(n == 1 && near == 1, "wide rule: %zu outside (want 1), %zu adjacent allowed (want 1)", n, near);
  EXPECT(km_ref_tq3_codes_outside(x, want, want, R, D, 1.0 / 65536, &near, NULL, NULL) == 0 && near == 0,
         "equal codes break nothing");
  EXPECT(km_ref_tq3_codes_outside(x, want, want, R, 12, 1.0, NULL, NULL, NULL) == R * 12,
         "a head_dim that is not a multiple of 8 fails every code");
}

int main(void) {
  test_tq3_tables();
  test_tq3_exact_u_random();
  test_tq3_exact_u_known();
  test_tq3_code_near();
  test_tq3_codes_outside();
  test_fp8_known();
  test_fp8_brute();
  test_f16_bf16();
  test_fwht();
  test_pack();
  test_codebook();
  test_accuracy();
  if (failures) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("cpu_quant_ref: all passed\n");
  return 0;
}
