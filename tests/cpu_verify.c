/* CPU checks of the verification rule every device check applies (kernels/verify_compare.h) and of its
 * CPU twin: a poisoned output with one element left wrong, corrupted, or out of tolerance must be
 * counted and named; strides skip what they should; more mismatches than are kept are still counted. */
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

int main(void) {
  test_element_rule();
  test_one_wrong_element(1);
  test_one_wrong_element(2);
  test_one_wrong_element(4);
  test_tolerance_and_counting();
  return km_test_finish("cpu_verify");
}
