// Scalar quant/ baselines: one element, output byte or vector per thread, plain 1- and 2-byte accesses.
// Every fp32 step is the same _rn operation as in the fast kernels, so the codes are identical.
#include "quant_scalar.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "quant_3bit.h"

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(size_t n) { return (unsigned)((n + kThreads - 1) / kThreads); }

__device__ __forceinline__ float bf(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ uint16_t to_bf(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }

__global__ void fp8_amax_rows(const uint16_t *src, float *scales, size_t rows, int d, float fmax) {
  const size_t r = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (r >= rows) return;
  float a = 0.0f;
  for (int i = 0; i < d; ++i) a = fmaxf(a, fabsf(bf(src[r * d + i])));
  scales[r] = __fdiv_rn(a, fmax);
}

// The scale of row r: its own (per token-head), its head's (per head) or the tensor's.
__device__ __forceinline__ size_t scale_index(km_quant_granularity g, size_t row, int heads) {
  return g == KM_QUANT_PER_TOKEN_HEAD ? row : g == KM_QUANT_PER_HEAD ? row % (size_t)heads : 0;
}

__global__ void fp8_encode_elems(const uint16_t *src, const float *scales, uint8_t *dst, size_t n, int d, int heads,
                                 km_quant_granularity g, __nv_fp8_interpretation_t fmt) {
  const size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (i >= n) return;
  const float s = scales[scale_index(g, i / d, heads)];
  const float inv = s > 0.0f ? __fdiv_rn(1.0f, s) : 0.0f;
  dst[i] = __nv_cvt_float_to_fp8(__fmul_rn(bf(src[i]), inv), __NV_SATFINITE, fmt);
}

__global__ void fp8_decode_elems(const uint8_t *src, const float *scales, uint16_t *dst, size_t n, int d, int heads,
                                 km_quant_granularity g, __nv_fp8_interpretation_t fmt) {
  const size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (i >= n) return;
  const float v = __half2float(__half(__nv_cvt_fp8_to_halfraw(src[i], fmt)));
  dst[i] = to_bf(__fmul_rn(v, scales[scale_index(g, i / d, heads)]));
}

// Record layout (quant_3bit.h): 12 code bytes, fp16 scale, fp16 zero per group of 32.
__global__ void u3_group_stats(const uint16_t *src, uint8_t *dst, size_t groups) {
  const size_t g = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (g >= groups) return;
  float mn = bf(src[g * KM_U3_GROUP]), mx = mn;
  for (int i = 1; i < KM_U3_GROUP; ++i) {
    mn = fminf(mn, bf(src[g * KM_U3_GROUP + i]));
    mx = fmaxf(mx, bf(src[g * KM_U3_GROUP + i]));
  }
  uint16_t *side = reinterpret_cast<uint16_t *>(dst + g * KM_U3_GROUP_BYTES + 12);
  side[0] = __half_as_ushort(__float2half_rn(__fdiv_rn(__fsub_rn(mx, mn), 7.0f)));
  side[1] = __half_as_ushort(__float2half_rn(mn));
}

__device__ __forceinline__ uint32_t u3_code(float x, float z, float inv) {
  return (uint32_t)min(max(__float2int_rn(__fmul_rn(__fsub_rn(x, z), inv)), 0), 7);
}

__global__ void u3_code_bytes(const uint16_t *src, uint8_t *dst, size_t nbytes) {
  const size_t t = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (t >= nbytes) return;
  const size_t g = t / 12;
  const int b = (int)(t % 12);
  const uint8_t *rec = dst + g * KM_U3_GROUP_BYTES;
  const float s = __half2float(__ushort_as_half((unsigned short)(rec[12] | rec[13] << 8)));
  const float z = __half2float(__ushort_as_half((unsigned short)(rec[14] | rec[15] << 8)));
  const float inv = s > 0.0f ? __fdiv_rn(1.0f, s) : 0.0f;
  uint32_t byte = 0;
  for (int c = (8 * b) / 3; c <= (8 * b + 7) / 3; ++c) {  // the 2-3 codes overlapping bits [8b, 8b + 8)
    const int shift = 3 * c - 8 * b;
    const uint32_t q = u3_code(bf(src[g * KM_U3_GROUP + c]), z, inv);
    byte |= shift >= 0 ? q << shift : q >> -shift;
  }
  dst[g * KM_U3_GROUP_BYTES + b] = (uint8_t)byte;
}

__global__ void u3_decode_elems(const uint8_t *src, uint16_t *dst, size_t n) {
  const size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (i >= n) return;
  const uint8_t *rec = src + (i / KM_U3_GROUP) * KM_U3_GROUP_BYTES;
  const int c = (int)(i % KM_U3_GROUP), bit = 3 * c;
  const uint32_t two = rec[bit / 8] | (bit / 8 + 1 < 12 ? (uint32_t)rec[bit / 8 + 1] << 8 : 0u);
  const uint32_t q = (two >> (bit % 8)) & 7u;
  const float s = __half2float(__ushort_as_half((unsigned short)(rec[12] | rec[13] << 8)));
  const float z = __half2float(__ushort_as_half((unsigned short)(rec[14] | rec[15] << 8)));
  dst[i] = to_bf(__fmaf_rn((float)q, s, z));
}

__device__ bool tq_negative(int i) {
  uint64_t z = KM_TQ_SIGN_SEED + (uint64_t)i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return ((z ^ (z >> 31)) >> 63) != 0;
}

__device__ void fwht(float *a, int n) {
  for (int h = 1; h < n; h *= 2)
    for (int i = 0; i < n; i += 2 * h)
      for (int j = i; j < i + h; ++j) {
        const float x = a[j], y = a[j + h];
        a[j] = __fadd_rn(x, y);
        a[j + h] = __fsub_rn(x, y);
      }
}

__device__ float pairwise(float *a, int n) {
  for (int h = 1; h < n; h *= 2)
    for (int i = 0; i < n; i += 2 * h) a[i] = __fadd_rn(a[i], a[i + h]);
  return a[0];
}

__device__ float tq_level(int c) {
  const float mags[4] = {KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};
  return c >= 4 ? mags[c - 4] : -mags[3 - c];
}

__global__ void tq3_quantize_rows(const uint16_t *src, uint8_t *codes, uint16_t *side, size_t rows, int d, int is_v) {
  const size_t r = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (r >= rows) return;
  float y[256], sq[256];
  for (int i = 0; i < d; ++i) {
    const float v = bf(src[r * d + i]);
    sq[i] = __fmul_rn(v, v);
    y[i] = tq_negative(i) ? -v : v;
  }
  const float s2 = pairwise(sq, d), norm = __fsqrt_rn(s2), inv = s2 > 0.0f ? __fdiv_rn(1.0f, norm) : 0.0f;
  fwht(y, d);
  uint8_t *out = codes + r * (3 * d / 8);
  for (int g = 0; g < d / 8; ++g) {
    uint32_t v = 0;
    for (int j = 0; j < 8; ++j) {
      const float u = __fmul_rn(y[8 * g + j], inv), a = fabsf(u);
      const int idx = (a >= KM_TQ_B1) + (a >= KM_TQ_B2) + (a >= KM_TQ_B3);
      const int c = signbit(u) ? 3 - idx : 4 + idx;
      const float diff = __fsub_rn(u, tq_level(c));
      sq[8 * g + j] = __fmul_rn(diff, diff);
      v |= (uint32_t)c << (3 * j);
    }
    out[3 * g] = (uint8_t)v;
    out[3 * g + 1] = (uint8_t)(v >> 8);
    out[3 * g + 2] = (uint8_t)(v >> 16);
  }
  const uint16_t nh = __half_as_ushort(__float2half_rn(norm));
  if (is_v) {
    const float res = __fmul_rn(norm, __fsqrt_rn(__fmul_rn(pairwise(sq, d), 1.0f / (float)d)));
    side[2 * r] = nh;
    side[2 * r + 1] = __half_as_ushort(__float2half_rn(res));
  } else {
    side[r] = nh;
  }
}

__global__ void tq3_dequantize_rows(const uint8_t *codes, const uint16_t *side, uint16_t *dst, size_t rows, int d, int is_v) {
  const size_t r = (size_t)blockIdx.x * kThreads + threadIdx.x;
  if (r >= rows) return;
  float y[256];
  const uint8_t *in = codes + r * (3 * d / 8);
  for (int g = 0; g < d / 8; ++g) {
    const uint32_t v = in[3 * g] | (uint32_t)in[3 * g + 1] << 8 | (uint32_t)in[3 * g + 2] << 16;
    for (int j = 0; j < 8; ++j) y[8 * g + j] = tq_level((int)((v >> (3 * j)) & 7u));
  }
  fwht(y, d);
  const float scale = __fmul_rn(__half2float(__ushort_as_half(side[is_v ? 2 * r : r])), 1.0f / (float)d);
  for (int i = 0; i < d; ++i) {
    const float v = __fmul_rn(y[i], scale);
    dst[r * d + i] = to_bf(tq_negative(i) ? -v : v);
  }
}

bool dims_ok(int heads, int d) { return heads > 0 && (d == 64 || d == 128 || d == 256); }

__nv_fp8_interpretation_t interp(km_fp8_format f) { return f == KM_FP8_E4M3 ? __NV_E4M3 : __NV_E5M2; }

}  // namespace

extern "C" cudaError_t km_scalar_fp8_quantize(const uint16_t *src, uint8_t *dst, float *scales, size_t tokens, int heads,
                                              int d, km_fp8_format fmt, km_quant_granularity gran, cudaStream_t stream) {
  if (!dims_ok(heads, d) || gran >= KM_QUANT_GRANULARITY_COUNT) return cudaErrorInvalidValue;
  const size_t rows = tokens * heads, n = rows * d;
  if (!n) return cudaSuccess;
  if (gran == KM_QUANT_PER_TOKEN_HEAD)
    fp8_amax_rows<<<blocks_for(rows), kThreads, 0, stream>>>(src, scales, rows, d,
                                                              fmt == KM_FP8_E4M3 ? KM_FP8_E4M3_MAX : KM_FP8_E5M2_MAX);
  fp8_encode_elems<<<blocks_for(n), kThreads, 0, stream>>>(src, scales, dst, n, d, heads, gran, interp(fmt));
  return cudaGetLastError();
}

extern "C" cudaError_t km_scalar_fp8_dequantize(const uint8_t *src, const float *scales, uint16_t *dst, size_t tokens,
                                                int heads, int d, km_fp8_format fmt, km_quant_granularity gran,
                                                cudaStream_t stream) {
  if (!dims_ok(heads, d) || gran >= KM_QUANT_GRANULARITY_COUNT) return cudaErrorInvalidValue;
  const size_t n = tokens * heads * d;
  if (!n) return cudaSuccess;
  fp8_decode_elems<<<blocks_for(n), kThreads, 0, stream>>>(src, scales, dst, n, d, heads, gran, interp(fmt));
  return cudaGetLastError();
}

extern "C" cudaError_t km_scalar_u3_quantize(const uint16_t *src, uint8_t *dst, size_t tokens, int heads, int d,
                                             cudaStream_t stream) {
  if (!dims_ok(heads, d)) return cudaErrorInvalidValue;
  const size_t groups = tokens * heads * (d / KM_U3_GROUP);
  if (!groups) return cudaSuccess;
  u3_group_stats<<<blocks_for(groups), kThreads, 0, stream>>>(src, dst, groups);
  u3_code_bytes<<<blocks_for(groups * 12), kThreads, 0, stream>>>(src, dst, groups * 12);
  return cudaGetLastError();
}

extern "C" cudaError_t km_scalar_u3_dequantize(const uint8_t *src, uint16_t *dst, size_t tokens, int heads, int d,
                                               cudaStream_t stream) {
  if (!dims_ok(heads, d)) return cudaErrorInvalidValue;
  const size_t n = tokens * heads * d;
  if (!n) return cudaSuccess;
  u3_decode_elems<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

extern "C" cudaError_t km_scalar_tq3_quantize(const uint16_t *src, uint8_t *codes, uint16_t *side, size_t tokens,
                                              int heads, int d, int is_v, cudaStream_t stream) {
  if (!dims_ok(heads, d)) return cudaErrorInvalidValue;
  const size_t rows = tokens * heads;
  if (!rows) return cudaSuccess;
  tq3_quantize_rows<<<blocks_for(rows), kThreads, 0, stream>>>(src, codes, side, rows, d, is_v);
  return cudaGetLastError();
}

extern "C" cudaError_t km_scalar_tq3_dequantize(const uint8_t *codes, const uint16_t *side, uint16_t *dst, size_t tokens,
                                                int heads, int d, int is_v, cudaStream_t stream) {
  if (!dims_ok(heads, d)) return cudaErrorInvalidValue;
  const size_t rows = tokens * heads;
  if (!rows) return cudaSuccess;
  tq3_dequantize_rows<<<blocks_for(rows), kThreads, 0, stream>>>(codes, side, dst, rows, d, is_v);
  return cudaGetLastError();
}
