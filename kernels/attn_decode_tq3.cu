// The decode kernels of TurboQuant 3-bit KV (attn_decode_kernel.cuh), in a translation unit of their own so
// that the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_tq3(const km_attn_shape &s, int mt) {
  return kernels_of<KM_ATTN_TQ3>(s, mt);
}
