/* CPU tests of the attn/ family's host side: the fp64 reference step (micro/attn_ref.c) on cases with
 * known answers (constant values, one visible token, a window of one, GQA head mapping, selected pages,
 * fp8 decoding), and the planner of kernels/attn_decode.cu (every visible tile in exactly one chunk, the
 * split decision, the window's first tile, the byte counts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_decode.h"
#include "attn_ref.h"
#include "quant_ref.h"
#include "sparse_ref.h"
#include "split_chunks_check.h"
#include "test_util.h"

enum { D = 64 };

/* ctx tokens, 2 KV heads, 4 query heads; K random-ish, V[t][h][i] = vfun(t, h, i). */
static void fill(int ctx, uint16_t *k, uint16_t *v, uint16_t *q, int q_len, float (*vfun)(int, int, int)) {
  uint64_t st = 42;
  for (int t = 0; t < ctx; ++t)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < D; ++i) {
        k[((size_t)t * 2 + h) * D + i] = km_float_to_bf16((float)((int)(km_test_rng_next(&st) % 9) - 4) / 4.0f);
        v[((size_t)t * 2 + h) * D + i] = km_float_to_bf16(vfun(t, h, i));
      }
  for (int j = 0; j < q_len * 4 * D; ++j) q[j] = km_float_to_bf16((float)((int)(km_test_rng_next(&st) % 9) - 4) / 2.0f);
}

static float v_const(int t, int h, int i) { return h == 0 ? 1.5f : -2.0f; }
static float v_token(int t, int h, int i) { return (float)t + (float)(i % 2) * 0.5f; }

static void test_constant_values(void) {
  const int ctx = 37;
  uint16_t k[37 * 2 * D], v[37 * 2 * D], q[4 * D];
  fill(ctx, k, v, q, 1, v_const);
  km_attn_ref_shape s = {4, 2, D, 1, 0, KM_REF_KV_BF16, 0, 1, 1, 0.125f};
  float out[4 * D];
  km_attn_ref_step(&s, ctx, q, k, v, NULL, NULL, NULL, 0, 2, out);
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < D; ++i) KM_EXPECT_NEAR(out[h * D + i], h < 2 ? 1.5 : -2.0, 1e-6); /* heads 0,1 -> KV 0 */
}

static void test_one_token_and_window(void) {
  const int ctx = 20;
  uint16_t k[20 * 2 * D], v[20 * 2 * D], q[3 * 4 * D];
  fill(ctx, k, v, q, 3, v_token);
  float out[3 * 4 * D];
  /* context 1: the output is that token's V */
  km_attn_ref_shape s1 = {4, 2, D, 1, 0, KM_REF_KV_BF16, 0, 1, 1, 0.125f};
  km_attn_ref_step(&s1, 1, q, k, v, NULL, NULL, NULL, 0, 2, out);
  for (int i = 0; i < D; ++i) KM_EXPECT_NEAR(out[i], (i % 2) * 0.5, 1e-6);
  /* window 1, q_len 3: query i sees only position ctx - 3 + i */
  km_attn_ref_shape s3 = {4, 2, D, 3, 1, KM_REF_KV_BF16, 0, 1, 1, 0.125f};
  km_attn_ref_step(&s3, ctx, q, k, v, NULL, NULL, NULL, 0, 2, out);
  for (int qi = 0; qi < 3; ++qi)
    for (int h = 0; h < 4; ++h) KM_EXPECT_NEAR(out[(qi * 4 + h) * D + 5], (float)(ctx - 3 + qi) + 0.5f, 1e-5);
  /* pages: page 1 only (tokens 16..19 of a 20-token context) */
  int32_t pages[2] = {1, 1};
  km_attn_ref_step(&s1, ctx, q, k, v, NULL, NULL, pages, 1, 2, out);
  for (int h = 0; h < 4; ++h) KM_EXPECT(out[h * D] >= 16.0f - 1e-4 && out[h * D] <= 19.0f + 1e-4);
}

/* The softmax weights by brute force in float for a 3-token case. */
static void test_softmax(void) {
  const int ctx = 3;
  uint16_t k[3 * 2 * D], v[3 * 2 * D], q[4 * D];
  fill(ctx, k, v, q, 1, v_token);
  km_attn_ref_shape s = {4, 2, D, 1, 0, KM_REF_KV_BF16, 0, 1, 1, 0.125f};
  float out[4 * D];
  km_attn_ref_step(&s, ctx, q, k, v, NULL, NULL, NULL, 0, 2, out);
  for (int h = 0; h < 4; ++h) {
    int kvh = h / 2;
    double sc[3], mx = -1e30, sum = 0;
    for (int t = 0; t < 3; ++t) {
      double dot = 0;
      for (int i = 0; i < D; ++i)
        dot += km_attn_ref_elem(q, (size_t)h, i, D, KM_REF_KV_BF16) * km_attn_ref_elem(k, (size_t)t * 2 + kvh, i, D, KM_REF_KV_BF16);
      sc[t] = dot * 0.125;
      mx = sc[t] > mx ? sc[t] : mx;
    }
    for (int t = 0; t < 3; ++t) sum += (sc[t] = exp(sc[t] - mx));
    double want = (sc[0] * 0 + sc[1] * 1 + sc[2] * 2) / sum + 0.5;
    KM_EXPECT_NEAR(out[h * D + 7], want, 1e-5);
  }
}

static void test_fp8(void) {
  KM_EXPECT_NEAR(km_attn_ref_elem((const uint8_t[]){0x38}, 0, 0, 1, KM_REF_KV_E4M3), 1.0, 0);
  KM_EXPECT_NEAR(km_attn_ref_elem((const uint8_t[]){0xC0}, 0, 0, 1, KM_REF_KV_E4M3), -2.0, 0);
  KM_EXPECT_NEAR(km_attn_ref_elem((const uint8_t[]){0x3C}, 0, 0, 1, KM_REF_KV_E5M2), 1.0, 0);
  {
    /* 3-bit: a head row of 64 dims (two records); codes 0..7 repeating, record 1 scale 0.5 zero -1 */
    uint8_t codes[64], rows[32];
    for (int i = 0; i < 64; ++i) codes[i] = (uint8_t)(i % 8);
    km_ref_pack3(codes, 32, rows);
    km_ref_pack3(codes + 32, 32, rows + 16);
    const uint16_t one = km_ref_f32_to_f16(1.0f), zero = km_ref_f32_to_f16(0.0f);
    const uint16_t half = km_ref_f32_to_f16(0.5f), minus1 = km_ref_f32_to_f16(-1.0f);
    rows[12] = (uint8_t)one, rows[13] = (uint8_t)(one >> 8), rows[14] = (uint8_t)zero, rows[15] = (uint8_t)(zero >> 8);
    rows[28] = (uint8_t)half, rows[29] = (uint8_t)(half >> 8), rows[30] = (uint8_t)minus1, rows[31] = (uint8_t)(minus1 >> 8);
    for (int i = 0; i < 64; ++i)
      KM_EXPECT_NEAR(km_attn_ref_elem(rows, 0, i, 64, KM_REF_KV_U3), i < 32 ? (double)(i % 8) : 0.5 * (i % 8) - 1.0, 0);
    /* and a quantized row decodes within half a step of what it encoded */
    uint16_t x[128];
    uint8_t rec[64];
    for (int i = 0; i < 128; ++i) x[i] = km_ref_f32_to_bf16(sinf(0.37f * (float)i) * 3.0f);
    km_ref_u3_quantize_row(x, 128, rec);
    for (int i = 0; i < 128; ++i) {
      const int g = i / 32;
      const double step = km_ref_f16_to_f32((uint16_t)(rec[g * 16 + 12] | rec[g * 16 + 13] << 8));
      KM_EXPECT(fabs(km_attn_ref_elem(rec, 0, i, 128, KM_REF_KV_U3) - km_ref_bf16_to_f32(x[i])) <= 0.5 * step + 1e-3);
    }
  }
  /* per-token V scale: one token, code 1.0, scale 0.25 -> 0.25 */
  uint8_t k[2 * D], v[2 * D];
  memset(k, 0x38, sizeof k);
  memset(v, 0x38, sizeof v);
  uint16_t q[4 * D];
  for (int i = 0; i < 4 * D; ++i) q[i] = km_float_to_bf16(1.0f);
  float ks[2] = {0.5f, 0.5f}, vs[2] = {0.25f, 4.0f}, out[4 * D];
  km_attn_ref_shape s = {4, 2, D, 1, 0, KM_REF_KV_E4M3, 1, 1, 1, 0.125f};
  km_attn_ref_step(&s, 1, q, k, v, ks, vs, NULL, 0, 2, out);
  KM_EXPECT_NEAR(out[0], 0.25, 1e-7);
  KM_EXPECT_NEAR(out[3 * D], 4.0, 1e-7);
  double rel, cosv;
  float a[3] = {1, 2, 3}, b[3] = {1, 2, 3}, c[3] = {-1, -2, -3};
  km_attn_ref_compare(a, b, 3, &rel, &cosv);
  KM_EXPECT_NEAR(rel, 0, 0);
  KM_EXPECT_NEAR(cosv, 1, 1e-12);
  km_attn_ref_compare(c, b, 3, &rel, &cosv);
  KM_EXPECT_NEAR(rel, 2, 1e-12);
  KM_EXPECT_NEAR(cosv, -1, 1e-12);
}

/* Planner: chunks cover each sequence's visible tiles exactly once, in order. */
static void check_plan(const km_attn_shape *sh, int batch, const int32_t *ctx, int sparse, int chunk, int warps) {
  km_attn_plan p;
  char err[200];
  int mb = 0;
  for (int i = 0; i < batch; ++i) mb = (ctx[i] + sh->block_size - 1) / sh->block_size > mb ? (ctx[i] + sh->block_size - 1) / sh->block_size : mb;
  KM_EXPECT(km_attn_plan_make(&p, sh, batch, ctx, mb, sparse, chunk, warps, err, sizeof err) == 0);
  double tiles = 0;
  int split = 0;
  for (int i = 0; i < batch; ++i) {
    int lo = sh->window > 0 ? ctx[i] - sh->q_len - sh->window + 1 : 0;
    lo = lo < 0 ? 0 : lo;
    int first = sparse ? 0 : lo / 16, last = sparse ? sparse : (ctx[i] + 15) / 16;
    split |= check_seq_chunks(&p.ch, i, first, last, p.chunk_tiles) > 1;
    tiles += last - first;
  }
  KM_EXPECT(p.split == split);
  int longest = 0; /* the plan's chunk length is its longest chunk's */
  for (int c = 0; c < p.ch.num_chunks; ++c)
    longest = p.ch.chunk_end[c] - p.ch.chunk_begin[c] > longest ? p.ch.chunk_end[c] - p.ch.chunk_begin[c] : longest;
  KM_EXPECT_MSG(p.chunk_tiles == longest, "chunk_tiles %d, longest chunk %d", p.chunk_tiles, longest);
  KM_EXPECT_NEAR(km_attn_kv_bytes_read(&p), 2.0 * tiles * 16 * sh->num_kv_heads * sh->head_dim * (sh->kv ? 1 : 2), 0);
  if (!split) KM_EXPECT(km_attn_workspace_bytes(&p) == 0);
  if (p.cta_merge) /* whole quads of chunks, four per CTA; the workspace ends in one count per (seq, KV head) */
    for (int i = 0; i < batch; ++i) KM_EXPECT(p.ch.seq_chunks[i] >= 4 && p.ch.seq_chunks[i] % 4 == 0);
  km_attn_plan_free(&p);
}

/* When the partials merge in the kernel: every sequence split into >= 4 chunks, <= 8 rows x 256 dims, and
 * the shape not asking for the separate pass. */
static void test_cta_merge_plan(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  km_attn_plan p, q;
  char err[200];
  const int32_t one[1] = {32768}, many[5] = {1, 16, 17, 5000, 300}, two[2] = {700, 333};
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, one, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(p.split && p.cta_merge && p.ch.seq_chunks[0] % 4 == 0);
  const size_t slots = (size_t)p.num_chunks * 8 * 4 * 129 * sizeof(float);
  KM_EXPECT(km_attn_workspace_bytes(&p) == slots + 8 * sizeof(int));
  /* one partial per CTA of four chunks is written and read */
  KM_EXPECT_NEAR(km_attn_partial_bytes(&p), (double)p.num_chunks / 4 * 8 * 4 * 129 * sizeof(float), 0);
  km_attn_plan_free(&p);
  /* 4 x 32K on 1,056 warps: 132 plain chunks fill one wave; rounding 33 up to 36 per sequence would take a
   * second one, so the merge plan uses 32 chunks of 64 tiles per sequence */
  const int32_t four[4] = {32768, 32768, 32768, 32768};
  KM_EXPECT(km_attn_plan_make(&p, &sh, 4, four, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.cta_merge && p.num_chunks * 8 <= 1056, "b4 x 32K: merge %d, %d chunks", p.cta_merge, p.num_chunks);
  km_attn_plan_free(&p);
  /* 16 x 32K: 8 chunks per sequence, the separate pass (bf16 merges from 8 chunks only where they are <= 64 tiles,
   * else from 16) */
  int32_t sixteen[16];
  for (int i = 0; i < 16; ++i) sixteen[i] = 32768;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 16, sixteen, 2048, 0, 0, 1056, err, sizeof err) == 0);
  /* and in the plain plan's 8 chunks per sequence, not in the merge candidate's chunk length (d50d0c2 kept
   * that one: 5 chunks per sequence, 612.8 us against 498.6 on the H200) */
  KM_EXPECT_MSG(p.split && !p.cta_merge && p.num_chunks == 128,
                "b16 x 32K: merge %d, chunks of %d tiles, %d chunks", p.cta_merge, p.chunk_tiles, p.num_chunks);
  km_attn_plan_free(&p);
  /* 16 x 4K: 8 chunks of 32 tiles per sequence, merged; 16 x 16K: 8 of 128, the pass */
  for (int i = 0; i < 16; ++i) sixteen[i] = 4096;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 16, sixteen, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.split && p.cta_merge && p.num_chunks == 128 && p.chunk_tiles == 32,
                "b16 x 4K: merge %d, chunks of %d tiles, %d chunks", p.cta_merge, p.chunk_tiles, p.num_chunks);
  km_attn_plan_free(&p);
  for (int i = 0; i < 16; ++i) sixteen[i] = 16384;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 16, sixteen, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.split && !p.cta_merge && p.num_chunks == 128,
                "b16 x 16K: merge %d, chunks of %d tiles, %d chunks", p.cta_merge, p.chunk_tiles, p.num_chunks);
  km_attn_plan_free(&p);
  sh.combine = 1; /* the separate pass: one partial per chunk */
  KM_EXPECT(km_attn_plan_make(&q, &sh, 1, one, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(q.split && !q.cta_merge);
  KM_EXPECT(km_attn_workspace_bytes(&q) == (size_t)q.num_chunks * 8 * 4 * 129 * sizeof(float));
  km_attn_plan_free(&q);
  sh.combine = 2;
  KM_EXPECT(km_attn_shape_error(&sh) != NULL);
  sh.combine = 0;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 5, many, 400, 0, 0, 1056, err, sizeof err) == 0); /* 1-token sequence */
  KM_EXPECT(p.split && !p.cta_merge);
  km_attn_plan_free(&p);
  /* 44 and 21 tiles in chunks of 2: 22 -> 24 and 11 -> 12 chunks; of 1: 21 -> 24 > 21 tiles, so no merge */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 2, two, 44, 0, 2, 0, err, sizeof err) == 0);
  KM_EXPECT(p.cta_merge && p.ch.seq_chunks[0] == 24 && p.ch.seq_chunks[1] == 12 && p.num_chunks == 36);
  km_attn_plan_free(&p);
  KM_EXPECT(km_attn_plan_make(&p, &sh, 2, two, 44, 0, 1, 0, err, sizeof err) == 0);
  KM_EXPECT(p.split && !p.cta_merge && p.num_chunks == 65);
  km_attn_plan_free(&p);
  sh.num_kv_heads = 1; /* MQA: 32 rows do not fit the merge's shared memory */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, one, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(p.split && !p.cta_merge);
  km_attn_plan_free(&p);
}

static void test_planner(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  const int32_t one[1] = {32768}, many[5] = {1, 16, 17, 5000, 300};
  check_plan(&sh, 1, one, 0, 0, 1584);  /* one long sequence: split across the GPU */
  check_plan(&sh, 5, many, 0, 0, 1584);
  check_plan(&sh, 5, many, 0, 3, 0);
  km_attn_plan p;
  char err[200];
  /* a big batch fills the GPU without splitting */
  int32_t big[256];
  for (int i = 0; i < 256; ++i) big[i] = 4096;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 256, big, 256, 0, 0, 1024, err, sizeof err) == 0); /* 2 full waves */
  KM_EXPECT(p.split == 0 && p.num_chunks == 256);
  km_attn_plan_free(&p);
  /* batch 1 x 32K: split until the items fill the resident warps */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, one, 2048, 0, 0, 1584, err, sizeof err) == 0);
  KM_EXPECT(p.split == 1 && (long long)p.num_chunks * 8 >= 1584 / 2 && (long long)p.num_chunks * 8 <= 2 * 1584);
  km_attn_plan_free(&p);
  sh.window = 4096;
  const int32_t w[2] = {131072, 100};
  check_plan(&sh, 2, w, 0, 0, 1584);
  sh.window = 0;
  check_plan(&sh, 2, w, 5, 0, 1584); /* Quest: 5 selected pages */
  check_plan(&sh, 1, one, 128, 0, 1584);
  /* a sparse step's chunks go down to 2 tiles, a dense step's to 4: Quest b1 x 32K (128 selected pages) at the
   * bf16 kernel's 1,056 resident warps takes 64 chunks of 2 (its /ct2 row), dense b1 x 4K 64 chunks of 4 */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, one, 2048, 128, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.num_chunks == 64 && p.chunk_tiles == 2 && p.cta_merge == 1, "Quest b1: %d chunks of %d tiles",
                p.num_chunks, p.chunk_tiles);
  km_attn_plan_free(&p);
  const int32_t four_k[1] = {4096};
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, four_k, 256, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.num_chunks == 64 && p.chunk_tiles == 4, "dense b1 x 4K: %d chunks of %d tiles", p.num_chunks,
                p.chunk_tiles);
  km_attn_plan_free(&p);
  sh.kv = KM_ATTN_FP8_E4M3;
  check_plan(&sh, 5, many, 0, 0, 1584);
  /* bad input */
  const int32_t zero[1] = {0};
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, zero, 1, 0, 0, 100, err, sizeof err) == -1);
  KM_EXPECT(km_attn_plan_make(&p, &sh, 0, zero, 1, 0, 0, 100, err, sizeof err) == -1);
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, one, 10, 0, 0, 100, err, sizeof err) == -1);
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, many, 1, 2, 0, 100, err, sizeof err) == -1); /* 2 pages of a 1-token ctx */
}

/* A step the planner does not merge is planned as if the merge had never been on offer: the same chunks as
 * with combine 1 (d50d0c2 kept the merge candidate's chunk length there instead: b16 x 32K ran 5 chunks per
 * sequence, not 8). Over batches, contexts (uniform and mixed), formats and device sizes. */
static void test_unmerged_plan_is_plain(void) {
  static const int batches[] = {1, 2, 3, 4, 8, 16, 33, 64};
  static const int ctxs[] = {100, 1024, 4096, 16384, 32768, 131072};
  static const int warps[] = {528, 1056, 1584};
  static const km_attn_kv kvs[] = {KM_ATTN_BF16, KM_ATTN_FP8_E4M3};
  int32_t ctx[64];
  char err[200];
  int checked = 0;
  for (size_t f = 0; f < sizeof kvs / sizeof kvs[0]; ++f)
    for (size_t w = 0; w < sizeof warps / sizeof warps[0]; ++w)
      for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; ++bi)
        for (size_t ci = 0; ci <= sizeof ctxs / sizeof ctxs[0]; ++ci) {
          const int batch = batches[bi];
          int longest = 0;
          for (int i = 0; i < batch; ++i) { /* the last round: mixed lengths */
            ctx[i] = ci < sizeof ctxs / sizeof ctxs[0] ? ctxs[ci] : ctxs[(size_t)(i * 7 + 3) % (sizeof ctxs / sizeof ctxs[0])];
            longest = ctx[i] > longest ? ctx[i] : longest;
          }
          km_attn_shape sh = {32, 8, 128, 16, 1, 0, kvs[f], KM_ATTN_SCALE_TOKEN_HEAD};
          km_attn_plan p, q;
          KM_EXPECT(km_attn_plan_make(&p, &sh, batch, ctx, (longest + 15) / 16, 0, 0, warps[w], err, sizeof err) == 0);
          if (!p.cta_merge) {
            sh.combine = 1;
            KM_EXPECT(km_attn_plan_make(&q, &sh, batch, ctx, (longest + 15) / 16, 0, 0, warps[w], err, sizeof err) == 0);
            KM_EXPECT_MSG(p.chunk_tiles == q.chunk_tiles && p.num_chunks == q.num_chunks,
                          "batch %d, context %d (round %zu), %d warps, format %d: unmerged plan %d chunks of %d tiles, "
                          "the plain plan %d of %d",
                          batch, ctx[0], ci, warps[w], (int)kvs[f], p.num_chunks, p.chunk_tiles, q.num_chunks,
                          q.chunk_tiles);
            km_attn_plan_free(&q);
            ++checked;
          }
          km_attn_plan_free(&p);
        }
  KM_EXPECT_MSG(checked > 50, "only %d unmerged plans among the shapes", checked);
}

/* merge_inflight: 0, 16 or 32; 32 for bf16's default kernel shape only (head_dim 128, <= 8 rows, register
 * pipeline, no variant, the merge not turned off) */
static void test_merge_inflight_shape(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  sh.merge_inflight = 32;
  KM_EXPECT(km_attn_shape_error(&sh) == NULL);
  sh.merge_inflight = 16;
  KM_EXPECT(km_attn_shape_error(&sh) == NULL);
  sh.merge_inflight = 8;
  KM_EXPECT(km_attn_shape_error(&sh) != NULL && strstr(km_attn_shape_error(&sh), "merge_inflight"));
  km_attn_shape bad = sh;
  bad.merge_inflight = 32, bad.kv = KM_ATTN_FP8_E4M3;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL && strstr(km_attn_shape_error(&bad), "merge_inflight"));
  bad = sh, bad.merge_inflight = 32, bad.head_dim = 64;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh, bad.merge_inflight = 32, bad.num_kv_heads = 1; /* 32 rows */
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh, bad.merge_inflight = 32, bad.otrans = 1, bad.prefetch = 1;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL && strstr(km_attn_shape_error(&bad), "merge_inflight"));
  bad = sh, bad.merge_inflight = 32, bad.combine = 1;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh, bad.merge_inflight = 32, bad.pipe = KM_ATTN_PIPE_SMEM_RING;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
}

/* Each of the n shapes is refused with a reason that names `word` (or `word2`, when not NULL). */
static void expect_refused(const km_attn_shape *bad, int n, const char *word, const char *word2, const char *what) {
  for (int i = 0; i < n; ++i) {
    const char *why = km_attn_shape_error(&bad[i]);
    KM_EXPECT_MSG(why && (strstr(why, word) || (word2 && strstr(why, word2))), "%s case %d: %s", what, i,
                  why ? why : "accepted");
  }
}

/* merge_poll: 0 or 1, for bf16's default kernel shape only, with the CTA merge left on (combine 0, merge_heads 0),
 * merge_inflight 0 or 16, no steal, no pdl; the plan polls only where it merges in CTAs and its grid is one wave. */
static void test_merge_poll_shape(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  sh.merge_poll = 1;
  KM_EXPECT_MSG(km_attn_shape_error(&sh) == NULL, "merge_poll: %s", km_attn_shape_error(&sh));
  km_attn_shape bad[10];
  for (int i = 0; i < 10; ++i) bad[i] = sh;
  bad[0].merge_poll = 2;
  bad[1].kv = KM_ATTN_FP8_E4M3;
  bad[2].head_dim = 64;
  bad[3].num_kv_heads = 2; /* 16 rows */
  bad[4].pipe = KM_ATTN_PIPE_SMEM_RING;
  bad[5].combine = 1;
  bad[6].merge_heads = 1;
  bad[7].merge_inflight = 32;
  bad[8].steal = 16;
  bad[9].pdl = 1;
  expect_refused(bad, 10, "merge_poll", "pdl", "merge_poll");
  static const int32_t ctx[] = {32768};
  km_attn_plan p;
  char err[256];
  /* the planner's 128 chunks x 8 KV heads on 1,056 resident warps: one wave */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, ctx, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.cta_merge == 1 && p.poll == 1 && p.num_chunks * 8 <= 1056, "cta_merge %d poll %d chunks %d",
                p.cta_merge, p.poll, p.num_chunks);
  km_attn_plan_free(&p);
  /* chunks of 4 tiles: 512 chunks x 8 KV heads, more than one wave: the count */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, ctx, 2048, 0, 4, 1056, err, sizeof err) == 0);
  KM_EXPECT(p.cta_merge == 1 && p.poll == 0);
  km_attn_plan_free(&p);
  /* no CTA merge, no poll */
  sh.merge_poll = 0;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, ctx, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(p.poll == 0);
  km_attn_plan_free(&p);
}

/* q_smem: 0, 1 (shared memory) or 2 (registers), at head_dim 256 with <= 8 rows, the register pipeline, bf16 or fp8
 * (either scale). */
static void test_q_smem_shape(void) {
  km_attn_shape sh = {16, 8, 256, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  sh.q_smem = 1;
  km_attn_shape ok[4] = {sh, sh, sh, sh};
  ok[1].kv = KM_ATTN_FP8_E4M3, ok[1].scale = KM_ATTN_SCALE_TOKEN_HEAD;
  ok[2].kv = KM_ATTN_FP8_E5M2, ok[2].num_heads = 8, ok[2].num_kv_heads = 1; /* 8 rows */
  ok[3].q_smem = KM_ATTN_Q_REGS;
  for (int i = 0; i < 4; ++i)
    KM_EXPECT_MSG(km_attn_shape_error(&ok[i]) == NULL, "q_smem case %d: %s", i, km_attn_shape_error(&ok[i]));
  km_attn_shape bad[7];
  for (int i = 0; i < 7; ++i) bad[i] = sh;
  bad[0].q_smem = 3;
  bad[1].head_dim = 128, bad[1].num_heads = 32;
  bad[2].head_dim = 64;
  bad[3].num_heads = 16, bad[3].num_kv_heads = 1; /* 16 rows */
  bad[4].q_len = 4, bad[4].num_heads = 24, bad[4].num_kv_heads = 8; /* 12 rows */
  bad[5].pipe = KM_ATTN_PIPE_SMEM_RING;
  bad[6].pipe = KM_ATTN_PIPE_TMA, bad[6].kv = KM_ATTN_FP8_E4M3;
  expect_refused(bad, 7, "q_smem", "TMA", "q_smem");
}

/* pdl: 0, 1 or 4, for bf16's default kernel shape only (head_dim 128, <= 8 rows, register pipeline, no variant), any
 * merge but merge_inflight 32, not with steal; the plan is the one the shape gets without it. */
static void test_pdl_shape(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  sh.pdl = 1;
  KM_EXPECT_MSG(km_attn_shape_error(&sh) == NULL, "pdl: %s", km_attn_shape_error(&sh));
  sh.pdl = 4;
  KM_EXPECT_MSG(km_attn_shape_error(&sh) == NULL, "pdl 4: %s", km_attn_shape_error(&sh));
  km_attn_shape ok[3] = {sh, sh, sh};
  ok[0].q_len = 2; /* 8 rows */
  ok[1].combine = 1;
  ok[2].merge_heads = 1;
  for (int i = 0; i < 3; ++i) KM_EXPECT_MSG(km_attn_shape_error(&ok[i]) == NULL, "pdl ok %d: %s", i, km_attn_shape_error(&ok[i]));
  km_attn_shape bad[10];
  for (int i = 0; i < 10; ++i) bad[i] = sh;
  bad[0].pdl = 2;
  bad[1].kv = KM_ATTN_FP8_E4M3;
  bad[2].head_dim = 64;
  bad[3].num_kv_heads = 2; /* 16 rows */
  bad[4].pipe = KM_ATTN_PIPE_SMEM_RING;
  bad[5].prefetch = 1, bad[5].otrans = 1;
  bad[6].steal = 16;
  bad[7].merge_inflight = 32;
  bad[8].lazy_rescale = 1;
  bad[9].pdl = 8;
  expect_refused(bad, 10, "pdl", "lazy_rescale", "pdl");
  static const int32_t ctx[] = {32768};
  km_attn_plan p, q;
  char err[256];
  km_attn_shape plain = sh;
  plain.pdl = 0;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, ctx, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(km_attn_plan_make(&q, &plain, 1, ctx, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(p.num_chunks == q.num_chunks && p.chunk_tiles == q.chunk_tiles && p.cta_merge == q.cta_merge);
  km_attn_plan_free(&p);
  km_attn_plan_free(&q);
}

/* steal: 0, 8 or 16, for bf16's default kernel shape only (head_dim 128, <= 8 rows, register pipeline, no variant),
 * with the merge in the kernel left on (combine 0, merge_heads 0) and merge_inflight 0 or 16; the plan is the one the
 * shape gets without it (the kernel steals only where that plan merges in CTAs). */
static void test_steal_shape(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  for (int n = 8; n <= 16; n += 8) {
    sh.steal = n;
    KM_EXPECT_MSG(km_attn_shape_error(&sh) == NULL, "steal %d: %s", n, km_attn_shape_error(&sh));
    sh.q_len = 2; /* 8 rows */
    KM_EXPECT(km_attn_shape_error(&sh) == NULL);
    sh.q_len = 1;
  }
  km_attn_shape bad[11];
  for (int i = 0; i < 11; ++i) bad[i] = sh, bad[i].steal = 16;
  bad[0].steal = 4;
  bad[1].steal = 32;
  bad[2].kv = KM_ATTN_FP8_E4M3;
  bad[3].head_dim = 64;
  bad[4].num_kv_heads = 2; /* 16 rows */
  bad[5].pipe = KM_ATTN_PIPE_SMEM_RING;
  bad[6].prefetch = 1, bad[6].otrans = 1;
  bad[7].combine = 1;
  bad[8].merge_heads = 1;
  bad[9].merge_inflight = 32;
  bad[10].lazy_rescale = 1;
  expect_refused(bad, 11, "steal", "lazy_rescale", "steal");
  /* the plan does not depend on it */
  static const int32_t ctx[] = {32768, 32768, 32768, 32768};
  km_attn_plan p, q;
  char err[256];
  km_attn_shape plain = sh;
  plain.steal = 0;
  KM_EXPECT(km_attn_plan_make(&p, &sh, 4, ctx, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(km_attn_plan_make(&q, &plain, 4, ctx, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(p.num_chunks == q.num_chunks && p.chunk_tiles == q.chunk_tiles && p.cta_merge == q.cta_merge &&
            p.cta_merge == 1);
  km_attn_plan_free(&p);
  km_attn_plan_free(&q);
}

/* merge_heads 1: the plain plan's chunks (no CTA quads), plan cta_merge 2 where it splits, one partial per chunk in
 * the workspace plus a count per (sequence, KV head); refused unless num_kv_heads is a multiple of 4, combine is 0
 * and merge_inflight is not 32. */
static void test_merge_heads_plan(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  sh.merge_heads = 1;
  KM_EXPECT(km_attn_shape_error(&sh) == NULL);
  km_attn_plan p, q;
  char err[200];
  int32_t sixteen[16];
  for (int i = 0; i < 16; ++i) sixteen[i] = 32768;
  km_attn_shape plain = sh;
  plain.merge_heads = 0;
  plain.combine = 1; /* the pass's plan: the chunks merge_heads keeps */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 16, sixteen, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(km_attn_plan_make(&q, &plain, 16, sixteen, 2048, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.split && p.cta_merge == 2 && p.num_chunks == q.num_chunks && p.chunk_tiles == q.chunk_tiles,
                "merge_heads b16 x 32K: merge %d, %d chunks of %d (the pass: %d of %d)", p.cta_merge, p.num_chunks,
                p.chunk_tiles, q.num_chunks, q.chunk_tiles);
  KM_EXPECT(km_attn_workspace_bytes(&p) == km_attn_workspace_bytes(&q) + 16 * 8 * sizeof(int));
  KM_EXPECT_NEAR(km_attn_partial_bytes(&p), km_attn_partial_bytes(&q), 0);
  km_attn_plan_free(&p);
  km_attn_plan_free(&q);
  const int32_t shorty[1] = {16}; /* one tile: one chunk, no split, nothing to merge */
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, shorty, 1, 0, 0, 1056, err, sizeof err) == 0);
  KM_EXPECT(!p.split && p.cta_merge == 0 && km_attn_workspace_bytes(&p) == 0);
  km_attn_plan_free(&p);
  km_attn_shape bad[4] = {sh, sh, sh, sh};
  bad[0].num_kv_heads = 2, bad[0].num_heads = 8;
  bad[1].combine = 1;
  bad[2].merge_inflight = 32;
  bad[3].merge_heads = 2;
  expect_refused(bad, 4, "merge_heads", NULL, "merge_heads");
}

/* l2_ahead: 0, 2 or 4, for each format's default kernel at head_dim 128 with <= 8 rows (register pipeline, not
 * e5m2, no variant, not paired, no merge_inflight 32); anything else is refused with a reason naming the field. */
static void test_l2_ahead_shape(void) {
  const km_attn_kv ok[] = {KM_ATTN_BF16, KM_ATTN_FP8_E4M3, KM_ATTN_U3, KM_ATTN_TQ3};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i)
    for (int ahead = 2; ahead <= 4; ahead += 2) {
      km_attn_shape sh = {32, 8, 128, 16, 1, 0, ok[i], KM_ATTN_SCALE_TENSOR};
      sh.l2_ahead = ahead;
      const char *why = km_attn_shape_error(&sh);
      KM_EXPECT_MSG(why == NULL, "format %d, l2_ahead %d: %s", (int)ok[i], ahead, why ? why : "");
      sh.q_len = 2; /* 8 rows */
      KM_EXPECT(km_attn_shape_error(&sh) == NULL);
      if (ok[i] == KM_ATTN_FP8_E4M3) {
        sh.scale = KM_ATTN_SCALE_TOKEN_HEAD;
        KM_EXPECT(km_attn_shape_error(&sh) == NULL);
      }
    }
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_FP8_E4M3, KM_ATTN_SCALE_TOKEN_HEAD};
  const int wrong[] = {1, 3, 8, -2};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; ++i) {
    km_attn_shape bad = sh;
    bad.l2_ahead = wrong[i];
    const char *why = km_attn_shape_error(&bad);
    KM_EXPECT_MSG(why && strstr(why, "l2_ahead"), "l2_ahead %d: %s", wrong[i], why ? why : "accepted");
  }
  sh.l2_ahead = 2;
  km_attn_shape bad[7];
  for (int i = 0; i < 7; ++i) bad[i] = sh;
  bad[0].kv = KM_ATTN_FP8_E5M2;
  bad[1].head_dim = 64;
  bad[2].q_len = 3; /* 12 rows */
  bad[3].pipe = KM_ATTN_PIPE_SMEM_RING;
  bad[4].prefetch = 1, bad[4].otrans = 1, bad[4].scale_load = 1; /* a listed variant */
  bad[5].pair = 1;
  bad[6].kv = KM_ATTN_BF16, bad[6].scale = KM_ATTN_SCALE_TENSOR, bad[6].merge_inflight = 32;
  expect_refused(bad, 7, "l2_ahead", NULL, "l2_ahead");
}

/* The TMA pipeline: fp8 (e4m3, e5m2; either scale) at head_dim 128 with <= 8 rows, no variant or option, ring
 * slots 0 (its default), 3, 4 or 6; tma_slots on another pipeline is refused; each refusal says why. */
static void test_tma_shape(void) {
  const km_attn_kv ok[] = {KM_ATTN_FP8_E4M3, KM_ATTN_FP8_E5M2};
  const int slots[] = {0, 3, 4, 6};
  for (size_t i = 0; i < 2; ++i)
    for (size_t k = 0; k < sizeof slots / sizeof slots[0]; ++k)
      for (int sc = 0; sc < 2; ++sc) {
        km_attn_shape sh = {32, 8, 128, 16, 1, 0, ok[i], sc ? KM_ATTN_SCALE_TOKEN_HEAD : KM_ATTN_SCALE_TENSOR};
        sh.pipe = KM_ATTN_PIPE_TMA, sh.tma_slots = slots[k];
        const char *why = km_attn_shape_error(&sh);
        KM_EXPECT_MSG(why == NULL, "format %d, slots %d: %s", (int)ok[i], slots[k], why ? why : "");
        sh.q_len = 2, sh.block_size = 64, sh.window = 100; /* 8 rows */
        KM_EXPECT(km_attn_shape_error(&sh) == NULL);
      }
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_FP8_E4M3, KM_ATTN_SCALE_TOKEN_HEAD};
  sh.pipe = KM_ATTN_PIPE_TMA;
  /* the ring each shape runs: the format's default (e4m3 3 slots, e5m2 4), else tma_slots; tma_scales' own */
  km_attn_shape rs = sh;
  KM_EXPECT(km_attn_tma_slots(&rs) == KM_ATTN_TMA_SLOTS && KM_ATTN_TMA_SLOTS == 3);
  rs.kv = KM_ATTN_FP8_E5M2;
  KM_EXPECT(km_attn_tma_slots(&rs) == KM_ATTN_TMA_SLOTS_E5M2 && KM_ATTN_TMA_SLOTS_E5M2 == 4);
  rs.tma_slots = 3;
  KM_EXPECT(km_attn_tma_slots(&rs) == 3);
  rs.tma_slots = 0, rs.tma_scales = 3;
  KM_EXPECT(km_attn_tma_slots(&rs) == 3);
  rs.kv = KM_ATTN_FP8_E4M3, rs.tma_scales = 2;
  KM_EXPECT(km_attn_tma_slots(&rs) == 4);
  km_attn_shape bad[10];
  for (int i = 0; i < 10; ++i) bad[i] = sh;
  bad[0].kv = KM_ATTN_BF16, bad[0].scale = KM_ATTN_SCALE_TENSOR;
  bad[1].head_dim = 64;
  bad[2].head_dim = 256, bad[2].num_heads = 16;
  bad[3].q_len = 3; /* 12 rows */
  bad[4].num_kv_heads = 1; /* 32 rows */
  bad[5].tma_slots = 5;
  bad[6].tma_slots = 2;
  bad[7].pipe = KM_ATTN_PIPE_REGISTERS, bad[7].tma_slots = 4;
  bad[8].pipe = KM_ATTN_PIPE_SMEM_RING, bad[8].tma_slots = 3;
  expect_refused(bad, 9, "TMA", "tma_slots", "TMA");
  /* options of the other pipelines are refused with it (by their own rule or by this one) */
  km_attn_shape opt[5];
  for (int i = 0; i < 5; ++i) opt[i] = sh;
  opt[0].prefetch = 1, opt[0].otrans = 1, opt[0].scale_load = 1;
  opt[1].pair = 1;
  opt[2].l2_ahead = 2;
  opt[3].lazy_rescale = 1;
  opt[4].kv = KM_ATTN_U3, opt[4].scale = KM_ATTN_SCALE_TENSOR;
  for (int i = 0; i < 5; ++i) KM_EXPECT_MSG(km_attn_shape_error(&opt[i]) != NULL, "option %d accepted", i);
  /* tma_promo: 0, -1, 64, 128 or 256, the TMA pipeline only */
  const int promos[] = {-1, 64, 128, 256};
  for (size_t i = 0; i < sizeof promos / sizeof promos[0]; ++i) {
    km_attn_shape pr = sh;
    pr.tma_promo = promos[i];
    KM_EXPECT_MSG(km_attn_shape_error(&pr) == NULL, "tma_promo %d refused", promos[i]);
  }
  km_attn_shape bad_pr[3] = {sh, sh, sh};
  bad_pr[0].tma_promo = 32;
  bad_pr[1].tma_promo = 512;
  bad_pr[2].tma_promo = 128, bad_pr[2].pipe = KM_ATTN_PIPE_REGISTERS;
  expect_refused(bad_pr, 3, "tma_promo", NULL, "tma_promo");
  /* tma_scales: 0, 1 (the TMA pipeline with per-token-head scales and 4 slots), 2 (the TMA pipeline, 4 slots,
   * any scales) or 3 (the TMA pipeline, 3 slots, any scales) */
  km_attn_shape ts = sh;
  ts.tma_scales = 1;
  KM_EXPECT(km_attn_shape_error(&ts) == NULL);
  ts.tma_slots = 4;
  KM_EXPECT(km_attn_shape_error(&ts) == NULL);
  km_attn_shape bts[5];
  for (int i = 0; i < 5; ++i) bts[i] = ts;
  bts[0].tma_scales = 4;
  bts[1].scale = KM_ATTN_SCALE_TENSOR;
  bts[2].tma_slots = 3;
  bts[3].pipe = KM_ATTN_PIPE_REGISTERS, bts[3].tma_slots = 0;
  bts[4].tma_slots = 6;
  expect_refused(bts, 5, "tma_scales", NULL, "tma_scales");
  km_attn_shape ta = ts;
  ta.tma_scales = 2;
  KM_EXPECT(km_attn_shape_error(&ta) == NULL);
  ta.scale = KM_ATTN_SCALE_TENSOR;
  KM_EXPECT(km_attn_shape_error(&ta) == NULL);
  km_attn_shape bta[3] = {ta, ta, ta};
  bta[0].tma_slots = 3;
  bta[1].tma_slots = 6;
  bta[2].pipe = KM_ATTN_PIPE_REGISTERS, bta[2].tma_slots = 0;
  expect_refused(bta, 3, "tma_scales 2", NULL, "tma_scales");
  km_attn_shape tn = sh;
  tn.tma_scales = 3;
  KM_EXPECT(km_attn_shape_error(&tn) == NULL);
  KM_EXPECT(km_attn_tma_slots(&tn) == 3);
  tn.scale = KM_ATTN_SCALE_TENSOR, tn.tma_slots = 3;
  KM_EXPECT(km_attn_shape_error(&tn) == NULL);
  km_attn_shape btn[4] = {tn, tn, tn, tn};
  btn[0].tma_slots = 4;
  btn[1].tma_slots = 6;
  btn[2].pipe = KM_ATTN_PIPE_REGISTERS, btn[2].tma_slots = 0;
  btn[3].tma_scales = -1;
  expect_refused(btn, 4, "tma_scales", NULL, "tma_scales 3");
}

/* lazy_rescale: 0 or 1, at the same kernel shapes as l2_ahead, and not together with it. */
static void test_lazy_rescale_shape(void) {
  const km_attn_kv ok[] = {KM_ATTN_BF16, KM_ATTN_FP8_E4M3, KM_ATTN_U3, KM_ATTN_TQ3};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
    km_attn_shape sh = {32, 8, 128, 16, 1, 0, ok[i], KM_ATTN_SCALE_TENSOR};
    sh.lazy_rescale = 1;
    const char *why = km_attn_shape_error(&sh);
    KM_EXPECT_MSG(why == NULL, "format %d: %s", (int)ok[i], why ? why : "");
  }
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_FP8_E4M3, KM_ATTN_SCALE_TOKEN_HEAD};
  sh.lazy_rescale = 1;
  KM_EXPECT(km_attn_shape_error(&sh) == NULL);
  km_attn_shape bad[6];
  for (int i = 0; i < 6; ++i) bad[i] = sh;
  bad[0].lazy_rescale = 2;
  bad[1].kv = KM_ATTN_FP8_E5M2;
  bad[2].q_len = 3; /* 12 rows */
  bad[3].prefetch = 1, bad[3].otrans = 1, bad[3].scale_load = 1; /* a listed variant */
  bad[4].l2_ahead = 2;
  bad[5].head_dim = 256;
  expect_refused(bad, 6, "lazy_rescale", NULL, "lazy_rescale");
}

/* The one-scale-load-per-lane variant (scale_load) exists for fp8 e4m3 per token-head and TurboQuant at the
 * listed variant shapes only; elsewhere the shape is refused with a reason that names the field. */
static void test_scale_load_shape(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_FP8_E4M3, KM_ATTN_SCALE_TOKEN_HEAD};
  sh.prefetch = 1, sh.otrans = 1, sh.scale_load = 1;
  KM_EXPECT(km_attn_shape_error(&sh) == NULL);
  sh.prefetch = 2;
  KM_EXPECT(km_attn_shape_error(&sh) == NULL);
  km_attn_shape bad = sh;
  bad.scale = KM_ATTN_SCALE_TENSOR;
  const char *why = km_attn_shape_error(&bad);
  KM_EXPECT_MSG(why && strstr(why, "scale_load"), "per tensor: %s", why ? why : "accepted");
  const km_attn_kv others[] = {KM_ATTN_BF16, KM_ATTN_FP8_E5M2, KM_ATTN_U3};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i) {
    bad = sh;
    bad.kv = others[i];
    why = km_attn_shape_error(&bad);
    KM_EXPECT_MSG(why && strstr(why, "scale_load"), "format %d: %s", (int)others[i], why ? why : "accepted");
  }
  bad = sh; /* TurboQuant's norms: at its listed shapes (O^T depth 1 and 2, depth 2 capped for 3 CTAs) */
  bad.kv = KM_ATTN_TQ3, bad.scale = KM_ATTN_SCALE_TENSOR;
  KM_EXPECT(km_attn_shape_error(&bad) == NULL);
  bad.prefetch = 2, bad.ctas = 3;
  KM_EXPECT(km_attn_shape_error(&bad) == NULL);
  bad.ctas = 4;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.scale_load = 2;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh; /* no listed combination: without O^T, with a cap, alone, paired */
  bad.otrans = 0;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.ctas = 4;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.prefetch = 0, bad.otrans = 0;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.pair = 1;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh; /* no kernel of that shape: the ring pipeline, head_dim 64, 16 rows */
  bad.pipe = KM_ATTN_PIPE_SMEM_RING;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.head_dim = 64;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.q_len = 4;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  /* plans are made for it like for any variant */
  km_attn_plan p;
  char err[200];
  const int32_t one[1] = {32768};
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, one, 2048, 0, 0, 1584, err, sizeof err) == 0);
  km_attn_plan_free(&p);
  bad.q_len = 1, bad.scale = KM_ATTN_SCALE_TENSOR;
  KM_EXPECT(km_attn_plan_make(&p, &bad, 1, one, 2048, 0, 0, 1584, err, sizeof err) == -1 && strstr(err, "scale_load"));
}

/* TurboQuant: one visible token makes the output that token's V row, decoded from its codes and norm; it must
 * be the quant reference's dequantized row (bf16 there). */
static void test_tq3_one_token(void) {
  enum { D = 128 };
  uint16_t x[D], k16[D], q[D], deq[D], vside[2], kside[2];
  uint8_t kc[3 * D / 8], vc[3 * D / 8];
  for (int i = 0; i < D; ++i) {
    x[i] = km_float_to_bf16(sinf(0.21f * (float)i) * 2.0f + (i % 32 == 7 ? 6.0f : 0.0f));
    k16[i] = km_float_to_bf16(cosf(0.13f * (float)i));
    q[i] = km_float_to_bf16(0.01f * (float)(i % 7));
  }
  km_ref_tq3_quantize_row(x, D, 1, vc, vside);
  km_ref_tq3_quantize_row(k16, D, 0, kc, kside);
  km_ref_tq3_dequantize_row(vc, vside[0], D, deq);
  const float kn = km_ref_f16_to_f32(kside[0]), vn = km_ref_f16_to_f32(vside[0]);
  km_attn_ref_shape s = {1, 1, D, 1, 0, KM_REF_KV_TQ3, 0, 1.0f, 1.0f, 0.088f};
  float out[D];
  km_attn_ref_step(&s, 1, q, kc, vc, &kn, &vn, NULL, 0, 1, out);
  for (int i = 0; i < D; ++i) {
    const double want = km_bf16_to_float(deq[i]);
    KM_EXPECT_MSG(fabs(out[i] - want) <= 1e-2 * fabs(want) + 1e-3, "dim %d: %g vs %g", i, out[i], want);
  }
}

int main(void) {
  test_tq3_one_token();
  test_constant_values();
  test_one_token_and_window();
  test_softmax();
  test_fp8();
  test_planner();
  test_cta_merge_plan();
  test_merge_inflight_shape();
  test_steal_shape();
  test_pdl_shape();
  test_merge_poll_shape();
  test_q_smem_shape();
  test_merge_heads_plan();
  test_unmerged_plan_is_plain();
  test_scale_load_shape();
  test_l2_ahead_shape();
  test_lazy_rescale_shape();
  test_tma_shape();
  return km_test_finish("cpu_attn_ref");
}
