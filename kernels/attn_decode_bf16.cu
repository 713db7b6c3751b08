// The decode kernels of bf16 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_bf16(const km_attn_shape &s, int mt) {
  return kernels_of<KM_ATTN_BF16>(s, mt);
}
