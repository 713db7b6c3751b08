/* Choosing a code path by what the binary holds: a case whose kernel needs an architecture (Hopper's
 * bulk copies) runs only where the code loaded for this device was compiled for it; anywhere else it
 * is skipped with the reason, never launched into a body the compiler left empty. */
#ifndef KM_MICRO_KERNEL_PATH_H
#define KM_MICRO_KERNEL_PATH_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "kernel_image.h"

/* From a kernel's setup status and image (e.g. km_copy_bulk_setup): 1 when its `arch` path runs here;
 * 0 when it does not, with the reason naming `what` in buf; -1 for a CUDA error other than a missing
 * image (the message in buf). No device needed. */
int km_kernel_path_reason(cudaError_t setup, const km_kernel_image *img, int arch, const char *what, char *buf,
                          size_t len);
/* The same in a case's setup: 1 when the path runs; else the case is skipped (or failed, for a CUDA
 * error) with that reason and 0 is returned. */
int km_kernel_path_usable(km_bench *b, cudaError_t setup, const km_kernel_image *img, int arch, const char *what);

#endif
