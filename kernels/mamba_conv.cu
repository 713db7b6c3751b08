// Causal conv1d state update (see mamba_state.h): one thread per (sequence, 8 channels). Its state_len
// rows of 16 bytes, the new column, the 8 x width weights and the bias are all loaded before use; the
// shifted state and the output are written as 16-byte vectors. Computed in fp32 as causal_conv1d does.
#include "mamba_state.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i])) |
           ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i + 1])) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// S (state_len) is width - 1 (causal_conv1d, vLLM) or width (mamba_ssm's allocate_inference_cache): both
// compile-time, so the shift is register renaming.
template <int W, int S>
__global__ __launch_bounds__(kThreads) void conv_update_kernel(km_mamba_conv_shape s, km_mamba_conv_args a) {
  const int vecs = s.dim / 8;
  const long long item = (long long)blockIdx.x * kThreads + threadIdx.x;
  if (item >= (long long)s.batch * vecs) return;
  const int b = (int)(item / vecs), cvec = (int)(item - (long long)b * vecs);
  uint4 *state = reinterpret_cast<uint4 *>(a.state) + (size_t)b * S * vecs + cvec;

  uint4 xs[S + 1];  // the S state rows, then the new column
#pragma unroll
  for (int i = 0; i < S; ++i) xs[i] = state[(size_t)i * vecs];
  xs[S] = __ldg(reinterpret_cast<const uint4 *>(a.x + (size_t)b * s.x_stride) + cvec);
  uint4 wv[W];  // the 8 channels' weight rows are 8 x W bf16 back to back: W vectors
#pragma unroll
  for (int q = 0; q < W; ++q) wv[q] = __ldg(reinterpret_cast<const uint4 *>(a.weight) + (size_t)cvec * W + q);
  float acc[8];
  if (s.has_bias) {
    unpack8(__ldg(reinterpret_cast<const uint4 *>(a.bias) + cvec), acc);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.0f;
  }
  float wt[8 * W];  // wt[ch * W + tap], element q * 8 + i of the run is lane i of vector q
#pragma unroll
  for (int q = 0; q < W; ++q) {
    float f[8];
    unpack8(wv[q], f);
#pragma unroll
    for (int i = 0; i < 8; ++i) wt[q * 8 + i] = f[i];
  }
#pragma unroll
  for (int w = 0; w < W; ++w) {  // tap w reads xs[S + 1 - W + w]
    float f[8];
    unpack8(xs[S + 1 - W + w], f);
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[c] = fmaf(wt[c * W + w], f[c], acc[c]);
  }
  if (s.silu) {
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[c] = acc[c] / (1.0f + expf(-acc[c]));
  }
#pragma unroll
  for (int i = 0; i < S; ++i) state[(size_t)i * vecs] = xs[i + 1];
  reinterpret_cast<uint4 *>(a.out + (size_t)b * s.out_stride)[cvec] = pack8(acc);
}

template <int W>
cudaError_t launch_conv(const km_mamba_conv_shape *s, const km_mamba_conv_args *a, cudaStream_t stream) {
  const long long items = (long long)s->batch * (s->dim / 8);
  const unsigned blocks = (unsigned)((items + kThreads - 1) / kThreads);
  if (s->state_len == W - 1)
    conv_update_kernel<W, W - 1><<<blocks, kThreads, 0, stream>>>(*s, *a);
  else if (s->state_len == W)
    conv_update_kernel<W, W><<<blocks, kThreads, 0, stream>>>(*s, *a);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

}  // namespace

extern "C" cudaError_t km_mamba_conv_update(const km_mamba_conv_shape *s, const km_mamba_conv_args *a,
                                            cudaStream_t stream) {
  if (!s || !a || km_mamba_conv_shape_error(s)) return cudaErrorInvalidValue;
  if (!a->state || !a->x || !a->weight || !a->out || (s->has_bias && !a->bias)) return cudaErrorInvalidValue;
  if (!aligned16(a->state) || !aligned16(a->x) || !aligned16(a->weight) || !aligned16(a->out) ||
      (s->has_bias && !aligned16(a->bias)))
    return cudaErrorInvalidValue;
  switch (s->width) {
    case 2: return launch_conv<2>(s, a, stream);
    case 3: return launch_conv<3>(s, a, stream);
    case 4: return launch_conv<4>(s, a, stream);
    default: return cudaErrorInvalidValue;
  }
}
