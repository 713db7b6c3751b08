/* What this binary actually holds for one kernel on the current device, so a path that needs a newer
 * architecture (Hopper's bulk copies) is chosen by the code that will run, not by the device alone: a
 * build for CMAKE_CUDA_ARCHITECTURES=80-virtual run on a 9.0 device JIT-compiles compute_80 PTX, in
 * which every `__CUDA_ARCH__ >= 900` body is compiled out. */
#ifndef KM_KERNELS_KERNEL_IMAGE_H
#define KM_KERNELS_KERNEL_IMAGE_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Architectures as major * 10 + minor (9.0 -> 90), the way cudaFuncAttributes reports them; device code
 * guards the same paths with `__CUDA_ARCH__ >= arch * 10`. */
#define KM_BULK_MIN_ARCH 90 /* cp.async.bulk and mbarrier transaction counts: sm_90 and later */

typedef struct km_kernel_image {
  int device_arch; /* the current device's compute capability */
  int ptx_arch;    /* the virtual architecture the kernel was compiled for: its __CUDA_ARCH__ / 10 */
  int sass_arch;   /* the machine code that runs: an embedded sm_XX image, or the device's own after JIT */
} km_kernel_image;

/* Fill *out for `kernel` (a __global__ function) on the current device. cudaErrorNoKernelImageForDevice
 * when the binary holds nothing this device can run. */
cudaError_t km_kernel_image_query(const void *kernel, km_kernel_image *out);

/* 1 when the code that runs was compiled for at least `arch` on a device of at least `arch`. */
static inline int km_kernel_image_runs(const km_kernel_image *img, int arch) {
  return img->device_arch >= arch && img->ptx_arch >= arch && img->sass_arch >= arch;
}

#ifdef __cplusplus
}
#endif

#endif
