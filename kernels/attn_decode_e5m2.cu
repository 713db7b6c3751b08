// The decode kernels of fp8 e5m2 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_e5m2(const km_attn_shape &s, int mt) {
  if (s.pair || is_variant(s)) return Kern{nullptr, 0}; /* no variants */
  return kernel_for_dims<KM_ATTN_FP8_E5M2>(s.head_dim, mt, s.pipe);
}
