/* The reasons a path that needs a newer architecture is not taken, in the words a reader of a skipped
 * row needs: the device is too old, or this build carries no code for it on this device. */
#include "kernel_path.h"

#include <stdio.h>

int km_kernel_path_reason(cudaError_t setup, const km_kernel_image *img, int arch, const char *what, char *buf,
                          size_t len) {
  const int dev_major = img->device_arch / 10, dev_minor = img->device_arch % 10;
  if (setup != cudaSuccess && setup != cudaErrorNoKernelImageForDevice) {
    snprintf(buf, len, "querying the kernel of %s failed: %s", what, cudaGetErrorString(setup));
    return -1;
  }
  if (img->device_arch < arch) {
    snprintf(buf, len, "%s need compute capability %d.%d; this device is %d.%d", what, arch / 10, arch % 10,
             dev_major, dev_minor);
  } else if (setup == cudaErrorNoKernelImageForDevice || img->ptx_arch <= 0) {
    snprintf(buf, len, "this binary holds no code for %s that a %d.%d device runs (add %d to CMAKE_CUDA_ARCHITECTURES)",
             what, dev_major, dev_minor, arch);
  } else if (!km_kernel_image_runs(img, arch)) {
    snprintf(buf, len,
             "this binary runs %s from compute_%d code (as sm_%d), where their sm_%d body is compiled out "
             "(add %d to CMAKE_CUDA_ARCHITECTURES)",
             what, img->ptx_arch, img->sass_arch, arch, arch);
  } else {
    snprintf(buf, len, "%s run as sm_%d code from compute_%d", what, img->sass_arch, img->ptx_arch);
    return 1;
  }
  return 0;
}

int km_kernel_path_usable(km_bench *b, cudaError_t setup, const km_kernel_image *img, int arch, const char *what) {
  char reason[256];
  int rc = km_kernel_path_reason(setup, img, arch, what, reason, sizeof reason);
  if (rc < 0) km_bench_fail(b, "%s", reason);
  if (rc == 0) km_bench_skip(b, "%s", reason);
  return rc > 0;
}
