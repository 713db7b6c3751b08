/* Bitwise checks for copies and gathers: word-wise memcmp that names the first bad offsets. */
#include "verify.h"

#include <string.h>

#include <cuda_runtime_api.h>

size_t km_verify_equal(km_bench *b, const void *got, const void *want, size_t bytes) {
  const unsigned char *g = got, *w = want;
  size_t bad = 0, words = bytes / 4;
  for (size_t i = 0; i < words; i++) {
    uint32_t x, y;
    memcpy(&x, g + 4 * i, 4);
    memcpy(&y, w + 4 * i, 4);
    if (x != y && bad++ < 16) km_bench_mismatch(b, "byte offset %zu: got 0x%08x, want 0x%08x", 4 * i, x, y);
  }
  for (size_t i = words * 4; i < bytes; i++)
    if (g[i] != w[i] && bad++ < 16) km_bench_mismatch(b, "byte offset %zu: got 0x%02x, want 0x%02x", i, g[i], w[i]);
  return bad;
}

size_t km_verify_filled(km_bench *b, const void *got, size_t bytes, unsigned char value) {
  const unsigned char *g = got;
  size_t bad = 0;
  for (size_t i = 0; i < bytes; i++)
    if (g[i] != value && bad++ < 16) km_bench_mismatch(b, "byte offset %zu: got 0x%02x, want 0x%02x", i, g[i], value);
  return bad;
}

void *km_verify_to_host(km_bench *b, const void *dev, size_t bytes) {
  void *h = km_bench_host_alloc(b, bytes ? bytes : 16); /* NULL: recorded as a skip */
  if (!h) return NULL;
  cudaError_t e = cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, km_bench_stream(b));
  if (e == cudaSuccess) e = cudaStreamSynchronize(km_bench_stream(b));
  if (e != cudaSuccess) {
    km_bench_fail(b, "copy of verification data failed: %s", cudaGetErrorString(e));
    return NULL;
  }
  return h;
}

int km_verify_guard_set(km_bench *b, void *dev_end) {
  cudaError_t e = cudaMemsetAsync(dev_end, KM_VERIFY_GUARD_VALUE, KM_VERIFY_GUARD_BYTES, km_bench_stream(b));
  if (e != cudaSuccess) {
    km_bench_fail(b, "guard fill failed: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

size_t km_verify_guard_check(km_bench *b, const void *dev_end) {
  const unsigned char *g = km_verify_to_host(b, dev_end, KM_VERIFY_GUARD_BYTES);
  return g ? km_verify_filled(b, g, KM_VERIFY_GUARD_BYTES, KM_VERIFY_GUARD_VALUE) : KM_VERIFY_GUARD_BYTES;
}
