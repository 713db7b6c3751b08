/* CPU tests of the attn/mla family's host side: the fp64 reference step (micro/attn_mla_ref.c) against a
 * naive formula on tiny cases (constant rows, one token, three tokens by brute force, fp8 decoding with
 * the tensor scale, a head list), and the planner of kernels/attn_mla.cu (every tile of every sequence in
 * exactly one chunk, the split decision, byte and FLOP counts, shared-memory sizes, bad input). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_mla.h"
#include "attn_mla_ref.h"
#include "quant_ref.h"
#include "sparse_ref.h"
#include "split_chunks_check.h"
#include "test_util.h"

enum { D = KM_MLA_REF_DIM, DV = KM_MLA_REF_VDIM, H = 4 };

static void fill_q(uint16_t *q, uint64_t seed) {
  uint64_t st = seed;
  for (int i = 0; i < H * D; ++i) q[i] = km_float_to_bf16((float)((int)(km_test_rng_next(&st) % 9) - 4) / 8.0f);
}

/* Every row the same: the output is that row's first 512 values, whatever the scores. */
static void test_constant_rows(void) {
  const int ctx = 5;
  uint16_t *rows = malloc((size_t)ctx * D * 2), q[H * D];
  for (int t = 0; t < ctx; ++t)
    for (int i = 0; i < D; ++i) rows[(size_t)t * D + i] = km_float_to_bf16((float)(i % 7) - 3.0f);
  fill_q(q, 1);
  float out[H * DV];
  km_mla_ref_shape s = {H, 0, 1.0f, 0.07f};
  km_mla_ref_step(&s, ctx, q, rows, NULL, 0, out);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < DV; ++i) KM_EXPECT_NEAR(out[h * DV + i], (float)(i % 7) - 3.0f, 1e-6);
  free(rows);
}

/* One token: the output is its first 512 dims (the rope dims 512..575 only move scores). */
static void test_one_token(void) {
  uint16_t rows[D], q[H * D];
  for (int i = 0; i < D; ++i) rows[i] = km_float_to_bf16(i < DV ? (float)i / 64.0f : 100.0f);
  fill_q(q, 2);
  float out[H * DV];
  km_mla_ref_shape s = {H, 0, 1.0f, 0.07f};
  km_mla_ref_step(&s, 1, q, rows, NULL, 0, out);
  for (int h = 0; h < H; ++h) KM_EXPECT_NEAR(out[h * DV + 300], 300.0f / 64.0f, 1e-6);
}

/* Three tokens against softmax written out by hand; the rope dims take part in the scores. */
static void test_softmax(void) {
  const int ctx = 3;
  uint16_t rows[3 * D], q[H * D];
  uint64_t st = 7;
  for (int i = 0; i < 3 * D; ++i) rows[i] = km_float_to_bf16((float)((int)(km_test_rng_next(&st) % 9) - 4) / 4.0f);
  fill_q(q, 3);
  float out[H * DV];
  const float sm = 0.09f;
  km_mla_ref_shape s = {H, 0, 1.0f, sm};
  km_mla_ref_step(&s, ctx, q, rows, NULL, 0, out);
  for (int h = 0; h < H; ++h) {
    double sc[3], mx = -1e30, sum = 0;
    for (int t = 0; t < 3; ++t) {
      double dot = 0;
      for (int i = 0; i < D; ++i) dot += (double)km_bf16_to_float(q[h * D + i]) * km_bf16_to_float(rows[t * D + i]);
      sc[t] = dot * sm;
      mx = sc[t] > mx ? sc[t] : mx;
    }
    for (int t = 0; t < 3; ++t) sum += (sc[t] = exp(sc[t] - mx));
    for (int i = 0; i < DV; i += 97) {
      double want = 0;
      for (int t = 0; t < 3; ++t) want += sc[t] / sum * km_bf16_to_float(rows[t * D + i]);
      KM_EXPECT_NEAR(out[h * DV + i], want, 1e-6);
    }
  }
  /* a head list writes only the listed heads */
  float part[H * DV];
  for (int i = 0; i < H * DV; ++i) part[i] = -7.0f;
  const int list[1] = {2};
  km_mla_ref_step(&s, ctx, q, rows, list, 1, part);
  KM_EXPECT_NEAR(part[2 * DV + 5], out[2 * DV + 5], 0);
  KM_EXPECT_NEAR(part[1 * DV + 5], -7.0f, 0);
  KM_EXPECT_NEAR(part[3 * DV + 5], -7.0f, 0);
}

/* fp8: codes decoded as e4m3 and multiplied by the tensor scale, in the scores and in the output. */
static void test_fp8(void) {
  uint8_t rows[2 * D];
  memset(rows, 0x38, D);     /* 1.0 */
  memset(rows + D, 0x40, D); /* 2.0 */
  uint16_t q[H * D];
  for (int i = 0; i < H * D; ++i) q[i] = km_float_to_bf16(0.0f); /* equal scores: the mean of the rows */
  km_mla_ref_shape s = {H, 1, 0.25f, 0.07f};
  KM_EXPECT_NEAR(km_mla_ref_elem(&s, rows, 0), 0.25, 0);
  KM_EXPECT_NEAR(km_mla_ref_elem(&s, rows, D), 0.5, 0);
  float out[H * DV];
  km_mla_ref_step(&s, 2, q, rows, NULL, 0, out);
  KM_EXPECT_NEAR(out[0], 0.375, 1e-7);
  KM_EXPECT_NEAR(out[3 * DV + 511], 0.375, 1e-7);
  /* a score difference from the scale: q = 1 on every dim, row 1 is 2 x row 0 in value */
  for (int i = 0; i < H * D; ++i) q[i] = km_float_to_bf16(1.0f);
  km_mla_ref_step(&s, 2, q, rows, NULL, 0, out);
  const double d0 = D * 0.25 * 0.07, d1 = D * 0.5 * 0.07, w1 = 1.0 / (1.0 + exp(d0 - d1));
  KM_EXPECT_NEAR(out[0], 0.25 * (1 - w1) + 0.5 * w1, 1e-6);
}

/* Planner: chunks cover each sequence's tiles once, in order, sizes within one of each other; the in-kernel merge
 * possible exactly for split plans on the mma.sync kernel with at most KM_MLA_MERGE_CHUNKS chunks a sequence, and
 * never chosen by the planner itself (the combine pass is the default). */
static void check_plan(const km_mla_shape *sh, const km_mla_config *cfg, int batch, const int32_t *ctx, int chunk) {
  km_mla_plan p;
  char err[200];
  int mb = 1;
  for (int i = 0; i < batch; ++i) mb = (ctx[i] + sh->block_size - 1) / sh->block_size > mb ? (ctx[i] + sh->block_size - 1) / sh->block_size : mb;
  KM_EXPECT(km_mla_plan_make(&p, sh, cfg, batch, ctx, mb, chunk, err, sizeof err) == 0);
  int split = 0, most = 0;
  double tokens = 0, slots = 0;
  for (int i = 0; i < batch; ++i) {
    const int last = (ctx[i] + 63) / 64;
    const int n = check_seq_chunks(&p.ch, i, 0, last, p.chunk_tiles);
    split |= n > 1;
    most = n > most ? n : most;
    if (n > 1) slots += n;
    tokens += ctx[i];
  }
  KM_EXPECT(p.split == split);
  const int can_merge = km_mla_plan_can_merge(&p);
  KM_EXPECT_MSG(can_merge == (split && !cfg->wgmma && most <= KM_MLA_MERGE_CHUNKS) && p.merge == 0,
                "can_merge %d merge %d: split %d, wgmma %d, %d chunks at most", can_merge, p.merge, split, cfg->wgmma,
                most);
  KM_EXPECT_NEAR(km_mla_cache_bytes_read(&p, ctx), tokens * 576 * (sh->kv == KM_MLA_BF16 ? 2 : 1), 0);
  KM_EXPECT_NEAR(km_mla_flops(sh, batch, ctx), 2.0 * sh->num_heads * tokens * (576 + 512), 0);
  KM_EXPECT_NEAR(km_mla_partial_bytes(&p), slots * sh->num_heads * 513 * 4, 0);
  if (!split) KM_EXPECT(km_mla_workspace_bytes(&p) == 0);
  else KM_EXPECT(km_mla_workspace_bytes(&p) >= (size_t)km_mla_partial_bytes(&p));
  km_mla_plan_free(&p);
}

static void test_planner(void) {
  km_mla_shape sh = {128, 64, KM_MLA_BF16};
  const km_mla_config h200 = {64, 2, km_mla_smem_bytes(KM_MLA_BF16, 64, 2), 132};
  /* the budget of the header comment: 225.5 KiB for 64 rows and two stages, under the H200's 227 KiB */
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_BF16, 64, 2) == 230912);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_BF16, 64, 2) <= 232448);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_FP8_E4M3, 64, 1) == 73728 + 36864 + 73728 + 8192 + 1536);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_BF16, 64, 1) <= 167936); /* one stage fits an A100 */
  /* the wgmma kernel: 1 KiB of alignment slack, Q, two bf16 tiles (fp8: one, and two raw stages), P, 1 KiB of
   * row maxima and sums: both under the H100/H200's 227 KiB */
  KM_EXPECT(km_mla_wgmma_smem_bytes(KM_MLA_BF16) == 1024 + 3 * 73728 + 8192 + 1024);
  KM_EXPECT(km_mla_wgmma_smem_bytes(KM_MLA_FP8_E4M3) == 1024 + 2 * 73728 + 2 * 36864 + 8192 + 1024);
  KM_EXPECT(km_mla_wgmma_smem_bytes(KM_MLA_BF16) <= 232448 && km_mla_wgmma_smem_bytes(KM_MLA_FP8_E4M3) <= 232448);
  /* seesaw: Q, two tiles, P of the second, maxima / corrections / sums (320 floats), 5 mbarriers */
  KM_EXPECT(km_mla_seesaw_smem_bytes() == 1024 + 3 * 73728 + 8192 + 320 * 4 + 5 * 8);
  KM_EXPECT(km_mla_seesaw_smem_bytes() <= 232448);
  /* a wgmma configuration with fewer than 64 rows is refused */
  const km_mla_config wg32 = {32, 2, 0, 132, KM_MLA_WG_DEFAULT};
  {
    km_mla_plan p;
    char err[200];
    const int32_t c1[1] = {100};
    KM_EXPECT(km_mla_plan_make(&p, &sh, &wg32, 1, c1, 2, 0, err, sizeof err) == -1);
  }
  const int32_t one[1] = {32768}, many[6] = {1, 63, 64, 65, 5000, 300};
  check_plan(&sh, &h200, 1, one, 0);
  check_plan(&sh, &h200, 6, many, 0);
  check_plan(&sh, &h200, 6, many, 1);
  check_plan(&sh, &h200, 6, many, 3);
  km_mla_plan p;
  char err[200];
  /* batch 64 x 8K at 128 heads: 128 CTAs of 64 heads fill the 132 SMs without a split */
  int32_t b64[64];
  for (int i = 0; i < 64; ++i) b64[i] = 8192;
  KM_EXPECT(km_mla_plan_make(&p, &sh, &h200, 64, b64, 128, 0, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.split == 0 && p.num_chunks == 64, "b64 x 8K: %d chunks, split %d", p.num_chunks, p.split);
  KM_EXPECT(p.combine_groups == 1);
  km_mla_plan_free(&p);
  /* batch 1 x 32K: split until the CTAs fill the device, not far past it */
  KM_EXPECT(km_mla_plan_make(&p, &sh, &h200, 1, one, 512, 0, err, sizeof err) == 0);
  KM_EXPECT_MSG(p.split == 1 && p.num_chunks * 2 >= 66 && p.num_chunks * 2 <= 2 * 132, "b1 x 32K: %d chunks",
                p.num_chunks);
  KM_EXPECT(p.combine_groups == 4); /* >= 16 chunks of one sequence: four chunk groups per combine CTA */
  km_mla_plan_free(&p);
  sh.num_heads = 16;
  const km_mla_config c16 = {16, 2, km_mla_smem_bytes(KM_MLA_BF16, 16, 2), 132};
  check_plan(&sh, &c16, 6, many, 0);
  /* 16 rows keep Q in registers: no Q region, so three bf16 stages fit the H200's 227 KiB (not at 32 rows) */
  KM_EXPECT(km_mla_q_in_registers(16) == 1 && km_mla_q_in_registers(32) == 0 && km_mla_q_in_registers(64) == 0);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_BF16, 16, 3) == 3 * 73728 + 16 * 128 + 1536);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_BF16, 16, 3) <= 232448);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_BF16, 32, 2) == 32 * 1152 + 2 * 73728 + 32 * 128 + 1536);
  KM_EXPECT(km_mla_smem_bytes(KM_MLA_FP8_E4M3, 16, 1) == 36864 + 73728 + 16 * 128 + 1536);
  const km_mla_config c16s3 = {16, 3, km_mla_smem_bytes(KM_MLA_BF16, 16, 3), 132};
  check_plan(&sh, &c16s3, 6, many, 0);
  {
    const int32_t pair[2] = {8192, 8192}; /* split 4 and 8 per sequence: one and two combine groups */
    KM_EXPECT(km_mla_plan_make(&p, &sh, &c16s3, 2, pair, 128, 32, err, sizeof err) == 0);
    KM_EXPECT_MSG(p.split == 1 && p.combine_groups == 1, "4 chunks: %d groups", p.combine_groups);
    KM_EXPECT(km_mla_plan_can_merge(&p) == 1 && p.merge == 0); /* 4 chunks a sequence: the merge may be asked for */
    km_mla_plan_free(&p);
    KM_EXPECT(km_mla_plan_make(&p, &sh, &c16s3, 2, pair, 128, 16, err, sizeof err) == 0);
    KM_EXPECT_MSG(p.combine_groups == 2, "8 chunks: %d groups", p.combine_groups);
    KM_EXPECT(km_mla_plan_can_merge(&p) == 0);
    /* asking for the merge where the plan cannot is refused before anything is allocated (no device needed) */
    p.merge = 1;
    KM_EXPECT(km_mla_plan_upload(&p, 0) == cudaErrorInvalidValue && p.d_merge_count == NULL);
    km_mla_plan_free(&p);
    /* the wgmma kernel's plans never merge in the kernel */
    const km_mla_shape s128 = {128, 64, KM_MLA_BF16};
    const km_mla_config wg = {64, 2, 0, 132, KM_MLA_WG_DEFAULT};
    KM_EXPECT(km_mla_plan_make(&p, &s128, &wg, 2, pair, 128, 32, err, sizeof err) == 0);
    KM_EXPECT(p.split == 1 && km_mla_plan_can_merge(&p) == 0);
    km_mla_plan_free(&p);
  }
  check_plan(&sh, &c16s3, 1, one, 0);
  const km_mla_config c16s4 = {16, 4, 0, 132};
  KM_EXPECT(km_mla_plan_make(&p, &sh, &c16s4, 1, one, 512, 0, err, sizeof err) == -1);
  KM_EXPECT(strstr(err, "1, 2 or 3") != NULL);
  {
    km_mla_shape s32 = {32, 64, KM_MLA_BF16};
    const km_mla_config c32s3 = {32, 3, 0, 132};
    KM_EXPECT(km_mla_plan_make(&p, &s32, &c32s3, 1, one, 512, 0, err, sizeof err) == -1);
    KM_EXPECT(strstr(err, "1 or 2") != NULL);
  }
  sh.kv = KM_MLA_FP8_E4M3;
  const km_mla_config f16 = {16, 1, km_mla_smem_bytes(KM_MLA_FP8_E4M3, 16, 1), 132};
  check_plan(&sh, &f16, 6, many, 0);
  check_plan(&sh, &f16, 1, one, 0);
  /* bad input */
  const int32_t zero[1] = {0};
  KM_EXPECT(km_mla_plan_make(&p, &sh, &f16, 1, zero, 1, 0, err, sizeof err) == -1);
  KM_EXPECT(km_mla_plan_make(&p, &sh, &f16, 0, one, 512, 0, err, sizeof err) == -1);
  KM_EXPECT(km_mla_plan_make(&p, &sh, &f16, 1, one, 10, 0, err, sizeof err) == -1); /* 512 blocks > 10 */
  const km_mla_config c64 = {64, 1, 0, 132};
  KM_EXPECT(km_mla_plan_make(&p, &sh, &c64, 1, one, 512, 0, err, sizeof err) == -1); /* 16 heads, 64 rows */
  km_mla_shape bad = {24, 64, KM_MLA_BF16};
  KM_EXPECT(km_mla_shape_error(&bad) != NULL);
  bad.num_heads = 32;
  bad.block_size = 16;
  KM_EXPECT(km_mla_shape_error(&bad) != NULL);
  bad.block_size = 128;
  KM_EXPECT(km_mla_shape_error(&bad) == NULL);
}

int main(void) {
  test_constant_rows();
  test_one_token();
  test_softmax();
  test_fp8();
  test_planner();
  return km_test_finish("cpu_attn_mla_ref");
}
