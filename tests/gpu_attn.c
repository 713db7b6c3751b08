/* GPU test of the decode attention step (kernels/attn_decode.cu) and the simple kernel it is checked
 * against (baselines/attn_naive.cu), both against the fp64 CPU reference on random data: every layout
 * (MHA, GQA, MQA), head_dim 64/128/256, bf16 and fp8 (e4m3, e5m2; per-tensor and per-token-head scales),
 * q_len 1-4, block sizes 16-128, context 1, contexts that end inside a block, a window longer than the
 * context, selected pages up to every page, one long and many short sequences, and forced splits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "attn_baselines.h"
#include "attn_decode.h"
#include "attn_ref.h"
#include "attn_stamps.h"
#include "quant_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

typedef struct tcase {
  const char *what;
  int heads, kv_heads, d, bs, q_len, window;
  km_attn_kv kv;
  km_attn_scale scale;
  int batch;
  const int *ctx;
  int sparse_pages; /* > 0: random distinct pages (capped at each sequence's page count) */
  int chunk_tiles;  /* 0: the planner's choice */
  int want_merge;   /* 1: the plan must merge partials in the kernel (unless the variant asks for the pass) */
} tcase;

/* A random finite fp8 code of about unit size. */
static uint8_t rand_fp8(uint64_t *st, km_attn_kv kv) {
  for (;;) {
    uint8_t c = (uint8_t)km_test_rng_next(st);
    if (kv == KM_ATTN_FP8_E4M3 && (c & 0x7f) == 0x7f) continue;     /* NaN */
    if (kv == KM_ATTN_FP8_E5M2 && (c & 0x7c) == 0x7c) continue;     /* Inf / NaN */
    int e = kv == KM_ATTN_FP8_E4M3 ? (c >> 3) & 0xf : (c >> 2) & 0x1f; /* keep magnitudes within ~2^4 of 1 */
    int bias = kv == KM_ATTN_FP8_E4M3 ? 7 : 15;
    if (e > bias + 3 || e < bias - 6) continue;
    return c;
  }
}

/* a kernel variant: prefetch depth, paired tiles, O^T accumulators, CTAs per SM, window unpacking, the
 * separate combine pass, fp8 scales loaded once per tile, the stamped kernel, the CTA merge's partials in
 * flight, the default kernel's L2 prefetch or lazy rescale, the TMA pipeline's ring slots and scales, the merge by
 * the last CTA of four KV heads, the tiles a CTA's warps may take from each other, programmatic dependent launches,
 * the CTA merge by flags, Q in shared memory (all 0: the default kernel) */
typedef struct variant {
  int prefetch, pair, otrans, ctas, unpack, combine, scale_load, stamps, merge_inflight, l2_ahead, lazy_rescale,
      tma_slots, tma_scales, merge_heads, tma_promo, steal, pdl, merge_poll, q_smem;
} variant;
static void run_case_with(const tcase *t, int check_naive, km_attn_pipe pipe, variant v);
static void run_case(const tcase *t, int check_naive, km_attn_pipe pipe) {
  run_case_with(t, check_naive, pipe, (variant){0, 0, 0, 0, 0, 0});
}
static void run_case_pair(const tcase *t) { run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 1, 0, 0, 0, 0}); }

static void run_case_with(const tcase *t, int check_naive, km_attn_pipe pipe, variant v) {
  if (t->batch < 1 || t->batch > 4096) return;
  uint64_t st = 0x9e3779b97f4a7c15ull ^ (uint64_t)(t->heads * 131 + t->d * 7 + t->kv * 3 + t->batch + t->q_len * 17 +
                                                    t->window + t->sparse_pages + t->chunk_tiles * 5 + t->bs);
  km_attn_shape sh = {t->heads,  t->kv_heads, t->d,      t->bs,    t->q_len, t->window, t->kv,
                      t->scale,  pipe,        v.prefetch, v.pair, v.otrans, v.ctas,
                      v.unpack,  v.combine,   v.scale_load, v.merge_inflight, v.l2_ahead, v.lazy_rescale,
                      v.tma_slots, v.tma_scales, v.merge_heads, v.tma_promo, v.steal, v.pdl, v.merge_poll, v.q_smem};
  if (pipe == KM_ATTN_PIPE_TMA && km_attn_target_warps(&sh, 0) == 0) { /* sm_90 code on an sm_90 device only */
    static int said;
    if (!said++) fprintf(stderr, "SKIP the TMA pipeline's cases: no sm_90 kernel runs on this device\n");
    return;
  }
  const int d = t->d, kvh = t->kv_heads;
  const size_t eb = t->kv == KM_ATTN_BF16 ? 2 : 1, row_elems = (size_t)kvh * d;
  /* bytes of one token's row (all KV heads) */
  const size_t rowb = (size_t)kvh * km_attn_head_bytes(t->kv, d);
  int mbps = 1;
  size_t blocks = 0;
  for (int i = 0; i < t->batch; ++i) {
    int n = (t->ctx[i] + t->bs - 1) / t->bs;
    mbps = n > mbps ? n : mbps;
    blocks += (size_t)n;
  }
  blocks += 3; /* unused blocks in the pool */
  /* a random permutation of pool blocks, handed out in order */
  int32_t *perm = malloc((size_t)blocks * sizeof *perm), *table = calloc((size_t)(unsigned)t->batch * (unsigned)mbps, sizeof *table);
  for (size_t i = 0; i < blocks; ++i) perm[i] = (int32_t)i;
  for (size_t i = blocks - 1; i > 0; --i) {
    size_t j = (size_t)(km_test_rng_next(&st) % (uint64_t)(i + 1));
    int32_t x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  size_t k = 0;
  for (int i = 0; i < t->batch; ++i)
    for (int j = 0; j < (t->ctx[i] + t->bs - 1) / t->bs; ++j) table[(size_t)i * mbps + j] = perm[k++];
  const size_t rows = blocks * t->bs, n = rows * row_elems;
  const size_t cache_bytes = rows * rowb;
  unsigned char *kc = malloc(cache_bytes), *vc = malloc(cache_bytes);
  float *ks = malloc(rows * kvh * sizeof(float)), *vs = malloc(rows * kvh * sizeof(float));
  for (size_t i = 0; i < n && t->kv == KM_ATTN_U3; i += 32) {
    /* a record: random codes, fp16 scale 0.1..0.5 and zero -1.5..-0.5 (values about -1.5..2) */
    unsigned char *rk = kc + i / 32 * KM_ATTN_U3_RECORD, *rv = vc + i / 32 * KM_ATTN_U3_RECORD;
    for (int j = 0; j < 12; ++j) rk[j] = (unsigned char)km_test_rng_next(&st), rv[j] = (unsigned char)km_test_rng_next(&st);
    for (int h = 0; h < 2; ++h) {
      unsigned char *rec = h ? rv : rk;
      const uint16_t sc = km_ref_f32_to_f16(0.1f + 0.4f * (float)(km_test_rng_next(&st) % 1000) / 1000.f);
      const uint16_t z = km_ref_f32_to_f16(-1.5f + (float)(km_test_rng_next(&st) % 1000) / 1000.f);
      rec[12] = (unsigned char)sc, rec[13] = (unsigned char)(sc >> 8), rec[14] = (unsigned char)z, rec[15] = (unsigned char)(z >> 8);
    }
  }
  for (size_t i = 0; i < cache_bytes && t->kv == KM_ATTN_TQ3; ++i) { /* any 3-bit code is a level */
    kc[i] = (unsigned char)km_test_rng_next(&st);
    vc[i] = (unsigned char)km_test_rng_next(&st);
  }
  for (size_t i = 0; i < n && t->kv != KM_ATTN_U3 && t->kv != KM_ATTN_TQ3; ++i) {
    if (eb == 2) {
      float kx = km_test_rng_normal(&st) * (((i % d) % 32) == 7 ? 8.f : 1.f), vx = km_test_rng_normal(&st);
      ((uint16_t *)kc)[i] = km_float_to_bf16(kx);
      ((uint16_t *)vc)[i] = km_float_to_bf16(vx);
    } else {
      kc[i] = rand_fp8(&st, t->kv);
      vc[i] = rand_fp8(&st, t->kv);
    }
  }
  for (size_t i = 0; i < rows * kvh; ++i) {
    ks[i] = 0.02f + 0.1f * (float)(km_test_rng_next(&st) % 1000) / 1000.f;
    vs[i] = 0.02f + 0.1f * (float)(km_test_rng_next(&st) % 1000) / 1000.f;
  }
  const int per_token = (t->kv == KM_ATTN_FP8_E4M3 || t->kv == KM_ATTN_FP8_E5M2) && t->scale == KM_ATTN_SCALE_TOKEN_HEAD;
  /* TurboQuant: fp16 norms 4..12 (K) and (norm, residual) (V); the CPU reference reads them widened in ks / vs */
  uint16_t *kside = malloc(rows * kvh * 2), *vside = malloc(rows * kvh * 4);
  for (size_t i = 0; i < rows * kvh && t->kv == KM_ATTN_TQ3; ++i) {
    kside[i] = km_ref_f32_to_f16(4.0f + 8.0f * (float)(km_test_rng_next(&st) % 1000) / 1000.f);
    vside[2 * i] = km_ref_f32_to_f16(4.0f + 8.0f * (float)(km_test_rng_next(&st) % 1000) / 1000.f);
    vside[2 * i + 1] = km_ref_f32_to_f16(0.5f);
    ks[i] = km_ref_f16_to_f32(kside[i]);
    vs[i] = km_ref_f16_to_f32(vside[2 * i]);
  }
  const size_t qn = (size_t)t->batch * t->q_len * t->heads * d;
  uint16_t *q = malloc(qn * 2);
  for (size_t i = 0; i < qn; ++i) q[i] = km_float_to_bf16(km_test_rng_normal(&st));
  /* pdl: another Q for the step launched just before the checked one */
  uint16_t *q_alt = v.pdl ? malloc(qn * 2) : NULL;
  for (size_t i = 0; q_alt && i < qn; ++i) q_alt[i] = km_float_to_bf16(km_test_rng_normal(&st));
  /* selected pages: distinct, random, per (sequence, KV head) */
  int32_t *sel = NULL;
  int sp = t->sparse_pages;
  if (sp > 0) {
    for (int i = 0; i < t->batch; ++i) {
      int pages = (t->ctx[i] + 15) / 16;
      sp = pages < sp ? pages : sp;
    }
    sel = malloc((size_t)t->batch * kvh * sp * sizeof *sel);
    for (int i = 0; i < t->batch; ++i) {
      int pages = (t->ctx[i] + 15) / 16;
      for (int h = 0; h < kvh; ++h) {
        int32_t *s = sel + ((size_t)i * kvh + h) * sp;
        int got = 0;
        while (got < sp) {
          int cand = (int)(km_test_rng_next(&st) % (uint64_t)pages), dup = 0;
          for (int j = 0; j < got; ++j) dup |= s[j] == cand;
          if (!dup) s[got++] = cand;
        }
      }
    }
  }
  /* device */
  void *dk, *dv, *dq, *dout, *dout2, *dks, *dvs, *dtab, *dctx, *dsel = NULL, *ws = NULL, *dkside, *dvside;
  void *dq_alt = NULL;
  if (q_alt) {
    KM_EXPECT_CUDA(cudaMalloc(&dq_alt, qn * 2));
    KM_EXPECT_CUDA(cudaMemcpy(dq_alt, q_alt, qn * 2, cudaMemcpyHostToDevice));
  }
  KM_EXPECT_CUDA(cudaMalloc(&dkside, rows * kvh * 2));
  KM_EXPECT_CUDA(cudaMalloc(&dvside, rows * kvh * 4));
  KM_EXPECT_CUDA(cudaMemcpy(dkside, kside, rows * kvh * 2, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(dvside, vside, rows * kvh * 4, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMalloc(&dk, cache_bytes));
  KM_EXPECT_CUDA(cudaMalloc(&dv, cache_bytes));
  KM_EXPECT_CUDA(cudaMalloc(&dks, rows * kvh * sizeof(float)));
  KM_EXPECT_CUDA(cudaMalloc(&dvs, rows * kvh * sizeof(float)));
  KM_EXPECT_CUDA(cudaMalloc(&dq, qn * 2));
  KM_EXPECT_CUDA(cudaMalloc(&dout, qn * 2));
  KM_EXPECT_CUDA(cudaMalloc(&dout2, qn * 2));
  KM_EXPECT_CUDA(cudaMalloc(&dtab, (size_t)t->batch * mbps * 4));
  KM_EXPECT_CUDA(cudaMalloc(&dctx, (size_t)t->batch * 4));
  KM_EXPECT_CUDA(cudaMemcpy(dk, kc, cache_bytes, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(dv, vc, cache_bytes, cudaMemcpyHostToDevice));
  float tk = 0.07f, tv = 0.05f; /* per-tensor scales */
  KM_EXPECT_CUDA(cudaMemcpy(dks, per_token ? ks : &tk, per_token ? rows * kvh * 4 : 4, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(dvs, per_token ? vs : &tv, per_token ? rows * kvh * 4 : 4, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(dq, q, qn * 2, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(dtab, table, (size_t)t->batch * mbps * 4, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(dctx, t->ctx, (size_t)t->batch * 4, cudaMemcpyHostToDevice));
  if (sel) {
    KM_EXPECT_CUDA(cudaMalloc(&dsel, (size_t)t->batch * kvh * sp * 4));
    KM_EXPECT_CUDA(cudaMemcpy(dsel, sel, (size_t)t->batch * kvh * sp * 4, cudaMemcpyHostToDevice));
  }
  km_attn_plan plan;
  char err[256];
  int warps = km_attn_target_warps(&sh, 0);
  KM_EXPECT(warps > 0);
  if (km_attn_plan_make(&plan, &sh, t->batch, t->ctx, mbps, sp, t->chunk_tiles, warps, err, sizeof err) != 0) {
    fprintf(stderr, "FAIL %s: plan: %s\n", t->what, err);
    km_test_failures++;
    return;
  }
  KM_EXPECT_CUDA(km_attn_plan_upload(&plan, 0));
  if (km_attn_workspace_bytes(&plan)) {
    KM_EXPECT_CUDA(cudaMalloc(&ws, km_attn_workspace_bytes(&plan)));
    KM_EXPECT_CUDA(cudaMemset(ws, 0xFF, km_attn_workspace_bytes(&plan))); /* partials poisoned too */
    KM_EXPECT_CUDA(km_attn_workspace_init(&plan, ws, 0));
  }
  km_attn_args a = {dq, dk, dv, dks, dvs, dtab, dctx, dsel, 1.0f / sqrtf((float)d), dout, ws, dkside, dvside, NULL,
                    (long long)blocks};
  const int items = plan.num_chunks * kvh;
  unsigned long long *dstamps = NULL;
  if (v.stamps) {
    KM_EXPECT_CUDA(cudaMalloc((void **)&dstamps, (size_t)items * KM_ATTN_STAMPS * 8));
    KM_EXPECT_CUDA(cudaMemset(dstamps, 0, (size_t)items * KM_ATTN_STAMPS * 8));
    a.stamps = dstamps;
  }
  /* the CTA merge's counts must be back at zero after a step: the checked step is the second. With pdl the first
   * step has another Q and output and is launched right before the checked one, which overlaps its tail: a write of
   * the checked step's partials or counts before its wait would meet the first step's in flight */
  if (v.pdl) {
    km_attn_args a1 = a;
    a1.q = dq_alt;
    a1.out = dout2;
    KM_EXPECT_CUDA(cudaMemset(dout, 0xFF, qn * 2));
    KM_EXPECT_CUDA(km_attn_decode(&plan, &a1, 0));
  } else {
    if (plan.cta_merge) KM_EXPECT_CUDA(km_attn_decode(&plan, &a, 0));
    KM_EXPECT_CUDA(cudaMemset(dout, 0xFF, qn * 2));
  }
  KM_EXPECT_CUDA(km_attn_decode(&plan, &a, 0));
  KM_EXPECT_CUDA(cudaDeviceSynchronize());
  uint16_t *got = malloc(qn * 2), *got2 = malloc(qn * 2);
  KM_EXPECT_CUDA(cudaMemcpy(got, dout, qn * 2, cudaMemcpyDeviceToHost));
  if (v.stamps) {
    /* every warp stamped, its points in order, its chunk's tiles adding up to the step's, and with the CTA
     * merge exactly one CTA (4 warps) per (sequence, KV head) marked as the one that wrote the output */
    uint64_t *hs = malloc((size_t)items * KM_ATTN_STAMPS * 8);
    KM_EXPECT_CUDA(cudaMemcpy(hs, dstamps, (size_t)items * KM_ATTN_STAMPS * 8, cudaMemcpyDeviceToHost));
    km_attn_stamp_summary sm;
    char serr[200] = "";
    KM_EXPECT_MSG(km_attn_stamps_summarize(hs, items, &sm, serr, sizeof serr) == 0, "%s: stamps: %s", t->what, serr);
    long long tiles = 0, want = 0, wrote = 0;
    for (int i = 0; i < items; ++i) {
      tiles += (long long)hs[(size_t)i * KM_ATTN_STAMPS + KM_ATTN_STAMP_TILES];
      wrote += (hs[(size_t)i * KM_ATTN_STAMPS + KM_ATTN_STAMP_SM] >> 16) & 1;
      KM_EXPECT(hs[(size_t)i * KM_ATTN_STAMPS + KM_ATTN_STAMP_SPARE] == 0);
    }
    for (int i = 0; i < t->batch; ++i) want += (long long)(t->ctx[i] + 15) / 16 * kvh;
    KM_EXPECT_MSG(tiles == want, "%s: stamps count %lld tiles, the step has %lld", t->what, tiles, want);
    if (plan.cta_merge)
      KM_EXPECT_MSG(wrote == 4LL * t->batch * kvh, "%s: %lld warps in output-writing CTAs, want %d", t->what, wrote,
                    4 * t->batch * kvh);
    free(hs);
  }
  if (check_naive) {
    km_attn_naive_shape ns = {sh, t->batch, mbps, sp};
    km_attn_args a2 = a;
    a2.out = dout2;
    KM_EXPECT_CUDA(cudaMemset(dout2, 0xFF, qn * 2));
    KM_EXPECT_CUDA(km_attn_naive_decode(&ns, &a2, 0));
    KM_EXPECT_CUDA(cudaDeviceSynchronize());
    KM_EXPECT_CUDA(cudaMemcpy(got2, dout2, qn * 2, cudaMemcpyDeviceToHost));
  }
  /* CPU reference per sequence, from its rows in token order */
  km_attn_ref_shape rs = {t->heads, kvh, d, t->q_len, t->window, (km_attn_ref_kv)t->kv, per_token, tk, tv,
                          1.0f / sqrtf((float)d)};
  size_t bad = 0, bad2 = 0;
  for (int i = 0; i < t->batch; ++i) {
    const int ctx = t->ctx[i];
    unsigned char *kr = malloc((size_t)ctx * rowb), *vr = malloc((size_t)ctx * rowb);
    float *ksr = malloc((size_t)ctx * kvh * 4), *vsr = malloc((size_t)ctx * kvh * 4);
    for (int tk2 = 0; tk2 < ctx; ++tk2) {
      size_t row = (size_t)table[(size_t)i * mbps + tk2 / t->bs] * t->bs + tk2 % t->bs;
      memcpy(kr + (size_t)tk2 * rowb, kc + row * rowb, rowb);
      memcpy(vr + (size_t)tk2 * rowb, vc + row * rowb, rowb);
      memcpy(ksr + (size_t)tk2 * kvh, ks + row * kvh, kvh * 4);
      memcpy(vsr + (size_t)tk2 * kvh, vs + row * kvh, kvh * 4);
    }
    float *ref = malloc((size_t)t->q_len * t->heads * d * sizeof(float));
    km_attn_ref_step(&rs, ctx, q + (size_t)i * t->q_len * t->heads * d, kr, vr, ksr, vsr,
                     sel ? sel + (size_t)i * kvh * sp : NULL, sp, kvh, ref);
    for (int r = 0; r < t->q_len * t->heads; ++r) {
      const float *rr = ref + (size_t)r * d;
      const size_t o = ((size_t)i * t->q_len * t->heads + r) * d;
      double mx = 0;
      for (int j = 0; j < d; ++j) mx = fmax(mx, fabs(rr[j]));
      for (int j = 0; j < d; ++j) {
        double e = fabs(km_bf16_to_float(got[o + j]) - rr[j]), e2 = fabs(km_bf16_to_float(got2[o + j]) - rr[j]);
        if (!(e <= mx / 64 + 1e-6) && bad++ < 3)
          fprintf(stderr, "  %s: seq %d row %d dim %d: got %g want %g\n", t->what, i, r, j, km_bf16_to_float(got[o + j]), rr[j]);
        if (check_naive && !(e2 <= mx / 64 + 1e-6) && bad2++ < 3)
          fprintf(stderr, "  %s (simple kernel): seq %d row %d dim %d: got %g want %g\n", t->what, i, r, j,
                  km_bf16_to_float(got2[o + j]), rr[j]);
      }
    }
    free(kr), free(vr), free(ksr), free(vsr), free(ref);
  }
  KM_EXPECT_MSG(bad == 0,
                "%s (%s pipeline, prefetch %d, pair %d, O^T %d, ctas %d, unpack %d, combine %d, scale load %d, L2 "
                "ahead %d, lazy rescale %d, TMA slots %d, TMA scales %d, pdl %d, merge_poll %d): %zu of %zu outputs off (chunks "
                "%d of %d tiles, split %d, CTA merge %d, poll %d)",
                t->what, pipe == KM_ATTN_PIPE_SMEM_RING ? "ring" : pipe == KM_ATTN_PIPE_TMA ? "TMA" : "register",
                v.prefetch, v.pair, v.otrans, v.ctas, v.unpack, v.combine, v.scale_load, v.l2_ahead, v.lazy_rescale,
                v.tma_slots, v.tma_scales, v.pdl, v.merge_poll, bad, qn, plan.num_chunks,
                plan.chunk_tiles, plan.split, plan.cta_merge, plan.poll);
  KM_EXPECT_MSG(!t->want_merge || v.merge_heads || plan.cta_merge == !v.combine, "%s: CTA merge %d, expected %d",
                t->what, plan.cta_merge, !v.combine);
  KM_EXPECT_MSG(!v.merge_heads || plan.cta_merge == (plan.split ? 2 : 0), "%s: merge_heads: CTA merge %d, split %d",
                t->what, plan.cta_merge, plan.split);
  KM_EXPECT_MSG(bad2 == 0, "%s: simple kernel: %zu of %zu outputs off", t->what, bad2, qn);
  km_attn_plan_free(&plan);
  cudaFree(dk), cudaFree(dv), cudaFree(dks), cudaFree(dvs), cudaFree(dq), cudaFree(dout), cudaFree(dout2);
  cudaFree(dtab), cudaFree(dctx), cudaFree(dsel), cudaFree(ws), cudaFree(dkside), cudaFree(dvside);
  cudaFree(dstamps), cudaFree(dq_alt);
  free(kside), free(vside), free(q_alt);
  free(perm), free(table), free(kc), free(vc), free(ks), free(vs), free(q), free(sel), free(got), free(got2);
}

static void test_plan_errors(void) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_BF16, KM_ATTN_SCALE_TENSOR};
  km_attn_plan p;
  char err[256];
  int ctx0[1] = {0}, ctx_long[1] = {100};
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, ctx0, 4, 0, 0, 1000, err, sizeof err) == -1);
  KM_EXPECT(km_attn_plan_make(&p, &sh, 1, ctx_long, 4, 0, 0, 1000, err, sizeof err) == -1); /* 7 blocks > 4 */
  km_attn_shape bad_depth = sh;
  bad_depth.prefetch = 3;
  KM_EXPECT(km_attn_shape_error(&bad_depth) != NULL);
  bad_depth.prefetch = 2;
  KM_EXPECT(km_attn_shape_error(&bad_depth) == NULL);
  bad_depth.head_dim = 64;
  KM_EXPECT(km_attn_shape_error(&bad_depth) != NULL);
  km_attn_shape bad_pair = sh;
  bad_pair.pair = 1;
  KM_EXPECT(km_attn_shape_error(&bad_pair) == NULL);
  bad_pair.prefetch = 2;
  KM_EXPECT(km_attn_shape_error(&bad_pair) != NULL);
  km_attn_shape var = sh;
  var.otrans = 1; /* O^T without a depth: not a listed variant */
  KM_EXPECT(km_attn_shape_error(&var) != NULL);
  var.prefetch = 1;
  KM_EXPECT(km_attn_shape_error(&var) == NULL);
  var.ctas = 2; /* no kernel capped for 2 besides the default */
  KM_EXPECT(km_attn_shape_error(&var) != NULL);
  var.ctas = 3;
  KM_EXPECT(km_attn_shape_error(&var) == NULL);
  var.num_kv_heads = 1; /* 32 rows: O^T needs <= 8 */
  KM_EXPECT(km_attn_shape_error(&var) != NULL);
  km_attn_shape win = sh; /* window unpacking: listed combinations, uniform 3-bit only */
  win.prefetch = 2, win.otrans = 1, win.ctas = 3, win.unpack = 1;
  KM_EXPECT(km_attn_shape_error(&win) != NULL); /* bf16 */
  win.kv = KM_ATTN_U3;
  KM_EXPECT(km_attn_shape_error(&win) == NULL);
  win.unpack = 2; /* codes as 1 + code / 8: (2, 1, 3, 2) is listed */
  KM_EXPECT(km_attn_shape_error(&win) == NULL);
  win.unpack = 3;
  KM_EXPECT(km_attn_shape_error(&win) != NULL);
  win.unpack = 1;
  win.kv = KM_ATTN_TQ3; /* TurboQuant: unpack 1 with its norms loaded once only */
  KM_EXPECT(km_attn_shape_error(&win) != NULL);
  win.scale_load = 1;
  KM_EXPECT(km_attn_shape_error(&win) == NULL);
  win.unpack = 2;
  KM_EXPECT(km_attn_shape_error(&win) != NULL);
  win.unpack = 3; /* two pairs' levels from one selector: (2, 1, 3, 3, 1) is listed */
  KM_EXPECT(km_attn_shape_error(&win) == NULL);
  win.scale_load = 0;
  KM_EXPECT(km_attn_shape_error(&win) != NULL);
  win.kv = KM_ATTN_U3, win.unpack = 1, win.scale_load = 0;
  win.ctas = 0;
  KM_EXPECT(km_attn_shape_error(&win) != NULL); /* (2, 1, 0, 1) is not listed */
  km_attn_shape sl = sh; /* one scale load per lane: listed combinations, fp8 e4m3 per token-head only */
  sl.prefetch = 1, sl.otrans = 1, sl.scale_load = 1;
  KM_EXPECT(km_attn_shape_error(&sl) != NULL); /* bf16 */
  sl.kv = KM_ATTN_FP8_E4M3;
  KM_EXPECT(km_attn_shape_error(&sl) != NULL); /* per tensor */
  sl.scale = KM_ATTN_SCALE_TOKEN_HEAD;
  KM_EXPECT(km_attn_shape_error(&sl) == NULL);
  sl.pipe = KM_ATTN_PIPE_SMEM_RING; /* the ring loads one scale per lane already */
  KM_EXPECT(km_attn_shape_error(&sl) != NULL);
  km_attn_shape bad_pipe = sh;
  bad_pipe.pipe = (km_attn_pipe)7;
  KM_EXPECT(km_attn_shape_error(&bad_pipe) != NULL);
  km_attn_shape bad = sh;
  bad.block_size = 8;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.num_kv_heads = 5;
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
  bad = sh;
  bad.q_len = 4;
  bad.num_kv_heads = 2; /* 16 x 4 rows */
  KM_EXPECT(km_attn_shape_error(&bad) != NULL);
}

/* The stamped kernel exists for bf16 at head_dim 128 only: any other shape is refused before anything is
 * read. */
static void stamps_refused(int ctx) {
  km_attn_shape sh = {32, 8, 128, 16, 1, 0, KM_ATTN_FP8_E4M3, KM_ATTN_SCALE_TOKEN_HEAD};
  km_attn_plan pl;
  char err[200];
  const int32_t c[1] = {ctx};
  KM_EXPECT(km_attn_plan_make(&pl, &sh, 1, c, (ctx + 15) / 16, 0, 0, km_attn_target_warps(&sh, 0), err, sizeof err) == 0);
  KM_EXPECT_CUDA(km_attn_plan_upload(&pl, 0));
  km_attn_args a;
  memset(&a, 0, sizeof a);
  unsigned long long one[KM_ATTN_STAMPS];
  a.stamps = one;
  KM_EXPECT(km_attn_decode(&pl, &a, 0) == cudaErrorNotSupported);
  km_attn_plan_free(&pl);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  test_plan_errors();
  static const int c3[] = {1, 17, 300};
  static const int c3q[] = {4, 17, 300}; /* contexts >= q_len */
  static const int c_long[] = {5000, 1, 3, 16, 17, 31, 2, 64, 9};
  static const int c45[] = {45, 96};
  static const int c1[] = {1};
  static const int c700[] = {700, 333};
  static const int c_eq[] = {300, 290}; /* 19 pages each */
  const km_attn_kv B = KM_ATTN_BF16, E4 = KM_ATTN_FP8_E4M3, E5 = KM_ATTN_FP8_E5M2, U3 = KM_ATTN_U3, TQ = KM_ATTN_TQ3;
  const km_attn_scale TEN = KM_ATTN_SCALE_TENSOR, TOK = KM_ATTN_SCALE_TOKEN_HEAD;
  const tcase cases[] = {
      {"gqa 8:2 d128 bf16", 8, 2, 128, 16, 1, 0, B, TEN, 3, c3, 0, 0},
      {"gqa 8:2 d128 bf16 split 1", 8, 2, 128, 16, 1, 0, B, TEN, 3, c3, 0, 1},
      {"gqa 8:2 d128 bf16 split 3", 8, 2, 128, 16, 1, 0, B, TEN, 3, c3, 0, 3},
      {"context 1", 32, 8, 128, 16, 1, 0, B, TEN, 1, c1, 0, 0},
      {"bs32, contexts end inside blocks", 8, 2, 128, 32, 1, 0, B, TEN, 2, c45, 0, 2},
      {"bs128", 8, 2, 128, 128, 1, 0, B, TEN, 2, c700, 0, 0},
      {"one long, many short", 32, 8, 128, 16, 1, 0, B, TEN, 9, c_long, 0, 0},
      {"one long, many short, split 5", 32, 8, 128, 16, 1, 0, B, TEN, 9, c_long, 0, 5},
      {"window longer than the context", 8, 2, 128, 16, 1, 1000, B, TEN, 3, c3, 0, 0},
      {"window 40, q_len 3", 8, 2, 128, 16, 3, 40, B, TEN, 3, c3q, 0, 2},
      {"window 100, split", 32, 8, 128, 16, 1, 100, B, TEN, 2, c700, 0, 1},
      {"q_len 2", 32, 8, 128, 16, 2, 0, B, TEN, 3, c3q, 0, 0},
      {"q_len 4 (16 rows)", 32, 8, 128, 16, 4, 0, B, TEN, 2, c700, 0, 0},
      {"mha 4:4", 4, 4, 128, 16, 1, 0, B, TEN, 3, c3, 0, 0},
      {"mqa 32:1 (two m-tiles)", 32, 1, 128, 16, 1, 0, B, TEN, 2, c700, 0, 0},
      {"gqa 8:1 q_len 3 (24 rows)", 8, 1, 128, 16, 3, 0, B, TEN, 2, c700, 0, 0},
      {"d64", 8, 2, 64, 16, 1, 0, B, TEN, 3, c3, 0, 0},
      {"d64 mqa 16:1", 16, 1, 64, 16, 1, 0, B, TEN, 2, c700, 0, 0},
      {"d256", 4, 2, 256, 16, 1, 0, B, TEN, 3, c3, 0, 0},
      {"d256 16 rows", 16, 1, 256, 16, 1, 0, B, TEN, 2, c700, 0, 1},
      {"fp8 e4m3 per tensor", 8, 2, 128, 16, 1, 0, E4, TEN, 3, c3, 0, 0},
      {"fp8 e4m3 per token-head", 32, 8, 128, 16, 1, 0, E4, TOK, 9, c_long, 0, 3},
      {"fp8 e5m2 per tensor", 8, 2, 128, 16, 2, 0, E5, TEN, 3, c3q, 0, 0},
      {"fp8 e5m2 per token-head d64", 8, 2, 64, 16, 1, 0, E5, TOK, 2, c700, 0, 0},
      {"fp8 e4m3 per token-head d256", 4, 2, 256, 16, 1, 0, E4, TOK, 2, c700, 0, 0},
      {"fp8 e4m3 mqa", 32, 1, 128, 32, 1, 0, E4, TOK, 2, c700, 0, 0},
      {"pages: 5 selected", 32, 8, 128, 16, 1, 0, B, TEN, 2, c700, 5, 0},
      {"pages: 5 selected, split 2", 32, 8, 128, 16, 1, 0, B, TEN, 2, c700, 5, 2},
      {"pages: every page (budget >= context)", 8, 2, 128, 16, 1, 0, B, TEN, 2, c_eq, 1000, 0},
      {"pages: fp8", 8, 2, 128, 16, 1, 0, E4, TOK, 2, c700, 7, 0},
      {"3-bit gqa 8:2", 8, 2, 128, 16, 1, 0, U3, TEN, 3, c3, 0, 0},
      {"3-bit split 3, one long many short", 32, 8, 128, 16, 1, 0, U3, TEN, 9, c_long, 0, 3},
      {"3-bit bs32, q_len 3, window 40", 8, 2, 128, 32, 3, 40, U3, TEN, 3, c3q, 0, 2},
      {"3-bit mqa 32:1 (two m-tiles)", 32, 1, 128, 16, 1, 0, U3, TEN, 2, c700, 0, 0},
      {"3-bit q_len 4 (16 rows)", 32, 8, 128, 16, 4, 0, U3, TEN, 2, c700, 0, 0},
      {"3-bit pages", 8, 2, 128, 16, 1, 0, U3, TEN, 2, c700, 7, 0},
      {"TurboQuant gqa 8:2", 8, 2, 128, 16, 1, 0, TQ, TEN, 3, c3, 0, 0},
      {"TurboQuant split 3, one long many short", 32, 8, 128, 16, 1, 0, TQ, TEN, 9, c_long, 0, 3},
      {"TurboQuant bs32, q_len 3, window 40", 8, 2, 128, 32, 3, 40, TQ, TEN, 3, c3q, 0, 2},
      {"TurboQuant mqa 32:1 (two m-tiles)", 32, 1, 128, 16, 1, 0, TQ, TEN, 2, c700, 0, 0},
      {"TurboQuant q_len 4 (16 rows), split", 32, 8, 128, 16, 4, 0, TQ, TEN, 2, c700, 0, 2},
      {"TurboQuant pages", 8, 2, 128, 16, 1, 0, TQ, TEN, 2, c700, 7, 0},
  };
  /* every listed variant (depths, O^T accumulators, CTAs per SM; head_dim 128, <= 8 rows): a few cases each */
#define KM_TEST_VARIANT(pf, o, ct, uw, sl) {pf, 0, o, ct, uw, 0, sl},
  static const variant variants[] = {KM_ATTN_VARIANTS(KM_TEST_VARIANT)};
#undef KM_TEST_VARIANT
  const tcase depth_cases[] = {
      {"depth: gqa 8:2 bf16 split 3", 8, 2, 128, 16, 1, 0, B, TEN, 3, c3, 0, 3},
      {"depth: one long many short bf16", 32, 8, 128, 16, 1, 0, B, TEN, 9, c_long, 0, 0},
      {"depth: fp8 e4m3 per token-head", 32, 8, 128, 16, 1, 0, E4, TOK, 9, c_long, 0, 3},
      {"depth: 3-bit, window 40", 8, 2, 128, 32, 1, 40, U3, TEN, 3, c3, 0, 2},
      {"depth: 3-bit pages", 8, 2, 128, 16, 1, 0, U3, TEN, 2, c700, 7, 0},
      {"depth: 3-bit split 3, one long many short", 32, 8, 128, 16, 1, 0, U3, TEN, 9, c_long, 0, 3},
      {"depth: 3-bit q_len 2 (8 rows)", 8, 2, 128, 16, 2, 0, U3, TEN, 3, c3q, 0, 0},
      {"depth: TurboQuant split 3, one long many short", 32, 8, 128, 16, 1, 0, TQ, TEN, 9, c_long, 0, 3},
      {"depth: TurboQuant q_len 2 (8 rows), window 40", 8, 2, 128, 32, 2, 40, TQ, TEN, 3, c3q, 0, 2},
      {"depth: fp8 q_len 2 (8 rows)", 8, 2, 128, 16, 2, 0, E4, TOK, 2, c700, 0, 0},
      {"depth: fp8 bs32, window 40, q_len 2, contexts end inside tiles", 8, 2, 128, 32, 2, 40, E4, TOK, 3, c3q, 0,
       2},
      {"depth: fp8 pages", 8, 2, 128, 16, 1, 0, E4, TOK, 2, c700, 7, 0},
      {"depth: fp8 per tensor", 8, 2, 128, 16, 1, 0, E4, TEN, 3, c3, 0, 0},
  };
  for (size_t i = 0; i < sizeof depth_cases / sizeof depth_cases[0]; ++i) {
    const tcase *t = &depth_cases[i];
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; ++k)
      if (km_attn_unpack_exists(t->kv, variants[k].unpack, variants[k].scale_load) &&
          (!variants[k].scale_load || (t->kv == KM_ATTN_FP8_E4M3 && t->scale == KM_ATTN_SCALE_TOKEN_HEAD) ||
           t->kv == KM_ATTN_TQ3))
        run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, variants[k]);
  }
  /* each format's default kernel with tiles prefetched into L2 (the prefetch changes no value: the same checks),
   * over the depth cases (windows, pages, splits, per-tensor fp8) and chunks that cross the prefetcher's tile
   * lists (32 tiles each) or are shorter than its distance */
  static const int c_5000[] = {5000};
  const tcase l2_cases[] = {
      {"l2: bf16 one chunk of 313 tiles", 32, 8, 128, 16, 1, 0, B, TEN, 1, c_5000, 0, 313},
      {"l2: fp8 chunks of 70 tiles", 32, 8, 128, 16, 1, 0, E4, TOK, 1, c_5000, 0, 70},
      {"l2: 3-bit chunks of 37 tiles", 32, 8, 128, 16, 1, 0, U3, TEN, 1, c_5000, 0, 37},
      {"l2: TurboQuant chunks of 5 tiles", 32, 8, 128, 16, 1, 0, TQ, TEN, 1, c_5000, 0, 5},
      {"l2: bf16 pages", 8, 2, 128, 16, 1, 0, B, TEN, 2, c700, 7, 0},
  };
  /* ... and so with the lazy rescale (option 0), then 2 and 4 tiles prefetched into L2 */
  for (int ahead = 0; ahead <= 4; ahead += 2) {
    const variant v = {.l2_ahead = ahead, .lazy_rescale = ahead == 0};
    for (size_t i = 0; i < sizeof depth_cases / sizeof depth_cases[0]; ++i)
      run_case_with(&depth_cases[i], 0, KM_ATTN_PIPE_REGISTERS, v);
    for (size_t i = 0; i < sizeof l2_cases / sizeof l2_cases[0]; ++i)
      run_case_with(&l2_cases[i], 0, KM_ATTN_PIPE_REGISTERS, v);
  }
  /* the TMA pipeline (fp8, head_dim 128, <= 8 rows) with each ring: the fp8 depth and l2 cases (windows, pages,
   * splits, q_len 2, block size 32, per-tensor scales; chunks of 5 and 70 tiles, shorter and much longer than a
   * ring, so that every slot's mbarrier turns its phase many times), e5m2, context 1, contexts that end inside
   * a block, and the CTA merge */
  static const int c_5k[] = {5000}, c_tm[] = {700, 333, 130};
  const tcase tma_cases[] = {
      {"tma: fp8 e4m3 per token-head, one long many short, split 3", 32, 8, 128, 16, 1, 0, E4, TOK, 9, c_long, 0, 3},
      {"tma: fp8 q_len 2 (8 rows)", 8, 2, 128, 16, 2, 0, E4, TOK, 2, c700, 0, 0},
      {"tma: fp8 bs32, window 40, q_len 2, contexts end inside tiles", 8, 2, 128, 32, 2, 40, E4, TOK, 3, c3q, 0, 2},
      {"tma: fp8 pages", 8, 2, 128, 16, 1, 0, E4, TOK, 2, c700, 7, 0},
      {"tma: fp8 per tensor", 8, 2, 128, 16, 1, 0, E4, TEN, 3, c3, 0, 0},
      {"tma: fp8 chunks of 70 tiles", 32, 8, 128, 16, 1, 0, E4, TOK, 1, c_5k, 0, 70},
      {"tma: fp8 chunks of 5 tiles", 32, 8, 128, 16, 1, 0, E4, TOK, 1, c_5k, 0, 5},
      {"tma: fp8 one chunk of 313 tiles, bs128", 32, 8, 128, 128, 1, 0, E4, TOK, 1, c_5k, 0, 313},
      {"tma: e5m2 per token-head", 32, 8, 128, 16, 1, 0, E5, TOK, 9, c_long, 0, 0},
      {"tma: e5m2 per tensor, bs32", 8, 2, 128, 32, 2, 0, E5, TEN, 2, c45, 0, 2},
      {"tma: context 1", 32, 8, 128, 16, 1, 0, E4, TOK, 1, c1, 0, 0},
      {"tma: merge, fp8 e4m3 per token-head", 32, 8, 128, 16, 1, 0, E4, TOK, 3, c_tm, 0, 2, 1},
  };
  static const int tma_rings[] = {0, 3, 4, 6}; /* 0: the format's default (KM_ATTN_TMA_SLOTS 3, e5m2 4) */
  for (size_t r = 0; r < sizeof tma_rings / sizeof tma_rings[0]; ++r)
    for (size_t i = 0; i < sizeof tma_cases / sizeof tma_cases[0]; ++i)
      run_case_with(&tma_cases[i], 0, KM_ATTN_PIPE_TMA, (variant){.tma_slots = tma_rings[r]});
  run_case_with(&tma_cases[11], 0, KM_ATTN_PIPE_TMA, (variant){.combine = 1}); /* the separate combine pass */
  /* the per-token scales copied into the slots (per-token-head cases only) */
  for (size_t i = 0; i < sizeof tma_cases / sizeof tma_cases[0]; ++i)
    if (tma_cases[i].scale == KM_ATTN_SCALE_TOKEN_HEAD)
      run_case_with(&tma_cases[i], 0, KM_ATTN_PIPE_TMA, (variant){.tma_scales = 1});
  run_case_with(&tma_cases[11], 0, KM_ATTN_PIPE_TMA, (variant){.tma_scales = 1, .combine = 1});
  /* every lane arriving on the slots' mbarriers (every TMA case: any scales) */
  for (size_t i = 0; i < sizeof tma_cases / sizeof tma_cases[0]; ++i)
    run_case_with(&tma_cases[i], 0, KM_ATTN_PIPE_TMA, (variant){.tma_scales = 2});
  /* every lane arriving through cp.async.mbarrier.arrive.noinc, no copy of its own (every TMA case, 3 slots) */
  for (size_t i = 0; i < sizeof tma_cases / sizeof tma_cases[0]; ++i)
    run_case_with(&tma_cases[i], 0, KM_ATTN_PIPE_TMA, (variant){.tma_scales = 3});
  /* the maps' L2 promotion changes no value: a few TMA cases with each */
  static const int promos[] = {-1, 64, 256};
  for (size_t r = 0; r < sizeof promos / sizeof promos[0]; ++r)
    for (size_t i = 0; i < 3; ++i) run_case_with(&tma_cases[i], 0, KM_ATTN_PIPE_TMA, (variant){.tma_promo = promos[r]});
  /* merged by the last CTA of each (sequence, four KV heads): the merge cases with 4 or 8 KV heads (each format,
   * windows, pages, head_dim 64 and 256, q_len 2), the planner's chunks, sequences of one chunk beside split ones,
   * more partials than a round holds (16), a listed variant and the TMA pipeline; twice each (the counts go back
   * to zero: the checked step is the second) */
  static const int c_mh[] = {5000, 1, 40, 700}, c_mh3[] = {700, 333, 130}; /* 44, 21 and 9 tiles */
  const tcase mh_cases[] = {
      {"mh: gqa 32:8 bf16, chunks of 2 tiles (22 partials)", 32, 8, 128, 16, 1, 0, B, TEN, 3, c_mh3, 0, 2, 0},
      {"mh: gqa 32:8 bf16, the planner's chunks, one-chunk sequences beside split ones", 32, 8, 128, 16, 1, 0, B, TEN, 4,
       c_mh, 0, 0, 0},
      {"mh: gqa 32:8 bf16 q_len 2, window 200", 32, 8, 128, 16, 2, 200, B, TEN, 2, c700, 0, 3, 0},
      {"mh: pages", 32, 8, 128, 16, 1, 0, B, TEN, 2, c700, 7, 2, 0},
      {"mh: d64 16:4", 16, 4, 64, 16, 1, 0, B, TEN, 2, c700, 0, 2, 0},
      {"mh: d256 16:8", 16, 8, 256, 16, 1, 0, B, TEN, 2, c700, 0, 2, 0},
      {"mh: fp8 e4m3 per token-head", 32, 8, 128, 16, 1, 0, E4, TOK, 4, c_mh, 0, 5, 0},
      {"mh: fp8 e5m2 per tensor, bs32", 32, 8, 128, 32, 1, 0, E5, TEN, 2, c700, 0, 2, 0},
      {"mh: 3-bit", 32, 8, 128, 16, 1, 0, U3, TEN, 3, c_mh3, 0, 2, 0},
      {"mh: TurboQuant", 32, 8, 128, 16, 1, 0, TQ, TEN, 3, c_mh3, 0, 2, 0},
  };
  for (size_t i = 0; i < sizeof mh_cases / sizeof mh_cases[0]; ++i) {
    const tcase *t = &mh_cases[i];
    run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){.merge_heads = 1});
    if (t->d == 128 && t->kv != KM_ATTN_FP8_E5M2)
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){2, 0, 1, 3, 0, 0, .merge_heads = 1}); /* O^T depth 2, 3 CTAs */
    if (t->d == 128 && (t->kv == KM_ATTN_FP8_E4M3 || t->kv == KM_ATTN_FP8_E5M2))
      run_case_with(t, 0, KM_ATTN_PIPE_TMA, (variant){.merge_heads = 1});
  }
  /* paired tiles (odd tile counts end on a single tile; windows and pages mask inside a pair) */
  const tcase pair_cases[] = {
      {"pair: gqa 8:2 bf16 split 3", 8, 2, 128, 16, 1, 0, B, TEN, 3, c3, 0, 3},
      {"pair: one long many short bf16", 32, 8, 128, 16, 1, 0, B, TEN, 9, c_long, 0, 0},
      {"pair: bf16 window 40, q_len 2", 8, 2, 128, 16, 2, 40, B, TEN, 3, c3q, 0, 0},
      {"pair: fp8 e4m3 per token-head", 32, 8, 128, 16, 1, 0, E4, TOK, 9, c_long, 0, 3},
      {"pair: fp8 pages", 8, 2, 128, 16, 1, 0, E4, TOK, 2, c700, 7, 0},
      {"pair: 3-bit bs32 window 40", 8, 2, 128, 32, 1, 40, U3, TEN, 3, c3, 0, 2},
      {"pair: TurboQuant split 3", 32, 8, 128, 16, 1, 0, TQ, TEN, 9, c_long, 0, 3},
      {"pair: TurboQuant pages", 8, 2, 128, 16, 1, 0, TQ, TEN, 2, c700, 7, 0},
  };
  for (size_t i = 0; i < sizeof pair_cases / sizeof pair_cases[0]; ++i) run_case_pair(&pair_cases[i]);
  /* partials merged in the kernel (every sequence >= 4 chunks, <= 8 rows x 256 dims): each format, windows,
   * pages, q_len 2, head_dim 64 and 256, both pipelines, a listed variant, and the same cases through the
   * separate combine pass */
  static const int c_m[] = {700, 333, 130}; /* 44, 21 and 9 tiles */
  const tcase merge_cases[] = {
      {"merge: gqa 32:8 bf16", 32, 8, 128, 16, 1, 0, B, TEN, 3, c_m, 0, 2, 1},
      {"merge: gqa 8:2 bf16 q_len 2", 8, 2, 128, 16, 2, 0, B, TEN, 2, c700, 0, 2, 1},
      {"merge: window 200", 32, 8, 128, 16, 1, 200, B, TEN, 2, c700, 0, 2, 1},
      {"merge: pages, every page selected", 8, 2, 128, 16, 1, 0, B, TEN, 2, c_eq, 19, 2, 1},
      {"merge: d64", 8, 2, 64, 16, 1, 0, B, TEN, 2, c700, 0, 2, 1},
      {"merge: d256 16:8", 16, 8, 256, 16, 1, 0, B, TEN, 2, c700, 0, 2, 1},
      {"merge: fp8 e4m3 per token-head", 32, 8, 128, 16, 1, 0, E4, TOK, 3, c_m, 0, 2, 1},
      {"merge: fp8 e5m2 per tensor", 8, 2, 128, 32, 1, 0, E5, TEN, 2, c700, 0, 2, 1},
      {"merge: 3-bit", 32, 8, 128, 16, 1, 0, U3, TEN, 3, c_m, 0, 2, 1},
      {"merge: TurboQuant", 32, 8, 128, 16, 1, 0, TQ, TEN, 3, c_m, 0, 2, 1},
  };
  for (size_t i = 0; i < sizeof merge_cases / sizeof merge_cases[0]; ++i) {
    const tcase *t = &merge_cases[i];
    run_case_with(t, i == 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 0});
    run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 1});
    if (t->kv != KM_ATTN_U3 && t->kv != KM_ATTN_TQ3) run_case_with(t, 0, KM_ATTN_PIPE_SMEM_RING, (variant){0});
    if (t->d == 128 && t->kv != KM_ATTN_FP8_E5M2)
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){2, 0, 1, 3, 0, 0}); /* O^T depth 2, 3 CTAs */
    if (t->kv == KM_ATTN_FP8_E4M3 && t->scale == KM_ATTN_SCALE_TOKEN_HEAD)
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){1, 0, 1, 0, 0, 0, 1}); /* one scale load per lane */
  }
  /* the stamped kernel (bf16, head_dim 128, <= 8 rows): the same outputs, and stamps that add up; with the
   * CTA merge, the combine pass and without a split */
  static const int c_st[] = {5000}, c_one[] = {40};
  const tcase stamp_cases[] = {
      {"stamps: gqa 32:8 bf16 b1 x 5000 (merged)", 32, 8, 128, 16, 1, 0, B, TEN, 1, c_st, 0, 4, 1},
      {"stamps: gqa 32:8 bf16, 3 sequences", 32, 8, 128, 16, 1, 0, B, TEN, 3, c_m, 0, 0, 0},
      {"stamps: gqa 8:2 bf16, one chunk", 8, 2, 128, 16, 1, 0, B, TEN, 1, c_one, 0, 100, 0},
  };
  for (size_t i = 0; i < sizeof stamp_cases / sizeof stamp_cases[0]; ++i) {
    run_case_with(&stamp_cases[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 0, 0, 1});
    run_case_with(&stamp_cases[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 1, 0, 1});
    /* the last CTA's merge with 32 CTA partials in flight, stamped and not */
    run_case_with(&stamp_cases[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 0, 0, 1, 32});
    run_case_with(&stamp_cases[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 0, 0, 0, 32});
  }
  /* merge_inflight 32 over more CTA partials than it holds at once (b1 x 5000 in chunks of 2: 157 chunks
   * rounded to 160, 40 CTAs per KV head, two rounds) and over fewer (chunks of 8: 10) */
  {
    static const int c_w[] = {5000};
    const tcase wide[] = {{"merge 32: 40 CTA partials per KV head", 32, 8, 128, 16, 1, 0, B, TEN, 1, c_w, 0, 2, 1},
                          {"merge 32: 10 CTA partials per KV head", 32, 8, 128, 16, 1, 0, B, TEN, 1, c_w, 0, 8, 1}};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; ++i)
      run_case_with(&wide[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){0, 0, 0, 0, 0, 0, 0, 0, 32});
  }
  /* work stealing among a CTA's warps (steal 8 and 16) in plans that merge in the kernel: tails longer than the
   * chunks (every tile claimable), contexts that end inside tiles (the last tile's masking on a taken tile), a window
   * with q_len 2, the planner's chunks, selected pages; and a plan without the CTA merge, which runs without */
  {
    static const int c_ws[] = {5000, 3001};
    static const int c_ws1[] = {4096};
    const tcase ws[] = {
        {"steal: b1 x 4096 in chunks of 4 (every tile in a tail)", 32, 8, 128, 16, 1, 0, B, TEN, 1, c_ws1, 0, 4, 1},
        {"steal: contexts end inside tiles, chunks of 12", 32, 8, 128, 16, 1, 0, B, TEN, 2, c_ws, 0, 12, 1},
        {"steal: q_len 2, window 700", 8, 2, 128, 16, 2, 700, B, TEN, 2, c_ws, 0, 10, 1},
        {"steal: the planner's chunks", 32, 8, 128, 16, 1, 0, B, TEN, 2, c_ws, 0, 0, 0},
        {"steal: 40 selected pages in chunks of 2", 32, 8, 128, 16, 1, 0, B, TEN, 2, c_ws, 40, 2, 1},
        {"steal: one long, many short (no CTA merge)", 32, 8, 128, 16, 1, 0, B, TEN, 9, c_long, 0, 5, 0},
    };
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; ++i)
      for (int n = 8; n <= 16; n += 8) run_case_with(&ws[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){.steal = n});
  }
  /* head_dim 256 with <= 8 rows (O^T, bf16 tiles in halves of tokens, fp8 scales once per lane), by the default
   * kernel (Q in shared memory for bf16, in registers for fp8) and with Q where the default has not (q_smem):
   * contexts 1, 17 and 300 (a tile's second half past the context), the planner's split, one long and many short in chunks of 3, q_len 2 with a window (4 rows), selected pages, the
   * separate combine pass, fp8 e4m3 per token-head and e5m2 per tensor, block size 32 */
  {
    static const int c_hd2[] = {700, 333, 2049};
    const tcase hd[] = {
        {"d256 16:8, contexts 1, 17, 300", 16, 8, 256, 16, 1, 0, B, TEN, 3, c3, 0, 0},
        {"d256 16:8, split", 16, 8, 256, 16, 1, 0, B, TEN, 3, c_hd2, 0, 2},
        {"d256 4:2, one long many short in chunks of 3", 4, 2, 256, 16, 1, 0, B, TEN, 9, c_long, 0, 3},
        {"d256 16:8, q_len 2, window 100", 16, 8, 256, 16, 2, 100, B, TEN, 3, c_hd2, 0, 2},
        {"d256 16:8, 7 selected pages", 16, 8, 256, 16, 1, 0, B, TEN, 3, c_hd2, 7, 0},
        {"d256 8:1 (8 rows), block size 32", 8, 1, 256, 32, 1, 0, B, TEN, 3, c_hd2, 0, 0},
        {"d256 fp8 e4m3 per token-head, split", 16, 8, 256, 16, 1, 0, E4, TOK, 3, c_hd2, 0, 2},
        {"d256 fp8 e5m2 per tensor, contexts 1, 17, 300", 16, 8, 256, 16, 1, 0, E5, TEN, 3, c3, 0, 0},
    };
    for (size_t i = 0; i < sizeof hd / sizeof hd[0]; ++i) {
      run_case(&hd[i], 0, KM_ATTN_PIPE_REGISTERS);
      const int other = hd[i].kv == B ? KM_ATTN_Q_REGS : KM_ATTN_Q_SMEM;
      run_case_with(&hd[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){.q_smem = other});
      if (i == 1) run_case_with(&hd[i], 0, KM_ATTN_PIPE_REGISTERS, (variant){.q_smem = other, .combine = 1});
    }
  }
  /* the in-kernel merge's odd shapes, for programmatic dependent launches (pdl) and the merge by flags (merge_poll):
   * b2 in chunks of 4 (every KV head's last CTA merges 10 and 12 CTA partials), the planner's chunks, context 9 (its one
   * tile holds the step's own token: pdl's loads wait), q_len 2 with a window (8 rows), 40 selected pages (pdl: the
   * selection after the wait), one long many short */
  static const int c_od[] = {5000, 3001}, c_od1[] = {9};
  const tcase odd[] = {
      {"b2 in chunks of 4, CTA merge", 32, 8, 128, 16, 1, 0, B, TEN, 2, c_od, 0, 4, 1},
      {"the planner's chunks", 32, 8, 128, 16, 1, 0, B, TEN, 2, c_od, 0, 0, 0},
      {"context 9", 32, 8, 128, 16, 1, 0, B, TEN, 1, c_od1, 0, 0, 0},
      {"q_len 2, window 700 (8 rows)", 8, 2, 128, 16, 2, 700, B, TEN, 2, c_od, 0, 10, 1},
      {"40 selected pages in chunks of 2", 32, 8, 128, 16, 1, 0, B, TEN, 2, c_od, 40, 2, 1},
      {"one long, many short", 32, 8, 128, 16, 1, 0, B, TEN, 9, c_long, 0, 5, 0},
  };
  const size_t n_odd = sizeof odd / sizeof odd[0];
  /* pdl: each checked step right behind another step, by the CTA merge and by the combine pass (combine 1), and 16
   * sequences of 1..4096 (the planner's choice for a batch that fills the GPU) */
  {
    static const int c_pd16[] = {4096, 4000, 3000, 2048, 1000, 777, 512, 300, 200, 100, 64, 33, 17, 16, 2, 1};
    const tcase many = {"16 sequences of 1..4096", 32, 8, 128, 16, 1, 0, B, TEN, 16, c_pd16, 0, 0, 0};
    for (size_t i = 0; i <= n_odd; ++i) {
      const tcase *t = i < n_odd ? &odd[i] : &many;
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){.pdl = 1});
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){.pdl = 4});
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){.pdl = 4, .combine = 1});
    }
  }
  /* merge_poll: by flags where the grid is one wave, by the count where it is not (b64 x ~5000 in chunks of 4: 10,240
   * warps); the first case stamped too */
  {
    static int c_wide[64];
    for (int i = 0; i < 64; ++i) c_wide[i] = 5000 - 7 * i;
    const tcase wide = {"b64 in chunks of 4 (more than one wave: the count)", 32, 8, 128, 16, 1, 0, B, TEN, 64, c_wide,
                        0, 4, 1};
    const int want_poll[] = {1, -1, -1, 1, 1, -1, 0}; /* per case of odd, then wide; -1: whatever the plan chooses */
    km_attn_shape msh = {32, 8, 128, 16, 1, 0, B, TEN};
    msh.merge_poll = 1;
    const int warps = km_attn_target_warps(&msh, 0);
    for (size_t i = 0; i <= n_odd; ++i) {
      const tcase *t = i < n_odd ? &odd[i] : &wide;
      run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){.merge_poll = 1});
      if (i == 0) run_case_with(t, 0, KM_ATTN_PIPE_REGISTERS, (variant){.merge_poll = 1, .stamps = 1});
      if (want_poll[i] < 0) continue;
      km_attn_shape sh = msh;
      sh.num_heads = t->heads, sh.num_kv_heads = t->kv_heads, sh.q_len = t->q_len, sh.window = t->window;
      int mbps = 1;
      for (int b = 0; b < t->batch; ++b) mbps = (t->ctx[b] + 15) / 16 > mbps ? (t->ctx[b] + 15) / 16 : mbps;
      km_attn_plan pl;
      char err[256];
      KM_EXPECT(km_attn_plan_make(&pl, &sh, t->batch, t->ctx, mbps, t->sparse_pages, t->chunk_tiles, warps, err,
                                  sizeof err) == 0);
      KM_EXPECT_MSG(pl.poll == want_poll[i], "merge_poll, %s: poll %d, want %d (%d chunks, %d warps)", t->what, pl.poll,
                    want_poll[i], pl.num_chunks, warps);
      km_attn_plan_free(&pl);
    }
  }
  stamps_refused(c_st[0]);
  /* every case through both tile pipelines (the simple kernel checked once) */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    run_case(&cases[i], 1, KM_ATTN_PIPE_REGISTERS);
    if (cases[i].kv != KM_ATTN_U3 && cases[i].kv != KM_ATTN_TQ3)
      run_case(&cases[i], 0, KM_ATTN_PIPE_SMEM_RING); /* 3-bit: registers only */
  }
  return km_test_finish("gpu_attn");
}
