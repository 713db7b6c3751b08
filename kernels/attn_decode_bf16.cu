// The decode kernels of bf16 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_bf16(int head_dim, int mt, km_attn_pipe pipe, int prefetch, int pair) {
  if (pair) return kernel_paired<KM_ATTN_BF16>();
  if (prefetch) return kernel_prefetch<KM_ATTN_BF16>(prefetch);
  return kernel_for_dims<KM_ATTN_BF16>(head_dim, mt, pipe);
}
