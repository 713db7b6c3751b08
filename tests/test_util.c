/* Test helpers shared by every test program. */
#include "test_util.h"

#include <stdlib.h>

#include <cuda_runtime_api.h>

int km_test_failures = 0;

int km_test_finish(const char *name) {
  if (km_test_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, km_test_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

int km_test_have_gpu(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("no CUDA device: skipped (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none present");
    return 0;
  }
  return 1;
}

const char *km_test_fixture(const char *name, char *buf, size_t len) {
  const char *dir = getenv("KM_FIXTURES");
  snprintf(buf, len, "%s/%s", dir && *dir ? dir : "fixtures", name);
  return buf;
}
