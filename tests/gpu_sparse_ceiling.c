/* GPU test of the sparse family's read-ceiling candidate (micro/sparse_ceiling.c): the dense read launched
 * the way the start-up ceiling launches it, on buffers of one and several 64 KiB units, then its own check:
 * it must pass on what the kernel did, and fail when the input no longer matches the partials (one word of
 * the input changed after the launch, or one partial changed). */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "ceiling.h"
#include "sparse_ceiling.h"
#include "test_util.h"

static void test_size(size_t bytes) {
  const km_ceiling_kernel *k = &km_sparse_ceilings.kernels[0];
  KM_EXPECT(k->traffic == KM_TRAFFIC_READ && km_sparse_ceilings.count == 1);
  unsigned char *src = malloc(bytes);
  uint64_t st = bytes;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t w = km_test_rng_next(&st);
    memcpy(src + i, &w, 8);
  }
  void *d_src = km_test_dev_upload(src, bytes), *d_scratch = km_test_dev_filled(KM_CEILING_SCRATCH_BYTES, 0);
  KM_EXPECT(d_src && d_scratch);
  if (!d_src || !d_scratch) exit(1);
  char err[256] = "";
  KM_EXPECT_CUDA(k->launch(NULL, d_src, bytes, d_scratch, 0, 0));
  KM_EXPECT_CUDA(cudaDeviceSynchronize());
  KM_EXPECT_MSG(k->check(NULL, d_src, bytes, d_scratch, 0, err, sizeof err) == 0, "%zu bytes: %s", bytes, err);
  /* a changed input byte, then a changed partial: the check must see each */
  unsigned char was = 0;
  KM_EXPECT(km_test_corrupt_byte(d_src, bytes / 2 + 3, (unsigned char)(src[bytes / 2 + 3] ^ 0x10)) == 0);
  KM_EXPECT_MSG(k->check(NULL, d_src, bytes, d_scratch, 0, err, sizeof err) != 0, "%zu bytes: a changed input passed", bytes);
  KM_EXPECT_CUDA(cudaMemcpy(d_src, src, bytes, cudaMemcpyHostToDevice));
  KM_EXPECT_CUDA(cudaMemcpy(&was, (unsigned char *)d_scratch + 1, 1, cudaMemcpyDeviceToHost));
  KM_EXPECT(km_test_corrupt_byte(d_scratch, 1, (unsigned char)(was ^ 0x5A)) == 0);
  KM_EXPECT_MSG(k->check(NULL, d_src, bytes, d_scratch, 0, err, sizeof err) != 0, "%zu bytes: a changed partial passed", bytes);
  cudaFree(d_src), cudaFree(d_scratch);
  free(src);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  static const size_t sizes[] = {64u << 10, 3u * (64u << 10), (17u << 20) + (64u << 10)};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) test_size(sizes[i]);
  return km_test_finish("gpu_sparse_ceiling");
}
