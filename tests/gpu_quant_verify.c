/* GPU test of the quant family's checks (micro/quant_verify.c): for a quantize and a dequantize case of
 * each format, micro's whole-output check passes on the kernels as they are and fails, naming the element,
 * when one element of the timed output is wrong (KM_VERIFY_FAULT: the last element of the first device
 * comparison, i.e. an odd position at the end of the output). */
#include "test_util.h"

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  static const char *const cases[] = {
      "^quant/fp8_e4m3/quantize/per_token_head/d64$",  "^quant/fp8_e5m2/dequantize/per_tensor/d128$",
      "^quant/uniform_3bit/quantize/g32/d256$",        "^quant/uniform_3bit/dequantize/g32/d64$",
      "^quant/turboquant_3bit/quantize/v/d128$",       "^quant/turboquant_3bit/dequantize/k/d256$",
      "^quant/fp8_e4m3/dequant_gather/nhd/bs16/d128$",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) km_test_check_catches_fault(cases[i], 1);
  return km_test_finish("gpu_quant_verify");
}
