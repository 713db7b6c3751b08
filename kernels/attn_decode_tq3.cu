// The decode kernels of TurboQuant 3-bit KV (attn_decode_kernel.cuh), in a translation unit of their own so
// that the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_tq3(const km_attn_shape &s, int mt) {
  // head_dim 128 and the register pipeline only (km_attn_shape_error says so)
  if (s.head_dim != 128 || s.pipe != KM_ATTN_PIPE_REGISTERS) return Kern{nullptr, 0};
  if (s.pair || is_variant(s)) return kernel_variant_or_paired<KM_ATTN_TQ3>(s);
  if (default_is_variant(s, mt)) return kernel_default_variant<KM_ATTN_TQ3>();
  return mt == 0   ? kernel_pipe<128, KM_ATTN_TQ3, 0, KM_ATTN_PIPE_REGISTERS>()
         : mt == 1 ? kernel_pipe<128, KM_ATTN_TQ3, 1, KM_ATTN_PIPE_REGISTERS>()
         : mt == 2 ? kernel_pipe<128, KM_ATTN_TQ3, 2, KM_ATTN_PIPE_REGISTERS>()
                   : Kern{nullptr, 0};
}
