/* GPU test of the MLA decode step (kernels/attn_mla.cu) and of the simple kernel it is checked against
 * (baselines/attn_mla_naive.cu), both against the fp64 CPU reference on fresh random data, every output
 * and every head: 16, 32, 48, 64 and 128 heads, bf16 and fp8 e4m3 latents, context 1, contexts that end
 * inside a tile and a block, block size 128, batch 1, one long and many short sequences, the planner's
 * split, forced splits and no split, one latent stage, smaller head groups per CTA than the planner picks,
 * and both kernels where the device takes the wgmma one (64 heads per CTA) by default; split sequences merged
 * inside the mma.sync kernel (up to KM_MLA_MERGE_CHUNKS chunks) and by the combine pass. Each case runs the step
 * twice, the output poisoned again between them, and checks the second (the merge's counts must be back at 0).
 * Outputs are poisoned (NaN) and guarded; the pool's rows past each context hold NaN codes, which the
 * kernel must never let into an output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "attn_mla.h"
#include "attn_mla_naive.h"
#include "attn_mla_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

enum { D = KM_MLA_DIM, DV = KM_MLA_VDIM };

typedef struct tcase {
  const char *what;
  int heads;
  km_mla_kv kv;
  int block_size;
  int batch;
  const int *ctx;
  int chunk_tiles; /* 0: the planner's choice */
  int rows;        /* 0: km_mla_pick_config's choice, else heads per CTA */
  int stages;      /* 0: the picked stages, else this many */
  km_mla_kernel kernel; /* AUTO, or one kernel (variant) even where the device would take another */
  int merge;            /* 1: the partials merged inside the kernel (km_mla_plan_can_merge must hold) */
} tcase;

static const float SM_SCALE = 0.0721687836f;
static const float FP8_SCALE = 0.125f;

/* A random finite e4m3 code within ~2^4 of 1 (before the tensor scale). */
static uint8_t rand_e4m3(uint64_t *st) {
  for (;;) {
    const uint8_t c = (uint8_t)km_test_rng_next(st);
    const int e = (c >> 3) & 0xf;
    if ((c & 0x7f) == 0x7f || e > 7 + 3 || e < 7 - 6) continue;
    return c;
  }
}

static int config_for(const tcase *t, const km_mla_shape *sh, km_mla_config *cfg) {
  cudaError_t e = km_mla_pick_config_kernel(sh, 0, t->kernel, cfg);
  if (e != cudaSuccess) {
    fprintf(stderr, "FAIL %s: no configuration: %s\n", t->what, cudaGetErrorString(e));
    km_test_failures++;
    return -1;
  }
  if (t->rows || t->stages) {
    if (t->rows) cfg->rows = t->rows;
    if (t->stages) cfg->stages = t->stages;
    cfg->wgmma = 0; /* rows and stages are the mma.sync kernel's knobs */
    cfg->smem_bytes = km_mla_smem_bytes(sh->kv, cfg->rows, cfg->stages);
    int optin = 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess &&
        cfg->smem_bytes > optin) {
      printf("skip %s: %d B of shared memory, the device allows %d\n", t->what, cfg->smem_bytes, optin);
      return 1;
    }
    e = km_mla_config_prepare(cfg, sh->kv);
    if (e != cudaSuccess) {
      fprintf(stderr, "FAIL %s: rows %d stages %d: %s\n", t->what, cfg->rows, cfg->stages, cudaGetErrorString(e));
      km_test_failures++;
      return -1;
    }
  }
  return 0;
}

/* Elements off the reference by more than 1/64 of their row's max |value| (NaN never passes). */
static size_t count_bad(const char *what, const char *kernel, const uint16_t *got, const float *ref, int seq,
                        int heads) {
  size_t bad = 0;
  for (int h = 0; h < heads; ++h) {
    const float *rr = ref + (size_t)h * DV;
    const uint16_t *gr = got + ((size_t)seq * heads + h) * DV;
    double mx = 0;
    for (int j = 0; j < DV; ++j) mx = fmax(mx, fabs(rr[j]));
    for (int j = 0; j < DV; ++j) {
      const double g = km_bf16_to_float(gr[j]);
      if (!(fabs(g - rr[j]) <= mx / 64 + 1e-6) && bad++ < 3)
        fprintf(stderr, "  %s (%s): seq %d head %d dim %d: got %g want %g\n", what, kernel, seq, h, j, g, rr[j]);
    }
  }
  return bad;
}

static void run_case(const tcase *t) {
  if (t->batch < 1 || t->batch > 4096) return;
  if (t->kernel >= KM_MLA_KERNEL_WGMMA && !km_mla_wgmma_usable(0)) {
    printf("skip %s: this device or build has no sm_90a path\n", t->what);
    return;
  }
  uint64_t st = 0x9e3779b97f4a7c15ull ^ (uint64_t)(t->heads * 131 + t->kv * 7 + t->batch * 3 + t->chunk_tiles * 17 +
                                                    t->rows * 5 + t->stages * 11 + t->block_size);
  const km_mla_shape sh = {t->heads, t->block_size, t->kv};
  km_mla_config cfg;
  if (config_for(t, &sh, &cfg) != 0) return; /* a failure counted, or a skip said */
  const int bs = t->block_size, heads = t->heads;
  const size_t eb = t->kv == KM_MLA_BF16 ? 2 : 1;
  int mbps = 1;
  size_t blocks = 0;
  for (int i = 0; i < t->batch; ++i) {
    const int n = (t->ctx[i] + bs - 1) / bs;
    mbps = n > mbps ? n : mbps;
    blocks += (size_t)n;
  }
  blocks += 2; /* unused blocks in the pool */
  int32_t *perm = malloc(blocks * sizeof *perm), *table = calloc((size_t)t->batch * mbps, sizeof *table);
  for (size_t i = 0; i < blocks; ++i) perm[i] = (int32_t)i;
  for (size_t i = blocks - 1; i > 0; --i) {
    const size_t j = (size_t)(km_test_rng_next(&st) % (uint64_t)(i + 1));
    const int32_t x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  size_t k = 0;
  for (int i = 0; i < t->batch; ++i)
    for (int j = 0; j < (t->ctx[i] + bs - 1) / bs; ++j) table[(size_t)i * mbps + j] = perm[k++];
  /* the pool: NaN codes everywhere, then random values in every row some context covers */
  const size_t rows = blocks * bs, n = rows * D;
  unsigned char *pool = malloc(n * eb);
  if (eb == 2)
    for (size_t i = 0; i < n; ++i) ((uint16_t *)pool)[i] = 0xFFFF;
  else
    memset(pool, 0x7F, n);
  for (int i = 0; i < t->batch; ++i)
    for (int tok = 0; tok < t->ctx[i]; ++tok) {
      const size_t row = (size_t)table[(size_t)i * mbps + tok / bs] * bs + tok % bs;
      for (int d = 0; d < D; ++d) {
        if (eb == 2)
          ((uint16_t *)pool)[row * D + d] = km_float_to_bf16(km_test_rng_normal(&st));
        else
          pool[row * D + d] = rand_e4m3(&st);
      }
    }
  const size_t qn = (size_t)t->batch * heads * D, on = (size_t)t->batch * heads * DV;
  uint16_t *q = malloc(qn * 2);
  for (size_t i = 0; i < qn; ++i) q[i] = km_float_to_bf16(km_test_rng_normal(&st));
  void *dpool = km_test_dev_upload(pool, n * eb), *dq = km_test_dev_upload(q, qn * 2);
  void *dtab = km_test_dev_upload(table, (size_t)t->batch * mbps * 4), *dctx = km_test_dev_upload(t->ctx, (size_t)t->batch * 4);
  void *dscale = km_test_dev_upload(&FP8_SCALE, sizeof FP8_SCALE);
  uint16_t *dout = km_test_dev_guarded(NULL, on * 2), *dout2 = km_test_dev_guarded(NULL, on * 2);
  km_mla_plan plan;
  memset(&plan, 0, sizeof plan);
  void *ws = NULL;
  uint16_t *got = malloc(on * 2 + KM_TEST_GUARD_BYTES), *got2 = malloc(on * 2 + KM_TEST_GUARD_BYTES);
  char err[256];
  if (!dpool || !dq || !dtab || !dctx || !dscale || !dout || !dout2) {
    km_test_failures++;
    goto done;
  }
  if (km_mla_plan_make(&plan, &sh, &cfg, t->batch, t->ctx, mbps, t->chunk_tiles, err, sizeof err) != 0) {
    fprintf(stderr, "FAIL %s: plan: %s\n", t->what, err);
    km_test_failures++;
    goto done;
  }
  const int can_merge = km_mla_plan_can_merge(&plan);
  {
    int most = 1;
    for (int i = 0; i < t->batch; ++i) most = plan.ch.seq_chunks[i] > most ? plan.ch.seq_chunks[i] : most;
    KM_EXPECT_MSG(can_merge == (plan.split && !cfg.wgmma && most <= KM_MLA_MERGE_CHUNKS) && plan.merge == 0,
                  "%s: can_merge %d, merge %d with %d chunks at most a sequence", t->what, can_merge, plan.merge, most);
    KM_EXPECT_MSG(!t->merge || can_merge, "%s: the case asks for the merge, the plan cannot", t->what);
  }
  plan.merge = t->merge && can_merge;
  if (km_mla_plan_upload(&plan, 0) != cudaSuccess || (km_mla_workspace_bytes(&plan) &&
                                                      cudaMalloc(&ws, km_mla_workspace_bytes(&plan)) != cudaSuccess)) {
    fprintf(stderr, "FAIL %s: plan upload or workspace\n", t->what);
    km_test_failures++;
    goto done;
  }
  const km_mla_args a = {dq, dpool, dscale, dtab, dctx, SM_SCALE, dout, ws};
  km_mla_args a2 = a;
  a2.out = dout2;
  if (km_mla_decode(&plan, &a, 0) != cudaSuccess || cudaMemset(dout, 0xFF, on * 2) != cudaSuccess ||
      km_mla_decode(&plan, &a, 0) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
      km_mla_naive_decode(&sh, t->batch, mbps, &a2, 0) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
      km_test_download(got, dout, on * 2 + KM_TEST_GUARD_BYTES) != 0 ||
      km_test_download(got2, dout2, on * 2 + KM_TEST_GUARD_BYTES) != 0) {
    fprintf(stderr, "FAIL %s: launch: %s\n", t->what, cudaGetErrorString(cudaGetLastError()));
    km_test_failures++;
    goto done;
  }
  KM_EXPECT_MSG(km_test_guard_intact(got, on * 2), "%s: write past the output", t->what);
  KM_EXPECT_MSG(km_test_guard_intact(got2, on * 2), "%s: simple kernel writes past the output", t->what);
  /* every sequence, every head on the CPU, from its rows in token order */
  const km_mla_ref_shape rs = {heads, t->kv == KM_MLA_FP8_E4M3, FP8_SCALE, SM_SCALE};
  size_t bad = 0, bad2 = 0;
  for (int i = 0; i < t->batch; ++i) {
    const int ctx = t->ctx[i];
    unsigned char *seq_rows = malloc((size_t)ctx * D * eb);
    for (int tok = 0; tok < ctx; ++tok) {
      const size_t row = (size_t)table[(size_t)i * mbps + tok / bs] * bs + tok % bs;
      memcpy(seq_rows + (size_t)tok * D * eb, pool + row * D * eb, D * eb);
    }
    float *ref = malloc((size_t)heads * DV * sizeof(float));
    km_mla_ref_step(&rs, ctx, q + (size_t)i * heads * D, seq_rows, NULL, 0, ref);
    bad += count_bad(t->what, "kernel", got, ref, i, heads);
    bad2 += count_bad(t->what, "simple kernel", got2, ref, i, heads);
    free(seq_rows);
    free(ref);
  }
  KM_EXPECT_MSG(bad == 0,
                "%s: %zu of %zu outputs off (%d chunks of <= %d tiles, split %d, merge %d, %d rows, %d stages, %s)",
                t->what, bad, on, plan.num_chunks, plan.chunk_tiles, plan.split, plan.merge, cfg.rows, cfg.stages,
                cfg.wgmma ? "wgmma" : "mma.sync");
  if (cfg.wgmma) KM_EXPECT_MSG(cfg.wgmma == (t->kernel >= KM_MLA_KERNEL_WGMMA_SPLIT_S ? (int)(t->kernel - KM_MLA_KERNEL_WGMMA_SPLIT_S) + KM_MLA_WG_SPLIT_S : KM_MLA_WG_DEFAULT),
                               "%s: wgmma variant %d", t->what, cfg.wgmma);
  KM_EXPECT_MSG(bad2 == 0, "%s: simple kernel: %zu of %zu outputs off", t->what, bad2, on);
  if (t->chunk_tiles == 1) KM_EXPECT_MSG(plan.split == 1, "%s: a one-tile chunk must split", t->what);
done:
  km_mla_plan_free(&plan);
  cudaFree(dpool), cudaFree(dq), cudaFree(dtab), cudaFree(dctx), cudaFree(dscale), cudaFree(dout), cudaFree(dout2);
  cudaFree(ws);
  free(perm), free(table), free(pool), free(q), free(got), free(got2);
}

/* The configuration the planner takes on this device: two stages and 64 rows at 128 heads on an H100/H200,
 * on the wgmma kernel where the device is SM 9.0 and the build holds sm_90a code; the mma.sync kernel when
 * asked for. */
static void test_config(void) {
  const km_mla_shape sh = {128, 64, KM_MLA_BF16};
  km_mla_config c;
  KM_EXPECT_CUDA(km_mla_pick_config(&sh, 0, &c));
  int optin = 0;
  KM_EXPECT_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  KM_EXPECT(c.smem_bytes <= optin && c.ctas > 0);
  if (optin >= km_mla_smem_bytes(KM_MLA_BF16, 64, 2)) KM_EXPECT(c.rows == 64 && c.stages == 2);
  {
    const km_mla_shape h16 = {16, 64, KM_MLA_BF16}; /* 16 heads: Q in registers, three stages where they fit */
    km_mla_config c16;
    KM_EXPECT_CUDA(km_mla_pick_config(&h16, 0, &c16));
    KM_EXPECT(c16.rows == 16 && c16.wgmma == 0);
    if (optin >= km_mla_smem_bytes(KM_MLA_BF16, 16, 3)) KM_EXPECT(c16.stages == 3);
  }
  KM_EXPECT((c.wgmma != 0) == km_mla_wgmma_usable(0));
  if (c.wgmma) KM_EXPECT(c.wgmma == KM_MLA_WG_DEFAULT);
  printf("bf16, 128 heads: %d heads per CTA, %d stages, %d B shared memory, %d CTAs at once, %s\n", c.rows, c.stages,
         c.smem_bytes, c.ctas, c.wgmma ? "wgmma" : "mma.sync (this device or build has no sm_90a path)");
  KM_EXPECT_CUDA(km_mla_pick_config_kernel(&sh, 0, KM_MLA_KERNEL_MMA, &c));
  KM_EXPECT(c.wgmma == 0 && c.rows == 64);
  const cudaError_t e = km_mla_pick_config_kernel(&sh, 0, KM_MLA_KERNEL_WGMMA, &c);
  KM_EXPECT(km_mla_wgmma_usable(0) ? e == cudaSuccess && c.wgmma == KM_MLA_WG_DEFAULT : e == cudaErrorNotSupported);
  {
    const km_mla_shape f8 = {128, 64, KM_MLA_FP8_E4M3}; /* the seesaw and qreg kernels take bf16 latents only */
    KM_EXPECT(km_mla_pick_config_kernel(&f8, 0, KM_MLA_KERNEL_WGMMA_SEESAW, &c) == cudaErrorNotSupported);
    KM_EXPECT(km_mla_pick_config_kernel(&f8, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN, &c) == cudaErrorNotSupported);
    KM_EXPECT(km_mla_pick_config_kernel(&f8, 0, KM_MLA_KERNEL_WGMMA_QREG, &c) == cudaErrorNotSupported);
  }
  const km_mla_shape h32 = {32, 64, KM_MLA_BF16}; /* 32 heads: no group of 64, mma.sync */
  KM_EXPECT_CUDA(km_mla_pick_config(&h32, 0, &c));
  KM_EXPECT(c.wgmma == 0);
  const km_mla_shape bad = {24, 64, KM_MLA_BF16};
  KM_EXPECT(km_mla_pick_config(&bad, 0, &c) == cudaErrorInvalidValue);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  test_config();
  static const int c3[] = {1, 65, 300};
  static const int c2[] = {64, 129};
  static const int c700[] = {700, 63};
  static const int c1k[] = {1000};
  static const int c1[] = {1};
  static const int c_long[] = {3000, 1, 2, 64, 65, 127, 128, 129};
  static const int c_bs128[] = {200, 130};
  const km_mla_kv B = KM_MLA_BF16, E4 = KM_MLA_FP8_E4M3;
  const tcase cases[] = {
      {"16 heads, contexts 1/65/300", 16, B, 64, 3, c3, 0, 0, 0},
      {"16 heads, split into one-tile chunks", 16, B, 64, 3, c3, 1, 0, 0},
      {"16 heads, split 2 (3 chunks: merged in the kernel)", 16, B, 64, 3, c3, 2, 0, 0, KM_MLA_KERNEL_AUTO, 1},
      {"16 heads, split 2, the combine pass", 16, B, 64, 3, c3, 2, 0, 0},
      {"16 heads, one long (4 chunks: merged), many short", 16, B, 64, 8, c_long, 12, 0, 0, KM_MLA_KERNEL_AUTO, 1},
      {"fp8 16 heads, split 2 (merged)", 16, E4, 64, 3, c3, 2, 0, 0, KM_MLA_KERNEL_AUTO, 1},
      {"128 heads, mma.sync, split 3 (4 chunks: merged)", 128, B, 64, 2, c700, 3, 0, 0, KM_MLA_KERNEL_MMA, 1},
      {"32 heads, one long (4 chunks: merged), many short", 32, B, 64, 8, c_long, 12, 0, 0, KM_MLA_KERNEL_AUTO, 1},
      {"16 heads, three stages, split 2 (merged)", 16, B, 64, 3, c3, 2, 16, 3, KM_MLA_KERNEL_AUTO, 1},
      {"16 heads, one long, many short", 16, B, 64, 8, c_long, 0, 0, 0},
      {"16 heads, b1 x 3000, one-tile chunks (four combine groups)", 16, B, 64, 1, c_long, 1, 0, 0},
      {"16 heads, b1 x 3000, 5-tile chunks (two combine groups)", 16, B, 64, 1, c_long, 5, 0, 0},
      {"128 heads, b1 x 3000, one-tile chunks (four combine groups)", 128, B, 64, 1, c_long, 1, 0, 0},
      {"fp8 16 heads, b1 x 3000, 2-tile chunks (four combine groups)", 16, E4, 64, 1, c_long, 2, 0, 0},
      {"16 heads, three stages, split 2", 16, B, 64, 3, c3, 2, 16, 3},
      {"16 heads, two stages, one long, many short", 16, B, 64, 8, c_long, 0, 16, 2},
      {"16 heads, one stage, one long, many short", 16, B, 64, 8, c_long, 0, 16, 1},
      {"16 heads, one stage, block size 128", 16, B, 128, 2, c_bs128, 0, 16, 1},
      {"128 heads, 16 per CTA, three stages, split 3", 128, B, 64, 2, c700, 3, 16, 3},
      {"32 heads, split 2", 32, B, 64, 2, c2, 2, 0, 0},
      {"48 heads (16 per CTA)", 48, B, 64, 2, c700, 0, 0, 0},
      {"64 heads", 64, B, 64, 2, c700, 0, 0, 0},
      {"64 heads, block size 128", 64, B, 128, 2, c_bs128, 0, 0, 0},
      {"128 heads, b1, the planner's split", 128, B, 64, 1, c1k, 0, 0, 0},
      {"128 heads, b1, no split", 128, B, 64, 1, c1k, 1000, 0, 0},
      {"128 heads, b1, split 3", 128, B, 64, 1, c1k, 3, 0, 0},
      {"128 heads, context 1", 128, B, 64, 1, c1, 0, 0, 0},
      {"128 heads, one long, many short", 128, B, 64, 8, c_long, 0, 0, 0},
      {"128 heads, one long, many short, split 4", 128, B, 64, 8, c_long, 4, 0, 0},
      {"128 heads, one latent stage", 128, B, 64, 2, c700, 0, 64, 1},
      {"128 heads, one latent stage, split 2", 128, B, 64, 2, c700, 2, 64, 1},
      {"128 heads, 32 per CTA", 128, B, 64, 2, c700, 0, 32, 0},
      {"128 heads, 16 per CTA, split 5", 128, B, 64, 2, c700, 5, 16, 0},
      {"128 heads, b1, the planner's split, mma.sync", 128, B, 64, 1, c1k, 0, 0, 0, KM_MLA_KERNEL_MMA},
      {"128 heads, one long, many short, mma.sync", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_MMA},
      {"192 heads (three groups of 64)", 192, B, 64, 2, c700, 0, 0, 0},
      {"128 heads, block size 128, split 3", 128, B, 128, 2, c_bs128, 3, 0, 0},
      {"128 heads, one long, many short, wgmma split S", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SPLIT_S},
      {"128 heads, one long, many short, wgmma one S", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_ONE_S},
      {"128 heads, b1, split 3, wgmma one S", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_ONE_S},
      {"128 heads, one long, many short, wgmma one S n256", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_ONE_S_N256},
      {"128 heads, b1, no split, wgmma one S n256", 128, B, 64, 1, c1k, 1000, 0, 0, KM_MLA_KERNEL_WGMMA_ONE_S_N256},
      {"128 heads, one long, many short, wgmma split K", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SPLIT_K},
      {"128 heads, b1, split 3, wgmma split K", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_SPLIT_K},
      {"64 heads, block size 128, wgmma split K", 64, B, 128, 2, c_bs128, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SPLIT_K},
      /* seesaw: chunks of odd and even tile counts (an odd one ends with a tile of no tokens), one tile, context 1 */
      {"128 heads, one long, many short, wgmma seesaw", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      {"128 heads, one long, many short, split 4, wgmma seesaw", 128, B, 64, 8, c_long, 4, 0, 0,
       KM_MLA_KERNEL_WGMMA_SEESAW},
      {"128 heads, b1, split 3, wgmma seesaw", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      {"128 heads, b1, one-tile chunks, wgmma seesaw", 128, B, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      {"128 heads, b1, no split, wgmma seesaw", 128, B, 64, 1, c1k, 1000, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      {"128 heads, context 1, wgmma seesaw", 128, B, 64, 1, c1, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      {"64 heads, block size 128, wgmma seesaw", 64, B, 128, 2, c_bs128, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      {"192 heads, wgmma seesaw", 192, B, 64, 2, c700, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW},
      /* L2 requests ahead: chunks shorter and longer than the distance, one tile, three head groups' shares,
       * blocks of two tiles, fp8 (36 KiB tiles) */
      {"128 heads, one long, many short, wgmma l2 ahead 1", 128, B, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_L2_AHEAD1},
      {"128 heads, one long, many short, wgmma l2 ahead 2", 128, B, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_L2_AHEAD2},
      {"128 heads, b1, split 3, wgmma l2 ahead 2", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_L2_AHEAD2},
      {"128 heads, b1, one-tile chunks, wgmma l2 ahead 2", 128, B, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_L2_AHEAD2},
      {"128 heads, context 1, wgmma l2 ahead 1", 128, B, 64, 1, c1, 0, 0, 0, KM_MLA_KERNEL_WGMMA_L2_AHEAD1},
      {"192 heads, wgmma l2 ahead 2", 192, B, 64, 2, c700, 0, 0, 0, KM_MLA_KERNEL_WGMMA_L2_AHEAD2},
      {"64 heads, block size 128, wgmma l2 ahead 2", 64, B, 128, 2, c_bs128, 0, 0, 0, KM_MLA_KERNEL_WGMMA_L2_AHEAD2},
      /* the lean copies: tiles cut by the context (zero-filled rows), chunks of one and two tiles (the table entries
       * read ahead past the chunk's end), three head groups, blocks of two tiles */
      {"128 heads, one long, many short, wgmma lean", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_LOAD},
      {"128 heads, one long, many short, split 4, wgmma lean l2", 128, B, 64, 8, c_long, 4, 0, 0,
       KM_MLA_KERNEL_WGMMA_LEAN_L2},
      {"128 heads, b1, split 3, wgmma lean", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_LOAD},
      {"128 heads, b1, one-tile chunks, wgmma lean l2", 128, B, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_L2},
      {"128 heads, b1, two-tile chunks, wgmma lean", 128, B, 64, 1, c1k, 2, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_LOAD},
      {"128 heads, b1, no split, wgmma lean l2", 128, B, 64, 1, c1k, 1000, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_L2},
      {"128 heads, context 1, wgmma lean", 128, B, 64, 1, c1, 0, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_LOAD},
      {"192 heads, wgmma lean l2", 192, B, 64, 2, c700, 0, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_L2},
      {"64 heads, block size 128, wgmma lean", 64, B, 128, 2, c_bs128, 0, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_LOAD},
      {"64 heads, block size 128, split 3, wgmma lean l2", 64, B, 128, 2, c_bs128, 3, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_L2},
      /* descriptors by one add; the seesaw with lean copies: odd and even chunks, one tile, context 1, blocks of two
       * tiles, three head groups */
      {"128 heads, one long, many short, wgmma lean desc", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_DESC},
      {"128 heads, b1, one-tile chunks, wgmma lean desc", 128, B, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_DESC},
      {"64 heads, block size 128, split 3, wgmma lean desc", 64, B, 128, 2, c_bs128, 3, 0, 0,
       KM_MLA_KERNEL_WGMMA_LEAN_DESC},
      {"128 heads, one long, many short, wgmma seesaw lean", 128, B, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"128 heads, one long, many short, split 4, wgmma seesaw lean", 128, B, 64, 8, c_long, 4, 0, 0,
       KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"128 heads, b1, split 3, wgmma seesaw lean", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"128 heads, b1, one-tile chunks, wgmma seesaw lean", 128, B, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"128 heads, b1, no split, wgmma seesaw lean", 128, B, 64, 1, c1k, 1000, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"128 heads, context 1, wgmma seesaw lean", 128, B, 64, 1, c1, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"64 heads, block size 128, wgmma seesaw lean", 64, B, 128, 2, c_bs128, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      {"192 heads, wgmma seesaw lean", 192, B, 64, 2, c700, 0, 0, 0, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN},
      /* three warpgroups over three stages: chunks of 1, 2, 3 and 16 tiles (the ring wraps), context 1, blocks of two
       * tiles, three head groups */
      {"128 heads, one long, many short, wgmma qreg", 128, B, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"128 heads, one long, many short, split 4, wgmma qreg", 128, B, 64, 8, c_long, 4, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"128 heads, b1, one-tile chunks, wgmma qreg", 128, B, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"128 heads, b1, two-tile chunks, wgmma qreg", 128, B, 64, 1, c1k, 2, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"128 heads, b1, split 3, wgmma qreg", 128, B, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"128 heads, b1, no split, wgmma qreg", 128, B, 64, 1, c1k, 1000, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"128 heads, context 1, wgmma qreg", 128, B, 64, 1, c1, 0, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"64 heads, block size 128, split 3, wgmma qreg", 64, B, 128, 2, c_bs128, 3, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"192 heads, wgmma qreg", 192, B, 64, 2, c700, 0, 0, 0, KM_MLA_KERNEL_WGMMA_QREG},
      {"fp8 16 heads", 16, E4, 64, 3, c3, 0, 0, 0},
      {"fp8 16 heads, split 1", 16, E4, 64, 3, c3, 1, 0, 0},
      {"fp8 16 heads, one long, many short", 16, E4, 64, 8, c_long, 0, 0, 0},
      {"fp8 32 heads", 32, E4, 64, 2, c2, 0, 0, 0},
      {"fp8 64 heads, block size 128", 64, E4, 128, 2, c_bs128, 0, 0, 0},
      {"fp8 128 heads, b1, no split", 128, E4, 64, 1, c1k, 1000, 0, 0},
      {"fp8 128 heads, b1, the planner's split", 128, E4, 64, 1, c1k, 0, 0, 0},
      {"fp8 128 heads, one long, many short", 128, E4, 64, 8, c_long, 0, 0, 0},
      {"fp8 128 heads, 32 per CTA, split 2", 128, E4, 64, 2, c700, 2, 32, 0},
      {"fp8 128 heads, one long, many short, mma.sync", 128, E4, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_MMA},
      {"fp8 64 heads, split 2", 64, E4, 64, 2, c700, 2, 0, 0},
      {"fp8 128 heads, one long, many short, wgmma one S", 128, E4, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_ONE_S},
      {"fp8 128 heads, one long, many short, wgmma one S n256", 128, E4, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_ONE_S_N256},
      {"fp8 128 heads, one long, many short, wgmma split K", 128, E4, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_SPLIT_K},
      {"fp8 128 heads, one long, many short, wgmma l2 ahead 2", 128, E4, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_L2_AHEAD2},
      {"fp8 128 heads, b1, split 3, wgmma l2 ahead 1", 128, E4, 64, 1, c1k, 3, 0, 0, KM_MLA_KERNEL_WGMMA_L2_AHEAD1},
      {"fp8 128 heads, one long, many short, wgmma lean", 128, E4, 64, 8, c_long, 0, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_LOAD},
      {"fp8 128 heads, b1, one-tile chunks, wgmma lean l2", 128, E4, 64, 1, c1k, 1, 0, 0, KM_MLA_KERNEL_WGMMA_LEAN_L2},
      {"fp8 128 heads, one long, many short, wgmma lean desc", 128, E4, 64, 8, c_long, 0, 0, 0,
       KM_MLA_KERNEL_WGMMA_LEAN_DESC},
      {"fp8 64 heads, block size 128, split 3, wgmma lean l2", 64, E4, 128, 2, c_bs128, 3, 0, 0,
       KM_MLA_KERNEL_WGMMA_LEAN_L2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_case(&cases[i]);
  return km_test_finish("gpu_attn_mla");
}
