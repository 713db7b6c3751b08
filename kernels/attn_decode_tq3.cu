// The decode kernels of TurboQuant 3-bit KV (attn_decode_kernel.cuh), in a translation unit of their own so
// that the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_tq3(int head_dim, int mt, km_attn_pipe pipe, int prefetch, int pair) {
  // head_dim 128, the register pipeline and its default depth only (km_attn_shape_error says so)
  if (head_dim != 128 || pipe != KM_ATTN_PIPE_REGISTERS || prefetch) return Kern{nullptr, 0};
  if (pair) return kernel_paired<KM_ATTN_TQ3>();
  return mt == 0   ? kernel_pipe<128, KM_ATTN_TQ3, 0, KM_ATTN_PIPE_REGISTERS>()
         : mt == 1 ? kernel_pipe<128, KM_ATTN_TQ3, 1, KM_ATTN_PIPE_REGISTERS>()
         : mt == 2 ? kernel_pipe<128, KM_ATTN_TQ3, 2, KM_ATTN_PIPE_REGISTERS>()
                   : Kern{nullptr, 0};
}
