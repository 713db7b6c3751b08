// The decode kernels of fp8 e5m2 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_e5m2(int head_dim, int mt, km_attn_pipe pipe, int prefetch, int pair) {
  if (prefetch || pair) return Kern{nullptr, 0}; /* no depth or pair variants */
  return kernel_for_dims<KM_ATTN_FP8_E5M2>(head_dim, mt, pipe);
}
