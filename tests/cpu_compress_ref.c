/* CPU checks of the compress reference the GPU kernel is compared with bit for bit: the mean's operation
 * order and rounding on worked values, agreement with the exact mean within half a bf16 unit plus the fp32
 * sum's rounding on random data, the entry-to-slot mapping through the table with the tail left out, and
 * the shape checks. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compress_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

static uint16_t bf(float f) { return km_float_to_bf16(f); }

static void test_mean_of(void) {
  const uint16_t a[4] = {bf(1.0f), bf(2.0f), bf(3.0f), bf(6.0f)};
  KM_EXPECT(km_compress_ref_mean_of(a, 4, 1) == bf(3.0f));
  KM_EXPECT(km_compress_ref_mean_of(a, 2, 2) == bf(2.0f)); /* a[0], a[2] */
  /* (1 + 2^-8) / 2 is a bf16 halfway case: rounds to even, 0.5 */
  const uint16_t h[2] = {bf(1.0f), bf(0.00390625f)};
  KM_EXPECT(km_compress_ref_mean_of(h, 2, 1) == bf(0.5f));
  /* the order is the fp32 one: 2^24 + 1 + 1 - 2^24 loses both ones */
  const uint16_t o[4] = {bf(16777216.0f), bf(1.0f), bf(1.0f), bf(-16777216.0f)};
  KM_EXPECT(km_compress_ref_mean_of(o, 4, 1) == bf(0.0f));
}

static void test_against_exact(void) {
  uint64_t st = 7;
  int bad = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int n = 2 << (trial % 3);
    uint16_t v[8];
    double exact = 0.0, mag = 0.0;
    for (int i = 0; i < n; ++i) {
      v[i] = bf(km_test_rng_normal(&st));
      exact += km_bf16_to_float(v[i]);
      mag += fabs(km_bf16_to_float(v[i]));
    }
    exact /= n;
    const double got = km_bf16_to_float(km_compress_ref_mean_of(v, n, 1));
    /* half a bf16 unit of the result, plus n fp32 roundings of the partial sums */
    if (!(fabs(got - exact) <= ldexp(fabs(exact), -8) + 1e-6 * mag)) ++bad;
  }
  KM_EXPECT(bad == 0);
}

/* 2 sequences, 11 tokens, ratio 4 (2 entries, 3 tail tokens), 1 head x 8, block 1: entry e of sequence b to
 * block table[b * 2 + e]. */
static void test_mapping(void) {
  km_compress_shape s = {2, 11, 1, 8, 4, 1, 2};
  KM_EXPECT(km_compress_entries(&s) == 2);
  uint16_t k[2 * 11 * 8], v[2 * 11 * 8], kp[5 * 8], vp[5 * 8];
  for (int i = 0; i < 2 * 11 * 8; ++i) {
    k[i] = bf((float)(i % 97) * 0.25f);
    v[i] = bf(-(float)(i % 89));
  }
  memset(kp, 0xee, sizeof kp);
  memset(vp, 0xee, sizeof vp);
  const int32_t table[4] = {3, 0, 4, 1};
  km_compress_ref_mean(&s, k, v, kp, vp, table);
  for (int b = 0; b < 2; ++b)
    for (int e = 0; e < 2; ++e)
      for (int c = 0; c < 8; ++c) {
        const uint16_t *src = k + ((size_t)b * 11 + e * 4) * 8 + c;
        KM_EXPECT(kp[table[b * 2 + e] * 8 + c] == km_compress_ref_mean_of(src, 4, 8));
        KM_EXPECT(vp[table[b * 2 + e] * 8 + c] == km_compress_ref_mean_of(v + (src - k), 4, 8));
      }
  for (int c = 0; c < 8; ++c) KM_EXPECT(kp[2 * 8 + c] == 0xeeee && vp[2 * 8 + c] == 0xeeee); /* block 2 unused */
}

static void test_shape_checks(void) {
  const km_compress_shape ok = {16, 8192, 8, 128, 4, 16, 128};
  KM_EXPECT(km_compress_shape_error(&ok) == NULL);
  km_compress_shape s = ok;
  s.ratio = 3;
  KM_EXPECT(km_compress_shape_error(&s) != NULL);
  s = ok;
  s.blocks_per_seq = 127;
  KM_EXPECT(km_compress_shape_error(&s) != NULL);
  s = ok;
  s.tokens = 2;
  KM_EXPECT(km_compress_shape_error(&s) != NULL);
  s = ok;
  s.kv_heads = 1;
  s.head_dim = 4;
  KM_EXPECT(km_compress_shape_error(&s) != NULL);
}

int main(void) {
  test_mean_of();
  test_against_exact();
  test_mapping();
  test_shape_checks();
  return km_test_finish("cpu_compress_ref");
}
