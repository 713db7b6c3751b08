// The decode kernels of bf16 KV (attn_decode_kernel.cuh): one translation unit per format, so that
// their instantiations compile in parallel.
#include "attn_decode_kernel.cuh"

namespace km_attn_detail {

Kern kernels_bf16(int head_dim, int mt, km_attn_pipe pipe) {
  switch (head_dim) {
    case 64: return kernel_for_mt<64, KM_ATTN_BF16>(mt, pipe);
    case 128: return kernel_for_mt<128, KM_ATTN_BF16>(mt, pipe);
    case 256: return kernel_for_mt<256, KM_ATTN_BF16>(mt, pipe);
    default: return Kern{nullptr, 0};
  }
}

}  // namespace km_attn_detail
