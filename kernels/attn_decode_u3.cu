// The decode kernels of uniform 3-bit KV (attn_decode_kernel.cuh): one translation unit per format, so that
// their instantiations compile in parallel.
#include "attn_decode_kernel.cuh"

namespace km_attn_detail {

Kern kernels_u3(int head_dim, int mt, km_attn_pipe pipe, int prefetch, int pair) {
  // head_dim 128 and the register pipeline only (km_attn_shape_error says so)
  if (head_dim != 128 || pipe != KM_ATTN_PIPE_REGISTERS) return Kern{nullptr, 0};
  if (pair) return kernel_paired<KM_ATTN_U3>();
  if (prefetch) return kernel_prefetch<KM_ATTN_U3>(prefetch);
  return mt == 0   ? kernel_pipe<128, KM_ATTN_U3, 0, KM_ATTN_PIPE_REGISTERS>()
         : mt == 1 ? kernel_pipe<128, KM_ATTN_U3, 1, KM_ATTN_PIPE_REGISTERS>()
         : mt == 2 ? kernel_pipe<128, KM_ATTN_U3, 2, KM_ATTN_PIPE_REGISTERS>()
                   : Kern{nullptr, 0};
}

}  // namespace km_attn_detail
