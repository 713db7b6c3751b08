// The decode kernels of bf16 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_bf16(const km_attn_shape &s, int mt) {
  if (s.pair || is_variant(s)) return kernel_variant_or_paired<KM_ATTN_BF16>(s);
  return kernel_for_dims<KM_ATTN_BF16>(s.head_dim, mt, s.pipe);
}
