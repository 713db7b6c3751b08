// The decode kernels of uniform 3-bit KV (attn_decode_kernel.cuh): one translation unit per format, so that
// their instantiations compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_u3(const km_attn_shape &s, int mt) {
  return kernels_of<KM_ATTN_U3>(s, mt);
}
