/* GPU test of the decode pipeline's tensor-map copy alone (kernels/bulk_tensor_probe.cu: load_box3 into an
 * mbarrier-counted ring, the 128-byte swizzle): every box of random rows lands in shared memory where the decode
 * kernel reads it (chunk j of row r at chunk j ^ (r % 8)), through rings of 1 to 4 slots and over one box to 256,
 * in one warp, in four warps of one CTA each with its ring, and in grids of such CTAs as large as the decode
 * kernel's; the output poisoned first and guarded past its end; bad arguments are refused. Skipped (exit 77)
 * without a device, and reported as such where the code that runs is not sm_90's. Run under
 * `compute-sanitizer --tool synccheck` it is the smallest case of the TMA kernels' synccheck failure
 * (reports/attn-notes.md); `gpu_bulk_tensor CTAS WARPS` runs one grid alone (64 rows through 3 slots per warp), so
 * that the tool can be asked about each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bulk_tensor_probe.h"
#include "test_util.h"

enum { ROW = KM_BULK_TENSOR_ROW_BYTES, BOX = KM_BULK_TENSOR_BOX_ROWS };

/* Every byte where the swizzle puts it; *ran counts the runs (none where the path is not supported here). A failed
 * CUDA call counts a failure and returns (its buffers are left to the process's end). */
static void test_probe(int rows, int slots, int ctas, int warps, uint64_t seed, int *ran) {
  const size_t bytes = (size_t)rows * ROW, out = bytes * ctas * warps;
  uint8_t *src = malloc(bytes), *got = malloc(out + KM_TEST_GUARD_BYTES);
  KM_EXPECT(src && got);
  if (!src || !got) exit(1);
  uint64_t st = seed;
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t w = km_test_rng_next(&st);
    memcpy(src + i, &w, 8);
  }
  void *d_src = km_test_dev_upload(src, bytes), *d_dst = km_test_dev_guarded(NULL, out);
  KM_EXPECT(d_src && d_dst);
  if (!d_src || !d_dst) exit(1);
  const cudaError_t e = km_bulk_tensor_probe(d_src, rows, slots, ctas, warps, d_dst, 0);
  if (e == cudaErrorNotSupported) {
    printf("bulk tensor probe: not supported here (the code that runs is not sm_90's, or no tensor-map encoder)\n");
  } else {
    KM_EXPECT_CUDA(e);
    KM_EXPECT_CUDA(cudaDeviceSynchronize());
    if (km_test_download(got, d_dst, out + KM_TEST_GUARD_BYTES) == 0) {
      size_t bad = 0;
      for (int w = 0; w < ctas * warps; ++w) /* each warp's copy of every row */
        for (int r = 0; r < rows; ++r) /* row r is row r % BOX of box r / BOX, whose image is BOX rows long */
          for (int j = 0; j < ROW / 16; ++j)
            bad += memcmp(got + bytes * w + (size_t)r * ROW + (size_t)((j ^ (r % BOX % 8)) * 16),
                          src + (size_t)r * ROW + j * 16, 16) != 0;
      KM_EXPECT_MSG(bad == 0, "%d rows through %d slots, %d CTAs of %d warps: %zu of %zu chunks misplaced", rows,
                    slots, ctas, warps, bad, (size_t)ctas * warps * rows * (ROW / 16));
      KM_EXPECT_MSG(km_test_guard_intact(got, out), "%d rows through %d slots, %d CTAs of %d warps: wrote past the output",
                    rows, slots, ctas, warps);
    } else {
      km_test_failures++;
    }
    ++*ran;
  }
  cudaFree(d_src), cudaFree(d_dst);
  free(src), free(got);
}

/* Every ring depth over one box to 256 in one warp, CTAs of four warps in grids up to the decode kernel's, and the
 * bad arguments. */
static void test_all(int *ran) {
  static const int rows[] = {BOX, 3 * BOX, 256 * BOX};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i)
    for (int slots = 1; slots <= KM_BULK_TENSOR_MAX_SLOTS; ++slots)
      test_probe(rows[i], slots, 1, 1, 0x9e3779b97f4a7c15ull * (i + 1) + (uint64_t)slots, ran);
  /* four warps of one CTA, each with its ring, and grids of such CTAs (the decode kernel's TMA step at b16 x 32K
   * runs 256 of them, 4 per SM; 528 fill 132 SMs 4 deep) */
  static const int grids[] = {1, 2, 264, 528};
  for (size_t i = 0; i < sizeof grids / sizeof grids[0]; ++i)
    for (int slots = 3; slots <= KM_BULK_TENSOR_MAX_SLOTS; ++slots)
      test_probe(4 * BOX, slots, grids[i], KM_BULK_TENSOR_MAX_WARPS, 0x51af7c3d2e9b8a61ull * (i + 1) + (uint64_t)slots,
                 ran);
  /* bad arguments: refused before anything runs */
  uint8_t *d = km_test_dev_filled(4 * BOX * ROW, 0);
  KM_EXPECT(d != NULL);
  KM_EXPECT(km_bulk_tensor_probe(d, 0, 1, 1, 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX + 1, 1, 1, 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX, 0, 1, 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX, KM_BULK_TENSOR_MAX_SLOTS + 1, 1, 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(NULL, BOX, 1, 1, 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX, 1, 0, 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX, 1, 1, 0, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX, 1, 1, KM_BULK_TENSOR_MAX_WARPS + 1, d, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_bulk_tensor_probe(d, BOX, 1, KM_BULK_TENSOR_MAX_CTAS + 1, 1, d, 0) == cudaErrorInvalidValue);
  cudaFree(d);
}

int main(int argc, char **argv) {
  int one_ctas = 0, one_warps = 0;
  if (argc == 3) {
    one_ctas = atoi(argv[1]), one_warps = atoi(argv[2]);
    if (one_ctas < 1 || one_ctas > KM_BULK_TENSOR_MAX_CTAS || one_warps < 1 || one_warps > KM_BULK_TENSOR_MAX_WARPS) {
      fprintf(stderr, "gpu_bulk_tensor: CTAS must be 1..%d and WARPS 1..%d\n", KM_BULK_TENSOR_MAX_CTAS,
              KM_BULK_TENSOR_MAX_WARPS);
      return 2;
    }
  } else if (argc != 1) {
    fprintf(stderr, "usage: gpu_bulk_tensor [CTAS WARPS]\n");
    return 2;
  }
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  int ran = 0;
  if (one_ctas)
    test_probe(4 * BOX, 3, one_ctas, one_warps, 0x2545f4914f6cdd1dull, &ran);
  else
    test_all(&ran);
  if (!ran) {
    printf("gpu_bulk_tensor: the tensor-map path does not run on this device: skipped\n");
    return km_test_failures ? km_test_finish("gpu_bulk_tensor") : KM_TEST_SKIP;
  }
  return km_test_finish("gpu_bulk_tensor");
}
