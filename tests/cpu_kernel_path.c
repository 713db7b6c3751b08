/* CPU test of the path decision for kernels that need a newer architecture: which images run the sm_90
 * bulk copies, and the reason a skipped row gives for each that does not. No device needed. */
#include <string.h>

#include "kernel_path.h"
#include "test_util.h"

static void expect(cudaError_t setup, int dev, int ptx, int sass, int want, const char *phrase) {
  km_kernel_image img = {dev, ptx, sass};
  char reason[256];
  int got = km_kernel_path_reason(setup, &img, KM_BULK_MIN_ARCH, "bulk copies", reason, sizeof reason);
  KM_EXPECT_MSG(got == want, "device %d, compute_%d -> sm_%d: %d, want %d (%s)", dev, ptx, sass, got, want, reason);
  KM_EXPECT_MSG(strstr(reason, phrase) != NULL, "device %d, compute_%d -> sm_%d: '%s' lacks '%s'", dev, ptx, sass,
                reason, phrase);
  KM_EXPECT(got == -1 || got == km_kernel_image_runs(&img, KM_BULK_MIN_ARCH));
}

int main(void) {
  expect(cudaSuccess, 90, 90, 90, 1, "sm_90 code from compute_90");           /* "80-real;90" on an H100/H200 */
  expect(cudaSuccess, 100, 90, 100, 1, "sm_100 code from compute_90");        /* its PTX on a Blackwell */
  expect(cudaSuccess, 90, 80, 90, 0, "from compute_80 code (as sm_90)");      /* "80-virtual" on an H200 */
  expect(cudaSuccess, 90, 80, 90, 0, "add 90 to CMAKE_CUDA_ARCHITECTURES");
  expect(cudaSuccess, 80, 80, 80, 0, "need compute capability 9.0; this device is 8.0"); /* any build on an A100 */
  expect(cudaSuccess, 86, 80, 80, 0, "this device is 8.6");
  expect(cudaErrorNoKernelImageForDevice, 90, 0, 0, 0, "holds no code for bulk copies that a 9.0 device runs");
  expect(cudaErrorInvalidValue, 90, 0, 0, -1, "querying the kernel of bulk copies failed");
  return km_test_finish("cpu_kernel_path");
}
