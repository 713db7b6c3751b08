// fp8 KV quantize / dequantize kernels: one (token, head) row of head_dim bf16 per d/8 lanes, each lane
// one 16-byte load (8 bf16) and one 8-byte fp8 store, so a warp moves 32/(d/8) consecutive rows per
// instruction, fully coalesced; U rows per lane are loaded before any is used to keep bytes in flight.
#include "quant_fp8.h"
#include "quant_rows.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

using kmq::bf16x8_to_f32;
using kmq::f32x2_to_bf16x2;
using kmq::kFull;
using kmq::kThreads;
using kmq::RowWalk;

constexpr int kUnroll = 4;  // rows per lane per iteration: 4 x 16 B loads in flight before the first use
constexpr int kWaves = 0;   // one trip per warp (kmq::grid_for_rows): no resident-block count needed

// 8 floats times inv, each product rounded to fp32 first (as the CPU reference does), then to fp8 with
// cvt.rn.satfinite (hardware on sm_89+, cuda_fp8.h's software path on sm_80; both RNE, NaN -> 0x7F).
template <__nv_fp8_interpretation_t F>
__device__ __forceinline__ uint2 encode8(const float (&f)[8], float inv) {
  uint32_t w[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t a = __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(f[4 * i], inv), __fmul_rn(f[4 * i + 1], inv)),
                                                 __NV_SATFINITE, F);
    const uint32_t b = __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(f[4 * i + 2], inv), __fmul_rn(f[4 * i + 3], inv)),
                                                 __NV_SATFINITE, F);
    w[i] = (a & 0xffffu) | (b << 16);
  }
  return make_uint2(w[0], w[1]);
}

// fp8 -> half is exact, half -> float exact; one fp32 multiply by the scale, then RNE to bf16.
template <__nv_fp8_interpretation_t F>
__device__ __forceinline__ uint4 decode8(const uint2 q, float scale) {
  const uint32_t in[2] = {q.x, q.y};
  uint32_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_fp8x2_storage_t pair = (__nv_fp8x2_storage_t)(in[i / 2] >> (16 * (i % 2)));
    const __half2 h = __half2(__nv_cvt_fp8x2_to_halfraw2(pair, F));
    const float2 v = __half22float2(h);
    out[i] = f32x2_to_bf16x2(__fmul_rn(v.x, scale), __fmul_rn(v.y, scale));
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

__device__ __forceinline__ float fp8_max(__nv_fp8_interpretation_t f) {
  return f == __NV_E4M3 ? KM_FP8_E4M3_MAX : KM_FP8_E5M2_MAX;
}

// TPR = head_dim / 8 lanes per row, 32 / TPR rows per warp instruction; a warp takes kUnroll of those consecutive
// rows per iteration and the loop bound is warp-uniform, so the amax shuffles always see a full warp.
template <int TPR, __nv_fp8_interpretation_t F, int G>
__global__ void __launch_bounds__(kThreads) fp8_quantize_kernel(const uint4 *__restrict__ src, uint2 *__restrict__ dst,
                                                                float *__restrict__ scales, size_t rows, int heads) {
  const RowWalk<TPR, kUnroll> w;
  const int part = w.part;
  for (size_t base = w.first; base < rows; base += w.step) {
    uint4 in[kUnroll][1];
    kmq::load_rows(src, w, base, rows, in);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t row = w.row(base, u);
      float f[8];
      bf16x8_to_f32(in[u][0], f);
      float scale;
      if (G == KM_QUANT_PER_TOKEN_HEAD) {
        float a = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) a = fmaxf(a, fabsf(f[j]));
#pragma unroll
        for (int m = TPR / 2; m > 0; m >>= 1) a = fmaxf(a, __shfl_xor_sync(kFull, a, m));
        scale = __fdiv_rn(a, fp8_max(F));
        if (part == 0 && row < rows) __stcs(scales + row, scale);
      } else if (G == KM_QUANT_PER_HEAD) {
        scale = row < rows ? __ldg(scales + (uint32_t)row % (uint32_t)heads) : 1.0f;
      } else {
        scale = __ldg(scales);
      }
      const float inv = scale > 0.0f ? __fdiv_rn(1.0f, scale) : 0.0f;
      if (row < rows) __stcs(dst + row * TPR + part, encode8<F>(f, inv));
    }
  }
}

template <int TPR, __nv_fp8_interpretation_t F, int G>
__global__ void __launch_bounds__(kThreads) fp8_dequantize_kernel(const uint2 *__restrict__ src, const float *__restrict__ scales,
                                                                  uint4 *__restrict__ dst, size_t rows, int heads) {
  const RowWalk<TPR, kUnroll> w;
  const int part = w.part;
  for (size_t base = w.first; base < rows; base += w.step) {
    uint2 in[kUnroll];
    float sc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t row = w.row(base, u);
      in[u] = make_uint2(0, 0);
      sc[u] = 0.0f;
      if (row < rows) {
        in[u] = __ldcs(src + row * TPR + part);
        const size_t si = G == KM_QUANT_PER_TOKEN_HEAD ? row : G == KM_QUANT_PER_HEAD ? (uint32_t)row % (uint32_t)heads : 0;
        sc[u] = __ldg(scales + si);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t row = w.row(base, u);
      if (row < rows) __stcs(dst + row * TPR + part, decode8<F>(in[u], sc[u]));
    }
  }
}

// Output row r = (seq * tokens_per_seq + i) * heads + h reads pool row
// ((block_table[seq][i / block_size] * block_size) + i % block_size) * heads + h. Block ids are widened to
// 64 bits before the multiply (pools pass 4 GiB); the row arithmetic is 32-bit (rows < 2^32 checked).
struct gather_shape {
  uint32_t tokens_per_seq, block_size, heads, blocks_per_seq;
};

__device__ __forceinline__ size_t pool_row_of(uint32_t r, const gather_shape &g, const int32_t *__restrict__ table) {
  const uint32_t t = r / g.heads, h = r - t * g.heads;
  const uint32_t s = t / g.tokens_per_seq, i = t - s * g.tokens_per_seq;
  const uint32_t bi = i / g.block_size, slot = i - bi * g.block_size;
  const int64_t block = (int64_t)__ldg(table + (size_t)s * g.blocks_per_seq + bi);
  return ((size_t)block * g.block_size + slot) * g.heads + h;
}

template <int TPR, __nv_fp8_interpretation_t F>
__global__ void __launch_bounds__(kThreads) fp8_dequant_gather_kernel(const uint2 *__restrict__ pool, const float *__restrict__ pool_scales,
                                                                      const int32_t *__restrict__ table, uint4 *__restrict__ dst,
                                                                      size_t rows, gather_shape g) {
  const RowWalk<TPR, kUnroll> w;
  const int part = w.part;
  for (size_t base = w.first; base < rows; base += w.step) {
    size_t prow[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {  // all table reads first, then all pool reads: two round trips, not 2U
      const size_t row = w.row(base, u);
      prow[u] = row < rows ? pool_row_of((uint32_t)row, g, table) : 0;
    }
    uint2 in[kUnroll];
    float sc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t row = w.row(base, u);
      in[u] = row < rows ? __ldcs(pool + prow[u] * TPR + part) : make_uint2(0, 0);
      sc[u] = row < rows ? __ldg(pool_scales + prow[u]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t row = w.row(base, u);
      if (row < rows) __stcs(dst + row * TPR + part, decode8<F>(in[u], sc[u]));
    }
  }
}

// Calls launch(F, G) with F and G as std::integral_constant for the format and the granularity.
template <typename Launch>
void for_fp8_kind(km_fp8_format fmt, km_quant_granularity gran, Launch &&launch) {
  auto by_granularity = [&](auto f) {
    if (gran == KM_QUANT_PER_TENSOR) launch(f, std::integral_constant<int, KM_QUANT_PER_TENSOR>{});
    else if (gran == KM_QUANT_PER_HEAD) launch(f, std::integral_constant<int, KM_QUANT_PER_HEAD>{});
    else launch(f, std::integral_constant<int, KM_QUANT_PER_TOKEN_HEAD>{});
  };
  if (fmt == KM_FP8_E4M3) by_granularity(std::integral_constant<__nv_fp8_interpretation_t, __NV_E4M3>{});
  else by_granularity(std::integral_constant<__nv_fp8_interpretation_t, __NV_E5M2>{});
}

// The format and granularity checks and dispatch over kmq::for_rows: launch(TPR, F, G,
// rows) with TPR, F and G as std::integral_constant.
template <typename Launch>
cudaError_t dispatch_rows(size_t tokens, int heads, int head_dim, km_fp8_format fmt, km_quant_granularity gran,
                          Launch &&launch) {
  if (fmt >= KM_FP8_FORMAT_COUNT || gran >= KM_QUANT_GRANULARITY_COUNT) return cudaErrorInvalidValue;
  return kmq::for_rows<8>(tokens, heads, head_dim, [&](auto tpr, size_t rows) {
    for_fp8_kind(fmt, gran, [&](auto f, auto g) { launch(tpr, f, g, rows); });
  });
}

}  // namespace

extern "C" cudaError_t km_quant_fp8_quantize(const uint16_t *src, uint8_t *dst, float *scales, size_t tokens, int heads,
                                             int head_dim, km_fp8_format fmt, km_quant_granularity gran,
                                             cudaStream_t stream) {
  return dispatch_rows(tokens, heads, head_dim, fmt, gran, [&](auto tpr, auto f, auto g, size_t rows) {
    constexpr int TPR = decltype(tpr)::value;
    const auto kernel = fp8_quantize_kernel<TPR, decltype(f)::value, decltype(g)::value>;
    kernel<<<RowWalk<TPR, kUnroll>::grid(0, rows, kWaves), kThreads, 0, stream>>>(
        reinterpret_cast<const uint4 *>(src), reinterpret_cast<uint2 *>(dst), scales, rows, heads);
  });
}

extern "C" cudaError_t km_quant_fp8_dequantize(const uint8_t *src, const float *scales, uint16_t *dst, size_t tokens,
                                               int heads, int head_dim, km_fp8_format fmt, km_quant_granularity gran,
                                               cudaStream_t stream) {
  return dispatch_rows(tokens, heads, head_dim, fmt, gran, [&](auto tpr, auto f, auto g, size_t rows) {
    constexpr int TPR = decltype(tpr)::value;
    const auto kernel = fp8_dequantize_kernel<TPR, decltype(f)::value, decltype(g)::value>;
    kernel<<<RowWalk<TPR, kUnroll>::grid(0, rows, kWaves), kThreads, 0, stream>>>(
        reinterpret_cast<const uint2 *>(src), scales, reinterpret_cast<uint4 *>(dst), rows, heads);
  });
}

extern "C" cudaError_t km_quant_fp8_dequant_gather(const uint8_t *pool, const float *pool_scales, const int32_t *block_table,
                                                   uint16_t *dst, int num_seqs, int tokens_per_seq, int block_size,
                                                   int heads, int head_dim, km_fp8_format fmt, cudaStream_t stream) {
  if (num_seqs < 0 || tokens_per_seq < 0 || block_size <= 0) return cudaErrorInvalidValue;
  const gather_shape g = {(uint32_t)tokens_per_seq, (uint32_t)block_size, (uint32_t)heads,
                          (uint32_t)((tokens_per_seq + block_size - 1) / block_size)};
  // the pool's scales are per token-head
  return dispatch_rows((size_t)num_seqs * (size_t)tokens_per_seq, heads, head_dim, fmt, KM_QUANT_PER_TOKEN_HEAD,
                       [&](auto tpr, auto f, auto, size_t rows) {
                         constexpr int TPR = decltype(tpr)::value;
                         const auto kernel = fp8_dequant_gather_kernel<TPR, decltype(f)::value>;
                         kernel<<<RowWalk<TPR, kUnroll>::grid(0, rows, kWaves), kThreads, 0, stream>>>(
                             reinterpret_cast<const uint2 *>(pool), pool_scales, block_table,
                             reinterpret_cast<uint4 *>(dst), rows, g);
                       });
}
