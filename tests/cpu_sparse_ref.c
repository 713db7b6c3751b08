/* CPU checks of the sparse (Quest) references that the GPU kernels are verified against: bf16
 * conversion, summaries (tie rule, partial page), scores, the top-k tie and last-page rules, the gather,
 * the XOR and the recall of planted data. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_ref.h"
#include "test_util.h"

static void test_bf16(void) {
  KM_EXPECT(km_float_to_bf16(1.0f) == 0x3f80);
  KM_EXPECT(km_float_to_bf16(-2.0f) == 0xc000);
  KM_EXPECT(km_bf16_to_float(0x3f80) == 1.0f);
  KM_EXPECT(km_float_to_bf16(1.00390625f) == 0x3f80); /* halfway: ties to even */
  KM_EXPECT(km_float_to_bf16(1.01171875f) == 0x3f82); /* halfway above odd: up */
}

/* batch 1, 20 tokens (a partial second page of 4), 1 head, d 2. */
static void test_summarize(void) {
  km_sparse_shape s = {1, 20, 1, 1, 2};
  uint16_t keys[40], sum[2 * 2 * 2];
  for (int t = 0; t < 20; ++t) {
    keys[2 * t] = km_float_to_bf16((float)((t * 7) % 11) - 5.0f);
    keys[2 * t + 1] = km_float_to_bf16((float)t);
  }
  keys[2 * 3] = 0x0000;  /* +0 first ... */
  keys[2 * 5] = 0x8000;  /* ... then -0: equal, so a max/min holding +0 keeps +0 */
  km_sparse_ref_summarize(keys, sum, s);
  KM_EXPECT(km_bf16_to_float(sum[0]) == 5.0f);   /* page 0 max of dim 0 */
  KM_EXPECT(km_bf16_to_float(sum[1]) == 15.0f);  /* page 0 max of dim 1 */
  KM_EXPECT(km_bf16_to_float(sum[2]) == -5.0f);  /* page 0 min of dim 0 */
  KM_EXPECT(km_bf16_to_float(sum[3]) == 0.0f);
  KM_EXPECT(km_bf16_to_float(sum[5]) == 19.0f);  /* page 1 (tokens 16..19) max of dim 1 */
  KM_EXPECT(km_bf16_to_float(sum[7]) == 16.0f);  /* page 1 min of dim 1 */
  /* all-zero page with +0 then -0: max and min keep the first (+0) */
  uint16_t z[16 * 1], zs[2];
  km_sparse_shape one = {1, 16, 1, 1, 1};
  for (int t = 0; t < 16; ++t) z[t] = t % 2 ? 0x8000 : 0x0000;
  km_sparse_ref_summarize(z, zs, one);
  KM_EXPECT(zs[0] == 0x0000 && zs[1] == 0x0000);
}

/* One page, group of 2, d 2: sum over heads and dims of max(q*max, q*min). */
static void test_score(void) {
  km_sparse_shape s = {1, 16, 1, 2, 2};
  uint16_t q[4] = {km_float_to_bf16(1.0f), km_float_to_bf16(-2.0f), km_float_to_bf16(0.5f), km_float_to_bf16(3.0f)};
  uint16_t sum[4] = {km_float_to_bf16(2.0f), km_float_to_bf16(1.0f), km_float_to_bf16(-1.0f), km_float_to_bf16(-4.0f)};
  float score, mag;
  km_sparse_ref_score(q, sum, &score, &mag, s);
  /* head 0: max(2,-1)=2, max(-2,8)=8; head 1: max(1,-0.5)=1, max(3,-12)=3 */
  KM_EXPECT_NEAR(score, 14.0, 0);
  KM_EXPECT_NEAR(mag, 14.0, 0);
}

static int same(const int32_t *a, const int32_t *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

static void test_topk(void) {
  const float sc[8] = {1.0f, 5.0f, 5.0f, -0.0f, 0.0f, NAN, 5.0f, -100.0f};
  int32_t out[8];
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 1, out) == 0 && out[0] == 7);  /* last page alone */
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 3, out) == 0 && same(out, (int32_t[]){1, 2, 7}, 3));  /* ties: lower */
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 6, out) == 0 && same(out, (int32_t[]){0, 1, 2, 4, 6, 7}, 6)); /* +0 > -0 */
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 7, out) == 0 && same(out, (int32_t[]){0, 1, 2, 3, 4, 6, 7}, 7)); /* NaN last */
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 8, out) == 0 && same(out, (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8));
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 9, out) == -1);
  KM_EXPECT(km_sparse_ref_topk_row(sc, 8, 0, out) == -1);
}

static void test_gather_xor(void) {
  km_sparse_shape s = {2, 48, 2, 2, 8};
  const size_t n = (size_t)2 * 48 * 2 * 8;
  uint16_t *k = malloc(n * 2), *v = malloc(n * 2), ko[2 * 16 * 8], vo[2 * 16 * 8];
  for (size_t i = 0; i < n; ++i) {
    k[i] = (uint16_t)i;
    v[i] = (uint16_t)(i ^ 0x5555);
  }
  const int32_t sel[2] = {2, 0};
  km_sparse_ref_gather_row(k, v, sel, 2, 3, s, ko, vo); /* row 3: sequence 1, head 1 */
  /* slot 0 token 5 = page 2 token 37 of sequence 1, head 1 */
  KM_EXPECT(ko[5 * 8 + 1] == k[((1 * 48 + 37) * 2 + 1) * 8 + 1]);
  KM_EXPECT(vo[(16 + 15) * 8 + 7] == v[((1 * 48 + 15) * 2 + 1) * 8 + 7]);
  uint32_t x = 0;
  for (size_t i = 0; i < n; i += 2) x ^= ((uint32_t)k[i] | (uint32_t)k[i + 1] << 16) ^ ((uint32_t)v[i] | (uint32_t)v[i + 1] << 16);
  KM_EXPECT(km_sparse_ref_xor(k, v, n * 2) == x);
  free(k);
  free(v);
}

/* Planted tokens dominate attention: selecting their pages gives a high recall, everything gives 1. */
static void test_recall(void) {
  km_sparse_shape s = {1, 1024, 2, 4, 64};
  const int pages = 64;
  const size_t n = (size_t)1024 * 2 * 64;
  uint16_t *k = malloc(n * 2), q[4 * 64];
  uint64_t st = 42;
  for (size_t i = 0; i < n; ++i) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    k[i] = km_float_to_bf16(((float)(st >> 40) / 16777216.0f - 0.5f) * 3.4f);  /* var ~1 */
  }
  for (int i = 0; i < 4 * 64; ++i) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    q[i] = km_float_to_bf16(((float)(st >> 40) / 16777216.0f - 0.5f) * 3.4f);
  }
  km_sparse_ref_plant(k, q, s, 2, 9.0f, 10.0f, 7);
  uint16_t *sum = malloc((size_t)2 * pages * 2 * 64 * 2);
  float *sc = malloc(2 * pages * sizeof *sc);
  int32_t sel[2 * 8], all[2 * 64];
  km_sparse_ref_summarize(k, sum, s);
  km_sparse_ref_score(q, sum, sc, NULL, s);
  for (int h = 0; h < 2; ++h) km_sparse_ref_topk_row(sc + h * pages, pages, 8, sel + h * 8);
  for (int h = 0; h < 2; ++h)
    for (int p = 0; p < 64; ++p) all[h * 64 + p] = p;
  double rec = 0, orc = 0;
  KM_EXPECT(km_sparse_ref_recall(k, q, sel, 8, s, &rec, &orc) == 0);
  printf("recall of 8 of 64 pages with 2 planted tokens per head: %.3f (oracle %.3f)\n", rec, orc);
  KM_EXPECT(rec > 0.5 && rec <= orc + 1e-9 && orc <= 1.0 + 1e-9);
  KM_EXPECT(km_sparse_ref_recall(k, q, all, 64, s, &rec, &orc) == 0);
  KM_EXPECT_NEAR(rec, 1.0, 1e-9);
  free(k);
  free(sum);
  free(sc);
}

/* One planted dataset, budgets from 1 page to every page (what the sparse/recall rows sweep, on the dataset the
 * sweep shares): the selected sets are nested, so both the selection's recall and the oracle's can only
 * grow with the budget, the oracle stays at or above the selection, and every page gives 1. */
static void test_recall_monotone(void) {
  km_sparse_shape s = {1, 4096, 2, 4, 64};
  const int pages = 4096 / 16;
  const size_t n = (size_t)4096 * 2 * 64;
  uint16_t *k = malloc(n * 2), q[4 * 64];
  uint16_t *sum = malloc((size_t)2 * pages * 2 * 64 * 2);
  float *sc = malloc((size_t)2 * pages * sizeof *sc);
  int32_t *sel = malloc((size_t)2 * pages * sizeof *sel);
  KM_EXPECT(k && sum && sc && sel);
  if (!k || !sum || !sc || !sel) return;
  uint64_t st = 2025;
  for (size_t i = 0; i < n; ++i) k[i] = km_float_to_bf16(km_test_rng_normal(&st));
  for (int i = 0; i < 4 * 64; ++i) q[i] = km_float_to_bf16(km_test_rng_normal(&st));
  km_sparse_ref_plant(k, q, s, 48, 5.0f, 10.0f, 11);
  km_sparse_ref_summarize(k, sum, s);
  km_sparse_ref_score(q, sum, sc, NULL, s);
  double last_rec = -1.0, last_orc = -1.0;
  for (int kk = 1; kk <= pages; kk *= 2) {
    for (int h = 0; h < 2; ++h) KM_EXPECT(km_sparse_ref_topk_row(sc + h * pages, pages, kk, sel + h * kk) == 0);
    double rec = 0, orc = 0;
    KM_EXPECT(km_sparse_ref_recall(k, q, sel, kk, s, &rec, &orc) == 0);
    KM_EXPECT_MSG(rec >= last_rec - 1e-12 && orc >= last_orc - 1e-12,
                  "budget %d pages: recall %.6f (before %.6f), oracle %.6f (before %.6f)", kk, rec, last_rec, orc, last_orc);
    KM_EXPECT_MSG(rec <= orc + 1e-12, "budget %d pages: recall %.6f above the oracle %.6f", kk, rec, orc);
    last_rec = rec;
    last_orc = orc;
  }
  KM_EXPECT_NEAR(last_rec, 1.0, 1e-9);
  KM_EXPECT_NEAR(last_orc, 1.0, 1e-9);
  free(k);
  free(sum);
  free(sc);
  free(sel);
}

int main(void) {
  test_bf16();
  test_summarize();
  test_score();
  test_topk();
  test_gather_xor();
  test_recall();
  test_recall_monotone();
  return km_test_finish("cpu_sparse_ref");
}
