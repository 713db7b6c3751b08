/* CPU checks of the eviction references the GPU kernels are verified against: scores on inputs whose
 * softmax is known in closed form (uniform keys, the causal mask inside the window, the GQA group sum, both
 * poolings and their zero padding), independence from the block table's order, the kept set's tie and
 * window rules, the near-tie check, the compaction's slot mapping, and the shape and compaction-variant
 * checks. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evict_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

/* batch 1, 1 KV head, group g, head_dim 4, window 2, context 6 (P = 4), block 2. */
static km_evict_shape tiny(int group, int kernel, km_evict_pool pool) {
  return (km_evict_shape){1, 6, 1, group, 4, 2, 4, kernel, pool, 2, 3, 2};
}

/* Keys: token t = (key_t, 0, 0, 0); queries all (1, 0, 0, 0). Identity table. */
static void make_inputs(const km_evict_shape *s, const float *key0, uint16_t *k, uint16_t *q, int32_t *table) {
  memset(k, 0, (size_t)s->context * 4 * 2);
  for (int t = 0; t < s->context; ++t) k[t * 4] = km_float_to_bf16(key0[t]);
  for (int i = 0; i < s->window * s->q_heads; ++i) {
    memset(q + i * 4, 0, 8);
    q[i * 4] = km_float_to_bf16(1.0f);
  }
  for (int i = 0; i < s->blocks_per_seq; ++i) table[i] = i;
}

static void test_uniform(void) {
  const float flat[6] = {1, 1, 1, 1, 1, 1};
  uint16_t k[24], q[16];
  int32_t table[3];
  double sc[5];
  /* every token equal: query i sees P + 1 + i tokens evenly; a = (G / W) sum_i 1 / (P + 1 + i) */
  for (int group = 1; group <= 2; ++group) {
    km_evict_shape s = tiny(group, 3, KM_EVICT_POOL_AVG);
    make_inputs(&s, flat, k, q, table);
    KM_EXPECT(km_evict_ref_score_row(&s, q, k, table, 0, 0, sc) == 0);
    const double a = group * (1.0 / 5 + 1.0 / 6) / 2;
    KM_EXPECT_NEAR(sc[0], 2 * a / 3, 1e-15); /* zero padding counted in the divisor */
    KM_EXPECT_NEAR(sc[1], a, 1e-15);
    KM_EXPECT_NEAR(sc[2], a, 1e-15);
    KM_EXPECT_NEAR(sc[3], 2 * a / 3, 1e-15);
    KM_EXPECT(sc[4] == 0.0); /* the forced entry */
  }
  km_evict_shape s = tiny(1, 5, KM_EVICT_POOL_AVG);
  make_inputs(&s, flat, k, q, table);
  km_evict_ref_score_row(&s, q, k, table, 0, 0, sc);
  const double a = (1.0 / 5 + 1.0 / 6) / 2;
  KM_EXPECT_NEAR(sc[0], 3 * a / 5, 1e-15);
  KM_EXPECT_NEAR(sc[1], 4 * a / 5, 1e-15);
  s = tiny(1, 5, KM_EVICT_POOL_MAX);
  km_evict_ref_score_row(&s, q, k, table, 0, 0, sc);
  KM_EXPECT_NEAR(sc[0], a, 1e-15); /* max pooling ignores the padding */
  s = tiny(1, 1, KM_EVICT_POOL_AVG);
  km_evict_ref_score_row(&s, q, k, table, 0, 0, sc);
  KM_EXPECT_NEAR(sc[3], a, 1e-15); /* kernel 1: no pooling */
}

/* A window token with a huge logit: window query 0 (token P) must not see token P + 1, query 1 puts all its
 * mass there. So the prefix keeps query 0's uniform 1/5 alone: a = 0.1. */
static void test_causal_window(void) {
  const float keys[6] = {1, 1, 1, 1, 1, 120};
  uint16_t k[24], q[8];
  int32_t table[3];
  double sc[5];
  km_evict_shape s = tiny(1, 1, KM_EVICT_POOL_AVG);
  make_inputs(&s, keys, k, q, table);
  km_evict_ref_score_row(&s, q, k, table, 0, 0, sc);
  for (int j = 0; j < 4; ++j) KM_EXPECT_NEAR(sc[j], 0.1, 1e-12);
}

/* One dominant prefix token: it carries nearly all the mass, pooled over its neighbours. */
static void test_dominant_token(void) {
  const float keys[6] = {0, 0, 60, 0, 0, 0};
  uint16_t k[24], q[8];
  int32_t table[3];
  double sc[5];
  km_evict_shape s = tiny(1, 3, KM_EVICT_POOL_AVG);
  make_inputs(&s, keys, k, q, table);
  km_evict_ref_score_row(&s, q, k, table, 0, 0, sc);
  KM_EXPECT_NEAR(sc[1], 1.0 / 3, 1e-9);
  KM_EXPECT_NEAR(sc[2], 1.0 / 3, 1e-9);
  KM_EXPECT_NEAR(sc[3], 1.0 / 3, 1e-9);
  KM_EXPECT(sc[0] < 1e-9);
}

/* The same tokens through a permuted table (and a sequence 1) give the same scores. */
static void test_table_order(void) {
  const float keys[6] = {0.5f, -1, 2, 0.25f, 3, -2};
  km_evict_shape s = tiny(2, 3, KM_EVICT_POOL_AVG);
  uint16_t k[24], q[16];
  int32_t table[3];
  double want[5], got[5];
  make_inputs(&s, keys, k, q, table);
  for (int i = 0; i < 16; ++i) q[i] = km_float_to_bf16((float)((i * 7) % 5) - 2.0f);
  km_evict_ref_score_row(&s, q, k, table, 0, 0, want);
  /* two sequences over 6 blocks; sequence 1 holds our tokens in blocks 5, 0, 3 */
  km_evict_shape s2 = s;
  s2.batch = 2;
  uint16_t pool[6 * 2 * 4], q2[32];
  memset(pool, 0x11, sizeof pool);
  const int32_t t2[6] = {1, 2, 4, 5, 0, 3};
  for (int blk = 0; blk < 3; ++blk) memcpy(pool + t2[3 + blk] * 8, k + blk * 8, 16);
  memcpy(q2 + 16, q, 32);
  for (int i = 0; i < 16; ++i) q2[i] = 0; /* sequence 0's queries */
  km_evict_ref_score_row(&s2, q2, pool, t2, 1, 0, got);
  for (int i = 0; i < 5; ++i) KM_EXPECT_NEAR(got[i], want[i], 1e-15);
}

static void test_select(void) {
  /* context 8, window 2: P = 6, budget 5 -> 3 prefix tokens + the forced entry */
  km_evict_shape s = {1, 8, 1, 1, 4, 2, 5, 1, KM_EVICT_POOL_AVG, 4, 2, 2};
  const float scores[7] = {0.1f, 0.5f, 0.3f, 0.5f, 0.3f, 0.2f, 0.0f};
  int32_t sel[8] = {0};
  KM_EXPECT(km_evict_select_len(&s) == 4 && km_evict_score_len(&s) == 7);
  KM_EXPECT(km_evict_ref_select_row(&s, scores, sel) == 0);
  /* 0.5 at 1 and 3, then the tie 0.3 at 2 and 4: the lower token wins */
  const int32_t want[4] = {1, 2, 3, 6};
  KM_EXPECT(memcmp(sel, want, sizeof want) == 0);
  /* slots: the selection, then the window after the forced entry */
  KM_EXPECT(km_evict_kept_token(&s, sel, 0) == 1 && km_evict_kept_token(&s, sel, 3) == 6);
  KM_EXPECT(km_evict_kept_token(&s, sel, 4) == 7);
  const double ref[7] = {0.1, 0.5, 0.3, 0.5, 0.3, 0.2, 0.0};
  KM_EXPECT(km_evict_ref_near_tie_violations(&s, ref, sel) == 0);
  const int32_t tie_other[4] = {1, 3, 4, 6}; /* the other side of the exact tie: still fine */
  KM_EXPECT(km_evict_ref_near_tie_violations(&s, ref, tie_other) == 0);
  const int32_t wrong[4] = {0, 1, 3, 6}; /* keeps 0.1 over 0.3 */
  KM_EXPECT(km_evict_ref_near_tie_violations(&s, ref, wrong) > 0);
  const int32_t unforced[4] = {1, 2, 3, 5};
  KM_EXPECT(km_evict_ref_near_tie_violations(&s, ref, unforced) > 0);
  const int32_t unsorted[4] = {2, 1, 3, 6};
  KM_EXPECT(km_evict_ref_near_tie_violations(&s, ref, unsorted) > 0);
  /* budget = window: the window alone */
  s.budget = 2;
  KM_EXPECT(km_evict_select_len(&s) == 1);
  KM_EXPECT(km_evict_ref_select_row(&s, scores, sel) == 0 && sel[0] == 6);
  KM_EXPECT(km_evict_kept_token(&s, sel, 1) == 7);
}

/* Two sequences, 2 heads, head_dim 8, block 2; context 6, window 2, budget 3: slots 0..1 from the selection
 * (per head), slot 2 the second window token. */
static void test_compact(void) {
  km_evict_shape s = {2, 6, 2, 2, 8, 2, 3, 1, KM_EVICT_POOL_AVG, 2, 3, 2};
  enum { PIECE = 8, SRC_BLOCKS = 6, DST_BLOCKS = 4 };
  uint16_t k[SRC_BLOCKS * 2 * 2 * PIECE], v[SRC_BLOCKS * 2 * 2 * PIECE];
  for (size_t i = 0; i < sizeof k / 2; ++i) {
    k[i] = (uint16_t)i;
    v[i] = (uint16_t)(0x8000 | i);
  }
  const int32_t table[6] = {3, 0, 5, 1, 4, 2}, dst_table[4] = {2, 0, 3, 1};
  /* kk = 2: one prefix token + the forced P = 4 */
  const int32_t sel[2 * 2 * 2] = {1, 4, 3, 4, 0, 4, 2, 4};
  uint16_t dk[DST_BLOCKS * 2 * 2 * PIECE], dv[DST_BLOCKS * 2 * 2 * PIECE];
  memset(dk, 0xee, sizeof dk);
  memset(dv, 0xee, sizeof dv);
  km_evict_ref_compact(&s, k, v, table, sel, dk, dv, dst_table);
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 3; ++j) {
        const int t = j == 0 ? sel[(b * 2 + h) * 2] : (j == 1 ? 4 : 5);
        const size_t src = (((size_t)table[b * 3 + t / 2] * 2 + t % 2) * 2 + h) * PIECE;
        const size_t dst = (((size_t)dst_table[b * 2 + j / 2] * 2 + j % 2) * 2 + h) * PIECE;
        KM_EXPECT(memcmp(dk + dst, k + src, PIECE * 2) == 0 && memcmp(dv + dst, v + src, PIECE * 2) == 0);
      }
  /* slot 3 of each sequence (the second half of its second block) is not written */
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h) {
      const size_t dst = (((size_t)dst_table[b * 2 + 1] * 2 + 1) * 2 + h) * PIECE;
      KM_EXPECT(dk[dst] == 0xeeee && dv[dst + PIECE - 1] == 0xeeee);
    }
}

static void test_shape_checks(void) {
  const km_evict_shape ok = {16, 32768, 8, 32, 128, 64, 2048, 5, KM_EVICT_POOL_AVG, 16, 2048, 128};
  KM_EXPECT(km_evict_shape_error(&ok) == NULL);
  km_evict_shape s = ok;
  s.head_dim = 96;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.q_heads = 128; /* group 16 */
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.window = 24; /* 24 x 4 = 96: a multiple of 32 */
  KM_EXPECT(km_evict_shape_error(&s) == NULL);
  s.window = 20; /* 80: not */
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.budget = 32;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s.budget = 40000;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.kernel = 4;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.blocks_per_seq = 2047;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.dst_blocks_per_seq = 127;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
  s = ok;
  s.window = 32768;
  KM_EXPECT(km_evict_shape_error(&s) != NULL);
}

/* The compaction's knobs: the unrolls it has kernels for, persistent 0/1, a grid exactly when persistent;
 * km_evict_compact_opts_make refuses bad knobs and shapes before it asks the device anything (this runs
 * without a GPU), and makes a CTA per tile without a device. */
static void test_compact_opts(void) {
  const km_evict_compact_opts good[5] = {
      {KM_EVICT_COMPACT_UNROLL, 0, 0}, {4, 0, 0}, {8, 0, 0}, {2, 1, 1}, {8, 1, 528}};
  for (int i = 0; i < 5; ++i) KM_EXPECT(km_evict_compact_opts_error(&good[i]) == NULL);
  const km_evict_compact_opts bad[7] = {{0, 0, 0}, {3, 0, 0}, {16, 0, 0}, {2, 2, 0}, {2, 1, 0}, {4, 1, -1}, {2, 0, 5}};
  for (int i = 0; i < 7; ++i) KM_EXPECT_MSG(km_evict_compact_opts_error(&bad[i]) != NULL, "bad knobs %d accepted", i);
  const km_evict_shape ok = {16, 32768, 8, 32, 128, 64, 2048, 5, KM_EVICT_POOL_AVG, 16, 2048, 128};
  km_evict_compact_opts o = {0, 0, 0};
  KM_EXPECT(km_evict_compact_opts_make(&ok, 4, 0, &o) == cudaSuccess);
  KM_EXPECT(o.unroll == 4 && o.persistent == 0 && o.grid == 0);
  KM_EXPECT(km_evict_compact_opts_make(&ok, 3, 1, &o) == cudaErrorInvalidValue);
  KM_EXPECT(km_evict_compact_opts_make(&ok, 2, 2, &o) == cudaErrorInvalidValue);
  km_evict_shape s = ok;
  s.head_dim = 96;
  KM_EXPECT(km_evict_compact_opts_make(&s, 2, 1, &o) == cudaErrorInvalidValue);
  KM_EXPECT(km_evict_compact_opts_make(NULL, 2, 0, &o) == cudaErrorInvalidValue);
  KM_EXPECT(o.unroll == 4 && o.grid == 0); /* left alone by the refusals */
}

int main(void) {
  test_uniform();
  test_causal_window();
  test_dominant_token();
  test_table_order();
  test_select();
  test_compact();
  test_shape_checks();
  test_compact_opts();
  return km_test_finish("cpu_evict_ref");
}
