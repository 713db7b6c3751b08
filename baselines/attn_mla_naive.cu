// One CTA per (sequence, query head): four warps take the tokens in turn (warp w: w, w + 4, ...); a lane
// holds 18 of the 576 query dims for the dot product and accumulates 16 of the 512 output dims; online
// softmax per warp in fp32, the warps merged through shared memory. fp8 codes are decoded with the CUDA
// conversion and the tensor scale applied in fp32.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <math.h>

#include "bf16_bits.cuh"
#include "attn_mla_naive.h"

namespace {

constexpr int D = KM_MLA_DIM, DV = KM_MLA_VDIM, WARPS = 4;
constexpr int QPER = D / 32, VPER = DV / 32;



__device__ __forceinline__ float elem(const void *base, size_t i, bool fp8) {
  if (!fp8) return bf16f(static_cast<const uint16_t *>(base)[i]);
  const __nv_fp8_storage_t c = static_cast<const uint8_t *>(base)[i];
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3)));
}

struct NaiveParams {
  km_mla_shape s;
  int mbps;
  km_mla_args a;
};

__global__ void __launch_bounds__(WARPS * 32) mla_naive_kernel(const NaiveParams np) {
  const int heads = np.s.num_heads, bs = np.s.block_size;
  const int head = blockIdx.x % heads, seq = blockIdx.x / heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const km_mla_args &a = np.a;
  const bool fp8 = np.s.kv == KM_MLA_FP8_E4M3;
  const float ts = fp8 ? a.scale[0] : 1.f;
  const int ctx = a.context_lens[seq];
  float qv[QPER], acc[VPER];
  const uint16_t *qrow = a.q + ((size_t)seq * heads + head) * D;
  for (int i = 0; i < QPER; ++i) qv[i] = bf16f(qrow[lane * QPER + i]);
  for (int i = 0; i < VPER; ++i) acc[i] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int t = warp; t < ctx; t += WARPS) {
    const size_t row = (size_t)a.block_table[(size_t)seq * np.mbps + t / bs] * bs + t % bs;
    float s = 0.f;
    for (int i = 0; i < QPER; ++i) s += qv[i] * elem(a.cache, row * D + lane * QPER + i, fp8);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    s *= a.sm_scale * ts;
    const float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
    l = l * corr + p;
    for (int i = 0; i < VPER; ++i) acc[i] = acc[i] * corr + p * ts * elem(a.cache, row * D + lane * VPER + i, fp8);
    m = mn;
  }
  __shared__ float sm[WARPS], sl[WARPS], so[WARPS][DV];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
  for (int i = 0; i < VPER; ++i) so[warp][lane * VPER + i] = acc[i];
  __syncthreads();
  if (warp) return;
  float mx = -INFINITY;
  for (int j = 0; j < WARPS; ++j) mx = fmaxf(mx, sm[j]);
  float w[WARPS], lsum = 0.f;
  for (int j = 0; j < WARPS; ++j) {
    w[j] = sm[j] == -INFINITY ? 0.f : expf(sm[j] - mx);
    lsum += w[j] * sl[j];
  }
  uint16_t *orow = a.out + ((size_t)seq * heads + head) * DV;
  for (int i = 0; i < VPER; ++i) {
    const int d = lane * VPER + i;
    float o = 0.f;
    for (int j = 0; j < WARPS; ++j) o += w[j] * so[j][d];
    orow[d] = f2bf16(lsum > 0.f ? o / lsum : 0.f);
  }
}

}  // namespace

extern "C" cudaError_t km_mla_naive_decode(const km_mla_shape *s, int batch, int max_blocks_per_seq,
                                           const km_mla_args *a, cudaStream_t stream) {
  if (km_mla_shape_error(s) || batch < 1) return cudaErrorInvalidValue;
  if (s->kv == KM_MLA_FP8_E4M3 && !a->scale) return cudaErrorInvalidValue;
  NaiveParams np;
  np.s = *s;
  np.mbps = max_blocks_per_seq;
  np.a = *a;
  mla_naive_kernel<<<(unsigned)((size_t)batch * s->num_heads), WARPS * 32, 0, stream>>>(np);
  return cudaGetLastError();
}
