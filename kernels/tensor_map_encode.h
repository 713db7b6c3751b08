// The driver's cuTensorMapEncodeTiled (CUDA 12.0's version), found through the runtime's entry-point lookup so that
// nothing links against the driver library: nullptr where the driver has none. Host code only (C++).
#ifndef KM_KERNELS_TENSOR_MAP_ENCODE_H
#define KM_KERNELS_TENSOR_MAP_ENCODE_H

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime_api.h>

inline PFN_cuTensorMapEncodeTiled_v12000 km_tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

#endif
