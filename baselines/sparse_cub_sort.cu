// CUB segmented radix sort as a top-k: what one would use in the absence of a top-k primitive.
// Scratch is carved into offsets | page-index values | sorted keys | sorted values | CUB temp storage.
#include "sparse_cub_sort.h"

#include <cub/device/device_segmented_radix_sort.cuh>

namespace {

constexpr size_t kAlign = 256;

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct cub_layout {
  size_t offsets, values, keys_out, values_out, temp, temp_bytes, total;
};

cudaError_t layout_for(int rows, int pages, cub_layout *l) {
  const size_t items = (size_t)rows * pages;
  if (rows <= 0 || pages <= 0 || items > 0x7fffffffu) return cudaErrorInvalidValue;
  size_t temp_bytes = 0;
  cudaError_t e = cub::DeviceSegmentedRadixSort::SortPairsDescending(
      nullptr, temp_bytes, (const float *)nullptr, (float *)nullptr, (const int32_t *)nullptr, (int32_t *)nullptr,
      (int)items, rows, (const int *)nullptr, (const int *)nullptr);
  if (e != cudaSuccess) return e;
  l->offsets = 0;
  l->values = align_up((size_t)(rows + 1) * sizeof(int));
  l->keys_out = l->values + align_up(items * sizeof(int32_t));
  l->values_out = l->keys_out + align_up(items * sizeof(float));
  l->temp = l->values_out + align_up(items * sizeof(int32_t));
  l->temp_bytes = temp_bytes;
  l->total = l->temp + align_up(temp_bytes);
  return cudaSuccess;
}

__global__ void prepare_kernel(int *offsets, int32_t *values, int rows, int pages) {
  const size_t items = (size_t)rows * pages;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < items; i += (size_t)gridDim.x * blockDim.x) {
    values[i] = (int32_t)(i % pages);
    if (i % pages == 0) offsets[i / pages] = (int)i;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) offsets[rows] = (int)items;
}

__global__ void force_last_kernel(float *scores, int rows, int pages) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) scores[(size_t)r * pages + pages - 1] = __int_as_float(0x7f800000);  // +inf
}

__global__ void take_k_kernel(const int32_t *sorted, int32_t *selected, int rows, int pages, int k) {
  const size_t items = (size_t)rows * k;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < items; i += (size_t)gridDim.x * blockDim.x)
    selected[i] = sorted[(i / k) * pages + i % k];
}

unsigned blocks_for(size_t n, int threads) {
  size_t g = (n + threads - 1) / threads;
  if (g > 4096) g = 4096;
  return g == 0 ? 1u : (unsigned)g;
}

}  // namespace

extern "C" cudaError_t km_cub_topk_scratch_bytes(int rows, int pages, size_t *bytes) {
  cub_layout l;
  cudaError_t e = layout_for(rows, pages, &l);
  if (e == cudaSuccess) *bytes = l.total;
  return e;
}

extern "C" cudaError_t km_cub_topk_prepare(void *scratch, size_t bytes, int rows, int pages, cudaStream_t stream) {
  cub_layout l;
  cudaError_t e = layout_for(rows, pages, &l);
  if (e != cudaSuccess) return e;
  if (bytes < l.total) return cudaErrorInvalidValue;
  char *base = static_cast<char *>(scratch);
  prepare_kernel<<<blocks_for((size_t)rows * pages, 256), 256, 0, stream>>>(
      reinterpret_cast<int *>(base + l.offsets), reinterpret_cast<int32_t *>(base + l.values), rows, pages);
  return cudaGetLastError();
}

extern "C" cudaError_t km_cub_topk(float *scores, int32_t *selected, int rows, int pages, int k, void *scratch,
                                   size_t bytes, cudaStream_t stream) {
  cub_layout l;
  cudaError_t e = layout_for(rows, pages, &l);
  if (e != cudaSuccess) return e;
  if (bytes < l.total || k < 1 || k > pages) return cudaErrorInvalidValue;
  char *base = static_cast<char *>(scratch);
  const int *offsets = reinterpret_cast<const int *>(base + l.offsets);
  int32_t *values_out = reinterpret_cast<int32_t *>(base + l.values_out);
  force_last_kernel<<<(rows + 255) / 256, 256, 0, stream>>>(scores, rows, pages);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  size_t temp_bytes = l.temp_bytes;
  e = cub::DeviceSegmentedRadixSort::SortPairsDescending(
      base + l.temp, temp_bytes, scores, reinterpret_cast<float *>(base + l.keys_out),
      reinterpret_cast<const int32_t *>(base + l.values), values_out, rows * pages, rows, offsets, offsets + 1, 0,
      32, stream);
  if (e != cudaSuccess) return e;
  take_k_kernel<<<blocks_for((size_t)rows * k, 256), 256, 0, stream>>>(values_out, selected, rows, pages, k);
  return cudaGetLastError();
}
