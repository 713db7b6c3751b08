// The decode kernels of bf16 KV (attn_decode_kernel.cuh), in a translation unit of their own so that
// the formats compile in parallel.
#include "attn_decode_kernel.cuh"

km_attn_detail::Kern km_attn_detail::kernels_bf16(const km_attn_shape &s, int mt) {
  return kernels_of<KM_ATTN_BF16>(s, mt);
}

km_attn_detail::Kern km_attn_detail::kernel_bf16_extra(const km_attn_shape &s, int mt, bool stamps, bool poll) {
  if (!bf16_default_shape(s, mt)) return Kern{nullptr, 0};
  constexpr int R = KM_ATTN_PIPE_REGISTERS, B = KM_ATTN_MIN_BLOCKS;
  if (s.merge_poll && poll)
    return stamps ? kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 1, 16, 0, 0, 0, 0, 0, 1>()
                  : kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 0, 16, 0, 0, 0, 0, 0, 1>();
  if (s.steal == 8 || s.steal == 16)
    return stamps ? Kern{nullptr, 0}
           : s.steal == 8 ? kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 0, 16, 0, 0, 0, 8>()
                          : kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 0, 16, 0, 0, 0, 16>();
  if (s.pdl == 1 || s.pdl == 4)
    return stamps      ? Kern{nullptr, 0}
           : s.pdl == 1 ? kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 0, 16, 0, 0, 0, 0, 1>()
                        : kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 0, 16, 0, 0, 0, 0, 4>();
  if (s.merge_inflight == 32)
    return stamps ? kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 1, 32>()
                  : kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 0, 32>();
  return stamps ? kernel_pipe<128, KM_ATTN_BF16, 0, R, 0, 1, 0, B, 0, 0, 1, 16>() : Kern{nullptr, 0};
}
