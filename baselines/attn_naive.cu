// One CTA per (sequence, query token, query head): four warps walk the visible tokens one at a time
// (warp w takes w, w + 4, ...; or the tokens of the selected pages), each lane holding head_dim / 32 dims;
// a warp-wide fp32 dot product per token, an online softmax per warp, the four warps merged through shared
// memory at the end. fp8 codes are decoded with the CUDA fp8 conversions and scaled in fp32; 3-bit codes
// are read bit by bit from their group record and dequantized in fp32; TurboQuant rows are dequantized whole
// by the warp (levels, a warp-wide Walsh-Hadamard transform, signs, norm).
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <math.h>

#include "bf16_bits.cuh"
#include "tq3_sign.h"
#include "attn_baselines.h"

namespace {



// Element dim of head row hr (token row x KV heads + KV head) of a cache.
__device__ __forceinline__ float elem(const void *cache, size_t hr, int dim, int kv, int D) {
  const size_t i = hr * D + dim;
  if (kv == KM_ATTN_U3) {  // bit 3 x (dim % 32) of the group's record, LSB first; fp16 scale and zero after the codes
    const uint8_t *rec = static_cast<const uint8_t *>(cache) + hr * (D / 2) + (size_t)(dim / 32) * KM_ATTN_U3_RECORD;
    const int bit = 3 * (dim % 32);
    const unsigned two = rec[bit / 8] | (unsigned)rec[bit / 8 + 1] << 8;
    const float code = (float)((two >> (bit % 8)) & 7u);
    const __half scale = *reinterpret_cast<const __half *>(rec + 12), zero = *reinterpret_cast<const __half *>(rec + 14);
    return fmaf(code, __half2float(scale), __half2float(zero));
  }
  const void *base = cache;
  if (kv == KM_ATTN_BF16) return bf16f(static_cast<const uint16_t *>(base)[i]);
  const __nv_fp8_storage_t c = static_cast<const uint8_t *>(base)[i];
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, kv == KM_ATTN_FP8_E4M3 ? __NV_E4M3 : __NV_E5M2)));
}

// TurboQuant: this lane's PER dims (lane * PER + i) of head row hr, dequantized: the codebook levels of all
// the row's codes, the unnormalised Walsh-Hadamard transform across the warp (in-lane over the low index
// bits, shuffles over the lane's), the sign flip, norm / head_dim.
template <int PER>
__device__ void tq_row(const void *codes, const uint16_t *side, size_t side_stride, size_t hr, int lane, float (&x)[PER]) {
  constexpr int D = 32 * PER;
  const float levels[8] = {-KM_TQ_L3, -KM_TQ_L2, -KM_TQ_L1, -KM_TQ_L0, KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};
  const uint8_t *row = static_cast<const uint8_t *>(codes) + hr * (3 * D / 8);
  for (int i = 0; i < PER; ++i) {
    const int bit = 3 * (lane * PER + i);
    unsigned two = row[bit / 8];
    if (bit % 8 > 5) two |= (unsigned)row[bit / 8 + 1] << 8; /* the code spills into the next byte */
    x[i] = levels[(two >> (bit % 8)) & 7u];
  }
  for (int len = 1; len < PER; len <<= 1)
    for (int i = 0; i < PER; ++i)
      if (!(i & len)) {
        const float a = x[i], b = x[i | len];
        x[i] = a + b;
        x[i | len] = a - b;
      }
  for (int m = 1; m < 32; m <<= 1)
    for (int i = 0; i < PER; ++i) {
      const float other = __shfl_xor_sync(0xffffffffu, x[i], m);
      x[i] = (lane & m) ? other - x[i] : x[i] + other;
    }
  const float f = __half2float(__ushort_as_half(side[hr * side_stride])) / (float)D;
  for (int i = 0; i < PER; ++i) x[i] *= km_tq3_negative((uint32_t)(lane * PER + i)) ? -f : f;
}

struct NaiveParams {
  km_attn_naive_shape s;
  km_attn_args a;
};

template <int D>
__global__ void __launch_bounds__(128) naive_kernel(const NaiveParams np) {
  constexpr int PER = D / 32;
  const km_attn_shape &sh = np.s.shape;
  const km_attn_args &a = np.a;
  const int heads = sh.num_heads, kvh_n = sh.num_kv_heads;
  const int head = blockIdx.x % heads, qi = blockIdx.x / heads % sh.q_len, seq = blockIdx.x / heads / sh.q_len;
  const int kvh = head / (heads / kvh_n);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int ctx = a.context_lens[seq];
  const int pos = ctx - sh.q_len + qi;
  const int lo = sh.window > 0 ? max(0, pos - sh.window + 1) : 0;
  const bool fp8 = sh.kv == KM_ATTN_FP8_E4M3 || sh.kv == KM_ATTN_FP8_E5M2;
  const bool per_token = fp8 && sh.scale == KM_ATTN_SCALE_TOKEN_HEAD;
  const float kst = fp8 && !per_token ? a.k_scale[0] : 1.f;
  const float vst = fp8 && !per_token ? a.v_scale[0] : 1.f;
  float qv[PER], acc[PER];
  const uint16_t *qrow = a.q + ((size_t)(seq * sh.q_len + qi) * heads + head) * D;
  for (int i = 0; i < PER; ++i) {
    qv[i] = bf16f(qrow[lane * PER + i]);
    acc[i] = 0.f;
  }
  const int n = np.s.sparse_pages > 0 ? np.s.sparse_pages * KM_ATTN_TILE : pos + 1 - lo;
  const int32_t *sel = np.s.sparse_pages > 0 ? a.selected + ((size_t)seq * kvh_n + kvh) * np.s.sparse_pages : nullptr;
  float m = -INFINITY, l = 0.f;
  for (int j = warp; j < n; j += 4) {
    const int t = sel ? sel[j / KM_ATTN_TILE] * KM_ATTN_TILE + j % KM_ATTN_TILE : lo + j;
    if (t > pos || t < lo) continue;
    const size_t row =
        (size_t)a.block_table[(size_t)seq * np.s.max_blocks_per_seq + t / sh.block_size] * sh.block_size +
        t % sh.block_size;
    const size_t hr = row * kvh_n + kvh;
    float s = 0.f, kx[PER], vx[PER];
    if (sh.kv == KM_ATTN_TQ3) {
      tq_row<PER>(a.k_cache, a.k_side, 1, hr, lane, kx);
      tq_row<PER>(a.v_cache, a.v_side, 2, hr, lane, vx);
    } else {
      for (int i = 0; i < PER; ++i) {
        kx[i] = elem(a.k_cache, hr, lane * PER + i, sh.kv, D);
        vx[i] = elem(a.v_cache, hr, lane * PER + i, sh.kv, D);
      }
    }
    for (int i = 0; i < PER; ++i) s += qv[i] * kx[i];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float ks = per_token ? a.k_scale[row * kvh_n + kvh] : kst;
    const float vs = per_token ? a.v_scale[row * kvh_n + kvh] : vst;
    s *= a.sm_scale * ks;
    const float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
    l = l * corr + p;
    for (int i = 0; i < PER; ++i) acc[i] = acc[i] * corr + p * vs * vx[i];
    m = mn;
  }
  __shared__ float sm[4], sl[4], so[4][D];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
  for (int i = 0; i < PER; ++i) so[warp][lane * PER + i] = acc[i];
  __syncthreads();
  if (warp == 0) {
    const float mx = fmaxf(fmaxf(sm[0], sm[1]), fmaxf(sm[2], sm[3]));
    float w[4], lsum = 0.f;
    for (int j = 0; j < 4; ++j) {
      w[j] = sm[j] == -INFINITY ? 0.f : expf(sm[j] - mx);
      lsum += w[j] * sl[j];
    }
    uint16_t *orow = a.out + ((size_t)(seq * sh.q_len + qi) * heads + head) * D;
    for (int i = 0; i < PER; ++i) {
      const int dd = lane * PER + i;
      float o = 0.f;
      for (int j = 0; j < 4; ++j) o += w[j] * so[j][dd];
      orow[dd] = f2bf16(lsum > 0.f ? o / lsum : 0.f);
    }
  }
}

}  // namespace

extern "C" cudaError_t km_attn_naive_decode(const km_attn_naive_shape *s, const km_attn_args *a, cudaStream_t stream) {
  if (km_attn_shape_error(&s->shape) || s->batch < 1) return cudaErrorInvalidValue;
  NaiveParams np;
  np.s = *s;
  np.a = *a;
  const dim3 grid((unsigned)((size_t)s->batch * s->shape.q_len * s->shape.num_heads));
  switch (s->shape.head_dim) {
    case 64: naive_kernel<64><<<grid, 128, 0, stream>>>(np); break;
    case 128: naive_kernel<128><<<grid, 128, 0, stream>>>(np); break;
    case 256: naive_kernel<256><<<grid, 128, 0, stream>>>(np); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
