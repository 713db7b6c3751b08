/* GPU checks of the sparse (Quest) kernels against the CPU references: summaries and the append path,
 * scores, the radix top-k on hard rows (heavy ties, equal rows, odd page counts, k = 1 and k = pages,
 * 16,384 pages through opted-in shared memory), the CUB-sort baseline, the gather and the dense read;
 * the fused score + top-k (km_sparse_select and km_sparse_select_v's V2) bitwise equal to the two
 * launches and to the CPU's top-k, each launched twice on the same counters (each launch must leave them
 * zero);
 * and the trusted kernels micro/sparse_verify.c checks whole timed outputs with: equal to the CPU
 * references, and their checks failing when one element of an output is changed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "sparse_cub_sort.h"
#include "sparse_ref.h"
#include "sparse_topk.h"
#include "test_util.h"
#include "verify_sparse.h"

#define CHECK_CUDA(expr)                                                                              \
  do {                                                                                                \
    cudaError_t e_ = (expr);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_));   \
      km_test_failures++;                                                                             \
      goto done;                                                                                      \
    }                                                                                                 \
  } while (0)

static uint64_t lcg(uint64_t *st) {
  *st = *st * 6364136223846793005ull + 1442695040888963407ull;
  return *st >> 33;
}

static float gauss_ish(uint64_t *st) { return ((float)(lcg(st) & 0xffffff) / 16777216.0f - 0.5f) * 3.4f; }

static void *upload(const void *h, size_t bytes) {
  void *d = NULL;
  if (cudaMalloc(&d, bytes) != cudaSuccess) return NULL;
  if (cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    cudaFree(d);
    return NULL;
  }
  return d;
}

/* The trusted selection check (kernels/verify_sparse.h) of dsel against the top-k of dsc. */
static unsigned long long selection_diff(const float *dsc, const int32_t *dsel, int rows, int pages, int k,
                                         int ascending, km_diff *out) {
  uint8_t *chosen = NULL;
  km_diff *d = NULL;
  cudaError_t e = cudaMalloc((void **)&chosen, (size_t)rows * pages);
  if (e == cudaSuccess) e = cudaMalloc((void **)&d, sizeof *d);
  if (e == cudaSuccess) e = cudaMemset(d, 0, sizeof *d);
  if (e == cudaSuccess) e = km_verify_sparse_topk_chosen(dsc, chosen, rows, pages, k, 0);
  if (e == cudaSuccess) e = km_verify_sparse_selection(dsel, chosen, rows, pages, k, ascending, d, 0);
  if (e == cudaSuccess) e = cudaMemcpy(out, d, sizeof *out, cudaMemcpyDeviceToHost);
  cudaFree(chosen);
  cudaFree(d);
  if (e != cudaSuccess) fprintf(stderr, "selection check failed: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? out->count : ~0ull;
}

/* The scores check (kernels/verify_compare.h) of dsc against trusted scores and magnitudes. */
static unsigned long long scores_diff(const float *dsc, const float *dt, const float *dmag, size_t n, km_diff *out) {
  km_diff *d = NULL;
  cudaError_t e = cudaMalloc((void **)&d, sizeof *d);
  if (e == cudaSuccess) e = cudaMemset(d, 0, sizeof *d);
  if (e == cudaSuccess) e = km_verify_compare_close(dsc, dt, dmag, n, 1e-4f, d, 0);
  if (e == cudaSuccess) e = cudaMemcpy(out, d, sizeof *out, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return e == cudaSuccess ? out->count : ~0ull;
}

/* The trusted kernels on one batch, against the CPU references and the fast kernels' outputs (already
 * checked equal to the CPU), then each check must name the one element changed in a copy of an output. */
static void test_trusted(km_sparse_shape s, int k, const uint16_t *dk, const uint16_t *dv, const uint16_t *dq,
                         uint16_t *ds, float *dsc, int32_t *dsel, uint16_t *dko, uint16_t *dvo,
                         const uint16_t *hs, const uint16_t *wk, const uint16_t *wv, uint32_t want_xor) {
  const int pages = s.tokens / 16, rows = s.batch * s.kv_heads;
  const size_t nsum = (size_t)rows * pages * 2 * s.head_dim, nsc = (size_t)rows * pages;
  const size_t nout = (size_t)rows * k * 16 * s.head_dim, nkv = (size_t)s.batch * s.tokens * s.kv_heads * s.head_dim;
  uint16_t *ts = NULL, *tk = NULL, *tv = NULL, *hts = malloc(nsum * 2), *htk = malloc(nout * 2), *htv = malloc(nout * 2);
  float *tsc = NULL, *tmag = NULL;
  uint32_t *tx = NULL, hx = 0;
  km_diff d;
  KM_EXPECT(hts && htk && htv);
  CHECK_CUDA(cudaMalloc((void **)&ts, nsum * 2));
  CHECK_CUDA(cudaMalloc((void **)&tk, nout * 2));
  CHECK_CUDA(cudaMalloc((void **)&tv, nout * 2));
  CHECK_CUDA(cudaMalloc((void **)&tsc, nsc * 4));
  CHECK_CUDA(cudaMalloc((void **)&tmag, nsc * 4));
  CHECK_CUDA(cudaMalloc((void **)&tx, 4));
  CHECK_CUDA(km_verify_sparse_summarize(dk, ts, s, 0));
  CHECK_CUDA(km_verify_sparse_score(dq, ds, tsc, tmag, s, 0));
  CHECK_CUDA(km_verify_sparse_gather(dk, dv, dsel, k, tk, tv, s, 0));
  CHECK_CUDA(km_verify_xor(dk, dv, nkv * 2, tx, 0));
  CHECK_CUDA(cudaMemcpy(hts, ts, nsum * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(htk, tk, nout * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(htv, tv, nout * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&hx, tx, 4, cudaMemcpyDeviceToHost));
  KM_EXPECT_MSG(memcmp(hts, hs, nsum * 2) == 0, "trusted summaries differ from the CPU (d %d)", s.head_dim);
  KM_EXPECT_MSG(memcmp(htk, wk, nout * 2) == 0 && memcmp(htv, wv, nout * 2) == 0, "trusted gather differs from the CPU");
  KM_EXPECT_MSG(hx == want_xor, "trusted XOR 0x%08x, CPU 0x%08x", hx, want_xor);
  /* the fast kernels' outputs pass ... */
  KM_EXPECT(km_test_device_diff(ds, ts, nsum, 2, 1, 0, &d) == 0);
  KM_EXPECT(scores_diff(dsc, tsc, tmag, nsc, &d) == 0);
  KM_EXPECT(selection_diff(dsc, dsel, rows, pages, k, 1, &d) == 0);
  KM_EXPECT(km_test_device_diff(dko, tk, nout / 2, 4, 1, 0, &d) == 0);
  /* ... and fail on one changed element, which the check names */
  KM_EXPECT(km_test_corrupt_byte(ds, 2 * 77 + 1, (unsigned char)(hs[77] >> 8) ^ 0x40) == 0);
  KM_EXPECT(km_test_device_diff(ds, ts, nsum, 2, 1, 0, &d) == 1 && d.index[0] == 77);
  const float wrong = 1e6f;
  CHECK_CUDA(cudaMemcpy(dsc + 5, &wrong, 4, cudaMemcpyHostToDevice));
  KM_EXPECT(scores_diff(dsc, tsc, tmag, nsc, &d) == 1 && d.index[0] == 5);
  CHECK_CUDA(cudaMemcpy(dsc, tsc, nsc * 4, cudaMemcpyDeviceToDevice));
  int32_t slot;
  CHECK_CUDA(cudaMemcpy(&slot, dsel + 1, 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(dsel + 2, &slot, 4, cudaMemcpyHostToDevice)); /* slot 2 repeats slot 1's page */
  KM_EXPECT(selection_diff(dsc, dsel, rows, pages, k, 0, &d) == 1 && d.index[0] == 2);
  KM_EXPECT(km_test_corrupt_byte(dvo, nout * 2 - 1, (unsigned char)(wv[nout - 1] >> 8) ^ 1) == 0);
  KM_EXPECT(km_test_device_diff(dvo, tv, nout / 2, 4, 1, 0, &d) == 1 && d.index[0] == nout / 2 - 1);
done:
  cudaFree(ts), cudaFree(tk), cudaFree(tv), cudaFree(tsc), cudaFree(tmag), cudaFree(tx);
  free(hts), free(htk), free(htv);
}

/* Build, score, top-k and read one small batch; append equals a rebuild. */
static void test_stages(const km_sparse_plan *plan, int head_dim, int tokens) {
  km_sparse_shape s = {3, tokens, 2, 8, head_dim};
  const int pages = tokens / 16, k = pages / 3 + 1, rows = s.batch * s.kv_heads;
  const size_t nkv = (size_t)s.batch * tokens * s.kv_heads * head_dim, nsum = (size_t)rows * pages * 2 * head_dim;
  const size_t nq = (size_t)s.batch * s.q_heads * head_dim, nout = (size_t)rows * k * 16 * head_dim;
  uint16_t *hk = malloc(nkv * 2), *hv = malloc(nkv * 2), *hq = malloc(nq * 2), *hs = malloc(nsum * 2);
  uint16_t *gs = malloc(nsum * 2), *ko = malloc(nout * 2), *vo = malloc(nout * 2), *wk = malloc(nout * 2), *wv = malloc(nout * 2);
  float *gsc = malloc((size_t)rows * pages * 4), *wsc = malloc((size_t)rows * pages * 4), *mag = malloc((size_t)rows * pages * 4);
  int32_t *sel = malloc((size_t)rows * k * 4), *want = malloc((size_t)k * 4);
  uint16_t *dk = NULL, *dv = NULL, *dq = NULL, *ds = NULL, *dko = NULL, *dvo = NULL;
  float *dsc = NULL;
  int32_t *dsel = NULL, *dpos = NULL;
  uint64_t st = 99 + head_dim;
  for (size_t i = 0; i < nkv; ++i) hk[i] = km_float_to_bf16(gauss_ish(&st));
  for (size_t i = 0; i < nkv; ++i) hv[i] = (uint16_t)lcg(&st);
  for (size_t i = 0; i < nq; ++i) hq[i] = km_float_to_bf16(gauss_ish(&st));
  dk = upload(hk, nkv * 2), dv = upload(hv, nkv * 2), dq = upload(hq, nq * 2);
  CHECK_CUDA(cudaMalloc((void **)&ds, nsum * 2));
  CHECK_CUDA(cudaMalloc((void **)&dsc, (size_t)rows * pages * 4));
  CHECK_CUDA(cudaMalloc((void **)&dsel, (size_t)rows * k * 4));
  CHECK_CUDA(cudaMalloc((void **)&dko, nout * 2));
  CHECK_CUDA(cudaMalloc((void **)&dvo, nout * 2));
  CHECK_CUDA(cudaMalloc((void **)&dpos, 3 * 4));
  KM_EXPECT(dk && dv && dq);
  CHECK_CUDA(cudaMemset(ds, 0xff, nsum * 2));
  CHECK_CUDA(km_sparse_summarize(plan, dk, ds, s, 0));
  CHECK_CUDA(cudaMemcpy(gs, ds, nsum * 2, cudaMemcpyDeviceToHost));
  km_sparse_ref_summarize(hk, hs, s);
  KM_EXPECT(memcmp(gs, hs, nsum * 2) == 0);
  CHECK_CUDA(km_sparse_score(dq, ds, dsc, s, 0));
  CHECK_CUDA(km_sparse_topk(plan, dsc, dsel, rows, pages, k, 0));
  CHECK_CUDA(km_sparse_read(dk, dv, dsel, k, dko, dvo, s, 0));
  CHECK_CUDA(cudaMemcpy(gsc, dsc, (size_t)rows * pages * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(sel, dsel, (size_t)rows * k * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(ko, dko, nout * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(vo, dvo, nout * 2, cudaMemcpyDeviceToHost));
  km_sparse_ref_score(hq, hs, wsc, mag, s);
  int bad = 0;
  for (int i = 0; i < rows * pages; ++i) bad += !(fabsf(gsc[i] - wsc[i]) <= 1e-4f * mag[i]);
  KM_EXPECT(bad == 0);
  for (int r = 0; r < rows; ++r) {
    km_sparse_ref_topk_row(gsc + (size_t)r * pages, pages, k, want);
    KM_EXPECT(memcmp(want, sel + (size_t)r * k, (size_t)k * 4) == 0);
    const size_t per = (size_t)k * 16 * head_dim;
    km_sparse_ref_gather_row(hk, hv, sel + (size_t)r * k, k, r, s, wk + r * per, wv + r * per);
  }
  KM_EXPECT(memcmp(ko, wk, nout * 2) == 0 && memcmp(vo, wv, nout * 2) == 0);
  test_trusted(s, k, dk, dv, dq, ds, dsc, dsel, dko, dvo, hs, wk, wv, km_sparse_ref_xor(hk, hv, nkv * 2));
  CHECK_CUDA(km_sparse_topk(plan, dsc, dsel, rows, pages, k, 0)); /* the selection test_trusted changed */
  /* append: build from a copy whose token pos repeats its page's first token (a tie, so it changes no
   * bit), which is the page's state before pos arrived when pos is the page's last slot; appending the
   * real key must then give the full rebuild. A page start must give max = min = the key. */
  {
    const int32_t pos[3] = {tokens - 1, tokens - 16, tokens - 9};
    uint16_t *hk2 = malloc(nkv * 2);
    memcpy(hk2, hk, nkv * 2);
    for (int b = 0; b < 3; ++b)
      if (pos[b] % 16)
        for (int h = 0; h < s.kv_heads; ++h) /* token pos := token at the page start: neutral for min/max */
          memcpy(hk2 + (((size_t)b * tokens + pos[b]) * s.kv_heads + h) * head_dim,
                 hk2 + (((size_t)b * tokens + pos[b] / 16 * 16) * s.kv_heads + h) * head_dim, (size_t)head_dim * 2);
    uint16_t *dk2 = upload(hk2, nkv * 2);
    KM_EXPECT(dk2 != NULL);
    if (dk2) {
      CHECK_CUDA(km_sparse_summarize(plan, dk2, ds, s, 0));
      CHECK_CUDA(cudaMemcpy(dpos, pos, sizeof pos, cudaMemcpyHostToDevice));
      CHECK_CUDA(km_sparse_summary_append(plan, dk, ds, dpos, s, 0));
      CHECK_CUDA(cudaMemcpy(gs, ds, nsum * 2, cudaMemcpyDeviceToHost));
      for (int b = 0; b < 3; ++b)
        if (pos[b] % 16 == 15)
          for (int h = 0; h < s.kv_heads; ++h) {
            const size_t at = (((size_t)b * s.kv_heads + h) * pages + pos[b] / 16) * 2 * head_dim;
            KM_EXPECT(memcmp(gs + at, hs + at, (size_t)head_dim * 4) == 0);
          }
      for (int b = 0; b < 3; ++b)
        if (pos[b] % 16 == 0)
          for (int h = 0; h < s.kv_heads; ++h) {  /* a page start: max = min = the new key */
            const size_t at = (((size_t)b * s.kv_heads + h) * pages + pos[b] / 16) * 2 * head_dim;
            const uint16_t *key = hk + (((size_t)b * tokens + pos[b]) * s.kv_heads + h) * head_dim;
            KM_EXPECT(memcmp(gs + at, key, (size_t)head_dim * 2) == 0);
            KM_EXPECT(memcmp(gs + at + head_dim, key, (size_t)head_dim * 2) == 0);
          }
      cudaFree(dk2);
    }
    free(hk2);
  }
  /* dense read over both tensors */
  {
    uint32_t *dparts = NULL, *parts = malloc(65536 * 4);
    int used = 0;
    CHECK_CUDA(cudaMalloc((void **)&dparts, 65536 * 4));
    CHECK_CUDA(km_sparse_dense_read(plan, dk, dv, nkv * 2, dparts, 65536, &used, 0));
    CHECK_CUDA(cudaMemcpy(parts, dparts, (size_t)used * 4, cudaMemcpyDeviceToHost));
    uint32_t x = 0;
    for (int i = 0; i < used; ++i) x ^= parts[i];
    KM_EXPECT(used > 0 && x == km_sparse_ref_xor(hk, hv, nkv * 2));
    cudaFree(dparts);
    free(parts);
  }
done:
  cudaFree(dk), cudaFree(dv), cudaFree(dq), cudaFree(ds), cudaFree(dsc), cudaFree(dsel), cudaFree(dko), cudaFree(dvo);
  cudaFree(dpos);
  free(hk), free(hv), free(hq), free(hs), free(gs), free(ko), free(vo), free(wk), free(wv), free(gsc), free(wsc);
  free(mag), free(sel), free(want);
}

/* Top-k rows with `levels` distinct values (1: all equal), checked against the CPU rule; optionally CUB. */
static void test_topk(const km_sparse_plan *plan, int rows, int pages, int k, int levels, int with_cub) {
  const size_t n = (size_t)rows * pages;
  float *h = malloc(n * 4), *dsc = NULL;
  int32_t *sel = malloc((size_t)rows * k * 4), *want = malloc((size_t)k * 4), *dsel = NULL;
  void *scratch = NULL;
  uint64_t st = (uint64_t)pages * 31 + k;
  for (size_t i = 0; i < n; ++i) h[i] = levels ? (float)(lcg(&st) % levels) - levels / 2 : gauss_ish(&st);
  if (pages > 2) h[1] = -0.0f, h[2] = 0.0f;
  dsc = upload(h, n * 4);
  KM_EXPECT(dsc != NULL);
  CHECK_CUDA(cudaMalloc((void **)&dsel, (size_t)rows * k * 4));
  CHECK_CUDA(cudaMemset(dsel, 0xff, (size_t)rows * k * 4));
  CHECK_CUDA(km_sparse_topk(plan, dsc, dsel, rows, pages, k, 0));
  CHECK_CUDA(cudaMemcpy(sel, dsel, (size_t)rows * k * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int r = 0; r < rows; ++r) {
    km_sparse_ref_topk_row(h + (size_t)r * pages, pages, k, want);
    bad += memcmp(want, sel + (size_t)r * k, (size_t)k * 4) != 0;
  }
  if (bad) fprintf(stderr, "topk rows %d pages %d k %d levels %d: %d rows differ\n", rows, pages, k, levels, bad);
  KM_EXPECT(bad == 0);
  km_diff d;
  KM_EXPECT_MSG(selection_diff(dsc, dsel, rows, pages, k, 1, &d) == 0, "trusted rank rule disagrees: rows %d pages %d k %d levels %d",
                rows, pages, k, levels);
  if (with_cub) {  /* distinct random scores only: the baseline treats -0 and +0 alike */
    size_t bytes = 0;
    CHECK_CUDA(km_cub_topk_scratch_bytes(rows, pages, &bytes));
    CHECK_CUDA(cudaMalloc(&scratch, bytes));
    CHECK_CUDA(km_cub_topk_prepare(scratch, bytes, rows, pages, 0));
    CHECK_CUDA(km_cub_topk(dsc, dsel, rows, pages, k, scratch, bytes, 0));
    CHECK_CUDA(cudaMemcpy(sel, dsel, (size_t)rows * k * 4, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int r = 0; r < rows; ++r) {
      int32_t *g = sel + (size_t)r * k;
      for (int i = 1; i < k; ++i)
        for (int j = i; j > 0 && g[j - 1] > g[j]; --j) {
          int32_t t = g[j];
          g[j] = g[j - 1], g[j - 1] = t;
        }
      km_sparse_ref_topk_row(h + (size_t)r * pages, pages, k, want);
      bad += memcmp(want, g, (size_t)k * 4) != 0;
    }
    KM_EXPECT(bad == 0);
    CHECK_CUDA(km_cub_topk(dsc, dsel, rows, pages, k, scratch, bytes, 0));
    KM_EXPECT(selection_diff(dsc, dsel, rows, pages, k, 0, &d) == 0);
  }
done:
  cudaFree(dsc), cudaFree(dsel), cudaFree(scratch);
  free(h), free(sel), free(want);
}

/* Fused select on one shape: summaries random bf16 (levels 0), all zero (levels 1: every score +0 or -0,
 * so the lowest pages) or from a few values (heavy ties). Checks scores and selection bitwise against
 * km_sparse_score + km_sparse_topk, the scores against the CPU reference (tolerance), every row's
 * selection against the CPU top-k of the GPU's scores, and the counters left at zero; twice per variant
 * (V1, the default km_sparse_select, then V2 through km_sparse_select_v), each launch on poisoned outputs
 * and the counters the one before left. */
static void test_select(const km_sparse_plan *plan, km_sparse_shape s, int k, int levels) {
  const int pages = (s.tokens + 15) / 16, rows = s.batch * s.kv_heads;
  const size_t nsum = (size_t)rows * pages * 2 * s.head_dim, nq = (size_t)s.batch * s.q_heads * s.head_dim;
  const size_t nsc = (size_t)rows * pages, nsel = (size_t)rows * k;
  uint16_t *hs = malloc(nsum * 2), *hq = malloc(nq * 2);
  float *sc_two = malloc(nsc * 4), *sc = malloc(nsc * 4), *want_sc = malloc(nsc * 4), *mag = malloc(nsc * 4);
  int32_t *sel_two = malloc(nsel * 4), *sel = malloc(nsel * 4), *want = malloc((size_t)k * 4);
  uint32_t *cnt = malloc((size_t)rows * 4);
  uint16_t *ds = NULL, *dq = NULL;
  float *dsc_two = NULL, *dsc = NULL;
  int32_t *dsel_two = NULL, *dsel = NULL;
  uint32_t *dcnt = NULL;
  uint64_t st = (uint64_t)pages * 131 + (uint64_t)k * 7 + (uint64_t)levels;
  KM_EXPECT(hs && hq && sc_two && sc && want_sc && mag && sel_two && sel && want && cnt);
  for (size_t i = 0; i < nsum; ++i)
    hs[i] = levels == 1 ? 0 : km_float_to_bf16(levels ? (float)(lcg(&st) % levels) - levels / 2 : gauss_ish(&st));
  for (size_t i = 0; i < nq; ++i) hq[i] = km_float_to_bf16(levels > 1 ? (float)(lcg(&st) % 3) - 1.0f : gauss_ish(&st));
  ds = upload(hs, nsum * 2), dq = upload(hq, nq * 2);
  KM_EXPECT(ds && dq);
  CHECK_CUDA(cudaMalloc((void **)&dsc_two, nsc * 4));
  CHECK_CUDA(cudaMalloc((void **)&dsc, nsc * 4));
  CHECK_CUDA(cudaMalloc((void **)&dsel_two, nsel * 4));
  CHECK_CUDA(cudaMalloc((void **)&dsel, nsel * 4));
  CHECK_CUDA(cudaMalloc((void **)&dcnt, (size_t)rows * 4));
  CHECK_CUDA(cudaMemset(dcnt, 0, (size_t)rows * 4));
  CHECK_CUDA(km_sparse_score(dq, ds, dsc_two, s, 0));
  CHECK_CUDA(km_sparse_topk(plan, dsc_two, dsel_two, rows, pages, k, 0));
  CHECK_CUDA(cudaMemcpy(sc_two, dsc_two, nsc * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(sel_two, dsel_two, nsel * 4, cudaMemcpyDeviceToHost));
  km_sparse_ref_score(hq, hs, want_sc, mag, s);
  for (int run = 0; run < 4; ++run) {
    const int v2 = run >= 2;
    CHECK_CUDA(cudaMemset(dsc, 0xff, nsc * 4));
    CHECK_CUDA(cudaMemset(dsel, 0xff, nsel * 4));
    if (v2) CHECK_CUDA(km_sparse_select_v(plan, dq, ds, dsc, dcnt, dsel, s, k, KM_SPARSE_SELECT_V2, 0));
    else CHECK_CUDA(km_sparse_select(plan, dq, ds, dsc, dcnt, dsel, s, k, 0));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(sc, dsc, nsc * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(sel, dsel, nsel * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(cnt, dcnt, (size_t)rows * 4, cudaMemcpyDeviceToHost));
    KM_EXPECT_MSG(memcmp(sc, sc_two, nsc * 4) == 0,
                  "select v%d b%d t%d d%d g%d k%d run %d: scores differ from km_sparse_score", 1 + v2, s.batch,
                  s.tokens, s.head_dim, s.q_heads / s.kv_heads, k, run);
    KM_EXPECT_MSG(memcmp(sel, sel_two, nsel * 4) == 0,
                  "select v%d b%d t%d d%d k%d run %d: selection differs from km_sparse_topk", 1 + v2, s.batch,
                  s.tokens, s.head_dim, k, run);
    int bad_sc = 0, bad_sel = 0, left = 0;
    for (size_t i = 0; i < nsc; ++i) bad_sc += !(fabsf(sc[i] - want_sc[i]) <= 1e-4f * mag[i]);
    for (int r = 0; r < rows; ++r) {
      KM_EXPECT(km_sparse_ref_topk_row(sc + (size_t)r * pages, pages, k, want) == 0);
      bad_sel += memcmp(want, sel + (size_t)r * k, (size_t)k * 4) != 0;
      left += cnt[r] != 0;
    }
    KM_EXPECT_MSG(bad_sc == 0 && bad_sel == 0 && left == 0,
                  "select v%d b%d t%d d%d k%d levels %d run %d: %d scores off the CPU, %d rows off the CPU top-k, %d "
                  "counters not zero", 1 + v2, s.batch, s.tokens, s.head_dim, k, levels, run, bad_sc, bad_sel, left);
  }
  km_diff d;
  KM_EXPECT(selection_diff(dsc, dsel, rows, pages, k, 1, &d) == 0);
done:
  cudaFree(ds), cudaFree(dq), cudaFree(dsc_two), cudaFree(dsc), cudaFree(dsel_two), cudaFree(dsel), cudaFree(dcnt);
  free(hs), free(hq), free(sc_two), free(sc), free(want_sc), free(mag), free(sel_two), free(sel), free(want), free(cnt);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  km_sparse_plan plan;
  if (km_sparse_plan_make(&plan) != cudaSuccess) {
    fprintf(stderr, "km_sparse_plan_make failed\n");
    return 1;
  }
  KM_EXPECT(plan.sms > 0 && plan.dense_grid >= plan.sms && plan.topk_max_pages >= 16384);
  test_stages(&plan, 128, 1024);
  test_stages(&plan, 64, 512);
  test_stages(&plan, 256, 256);
  test_topk(&plan, 64, 8192, 128, 0, 1);
  test_topk(&plan, 64, 8192, 128, 7, 0);     /* heavy ties */
  test_topk(&plan, 8, 8192, 300, 1, 0);      /* all equal: the lowest pages */
  test_topk(&plan, 16, 8192, 4000, 3, 0);    /* ~2,700 equal keys in the boundary bin: the full-row passes */
  test_topk(&plan, 16, 8192, 2, 2, 0);       /* ~4,100 ties at the top, k-1 = 1 of them */
  test_topk(&plan, 16, 8192, 512, 0, 0);     /* random, a wider boundary bin */
  test_topk(&plan, 16, 1003, 17, 0, 0);      /* pages % 4 != 0: scalar loads */
  test_topk(&plan, 16, 1003, 1, 0, 0);       /* the last page alone */
  test_topk(&plan, 16, 1000, 1000, 3, 0);    /* everything */
  test_topk(&plan, 4, 16384, 128, 50, 0);    /* 64 KB of keys: opted-in shared memory */
  test_topk(&plan, 33, 7, 3, 2, 0);
  KM_EXPECT(km_sparse_topk(&plan, NULL, NULL, 1, 8, 9, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_sparse_topk(&plan, NULL, NULL, 1, plan.topk_max_pages + 1, 1, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_sparse_topk(NULL, NULL, NULL, 1, 8, 1, 0) == cudaErrorInvalidValue);
  KM_EXPECT(plan.select_max_pages >= 16384);
  test_select(&plan, (km_sparse_shape){1, 32768, 8, 32, 128}, 128, 0);  /* the Quest b1 x 32K step: 8 rows */
  test_select(&plan, (km_sparse_shape){16, 32768, 8, 32, 128}, 128, 0); /* b16: 128 rows */
  test_select(&plan, (km_sparse_shape){1, 16 * 1003, 8, 32, 128}, 17, 0); /* pages % 128 != 0, % 4 != 0 */
  test_select(&plan, (km_sparse_shape){2, 16 * 1000 + 5, 4, 4, 64}, 1, 0); /* group 1, partial page, k = 1 */
  test_select(&plan, (km_sparse_shape){1, 16 * 300, 2, 16, 256}, 300, 0);  /* group 8, d 256, k = pages */
  test_select(&plan, (km_sparse_shape){3, 4096, 2, 4, 128}, 50, 1);       /* every score zero: the lowest pages */
  test_select(&plan, (km_sparse_shape){2, 8192, 4, 8, 64}, 128, 3);       /* heavy ties, group 2 */
  test_select(&plan, (km_sparse_shape){1, 16 * 16384, 2, 8, 128}, 128, 0); /* 64 KB of keys: opted-in shared memory */
  test_select(&plan, (km_sparse_shape){1, 16 * 5, 1, 1, 128}, 2, 0);       /* one CTA: it is its own last arriver */
  /* V2's register tail at 16 keys a thread (2,048 < pages <= 4,096) and at its edges; the shapes above run
   * it at 8 (pages <= 2,048), and at 16,384 pages V2 falls back to V1. */
  test_select(&plan, (km_sparse_shape){1, 16 * 4096, 8, 32, 128}, 128, 0); /* 4,096 pages: every key slot used */
  test_select(&plan, (km_sparse_shape){2, 16 * 3001, 2, 4, 64}, 300, 0);   /* odd pages: scalar loads, KPT 16 */
  test_select(&plan, (km_sparse_shape){1, 16 * 2049, 4, 16, 128}, 2049, 3); /* k = pages, heavy ties, KPT 16 */
  test_select(&plan, (km_sparse_shape){1, 16 * 4097, 2, 8, 128}, 64, 0);   /* one past the tail: V2 runs V1 */
  test_select(&plan, (km_sparse_shape){4, 16 * 2048, 8, 32, 128}, 1, 1);   /* k = 1 on all-zero scores */
  {
    const km_sparse_shape s = {1, 4096, 2, 4, 128};
    uint32_t c = 0;
    KM_EXPECT(km_sparse_select(&plan, NULL, NULL, NULL, NULL, NULL, s, 16, 0) == cudaErrorInvalidValue); /* no counters */
    KM_EXPECT(km_sparse_select(&plan, NULL, NULL, NULL, &c, NULL, s, 257, 0) == cudaErrorInvalidValue);  /* k > pages */
    KM_EXPECT(km_sparse_select(&plan, NULL, NULL, NULL, &c, NULL, s, 0, 0) == cudaErrorInvalidValue);
    const km_sparse_shape g3 = {1, 4096, 2, 6, 128};
    KM_EXPECT(km_sparse_select(&plan, NULL, NULL, NULL, &c, NULL, g3, 16, 0) == cudaErrorInvalidValue);  /* group 3 */
    const km_sparse_shape big = {1, 16 * (plan.select_max_pages + 1), 1, 1, 128};
    KM_EXPECT(km_sparse_select(&plan, NULL, NULL, NULL, &c, NULL, big, 1, 0) == cudaErrorInvalidValue);
    KM_EXPECT(km_sparse_select(NULL, NULL, NULL, NULL, &c, NULL, s, 1, 0) == cudaErrorInvalidValue);
    KM_EXPECT(km_sparse_select_v(&plan, NULL, NULL, NULL, &c, NULL, s, 16, (km_sparse_select_variant)2, 0) ==
              cudaErrorInvalidValue); /* no such variant */
    KM_EXPECT(km_sparse_select_v(&plan, NULL, NULL, NULL, NULL, NULL, s, 16, KM_SPARSE_SELECT_V2, 0) ==
              cudaErrorInvalidValue);
    KM_EXPECT(km_sparse_select_v(&plan, NULL, NULL, NULL, &c, NULL, s, 257, KM_SPARSE_SELECT_V2, 0) ==
              cudaErrorInvalidValue);
    KM_EXPECT(km_sparse_select_v(&plan, NULL, NULL, NULL, &c, NULL, g3, 16, KM_SPARSE_SELECT_V2, 0) ==
              cudaErrorInvalidValue);
    KM_EXPECT(km_sparse_select_v(&plan, NULL, NULL, NULL, &c, NULL, big, 1, KM_SPARSE_SELECT_V2, 0) ==
              cudaErrorInvalidValue);
  }
  return km_test_finish("gpu_sparse");
}
