// 3-bit KV quantize / dequantize kernels: uniform asymmetric (group 32) and TurboQuant-style (sign flip +
// Walsh-Hadamard rotation + Lloyd-Max codebook). Each (token, head) row is spread over a few lanes of a
// warp with 16-byte loads; every fp32 step is an explicit _rn intrinsic so the CPU reference (micro/
// quant_ref.c) reproduces the codes bit for bit. Layouts and byte counts: quant_3bit.h.
//
// Operation count per element, TurboQuant at d = 128 (16 values per lane, 8 lanes per row), counted in
// the sm_90 SASS of the row loop (nvdisasm, fast path, 2 rows per lane per trip):
//   dequantize was ~47: the splitmix64 sign hashes were rematerialised by ptxas inside the loop (~20)
//   and the level select chain cost ~12. Now ~19.6: level = SHF + LOP3 + LDS from a shared table (2 ALU
//   + 1 LDS), FWHT 4 in-lane FADD + 3 x (SHFL + FFMA), scale FMUL 1, bf16 pack 0.5, sign XOR 0.5, loads,
//   addresses and stores ~1.5.
//   quantize K was ~36 (V ~51); now ~33.6 (V ~41): bf16 unpack + sign 1.5, squares + norm tree ~2.4,
//   FWHT 10 (3 SHFL), scale 1, codebook word ~7 (3 compares + select + place + sign), code repack SHFL
//   and stores ~1.5, per-row sqrt/div ~2; V adds level lookup 3 + FSUB + FMUL + tree ~3.
// Bytes per element: 2 (bf16) + 3/8 (codes) + 2/d (norm) = 2.39 B. At 60% of the 4.21 TB/s memcpy ceiling
// that is 1.06e12 elements/s, i.e. ~8 SM clocks per warp-element (132 SMs, ~1.98 GHz) or ~32 issue slots
// at 4 per clock: dequantize (~20 issues, ~4 MIO ops: 3 SHFL + 1 LDS) fits with margin, quantize (~34)
// does not: its rotation + codebook ARITHMETIC (instruction issue), not memory, bounds it near 45-50%.
//
// These TurboQuant quantize kernels are variant v1 (KM_TQ3_LANES) now; the default and v2-v4 are the
// thread-per-row kernels of quant_tq3_rows.cu (reports/quant-notes.md: with nvcc 13.0 the compare above
// is FSETP + SEL, and v1's loop is ~37 SASS per element at d128 K, ~47 for V).
#include "tq3_sign.h"
#include "quant_3bit.h"
#include "quant_rows.cuh"
#include "quant_tq3_mma.h"
#include "quant_tq3_rows.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

using kmq::bf16x8_to_f32;
using kmq::f32x8_to_bf16x8;
using kmq::kFull;
using kmq::kThreads;
using kmq::RowWalk;

constexpr int kUnrollU3 = 4;  // uniform: rows per lane per iteration (4 x 16 B loads in flight)
constexpr int kUnrollTq = 2;  // TurboQuant: 2 rows x 2 x 16 B in flight; more costs registers, not needed
// Grid caps in waves of resident blocks (kmq::grid_for_rows, counts from the km_quant_plan), as measured best on the H200
constexpr int kWavesU3Quantize = 8, kWavesU3Dequantize = 0, kWavesTq = 4;

// ---------------------------------------------------------------- uniform 3-bit, group 32

// TPR = d/8 lanes per row, one 16-byte load each; a group of 32 is 4 lanes, reduced with xor 1, 2.
// Each lane writes word (part & 3) of its group's 16-byte record, so a warp store is 128 B contiguous.
template <int TPR>
__global__ void __launch_bounds__(kThreads) u3_quantize_kernel(const uint4 *__restrict__ src, uint32_t *__restrict__ dst,
                                                               size_t rows) {
  const RowWalk<TPR, kUnrollU3> w;
  const int part = w.part, k = part & 3;
  // word k of a record: k < 3 are codes, bits [32k, 32k + 32) of the group's 4 x 24-bit stream
  const int src0 = (4 * k) / 3, shift = 8 * (4 * k - 3 * src0);
  for (size_t base = w.first; base < rows; base += w.step) {
    uint4 in[kUnrollU3][1];
    kmq::load_rows(src, w, base, rows, in);
#pragma unroll
    for (int u = 0; u < kUnrollU3; ++u) {
      const size_t row = w.row(base, u);
      float f[8];
      bf16x8_to_f32(in[u][0], f);
      float mn = f[0], mx = f[0];
#pragma unroll
      for (int j = 1; j < 8; ++j) {
        mn = fminf(mn, f[j]);
        mx = fmaxf(mx, f[j]);
      }
#pragma unroll
      for (int m = 1; m < 4; m <<= 1) {
        mn = fminf(mn, __shfl_xor_sync(kFull, mn, m));
        mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, m));
      }
      const __half zero_h = __float2half_rn(mn);
      const __half scale_h = __float2half_rn(__fdiv_rn(__fsub_rn(mx, mn), 7.0f));
      const float z = __half2float(zero_h), s = __half2float(scale_h);
      const float inv = s > 0.0f ? __fdiv_rn(1.0f, s) : 0.0f;
      uint32_t v = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int q = min(max(__float2int_rn(__fmul_rn(__fsub_rn(f[j], z), inv)), 0), 7);
        v |= (uint32_t)q << (3 * j);
      }
      const uint32_t a = __shfl_sync(kFull, v, src0, 4), b = __shfl_sync(kFull, v, src0 + 1, 4);
      const uint32_t side = (uint32_t)__half_as_ushort(scale_h) | ((uint32_t)__half_as_ushort(zero_h) << 16);
      const uint32_t word = k == 3 ? side : (a >> shift) | (b << (24 - shift));
      if (row < rows) __stcs(dst + row * TPR + part, word);
    }
  }
}

// Each lane loads its group's whole 16-byte record (4 lanes, one address) and takes its 24 bits.
template <int TPR>
__global__ void __launch_bounds__(kThreads) u3_dequantize_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst,
                                                                 size_t rows) {
  const RowWalk<TPR, kUnrollU3> w;
  const int part = w.part, k = part & 3;
  const int bit_shift = (24 * k) & 31;  // 0, 24, 16, 8
  for (size_t base = w.first; base < rows; base += w.step) {
    uint4 in[kUnrollU3];
#pragma unroll
    for (int u = 0; u < kUnrollU3; ++u) {  // the lane's group record: 4 lanes, one address
      const size_t row = w.row(base, u);
      in[u] = row < rows ? __ldcs(src + row * (TPR / 4) + (part >> 2)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnrollU3; ++u) {
      const size_t row = w.row(base, u);
      const uint4 r = in[u];
      const uint32_t lo = k < 2 ? r.x : k == 2 ? r.y : r.z;
      const uint32_t hi = k < 2 ? r.y : r.z;
      const uint32_t v = __funnelshift_r(lo, hi, bit_shift);
      const float s = __half2float(__ushort_as_half((unsigned short)(r.w & 0xffffu)));
      const float z = __half2float(__ushort_as_half((unsigned short)(r.w >> 16)));
      float f[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) f[j] = __fmaf_rn((float)((v >> (3 * j)) & 7u), s, z);
      if (row < rows) __stcs(dst + row * TPR + part, f32x8_to_bf16x8(f));
    }
  }
}

// ---------------------------------------------------------------- TurboQuant 3-bit

// Lane `part` of a row holds chunks c = part and part + TPR of 8 elements: element 8 * (part + TPR * k) + j.
// Index bits 0-2 are in-lane (j), the next log2(TPR) across lanes, the top one in-lane (k), so every
// FWHT stage runs in increasing stride order exactly like the CPU's textbook loop, and each 16-byte load
// instruction covers whole contiguous spans of rows.
__device__ __forceinline__ uint32_t tq_sign_bit(uint32_t i) { return km_tq3_negative(i) << 31; }

// Per-block tables in shared memory, filled once per block: the sign masks as XOR words over packed
// bf16 pairs (word e / 2 covers elements e, e + 1) and the 8 signed codebook levels. Kept in shared
// memory because ptxas otherwise rematerialises the splitmix64 hashes (2 x 64-bit multiply chains per
// pair, ~20 SASS each) inside the row loop to save registers: that was ~20 of the ~47 SASS per element
// of the old dequantize. The level table turns the branchless select chain (~12 SASS per element) into
// shift + mask + one conflict-free LDS (8 words in 8 banks; equal indices broadcast).
struct TqTables {
  uint32_t sign[128];  // head_dim <= 256
  float level[8];
};

__device__ __forceinline__ void tq_fill_tables(TqTables &t) {
  for (int i = threadIdx.x; i < 128; i += blockDim.x) t.sign[i] = (tq_sign_bit(2u * i) >> 16) | tq_sign_bit(2u * i + 1);
  if (threadIdx.x < 8) {
    const int m = threadIdx.x < 4 ? 3 - threadIdx.x : threadIdx.x - 4;
    const float mag = m == 0 ? KM_TQ_L0 : m == 1 ? KM_TQ_L1 : m == 2 ? KM_TQ_L2 : KM_TQ_L3;
    t.level[threadIdx.x] = threadIdx.x < 4 ? -mag : mag;
  }
  __syncthreads();
}

// Level of the 3-bit code at bits [3j, 3j + 3) of v, looked up by byte offset (no separate scaling).
__device__ __forceinline__ float tq_level_at(const TqTables &t, uint32_t v, int j) {  // j: unrolled constant
  const uint32_t off = (j == 0 ? v << 2 : v >> (3 * j - 2)) & 0x1cu;
  return *reinterpret_cast<const float *>(reinterpret_cast<const char *>(t.level) + off);
}

// The sign masks of one lane: 4 XOR words per chunk of 8 elements.
template <int TPR>
__device__ __forceinline__ void tq_sign_words(const TqTables &t, int part, uint32_t (&w)[2][4]) {
#pragma unroll
  for (int k = 0; k < 2; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) w[k][i] = t.sign[4 * (part + TPR * k) + i];
}

__device__ __forceinline__ uint4 xor4(uint4 a, const uint32_t (&w)[4]) {
  return make_uint4(a.x ^ w[0], a.y ^ w[1], a.z ^ w[2], a.w ^ w[3]);
}

__device__ __forceinline__ void fwht_in_lane8(float *f) {
#pragma unroll
  for (int h = 1; h < 8; h <<= 1)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (!(j & h)) {
        const float a = f[j], b = f[j + h];
        f[j] = __fadd_rn(a, b);
        f[j + h] = __fsub_rn(a, b);
      }
}

// Unnormalised FWHT of the row: strides 1, 2, 4 in-lane, 8 .. 4 * TPR across lanes, 8 * TPR in-lane.
// Across lanes the lower partner keeps a + b and the upper b - a... written as fma(own, +-1, other) so
// the result is the single rounding of (lower + upper) or (lower - upper), as on the CPU.
template <int TPR>
__device__ __forceinline__ void fwht_row(float (&f)[2][8], int part) {
  fwht_in_lane8(f[0]);
  fwht_in_lane8(f[1]);
#pragma unroll
  for (int m = 1; m < TPR; m <<= 1) {
    const float sg = (part & m) ? -1.0f : 1.0f;
#pragma unroll
    for (int k = 0; k < 2; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float other = __shfl_xor_sync(kFull, f[k][j], m);
        f[k][j] = __fmaf_rn(f[k][j], sg, other);
      }
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float a = f[0][j], b = f[1][j];
    f[0][j] = __fadd_rn(a, b);
    f[1][j] = __fsub_rn(a, b);
  }
}

// Pairwise (tree) sum over the row's index bits, low bit first: in-lane 8, across lanes, then the 2 chunks.
template <int TPR>
__device__ __forceinline__ float tree8(const float *q) {
  const float a = __fadd_rn(q[0], q[1]), b = __fadd_rn(q[2], q[3]), c = __fadd_rn(q[4], q[5]), d = __fadd_rn(q[6], q[7]);
  return __fadd_rn(__fadd_rn(a, b), __fadd_rn(c, d));
}

template <int TPR>
__device__ __forceinline__ float row_tree_sum(float p0, float p1) {
#pragma unroll
  for (int m = 1; m < TPR; m <<= 1) {
    p0 = __fadd_rn(p0, __shfl_xor_sync(kFull, p0, m));
    p1 = __fadd_rn(p1, __shfl_xor_sync(kFull, p1, m));
  }
  return __fadd_rn(p0, p1);
}

// -1 when a >= b, else 0 (also 0 when either is NaN, like the CPU's a >= b): one FSET, no predicate + SEL.
__device__ __forceinline__ int ge_mask(float a, float b) {
  int m;
  asm("set.ge.s32.f32 %0, %1, %2;" : "=r"(m) : "f"(a), "f"(b));
  return m;
}

// The 8 codes of a chunk as one 24-bit word, built word-wise: code = (4 + idx) ^ (signbit ? 7 : 0) with
// idx = [|u| >= B1] + [|u| >= B2] + [|u| >= B3]. No 3-bit field carries (4 + idx <= 7), so the word is
// (0x924924 + sum idx_j << 3j) ^ (sum signbit_j << 3j) * 7. Per element: 3 FSET + IADD3 + IMAD (idx into
// place) + SHF + LOP3 (sign bit into place): 7 SASS instead of ~13 with per-element selects and shifts.
__device__ __forceinline__ uint32_t tq_code_word(const float (&u)[8]) {
  uint32_t acc = 0x924924u, neg = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float a = fabsf(u[j]);
    const int minus_idx = ge_mask(a, KM_TQ_B1) + ge_mask(a, KM_TQ_B2) + ge_mask(a, KM_TQ_B3);
    acc += (uint32_t)minus_idx * (0u - (1u << (3 * j)));  // += idx << 3j
    neg |= (__float_as_uint(u[j]) >> (31 - 3 * j)) & (1u << (3 * j));
  }
  return acc ^ (neg * 7u);
}

// Rotated codes of one row: 2 chunks x 8 codes of 24 bits per lane; word `part` (< 3 * TPR / 4) of each
// chunk's 3 * TPR bytes is bits [32 part, 32 part + 32) of the TPR lanes' 24-bit values.
template <int TPR>
__device__ __forceinline__ void tq_store_codes(uint32_t *__restrict__ row_words, const uint32_t (&v)[2], int part,
                                               bool valid) {
  const int src0 = (4 * part) / 3, shift = 8 * (4 * part - 3 * src0);
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint32_t a = __shfl_sync(kFull, v[k], src0, TPR), b = __shfl_sync(kFull, v[k], src0 + 1, TPR);
    if (valid && part < 3 * TPR / 4) __stcs(row_words + k * (3 * TPR / 4) + part, (a >> shift) | (b << (24 - shift)));
  }
}

template <int TPR, bool V>
__global__ void __launch_bounds__(kThreads) tq3_quantize_kernel(const uint4 *__restrict__ src, uint32_t *__restrict__ codes,
                                                                uint16_t *__restrict__ side, size_t rows) {
  constexpr int D = 16 * TPR;
  const RowWalk<TPR, kUnrollTq> w;
  const int part = w.part;
  __shared__ TqTables tab;
  tq_fill_tables(tab);
  uint32_t sw[2][4];
  tq_sign_words<TPR>(tab, part, sw);
  for (size_t base = w.first; base < rows; base += w.step) {
    uint4 in[kUnrollTq][2];
    kmq::load_rows(src, w, base, rows, in);
#pragma unroll
    for (int u = 0; u < kUnrollTq; ++u) {
      const size_t row = w.row(base, u);
      float f[2][8], p[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        bf16x8_to_f32(xor4(in[u][k], sw[k]), f[k]);  // sign flip on the packed bf16: squares do not care
        float q[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) q[j] = __fmul_rn(f[k][j], f[k][j]);  // exact: bf16 squared fits fp32
        p[k] = tree8<TPR>(q);
      }
      const float s2 = row_tree_sum<TPR>(p[0], p[1]);
      const float norm = __fsqrt_rn(s2);
      const float inv = s2 > 0.0f ? __fdiv_rn(1.0f, norm) : 0.0f;
      fwht_row<TPR>(f, part);
      uint32_t v[2] = {0, 0};
      float r[2] = {0.0f, 0.0f};
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        float uq[8], e[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) uq[j] = __fmul_rn(f[k][j], inv);
        v[k] = tq_code_word(uq);
        if (V) {
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float diff = __fsub_rn(uq[j], tq_level_at(tab, v[k], j));
            e[j] = __fmul_rn(diff, diff);
          }
          r[k] = tree8<TPR>(e);
        }
      }
      const bool valid = row < rows;
      tq_store_codes<TPR>(codes + row * (3 * TPR / 2), v, part, valid);
      const uint16_t norm_h = __half_as_ushort(__float2half_rn(norm));
      if (V) {
        const float r2 = row_tree_sum<TPR>(r[0], r[1]);
        const float res = __fmul_rn(norm, __fsqrt_rn(__fmul_rn(r2, 1.0f / D)));
        const uint32_t both = norm_h | ((uint32_t)__half_as_ushort(__float2half_rn(res)) << 16);
        if (valid && part == 0) __stcs(reinterpret_cast<unsigned int *>(side) + row, both);
      } else if (valid && part == 0) {
        __stcs(reinterpret_cast<unsigned short *>(side) + row, norm_h);
      }
    }
  }
}

template <int TPR, bool V>
__global__ void __launch_bounds__(kThreads) tq3_dequantize_kernel(const uint32_t *__restrict__ codes,
                                                                  const uint16_t *__restrict__ side,
                                                                  uint4 *__restrict__ dst, size_t rows) {
  constexpr int D = 16 * TPR;
  const RowWalk<TPR, kUnrollTq> w;
  const int part = w.part;
  const int w0 = (3 * part) / 4, bit_shift = (24 * part) & 31;  // this lane's 24 bits inside a chunk
  __shared__ TqTables tab;
  tq_fill_tables(tab);
  uint32_t sw[2][4];
  tq_sign_words<TPR>(tab, part, sw);
  for (size_t base = w.first; base < rows; base += w.step) {
    uint32_t lo[kUnrollTq][2], hi[kUnrollTq][2];
    unsigned short nh[kUnrollTq];
#pragma unroll
    for (int u = 0; u < kUnrollTq; ++u) {
      const size_t row = w.row(base, u);
      const bool valid = row < rows;
      nh[u] = valid ? __ldcs(reinterpret_cast<const unsigned short *>(side) + (V ? 2 * row : row)) : 0;
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const uint32_t *word = codes + row * (3 * TPR / 2) + k * (3 * TPR / 4) + w0;
        lo[u][k] = valid ? __ldcs(word) : 0u;
        hi[u][k] = valid && bit_shift > 8 ? __ldcs(word + 1) : 0u;  // only when the 24 bits cross a word
      }
    }
#pragma unroll
    for (int u = 0; u < kUnrollTq; ++u) {
      const size_t row = w.row(base, u);
      float f[2][8];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const uint32_t v = __funnelshift_r(lo[u][k], hi[u][k], bit_shift);
#pragma unroll
        for (int j = 0; j < 8; ++j) f[k][j] = tq_level_at(tab, v, j);
      }
      fwht_row<TPR>(f, part);
      const float scale = __fmul_rn(__half2float(__ushort_as_half(nh[u])), 1.0f / D);  // exact: 1/D is 2^-n
#pragma unroll
      for (int k = 0; k < 2; ++k) {
#pragma unroll
        for (int j = 0; j < 8; ++j) f[k][j] = __fmul_rn(f[k][j], scale);
        if (row < rows) __stcs(dst + row * (2 * TPR) + part + TPR * k, xor4(f32x8_to_bf16x8(f[k]), sw[k]));
      }
    }
  }
}

// Which of the plan's head_dim slots (64, 128, 256) a kernel of TPR lanes per row serves, L64 lanes
// being its lanes per row at head_dim 64.
template <int TPR, int L64>
constexpr int dim_slot() {
  return TPR == L64 ? 0 : TPR == 2 * L64 ? 1 : 2;
}

// Resident blocks of a kernel from the plan's per-SM count.
size_t resident(const km_quant_plan *p, int per_sm) { return (size_t)p->sms * (size_t)per_sm; }

template <int TPR>
void launch_u3(const km_quant_plan *p, const uint16_t *src, uint8_t *dst, size_t rows, cudaStream_t stream) {
  const size_t res = resident(p, p->u3_quantize[dim_slot<TPR, 8>()]);
  u3_quantize_kernel<TPR><<<RowWalk<TPR, kUnrollU3>::grid(res, rows, kWavesU3Quantize), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4 *>(src), reinterpret_cast<uint32_t *>(dst), rows);
}

template <int TPR>
void launch_u3_dq(const km_quant_plan *p, const uint8_t *src, uint16_t *dst, size_t rows, cudaStream_t stream) {
  const size_t res = resident(p, p->u3_dequantize[dim_slot<TPR, 8>()]);
  u3_dequantize_kernel<TPR><<<RowWalk<TPR, kUnrollU3>::grid(res, rows, kWavesU3Dequantize), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4 *>(src), reinterpret_cast<uint4 *>(dst), rows);
}

template <int TPR>
void launch_tq(const km_quant_plan *p, const uint16_t *src, uint8_t *codes, uint16_t *side, size_t rows, int is_v,
               cudaStream_t stream) {
  const auto kernel = is_v ? tq3_quantize_kernel<TPR, true> : tq3_quantize_kernel<TPR, false>;
  const size_t res = resident(p, p->tq3_quantize[is_v ? 1 : 0][dim_slot<TPR, 4>()]);
  kernel<<<RowWalk<TPR, kUnrollTq>::grid(res, rows, kWavesTq), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4 *>(src), reinterpret_cast<uint32_t *>(codes), side, rows);
}

template <int TPR>
void launch_tq_dq(const km_quant_plan *p, const uint8_t *codes, const uint16_t *side, uint16_t *dst, size_t rows,
                  int is_v, cudaStream_t stream) {
  const auto kernel = is_v ? tq3_dequantize_kernel<TPR, true> : tq3_dequantize_kernel<TPR, false>;
  const size_t res = resident(p, p->tq3_dequantize[is_v ? 1 : 0][dim_slot<TPR, 4>()]);
  kernel<<<RowWalk<TPR, kUnrollTq>::grid(res, rows, kWavesTq), kThreads, 0, stream>>>(
      reinterpret_cast<const uint32_t *>(codes), side, reinterpret_cast<uint4 *>(dst), rows);
}

// The plan's per-SM counts of one head_dim slot: u3 kernels run TPR = 8 << slot lanes per row, TurboQuant
// 4 << slot.
template <int U3, int TQ>
cudaError_t plan_slot(km_quant_plan *p, int slot) {
  cudaError_t e = kmq::blocks_per_sm(u3_quantize_kernel<U3>, &p->u3_quantize[slot]);
  if (e == cudaSuccess) e = kmq::blocks_per_sm(u3_dequantize_kernel<U3>, &p->u3_dequantize[slot]);
  if (e == cudaSuccess) e = kmq::blocks_per_sm(tq3_quantize_kernel<TQ, false>, &p->tq3_quantize[0][slot]);
  if (e == cudaSuccess) e = kmq::blocks_per_sm(tq3_quantize_kernel<TQ, true>, &p->tq3_quantize[1][slot]);
  if (e == cudaSuccess) e = kmq::blocks_per_sm(tq3_dequantize_kernel<TQ, false>, &p->tq3_dequantize[0][slot]);
  if (e == cudaSuccess) e = kmq::blocks_per_sm(tq3_dequantize_kernel<TQ, true>, &p->tq3_dequantize[1][slot]);
  return e;
}

}  // namespace

extern "C" cudaError_t km_quant_plan_make(km_quant_plan *plan) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&plan->sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = plan_slot<8, 4>(plan, 0);
  if (e == cudaSuccess) e = plan_slot<16, 8>(plan, 1);
  if (e == cudaSuccess) e = plan_slot<32, 16>(plan, 2);
  if (e == cudaSuccess) e = km_tq3_rows_plan(plan);
  if (e == cudaSuccess) e = km_tq3_mma_plan(plan);
  return e;
}

extern "C" cudaError_t km_quant_u3_quantize(const km_quant_plan *plan, const uint16_t *src, uint8_t *dst, size_t tokens,
                                            int heads, int head_dim, cudaStream_t stream) {
  if (!plan) return cudaErrorInvalidValue;
  return kmq::for_rows<8>(tokens, heads, head_dim, [&](auto tpr, size_t rows) {
    launch_u3<decltype(tpr)::value>(plan, src, dst, rows, stream);
  });
}

extern "C" cudaError_t km_quant_u3_dequantize(const km_quant_plan *plan, const uint8_t *src, uint16_t *dst,
                                              size_t tokens, int heads, int head_dim, cudaStream_t stream) {
  if (!plan) return cudaErrorInvalidValue;
  return kmq::for_rows<8>(tokens, heads, head_dim, [&](auto tpr, size_t rows) {
    launch_u3_dq<decltype(tpr)::value>(plan, src, dst, rows, stream);
  });
}

/* The variant's kernel; KM_TQ3_BEST resolves by km_tq3_resolve (quant_3bit.h, with the figures behind it). */
extern "C" cudaError_t km_quant_tq3_quantize_variant(const km_quant_plan *plan, km_tq3_variant variant,
                                                     const uint16_t *src, uint8_t *codes, uint16_t *side,
                                                     size_t tokens, int heads, int head_dim, int is_v,
                                                     cudaStream_t stream) {
  if (!plan || (int)variant < 0 || variant >= KM_TQ3_VARIANT_COUNT) return cudaErrorInvalidValue;
  variant = km_tq3_resolve(variant, head_dim, is_v);
  if (variant != KM_TQ3_LANES) {
    size_t rows = 0;
    const cudaError_t e = kmq::rows_of(tokens, heads, head_dim, &rows);
    if (e != cudaSuccess) return e;
    if (km_tq3_variant_mma(variant))
      return km_tq3_mma_quantize(plan, variant == KM_TQ3_MMA_LEAN, src, codes, side, rows, head_dim, is_v, stream);
    return km_tq3_rows_quantize(plan, variant, src, codes, side, rows, head_dim, is_v, stream);
  }
  return kmq::for_rows<4>(tokens, heads, head_dim, [&](auto tpr, size_t rows) {
    launch_tq<decltype(tpr)::value>(plan, src, codes, side, rows, is_v, stream);
  });
}

extern "C" cudaError_t km_quant_tq3_quantize(const km_quant_plan *plan, const uint16_t *src, uint8_t *codes,
                                             uint16_t *side, size_t tokens, int heads, int head_dim, int is_v,
                                             cudaStream_t stream) {
  return km_quant_tq3_quantize_variant(plan, KM_TQ3_BEST, src, codes, side, tokens, heads, head_dim, is_v, stream);
}

extern "C" cudaError_t km_quant_tq3_dequantize(const km_quant_plan *plan, const uint8_t *codes, const uint16_t *side,
                                               uint16_t *dst, size_t tokens, int heads, int head_dim, int is_v,
                                               cudaStream_t stream) {
  if (!plan) return cudaErrorInvalidValue;
  return kmq::for_rows<4>(tokens, heads, head_dim, [&](auto tpr, size_t rows) {
    launch_tq_dq<decltype(tpr)::value>(plan, codes, side, dst, rows, is_v, stream);
  });
}
