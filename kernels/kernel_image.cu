// cudaFuncGetAttributes on the kernel itself: its PTX and SASS versions are those of the image the
// runtime loaded for this device, which is what decides whether an arch-guarded body is there.
#include "kernel_image.h"

extern "C" cudaError_t km_kernel_image_query(const void *kernel, km_kernel_image *out) {
  int dev = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  cudaFuncAttributes a = {};
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, kernel);
  if (e != cudaSuccess) cudaGetLastError(); /* not sticky: keep it from surfacing at the next check */
  out->device_arch = major * 10 + minor;
  out->ptx_arch = e == cudaSuccess ? a.ptxVersion : 0;
  out->sass_arch = e == cudaSuccess ? a.binaryVersion : 0;
  return e;
}
