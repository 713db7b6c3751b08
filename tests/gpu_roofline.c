/* GPU test of the roofline kernels (kernels/roofline.cu) against the CPU on odd sizes: every copy shape but
 * the bulk one (gpu_kernel_paths covers it) bitwise with the bytes after the output untouched, the read
 * XOR against the CPU's XOR, the write fill word by word with its guard; sizes from one 16-byte vector to
 * tens of MiB that are no multiple of a tile, and a grid of one SM. */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "roofline.h"
#include "test_util.h"

static int device_sms(void) {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 0;
  return sms;
}

static unsigned char *random_bytes(size_t n, uint64_t seed) {
  unsigned char *p = malloc(n ? n : 1);
  uint64_t st = seed;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = km_test_rng_next(&st);
    memcpy(p + i, &w, n - i < 8 ? n - i : 8);
  }
  return p;
}

/* shape -1: km_copy_vec16 itself (the shape it picks) */
static void test_copy(size_t bytes, int sms, int shape) {
  unsigned char *src = random_bytes(bytes, bytes * 31 + (uint64_t)shape), *got = malloc(bytes + KM_TEST_GUARD_BYTES);
  void *d_src = km_test_dev_upload(src, bytes), *d_dst = km_test_dev_guarded(NULL, bytes);
  KM_EXPECT(d_src && d_dst && got);
  if (!d_src || !d_dst || !got) exit(1);
  KM_EXPECT_CUDA(shape < 0 ? km_copy_vec16(d_dst, d_src, bytes, sms, 0)
                            : km_copy_vec16_shape(d_dst, d_src, bytes, sms, (km_copy_shape)shape, 0));
  if (km_test_download(got, d_dst, bytes + KM_TEST_GUARD_BYTES) == 0) {
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += got[i] != src[i];
    KM_EXPECT_MSG(bad == 0, "copy shape %d, %zu bytes, %d SMs: %zu bytes differ", (int)shape, bytes, sms, bad);
    KM_EXPECT_MSG(km_test_guard_intact(got, bytes), "copy shape %d, %zu bytes: wrote past the output", (int)shape, bytes);
  } else {
    km_test_failures++;
  }
  cudaFree(d_src), cudaFree(d_dst);
  free(src), free(got);
}

static void test_read_xor(size_t bytes, int sms) {
  unsigned char *src = random_bytes(bytes, bytes + 7);
  unsigned long long want = 0, got = 0, *d_out = km_test_dev_filled(sizeof got, 0);
  for (size_t i = 0; i < bytes; i += 8) {
    unsigned long long w;
    memcpy(&w, src + i, 8);
    want ^= w;
  }
  void *d_src = km_test_dev_upload(src, bytes);
  KM_EXPECT(d_src && d_out);
  if (!d_src || !d_out) exit(1);
  KM_EXPECT_CUDA(km_read_xor(d_src, bytes, d_out, sms, 0));
  if (km_test_download(&got, d_out, sizeof got) == 0)
    KM_EXPECT_MSG(got == want, "read_xor of %zu bytes, %d SMs: %016llx, want %016llx", bytes, sms, got, want);
  else
    km_test_failures++;
  cudaFree(d_src), cudaFree(d_out);
  free(src);
}

static void test_write(size_t bytes, int sms) {
  const uint64_t pattern = 0x0123456789ABCDEFull ^ bytes;
  unsigned char *got = malloc(bytes + KM_TEST_GUARD_BYTES);
  void *d_dst = km_test_dev_guarded(NULL, bytes);
  KM_EXPECT(d_dst && got);
  if (!d_dst || !got) exit(1);
  KM_EXPECT_CUDA(km_write_pattern(d_dst, bytes, pattern, sms, 0));
  if (km_test_download(got, d_dst, bytes + KM_TEST_GUARD_BYTES) == 0) {
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i += 8) bad += memcmp(got + i, &pattern, 8) != 0;
    KM_EXPECT_MSG(bad == 0, "write_pattern of %zu bytes, %d SMs: %zu words wrong", bytes, sms, bad);
    KM_EXPECT_MSG(km_test_guard_intact(got, bytes), "write_pattern of %zu bytes: wrote past the output", bytes);
  } else {
    km_test_failures++;
  }
  cudaFree(d_dst);
  free(got);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  const int sms = device_sms();
  KM_EXPECT(sms > 0);
  /* multiples of 16 that are no multiple of a 16 or 32 KiB tile, the last over several waves */
  static const size_t sizes[] = {16, 48, 4096 + 16, 16384 + 48, 32768 - 16, (1u << 20) + 208, (33u << 20) + 16};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    for (int shape = 0; shape < KM_COPY_SHAPE_COUNT; shape++)
      if (shape != KM_COPY_BULK) test_copy(sizes[i], sms, shape);
    test_copy(sizes[i], sms, -1);
    test_read_xor(sizes[i], sms);
    test_write(sizes[i], sms);
  }
  /* a grid of one SM: the grid-stride kernels walk the whole buffer from few blocks */
  test_copy((3u << 20) + 16, 1, KM_COPY_STRIDED_ILP4);
  test_read_xor((3u << 20) + 16, 1);
  test_write((3u << 20) + 16, 1);
  return km_test_finish("gpu_roofline");
}
