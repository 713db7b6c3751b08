/* CPU checks of the verification rule every device check applies (kernels/verify_compare.h) and of its
 * CPU twin: a poisoned output with one element left wrong, corrupted, or out of tolerance must be
 * counted and named; strides skip what they should; more mismatches than are kept are still counted; and
 * the 3-bit code rule (equal, adjacent, far) with its CPU twin. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "verify.h"

static void test_element_rule(void) {
  /* bitwise for 1- and 4-byte elements and whenever max_ulp is 0 */
  KM_EXPECT(!km_verify_differs(0xAB, 0xAB, 1, 0));
  KM_EXPECT(km_verify_differs(0xAB, 0xAA, 1, 3));
  KM_EXPECT(km_verify_differs(0x3f800000u, 0x3f800001u, 4, 1));
  KM_EXPECT(km_verify_differs(0x3f81, 0x3f80, 2, 0));
  /* 16-bit floats within max_ulp units in the last place */
  KM_EXPECT(!km_verify_differs(0x3f81, 0x3f80, 2, 1));
  KM_EXPECT(km_verify_differs(0x3f82, 0x3f80, 2, 1));
  KM_EXPECT(!km_verify_differs(0xbf81, 0xbf80, 2, 1));
  KM_EXPECT(!km_verify_differs(0x0000, 0x8000, 2, 1));  /* +0 and -0 sit at the same place */
  KM_EXPECT(km_verify_differs(0x0000, 0x8000, 2, 0));   /* ... but are not the same bits */
  KM_EXPECT(km_verify_differs(0x0001, 0x8001, 2, 1));   /* the two smallest subnormals are 2 apart */
  KM_EXPECT(!km_verify_differs(0x0001, 0x8001, 2, 2));
  KM_EXPECT(km_verify_ulp_position16(0x8003) == -3 && km_verify_ulp_position16(0x0003) == 3);
}

/* Poison an output, write the expected elements into it, then break element `bad` one way or another. */
static void make_output(unsigned char *got, const unsigned char *want, size_t bytes, size_t skip_elem, int elem_bytes) {
  memset(got, 0xFF, bytes);
  for (size_t i = 0; i < bytes / (size_t)elem_bytes; i++)
    if (i != skip_elem) memcpy(got + i * elem_bytes, want + i * elem_bytes, (size_t)elem_bytes);
}

static void test_one_wrong_element(int elem_bytes) {
  enum { N = 1000 };
  const size_t bytes = (size_t)N * elem_bytes;
  unsigned char *want = malloc(bytes), *got = malloc(bytes);
  KM_EXPECT(want && got);
  if (!want || !got) return;
  uint64_t st = 42 + (uint64_t)elem_bytes;
  for (size_t i = 0; i < bytes; i++) want[i] = (unsigned char)(km_test_rng_next(&st) & 0x7F); /* never 0xFF */
  km_diff d;

  make_output(got, want, bytes, (size_t)-1, elem_bytes);
  KM_EXPECT(km_verify_host_compare(got, want, N, elem_bytes, 1, 0, &d) == 0);

  make_output(got, want, bytes, 617, elem_bytes); /* one element never written: still poison */
  KM_EXPECT(km_verify_host_compare(got, want, N, elem_bytes, 1, 0, &d) == 1);
  KM_EXPECT(d.index[0] == 617);
  KM_EXPECT(d.got[0] == (elem_bytes == 1 ? 0xFFu : elem_bytes == 2 ? 0xFFFFu : 0xFFFFFFFFu));

  make_output(got, want, bytes, (size_t)-1, elem_bytes);
  got[bytes - 1] ^= 0x01; /* the very last byte, one bit */
  KM_EXPECT(km_verify_host_compare(got, want, N, elem_bytes, 1, 0, &d) == 1);
  KM_EXPECT(d.index[0] == N - 1);

  /* stride 2 compares the even elements only: an odd one may differ, an even one may not */
  make_output(got, want, bytes, 401, elem_bytes);
  KM_EXPECT(km_verify_host_compare(got, want, N / 2, elem_bytes, 2, 0, &d) == 0);
  KM_EXPECT(km_verify_host_compare(got + elem_bytes, want + elem_bytes, N / 2, elem_bytes, 2, 0, &d) == 1);
  KM_EXPECT(d.index[0] == 200);
  free(want);
  free(got);
}

static void test_tolerance_and_counting(void) {
  enum { N = 64 };
  uint16_t want[N], got[N];
  for (int i = 0; i < N; i++) want[i] = got[i] = (uint16_t)(0x3f80 + i);
  got[5] += 1; /* one ulp: passes with max_ulp 1 */
  km_diff d;
  KM_EXPECT(km_verify_host_compare(got, want, N, 2, 1, 1, &d) == 0);
  KM_EXPECT(km_verify_host_compare(got, want, N, 2, 1, 0, &d) == 1);
  got[9] += 2; /* two ulps: fails with max_ulp 1 */
  KM_EXPECT(km_verify_host_compare(got, want, N, 2, 1, 1, &d) == 1 && d.index[0] == 9);
  for (int i = 0; i < N; i++) got[i] = 0xFFFF; /* all poison: every element counted, the first few kept in order */
  KM_EXPECT(km_verify_host_compare(got, want, N, 2, 1, 1, &d) == N);
  for (int k = 0; k < KM_DIFF_KEPT; k++) KM_EXPECT(d.index[k] == (unsigned long long)k);
}

/* 3-bit codes packed as the formats pack them (8 per 3 bytes, LSB first), written out here by hand. */
static void pack_codes3(const uint8_t *codes, int n, uint8_t *out) {
  memset(out, 0, (size_t)n / 8 * 3);
  for (int i = 0; i < n; i++)
    for (int b = 0; b < 3; b++)
      if ((codes[i] >> b) & 1) out[(3 * i + b) / 8] |= (uint8_t)(1u << ((3 * i + b) % 8));
}

static void test_code3(void) {
  const uint8_t seq[3] = {0x88, 0xC6, 0xFA}; /* codes 0, 1, ..., 7 */
  for (int i = 0; i < 8; i++) KM_EXPECT_MSG(km_verify_code3(seq, i) == (uint32_t)i, "code %d of 0..7", i);
  uint8_t codes[64], packed[24];
  uint64_t st = 9;
  for (int i = 0; i < 64; i++) codes[i] = (uint8_t)(km_test_rng_next(&st) & 7);
  pack_codes3(codes, 64, packed);
  for (int i = 0; i < 64; i++) KM_EXPECT_MSG(km_verify_code3(packed, i) == codes[i], "code %d of a random row", i);
  KM_EXPECT(km_verify_code3_distance(3, 3) == 0);
  KM_EXPECT(km_verify_code3_distance(3, 4) == 1 && km_verify_code3_distance(4, 3) == 1);
  KM_EXPECT(km_verify_code3_distance(0, 1) == 1 && km_verify_code3_distance(7, 6) == 1);
  KM_EXPECT(km_verify_code3_distance(2, 4) == 2 && km_verify_code3_distance(7, 0) == 2); /* not modulo 8 */
  KM_EXPECT(km_verify_code3_distance(0, 7) == 2 && km_verify_code3_distance(5, 1) == 2);
}

/* Rows of d = 16: one adjacent and one far code are counted in the right km_diff, by row * d + i. */
static void test_compare_codes3(void) {
  enum { ROWS = 3, D = 16, N = ROWS * D };
  uint8_t want_c[N], got_c[N], want[ROWS * D / 8 * 3], got[ROWS * D / 8 * 3];
  uint64_t st = 5;
  for (int i = 0; i < N; i++) want_c[i] = got_c[i] = (uint8_t)(km_test_rng_next(&st) & 7);
  km_diff far, near;
  pack_codes3(want_c, N, want);
  pack_codes3(got_c, N, got);
  KM_EXPECT(km_verify_host_compare_codes3(got, want, ROWS, D, &far, &near) == 0);
  KM_EXPECT(far.count == 0 && near.count == 0);

  want_c[1 * D + 3] = 6;
  got_c[1 * D + 3] = 5; /* adjacent: row 1, code 3 */
  want_c[2 * D + 14] = 1;
  got_c[2 * D + 14] = 5; /* far (the same magnitude, the other sign): row 2, code 14 */
  pack_codes3(want_c, N, want);
  pack_codes3(got_c, N, got);
  KM_EXPECT(km_verify_host_compare_codes3(got, want, ROWS, D, &far, &near) == 1);
  KM_EXPECT(far.count == 1 && far.index[0] == 2 * D + 14 && far.got[0] == 5 && far.want[0] == 1);
  KM_EXPECT(near.count == 1 && near.index[0] == 1 * D + 3 && near.got[0] == 5 && near.want[0] == 6);
  /* the rows counted are the rows asked for */
  KM_EXPECT(km_verify_host_compare_codes3(got, want, 2, D, &far, &near) == 0 && near.count == 1);
  KM_EXPECT(km_verify_host_compare_codes3(got, want, 0, D, &far, &near) == 0 && near.count == 0);

  for (int i = 0; i < N; i++) got_c[i] = want_c[i] == 7 ? 6 : (uint8_t)(want_c[i] + 1); /* every code adjacent */
  pack_codes3(got_c, N, got);
  KM_EXPECT(km_verify_host_compare_codes3(got, want, ROWS, D, &far, &near) == 0);
  KM_EXPECT(near.count == N && far.count == 0);
  for (int k = 0; k < KM_DIFF_KEPT; k++) KM_EXPECT(near.index[k] == (unsigned long long)k);

  KM_EXPECT(km_verify_host_compare_codes3(got, want, ROWS, 12, &far, &near) == SIZE_MAX); /* d % 8 != 0 */
  KM_EXPECT(far.count == 0 && near.count == 0);
}

int main(void) {
  test_element_rule();
  test_one_wrong_element(1);
  test_one_wrong_element(2);
  test_one_wrong_element(4);
  test_tolerance_and_counting();
  test_code3();
  test_compare_codes3();
  return km_test_finish("cpu_verify");
}
