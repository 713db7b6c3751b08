/* GPU test of the sparse family's checks (micro/sparse_verify.c): the page summaries and the gather of the
 * selected pages pass micro's whole-output check as the kernels are, and fail it, naming the element, when
 * one element of the timed output is wrong (KM_VERIFY_FAULT: the last element of the first exact device
 * comparison, which for these stages is their timed output). */
#include "test_util.h"

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  static const char *const cases[] = {
      "^sparse/summary/build/ctx131072/b16$",
      "^sparse/read/ctx4096/budget256/b1$",
      "^sparse/read/ctx131072/budget2048/b16$",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) km_test_check_catches_fault(cases[i], 1);
  return km_test_finish("gpu_sparse_verify");
}
