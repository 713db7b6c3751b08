// Warps' tensor-map copies, each through its own mbarrier ring (see bulk_tensor_probe.h): the decode kernel's TmaSource
// protocol (lane 0 arrives with the box's byte count and issues the copy; the warp waits on the slot's phase; the
// warp's generic reads of a slot are ordered before the next copy into it by fence.proxy.async), with nothing else.
#include "bulk_tensor_probe.h"

#include <string.h>

#include <cuda.h>  // CUtensorMap

#include "bulk_copy.cuh"
#include "kernel_image.h"
#include "tensor_map_encode.h"

namespace {

constexpr int kBoxBytes = KM_BULK_TENSOR_BOX_ROWS * KM_BULK_TENSOR_ROW_BYTES;  // 2 KiB, two swizzle atoms
// a CTA's rings (each warp's slots), then its mbarriers, after up to 1,008 bytes of padding to the swizzle's period
constexpr size_t smem_bytes(int warps, int slots) { return 1024 + (size_t)warps * slots * (kBoxBytes + 8); }

__global__ void __launch_bounds__(32 * KM_BULK_TENSOR_MAX_WARPS) probe_kernel(const __grid_constant__ CUtensorMap map,
                                                                             int boxes, int slots, uint8_t *dst) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
  extern __shared__ __align__(16) char smem[];
  const uint32_t a = km_bulk::smem_addr(smem), pad = ((a + 1023u) & ~1023u) - a;  // the swizzle's 1,024-byte period
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  char *ring = smem + pad + (size_t)warp * slots * kBoxBytes;
  uint64_t *bar = reinterpret_cast<uint64_t *>(smem + pad + (size_t)warps * slots * kBoxBytes) + warp * slots;
  dst += ((size_t)blockIdx.x * warps + warp) * boxes * kBoxBytes;
  if (lane == 0) {
    for (int u = 0; u < slots; ++u) km_bulk::bar_init(bar + u, 1);
    km_bulk::bar_init_fence();
  }
  __syncwarp();
  auto issue = [&](int b) {
    if (lane == 0) {
      const int u = b % slots;
      km_bulk::fence_async_shared();  // the warp's reads of the slot's previous box, before the copy into it
      km_bulk::bar_expect(bar + u, kBoxBytes);
      km_bulk::load_box3(ring + (size_t)u * kBoxBytes, &map, 0, 0, b * KM_BULK_TENSOR_BOX_ROWS, bar + u);
    }
  };
  for (int b = 0; b < slots - 1 && b < boxes; ++b) issue(b);
  for (int b = 0; b < boxes; ++b) {
    __syncwarp();  // every lane has read box b - 1's slot, which box b + slots - 1 reuses
    if (b + slots - 1 < boxes) issue(b + slots - 1);
    const int u = b % slots;
    km_bulk::bar_wait_or_trap(bar + u, (uint32_t)(b / slots) & 1u, 1u << 20);
    const uint4 *s = reinterpret_cast<const uint4 *>(ring + (size_t)u * kBoxBytes);
    uint4 *d = reinterpret_cast<uint4 *>(dst + (size_t)b * kBoxBytes);
    for (int i = lane; i < kBoxBytes / 16; i += 32) d[i] = s[i];
  }
  __syncwarp();
  if (lane == 0)
    for (int u = 0; u < slots; ++u) km_bulk::bar_inval(bar + u);
#else
  __trap();  // the host launches this only where sm_90 code runs
#endif
}

}  // namespace

extern "C" cudaError_t km_bulk_tensor_probe(const uint8_t *src, int rows, int slots, int ctas, int warps, uint8_t *dst,
                                            cudaStream_t stream) {
  if (!src || !dst || rows < KM_BULK_TENSOR_BOX_ROWS || rows % KM_BULK_TENSOR_BOX_ROWS || slots < 1 ||
      slots > KM_BULK_TENSOR_MAX_SLOTS || ctas < 1 || ctas > KM_BULK_TENSOR_MAX_CTAS || warps < 1 ||
      warps > KM_BULK_TENSOR_MAX_WARPS)
    return cudaErrorInvalidValue;
  km_kernel_image img;
  cudaError_t e = km_kernel_image_query(reinterpret_cast<const void *>(probe_kernel), &img);
  if (e != cudaSuccess) return e;
  if (!km_kernel_image_runs(&img, KM_BULK_MIN_ARCH)) return cudaErrorNotSupported;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = km_tensor_map_encoder();
  if (!encode) return cudaErrorNotSupported;
  // [rows][1][128 bytes], the decode pipeline's map of one KV head (kernels/attn_decode.cu, tma_maps)
  CUtensorMap map;
  memset(&map, 0, sizeof map);
  const cuuint64_t dims[3] = {KM_BULK_TENSOR_ROW_BYTES, 1, (cuuint64_t)rows};
  const cuuint64_t strides[2] = {KM_BULK_TENSOR_ROW_BYTES, KM_BULK_TENSOR_ROW_BYTES};
  const cuuint32_t box[3] = {KM_BULK_TENSOR_ROW_BYTES, 1, KM_BULK_TENSOR_BOX_ROWS}, unit[3] = {1, 1, 1};
  if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<uint8_t *>(src), dims, strides, box, unit,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  const size_t smem = smem_bytes(warps, slots);
  e = cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e != cudaSuccess) return e;
  const int boxes = rows / KM_BULK_TENSOR_BOX_ROWS;
  probe_kernel<<<ctas, 32 * warps, smem, stream>>>(map, boxes, slots, dst);
  return cudaGetLastError();
}
