/* CPU tests of the decode kernel's 3-bit code extraction (kernels/u3_unpack.h): on random records, every
 * K pair is (code i, code i + 16) with each i < 16 taken once in KM_U3_K_PAIR's order, and every V pair is
 * code 16 h + j of the two rows, for both halves; codes come back as 1024 + code in fp16. */
#include <stdint.h>
#include <stdio.h>

#include "test_util.h"
#include "u3_unpack.h"

static int failures;

static uint32_t code_of(const uint32_t *w, int i) { /* code i: bits 3i..3i+2 of w0..w2 */
  const int b = 3 * i;
  const uint64_t x = b < 32 ? ((uint64_t)w[1] << 32 | w[0]) >> b : ((uint64_t)w[2] << 32 | w[1]) >> (b - 32);
  return (uint32_t)(x & 7u);
}
static uint32_t pair_of(uint32_t lo_code, uint32_t hi_code) { return (0x6400u | lo_code) | ((0x6400u | hi_code) << 16); }

static void check(int ok, const char *what, int a, int b, uint32_t got, uint32_t want) {
  if (ok) return;
  if (failures++ < 10) fprintf(stderr, "FAIL: %s %d/%d: got %08x, want %08x\n", what, a, b, got, want);
}

int main(void) {
  uint64_t st = 0x3b1d5e7f11u;
  int seen[16] = {0};
  for (int n = 0; n < KM_U3_K_PAIRS; n++) {
    const int i = km_u3_k_pair(n);
    check(i >= 0 && i < 16, "k pair index", n, i, 0, 0);
    if (i >= 0 && i < 16) seen[i]++;
  }
  for (int i = 0; i < 16; i++) check(seen[i] == 1, "k pair taken once", i, seen[i], 0, 1);
  /* the byte permute against its definition on a few selectors */
  check(km_u3_prmt(0x33221100u, 0x77665544u, 0x7610) == 0x77661100u, "prmt", 0x7610, 0, km_u3_prmt(0x33221100u, 0x77665544u, 0x7610), 0x77661100u);
  check(km_u3_prmt(0x33221100u, 0x77665544u, 0x5432) == 0x55443322u, "prmt", 0x5432, 0, km_u3_prmt(0x33221100u, 0x77665544u, 0x5432), 0x55443322u);
  for (int t = 0; t < 20000; t++) {
    uint32_t lo[4], hi[4];
    for (int k = 0; k < 4; k++) lo[k] = (uint32_t)km_test_rng_next(&st), hi[k] = (uint32_t)km_test_rng_next(&st);
    if (t == 0) lo[0] = lo[1] = lo[2] = 0xFFFFFFFFu; /* every code 7 */
    if (t == 1) lo[0] = lo[1] = lo[2] = 0;
    uint32_t z[3];
    for (int k = 0; k < 3; k++) z[k] = km_u3_k_window(lo, k);
    for (int n = 0; n < KM_U3_K_PAIRS; n++) {
      const int i = km_u3_k_pair(n);
      const uint32_t got = km_u3_k_pair_bits(z, lo, n), want = pair_of(code_of(lo, i), code_of(lo, i + 16));
      check(got == want, "k pair", n, i, got, want);
    }
    for (int h = 0; h < 2; h++) {
      uint32_t zv[3];
      for (int m = 0; m < 3; m++) zv[m] = km_u3_v_window(lo, hi, h, m);
      for (int j = 0; j < 16; j++) {
        const uint32_t got = km_u3_v_pair_bits(zv, lo, hi, h, j);
        const uint32_t want = pair_of(code_of(lo, 16 * h + j), code_of(hi, 16 * h + j));
        check(got == want, "v pair (half, j)", h, j, got, want);
      }
    }
  }
  if (failures) {
    fprintf(stderr, "cpu_u3_unpack: %d failures\n", failures);
    return 1;
  }
  printf("cpu_u3_unpack: ok\n");
  return 0;
}
