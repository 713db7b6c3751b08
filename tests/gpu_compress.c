/* GPU test of kernels/compress_pool.cu against micro/compress_ref.c, bit for bit over the whole (poisoned)
 * compressed pools: ratios 2, 4, 8; rows of 8 elements (one vector) to 1,024 (8 heads x 128); token counts
 * with a tail shorter than the ratio; block sizes 1, 5 and 16 through random tables with spare blocks; one
 * shape of many CTAs with a partial last one. Guards untouched; bad shapes refused. Exit 77 without a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "compress_ref.h"
#include "paged_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

#define GUARD 256

static void test_case(int batch, int tokens, int heads, int head_dim, int ratio, int block, uint64_t seed) {
  const int entries = tokens / ratio, bps = (entries + block - 1) / block;
  km_compress_shape s = {batch, tokens, heads, head_dim, ratio, block, bps};
  KM_EXPECT(km_compress_shape_error(&s) == NULL);
  const size_t row = (size_t)heads * head_dim, n_in = (size_t)batch * tokens * row;
  const size_t blocks = (size_t)batch * bps + 2, n_pool = blocks * block * row;
  uint64_t st = seed;
  uint16_t *k = malloc(n_in * 2), *v = malloc(n_in * 2), *gk = malloc(n_pool * 2 + GUARD), *gv = malloc(n_pool * 2 + GUARD);
  uint16_t *wk = malloc(n_pool * 2), *wv = malloc(n_pool * 2);
  int32_t *table = malloc((size_t)batch * bps * 4);
  if (!k || !v || !gk || !gv || !wk || !wv || !table) exit(1);
  for (size_t i = 0; i < n_in; ++i) k[i] = km_float_to_bf16(km_test_rng_normal(&st));
  for (size_t i = 0; i < n_in; ++i) v[i] = km_float_to_bf16(3.0f * km_test_rng_normal(&st));
  KM_EXPECT(km_paged_table_random(table, (size_t)batch * bps, (int64_t)blocks, km_test_rng_next(&st)) == 0);
  uint16_t *dk = km_test_dev_upload(k, n_in * 2), *dv = km_test_dev_upload(v, n_in * 2);
  int32_t *dt = km_test_dev_upload(table, (size_t)batch * bps * 4);
  uint16_t *dkp = km_test_dev_filled(n_pool * 2 + GUARD, 0xff), *dvp = km_test_dev_filled(n_pool * 2 + GUARD, 0xff);
  if (!dk || !dv || !dt || !dkp || !dvp) exit(1);
  cudaError_t e = km_compress_mean(&s, dk, dv, dkp, dvp, dt, 0);
  KM_EXPECT_MSG(e == cudaSuccess, "launch: %s", cudaGetErrorString(e));
  if (km_test_download(gk, dkp, n_pool * 2 + GUARD) || km_test_download(gv, dvp, n_pool * 2 + GUARD)) {
    ++km_test_failures;
    return;
  }
  memset(wk, 0xff, n_pool * 2);
  memset(wv, 0xff, n_pool * 2);
  km_compress_ref_mean(&s, k, v, wk, wv, table);
  size_t bad = 0;
  for (size_t i = 0; i < n_pool; ++i) {
    if ((gk[i] != wk[i] || gv[i] != wv[i]) && bad++ < 5)
      fprintf(stderr, "pool element %zu: K 0x%04x V 0x%04x, want 0x%04x 0x%04x\n", i, gk[i], gv[i], wk[i], wv[i]);
  }
  for (size_t i = n_pool; i < n_pool + GUARD / 2; ++i) bad += gk[i] != 0xffff || gv[i] != 0xffff; /* past the pool */
  KM_EXPECT_MSG(bad == 0, "b%d tok%d %dx%d c%d block %d: %zu elements differ", batch, tokens, heads, head_dim, ratio,
                block, bad);
  km_compress_shape bad_s = s;
  bad_s.ratio = 3;
  KM_EXPECT(km_compress_mean(&bad_s, dk, dv, dkp, dvp, dt, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_compress_mean(&s, dk + 1, dv, dkp, dvp, dt, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_compress_mean(&s, dk, dv, dkp, dvp + 4, dt, 0) == cudaErrorInvalidValue);
  cudaFree(dk), cudaFree(dv), cudaFree(dt), cudaFree(dkp), cudaFree(dvp);
  free(k), free(v), free(gk), free(gv), free(wk), free(wv), free(table);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  uint64_t seed = 5;
  for (int ratio = 2; ratio <= 8; ratio *= 2) {
    test_case(3, 37, 1, 8, ratio, 5, seed++);     /* one vector per row, a tail, block 5 */
    test_case(2, 64, 8, 128, ratio, 16, seed++);  /* Qwen3-8B's row */
    test_case(2, 19, 2, 64, ratio, 1, seed++);    /* block 1 */
    test_case(5, 1003, 8, 128, ratio, 16, seed++); /* many CTAs, the last partial */
  }
  return km_test_finish("gpu_compress");
}
