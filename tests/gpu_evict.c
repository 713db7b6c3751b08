/* GPU test of kernels/evict_score.cu and evict_compact.cu against micro/evict_ref.c on fresh random data,
 * over shapes that walk the kernels' edges: head_dim 64/128/256 (two m16 tiles per warp, or one), GQA groups
 * 1..8 (1 to 4 warps per CTA, 1 to 4 row blocks), contexts that leave partial key tiles and chunks and put
 * the window across a chunk boundary (a pass-2 chunk of window tokens only), odd block sizes through random
 * tables, budget = window (the window alone) and budget = context (nothing evicted), both poolings and
 * kernels 1, 3, 5, and a planted token set the selection must contain. For every row: scores within
 * KM_EVICT_SCORE_REL of fp64 and bitwise the same on a second run (no atomics); the kept set equal to the CPU
 * top-k of the GPU's scores and to the fp64 set up to near-ties; the compacted pools bitwise over the whole
 * (poisoned) destination, by the default compaction and by every variant (unroll 2/4/8, a CTA per tile or
 * persistent on the resident grid, one CTA, three, and more CTAs than tiles: the shapes leave partial tiles,
 * tiles that divide the output, and outputs under one tile); guards untouched; bad shapes and variants
 * refused. Exit 77 without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "evict_ref.h"
#include "paged_ref.h"
#include "sparse_ref.h"
#include "sparse_topk.h"
#include "test_util.h"

typedef struct ev_case {
  int batch, context, kv_heads, q_heads, head_dim, window, budget, kernel;
  km_evict_pool pool;
  int block_size, plant; /* plant: tokens per (sequence, head) given a large logit for every window query */
} ev_case;

/* Keys of `per` random prefix tokens of each (b, h) := 8 sqrt(d) u, u the unit direction of the sum of the
 * group's window queries, so query r gives them a logit of 8 (q_r . u), about 8 (1 + sqrt(d / rows)) for
 * rows queries: far above random tokens' N(0, 1). With their pooling neighbours they fit the budget, so
 * they must be kept. Marks them in planted[b][h][t]. (A larger factor grows the logits' fp32 rounding
 * towards the score tolerance.) */
static void plant(const km_evict_shape *s, uint16_t *k, const int32_t *table, const uint16_t *q, int per,
                  unsigned char *planted, uint64_t *st) {
  const int d = s->head_dim, G = s->q_heads / s->kv_heads, P = s->context - s->window;
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < s->kv_heads; ++h) {
      float mean[256] = {0};
      for (int i = 0; i < s->window; ++i)
        for (int g = 0; g < G; ++g)
          for (int c = 0; c < d; ++c)
            mean[c] += km_bf16_to_float(q[(((size_t)b * s->window + i) * s->q_heads + h * G + g) * d + c]);
      double norm = 0;
      for (int c = 0; c < d; ++c) norm += (double)mean[c] * mean[c];
      for (int n = 0; n < per; ++n) {
        const int t = (int)(km_test_rng_next(st) % (uint64_t)P);
        planted[((size_t)b * s->kv_heads + h) * P + t] = 1;
        const int64_t blk = table[(size_t)b * s->blocks_per_seq + t / s->block_size];
        uint16_t *key = k + (((size_t)blk * s->block_size + t % s->block_size) * s->kv_heads + h) * d;
        for (int c = 0; c < d; ++c) key[c] = km_float_to_bf16((float)(8.0 * sqrt((double)d) * mean[c] / sqrt(norm)));
      }
    }
}

/* One compaction's device buffers, the host room to download its output (dst_bytes + the guard) and the
 * CPU's compaction over the same poison. */
typedef struct compact_io {
  const km_evict_shape *s;
  const uint16_t *d_k, *d_v;
  const int32_t *d_table, *d_sel, *d_dst_table;
  uint16_t *d_dk, *d_dv, *dk, *dv;
  const uint16_t *wk, *wv;
  size_t dst_bytes;
} compact_io;

/* Variant o into the poisoned destination again: the CPU's bits, the guards untouched. */
static void check_variant(const compact_io *io, const km_evict_compact_opts *o) {
  const km_evict_shape *s = io->s;
  KM_EXPECT(cudaMemset(io->d_dk, 0xff, io->dst_bytes) == cudaSuccess);
  KM_EXPECT(cudaMemset(io->d_dv, 0xff, io->dst_bytes) == cudaSuccess);
  const cudaError_t e =
      km_evict_compact(o, s, io->d_k, io->d_v, io->d_table, io->d_sel, io->d_dk, io->d_dv, io->d_dst_table, 0);
  KM_EXPECT_MSG(e == cudaSuccess, "unroll %d persistent %d grid %d: %s", o->unroll, o->persistent, o->grid,
                cudaGetErrorString(e));
  if (e != cudaSuccess || km_test_download(io->dk, io->d_dk, io->dst_bytes + KM_TEST_GUARD_BYTES) ||
      km_test_download(io->dv, io->d_dv, io->dst_bytes + KM_TEST_GUARD_BYTES)) {
    ++km_test_failures;
    return;
  }
  KM_EXPECT_MSG(memcmp(io->dk, io->wk, io->dst_bytes) == 0 && memcmp(io->dv, io->wv, io->dst_bytes) == 0,
                "ctx %d budget %d bs %d d%d, unroll %d persistent %d grid %d: compacted pools differ", s->context,
                s->budget, s->block_size, s->head_dim, o->unroll, o->persistent, o->grid);
  KM_EXPECT(km_test_guard_intact(io->dk, io->dst_bytes) && km_test_guard_intact(io->dv, io->dst_bytes));
}

/* Every variant on this shape: a CTA per tile and persistent on the resident grid (km_evict_compact_opts_make)
 * at each unroll, and persistent on one CTA (walking every tile, both stages in turn), on three (a stride
 * that leaves the partial tile to a CTA other than 0 or walks past it) and on more CTAs than tiles (idle
 * ones). */
static void check_variants(const compact_io *io) {
  static const int unrolls[3] = {2, 4, 8};
  const long long vectors = (long long)io->s->batch * io->s->budget * io->s->kv_heads * (io->s->head_dim / 8);
  for (int i = 0; i < 3; ++i) {
    const int u = unrolls[i];
    km_evict_compact_opts o = {0, 0, 0};
    for (int persistent = 0; persistent <= 1; ++persistent) {
      const cudaError_t e = km_evict_compact_opts_make(io->s, u, persistent, &o);
      KM_EXPECT_MSG(e == cudaSuccess, "unroll %d persistent %d: %s", u, persistent, cudaGetErrorString(e));
      if (e == cudaSuccess) check_variant(io, &o);
    }
    const long long tile = (long long)KM_EVICT_COMPACT_THREADS * u, tiles = (vectors + tile - 1) / tile;
    KM_EXPECT(o.grid >= 1 && o.grid <= tiles); /* the resident grid, no more CTAs than tiles */
    const int grids[3] = {1, 3, (int)tiles + 3};
    for (int g = 0; g < 3; ++g) {
      o = (km_evict_compact_opts){u, 1, grids[g]};
      check_variant(io, &o);
    }
  }
}

static void test_case(const ev_case *c, uint64_t seed) {
  const int bps = (c->context + c->block_size - 1) / c->block_size + 1; /* one spare entry */
  const int dbps = (c->budget + c->block_size - 1) / c->block_size;
  km_evict_shape s = {c->batch, c->context, c->kv_heads, c->q_heads, c->head_dim, c->window, c->budget, c->kernel,
                      c->pool, c->block_size, bps, dbps};
  const char *why = km_evict_shape_error(&s);
  KM_EXPECT_MSG(why == NULL, "shape refused: %s", why ? why : "");
  if (why) return;
  const int rows = km_evict_rows(&s), n = km_evict_score_len(&s), kk = km_evict_select_len(&s), P = c->context - c->window;
  const size_t piece = (size_t)c->kv_heads * c->head_dim;
  const size_t src_blocks = (size_t)c->batch * bps + 3, dst_blocks = (size_t)c->batch * dbps + 2; /* unused blocks too */
  const size_t pool_elems = src_blocks * c->block_size * piece, dst_elems = dst_blocks * c->block_size * piece;
  const size_t q_elems = (size_t)c->batch * c->window * c->q_heads * c->head_dim;
  uint64_t st = seed;
  uint16_t *k = malloc(pool_elems * 2), *v = malloc(pool_elems * 2), *q = malloc(q_elems * 2);
  int32_t *table = malloc(src_blocks * 4), *dst_table = malloc(dst_blocks * 4);
  unsigned char *planted = calloc((size_t)rows * P + 1, 1);
  float *scores = malloc((size_t)rows * n * 4 + KM_TEST_GUARD_BYTES), *again = malloc((size_t)rows * n * 4);
  int32_t *sel = malloc((size_t)rows * kk * 4 + KM_TEST_GUARD_BYTES), *want = malloc((size_t)kk * 4);
  uint16_t *dk = malloc(dst_elems * 2 + KM_TEST_GUARD_BYTES), *dv = malloc(dst_elems * 2 + KM_TEST_GUARD_BYTES);
  uint16_t *wk = malloc(dst_elems * 2), *wv = malloc(dst_elems * 2);
  double *ref = malloc((size_t)n * sizeof *ref);
  if (!k || !v || !q || !table || !dst_table || !planted || !scores || !again || !sel || !want || !dk || !dv || !wk ||
      !wv || !ref)
    exit(1);
  for (size_t i = 0; i < pool_elems; ++i) k[i] = km_float_to_bf16(km_test_rng_normal(&st));
  for (size_t i = 0; i < pool_elems; ++i) v[i] = (uint16_t)km_test_rng_next(&st);
  for (size_t i = 0; i < q_elems; ++i) q[i] = km_float_to_bf16(km_test_rng_normal(&st));
  /* tables: distinct random blocks out of a pool with spares */
  KM_EXPECT(km_paged_table_random(table, (size_t)c->batch * bps, (int64_t)src_blocks, km_test_rng_next(&st)) == 0);
  KM_EXPECT(km_paged_table_random(dst_table, (size_t)c->batch * dbps, (int64_t)dst_blocks, km_test_rng_next(&st)) == 0);
  if (c->plant) plant(&s, k, table, q, c->plant, planted, &st);

  uint16_t *d_k = km_test_dev_upload(k, pool_elems * 2), *d_v = km_test_dev_upload(v, pool_elems * 2);
  uint16_t *d_q = km_test_dev_upload(q, q_elems * 2);
  int32_t *d_table = km_test_dev_upload(table, (size_t)c->batch * bps * 4);
  int32_t *d_dst_table = km_test_dev_upload(dst_table, (size_t)c->batch * dbps * 4);
  const size_t scratch_bytes = km_evict_scratch_bytes(&s);
  void *d_scratch = km_test_dev_filled(scratch_bytes, 0xff);
  float *d_scores = km_test_dev_guarded(NULL, (size_t)rows * n * 4);
  int32_t *d_sel = km_test_dev_guarded(NULL, (size_t)rows * kk * 4);
  uint16_t *d_dk = km_test_dev_guarded(NULL, dst_elems * 2), *d_dv = km_test_dev_guarded(NULL, dst_elems * 2);
  if (!d_k || !d_v || !d_q || !d_table || !d_dst_table || !d_scratch || !d_scores || !d_sel || !d_dk || !d_dv) exit(1);
  KM_EXPECT(scratch_bytes > 0);

  cudaError_t e = km_evict_score(&s, d_q, d_k, d_table, d_scratch, d_scores, 0);
  km_sparse_plan plan;
  if (e == cudaSuccess) e = km_sparse_plan_make(&plan);
  if (e == cudaSuccess) e = km_evict_select(&plan, &s, d_scores, d_sel, 0);
  if (e == cudaSuccess) e = km_evict_compact(NULL, &s, d_k, d_v, d_table, d_sel, d_dk, d_dv, d_dst_table, 0);
  KM_EXPECT_MSG(e == cudaSuccess, "launch: %s", cudaGetErrorString(e));
  const size_t score_bytes = (size_t)rows * n * 4, sel_bytes = (size_t)rows * kk * 4, dst_bytes = dst_elems * 2;
  if (km_test_download(scores, d_scores, score_bytes + KM_TEST_GUARD_BYTES) ||
      km_test_download(sel, d_sel, sel_bytes + KM_TEST_GUARD_BYTES) ||
      km_test_download(dk, d_dk, dst_bytes + KM_TEST_GUARD_BYTES) ||
      km_test_download(dv, d_dv, dst_bytes + KM_TEST_GUARD_BYTES)) {
    ++km_test_failures;
    return;
  }
  /* a second scoring: the same bits */
  e = km_evict_score(&s, d_q, d_k, d_table, d_scratch, d_scores, 0);
  KM_EXPECT(e == cudaSuccess && km_test_download(again, d_scores, (size_t)rows * n * 4) == 0);
  KM_EXPECT_MSG(memcmp(again, scores, (size_t)rows * n * 4) == 0, "ctx %d d%d: scores differ between two runs",
                c->context, c->head_dim);

  size_t bad_scores = 0, bad_sel = 0, missed = 0;
  long ties = 0;
  for (int row = 0; row < rows; ++row) {
    const int b = row / c->kv_heads, h = row % c->kv_heads;
    KM_EXPECT(km_evict_ref_score_row(&s, q, k, table, b, h, ref) == 0);
    for (int t = 0; t < n; ++t) {
      const double got = scores[(size_t)row * n + t];
      if (!(fabs(got - ref[t]) <= KM_EVICT_SCORE_REL * ref[t] + 1e-30) && bad_scores++ < 5)
        fprintf(stderr, "row %d token %d: score %.9g, fp64 %.9g\n", row, t, got, ref[t]);
    }
    KM_EXPECT(km_evict_ref_select_row(&s, scores + (size_t)row * n, want) == 0);
    if (memcmp(want, sel + (size_t)row * kk, (size_t)kk * 4) != 0 && bad_sel++ < 5)
      fprintf(stderr, "row %d: kept set is not the CPU top-k of the GPU scores\n", row);
    const long v2 = km_evict_ref_near_tie_violations(&s, ref, sel + (size_t)row * kk);
    if (v2 != 0) ties += v2 < 0 ? 1 : v2;
    for (int t = 0; t < P; ++t) /* planted tokens kept (budget allowing: the tests plant fewer than kk - 1) */
      if (planted[(size_t)row * P + t]) {
        int found = 0;
        for (int j = 0; j + 1 < kk; ++j) found |= sel[(size_t)row * kk + j] == t;
        missed += !found;
      }
  }
  KM_EXPECT_MSG(bad_scores == 0, "ctx %d d%d g%d: %zu scores off fp64", c->context, c->head_dim, c->q_heads / c->kv_heads,
                bad_scores);
  KM_EXPECT_MSG(bad_sel == 0, "ctx %d d%d: %zu rows with another kept set", c->context, c->head_dim, bad_sel);
  KM_EXPECT_MSG(ties == 0, "ctx %d d%d: %ld kept/dropped tokens beyond a near-tie of fp64", c->context, c->head_dim, ties);
  KM_EXPECT_MSG(missed == 0, "ctx %d d%d: %zu planted tokens dropped", c->context, c->head_dim, missed);
  KM_EXPECT(km_test_guard_intact(scores, score_bytes) && km_test_guard_intact(sel, sel_bytes));

  memset(wk, 0xff, dst_elems * 2);
  memset(wv, 0xff, dst_elems * 2);
  km_evict_ref_compact(&s, k, v, table, sel, wk, wv, dst_table);
  KM_EXPECT_MSG(memcmp(dk, wk, dst_elems * 2) == 0 && memcmp(dv, wv, dst_elems * 2) == 0,
                "ctx %d budget %d bs %d: compacted pools differ", c->context, c->budget, c->block_size);
  KM_EXPECT(km_test_guard_intact(dk, dst_bytes) && km_test_guard_intact(dv, dst_bytes));
  const compact_io io = {&s, d_k, d_v, d_table, d_sel, d_dst_table, d_dk, d_dv, dk, dv, wk, wv, dst_bytes};
  check_variants(&io);

  /* refused: a window whose query rows are not whole warps, a head_dim it does not take, a misaligned pool */
  km_evict_shape bad = s;
  bad.window = c->q_heads / c->kv_heads == 8 ? 3 : 5;
  KM_EXPECT(km_evict_score(&bad, d_q, d_k, d_table, d_scratch, d_scores, 0) == cudaErrorInvalidValue);
  bad = s;
  bad.head_dim = 96;
  KM_EXPECT(km_evict_compact(NULL, &bad, d_k, d_v, d_table, d_sel, d_dk, d_dv, d_dst_table, 0) ==
            cudaErrorInvalidValue);
  KM_EXPECT(km_evict_compact(NULL, &s, d_k + 4, d_v, d_table, d_sel, d_dk, d_dv, d_dst_table, 0) ==
            cudaErrorInvalidValue);
  /* refused variants: an unroll it has no kernel for, a persistent launch without a grid, a grid without one */
  const km_evict_compact_opts bad_opts[3] = {{3, 0, 0}, {2, 1, 0}, {4, 0, 8}};
  for (int i = 0; i < 3; ++i)
    KM_EXPECT(km_evict_compact(&bad_opts[i], &s, d_k, d_v, d_table, d_sel, d_dk, d_dv, d_dst_table, 0) ==
              cudaErrorInvalidValue);
  km_evict_compact_opts made;
  KM_EXPECT(km_evict_compact_opts_make(&s, 16, 1, &made) == cudaErrorInvalidValue);
  KM_EXPECT(km_evict_compact_opts_make(&bad, 4, 1, &made) == cudaErrorInvalidValue);
  KM_EXPECT(km_evict_score(&s, d_q, d_k + 4, d_table, d_scratch, d_scores, 0) == cudaErrorInvalidValue);
  cudaFree(d_k), cudaFree(d_v), cudaFree(d_q), cudaFree(d_table), cudaFree(d_dst_table), cudaFree(d_scratch);
  cudaFree(d_scores), cudaFree(d_sel), cudaFree(d_dk), cudaFree(d_dv);
  free(k), free(v), free(q), free(table), free(dst_table), free(planted), free(scores), free(again), free(sel);
  free(want), free(dk), free(dv), free(wk), free(wv), free(ref);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  const ev_case cases[] = {
      /* batch ctx  kv  q   d   W  budget kernel pool block plant */
      {2, 1060, 2, 8, 128, 64, 300, 5, KM_EVICT_POOL_AVG, 16, 20},  /* G 4: 2 row blocks; window across chunks */
      {3, 777, 1, 1, 64, 32, 100, 3, KM_EVICT_POOL_AVG, 7, 10},     /* MHA: one warp per CTA; odd block size */
      {2, 600, 2, 4, 256, 64, 200, 5, KM_EVICT_POOL_MAX, 16, 8},    /* head_dim 256: one m16 tile per warp */
      {1, 3000, 1, 8, 128, 64, 64, 5, KM_EVICT_POOL_AVG, 32, 0},    /* G 8: 4 row blocks; budget = window */
      {2, 500, 2, 4, 64, 64, 500, 1, KM_EVICT_POOL_AVG, 16, 0},     /* budget = context: nothing evicted */
      {1, 4096, 8, 32, 128, 64, 1024, 5, KM_EVICT_POOL_AVG, 16, 40}, /* Qwen3-8B's heads */
      {4, 257, 2, 4, 128, 32, 97, 3, KM_EVICT_POOL_MAX, 1, 5},       /* block size 1, window 32 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) test_case(&cases[i], 77 + i);
  return km_test_finish("gpu_evict");
}
