/* Bitwise checks for copies and gathers: word-wise memcmp that names the first bad offsets. */
#include "verify.h"

#include <string.h>

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
