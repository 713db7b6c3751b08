// The decode kernels of fp8 e4m3 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_e4m3(const km_attn_shape &s, int mt) {
  if (s.pair || is_variant(s)) return kernel_variant_or_paired<KM_ATTN_FP8_E4M3>(s);
  if (default_is_variant(s, mt)) return kernel_default_variant<KM_ATTN_FP8_E4M3>();
  return kernel_for_dims<KM_ATTN_FP8_E4M3>(s.head_dim, mt, s.pipe);
}
