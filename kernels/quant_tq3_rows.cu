// TurboQuant 3-bit quantize with the Walsh-Hadamard rotation in one thread's registers (variants v2-v5 of
// quant_3bit.h). A thread holds E = 64 or 128 consecutive elements of a row (head_dim / E threads per row):
// the stages inside E are plain FADD butterflies, the ones above by shuffles between the row's threads.
// Rows reach shared memory by coalesced 16-byte cp.async into a padded layout (row pitch 1 mod 8 chunks,
// so each thread's 16-byte reads of its own row are conflict-free), two tiles deep. Every fp32 step is
// the CPU reference's (micro/quant_ref.c), one rounding at a time, so codes and norms match it bit for
// bit; the V residual norm is a sum of the same squares in another order (checked within one fp16 unit).
// Instruction counts per element and why: reports/quant-notes.md.
#include "quant_tq3_rows.h"
#include "tq3_codes.cuh"
#include "tq3_sign.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

namespace {

constexpr int kThreads = 128;
constexpr unsigned kFull = 0xffffffffu;

// Sign of element i (quant_3bit.h), also at compile time: with a thread per row the element index of
// every unrolled step is a constant, so the flip becomes a negated FADD operand.
__host__ __device__ constexpr bool tq_negative(uint32_t i) { return km_tq3_negative(i) != 0; }

// Shapes: D head_dim, E elements per thread. Shared layout in 16-byte chunks: row r of a tile at r * P,
// thread h's E / 8 chunks of it from h * O. P = 1 (mod 8) and O = 8 / TPR (mod 8) put the 8 threads of
// one 128-byte phase of an LDS.128 on 8 different bank groups.
template <int D, int E>
struct Geo {
  static constexpr int TPR = D / E;               // threads per row
  static constexpr int RPT = kThreads / TPR;      // rows per tile
  static constexpr int CH = D / 8;                // 16-byte chunks per row
  static constexpr int EC = E / 8;                // chunks per thread
  static constexpr int O = TPR == 1 ? 0 : EC + 8 / TPR;
  static constexpr int P = TPR == 1 ? CH + 1 : TPR * O + 1;
  static constexpr int STAGE = RPT * P;           // chunks per tile buffer
  static constexpr size_t SMEM = 2 * (size_t)STAGE * 16;
  static constexpr int CODE_BYTES = 3 * E / 8;    // this thread's share of the row's codes
  static_assert(kThreads % CH == 0 && RPT * CH == kThreads * EC, "a tile is EC chunks per thread");
};

// Tables filled once per block: the code tables (tq3_codes.cuh) and (TPR > 1, where the element index is not a
// constant) the sign flips as XOR words over bf16 pairs, thread h's at [h * O, h * O + EC) (the same padding rule).
struct Tables {
  CodeTables code;
  uint4 sign[40];
};

template <int D, int E>
__device__ void fill_tables(Tables &t) {
  using G = Geo<D, E>;
  fill_code_tables(t.code, threadIdx.x, kThreads);
  if (G::TPR > 1 && threadIdx.x < G::CH) {
    const int c = threadIdx.x, h = c / G::EC, k = c % G::EC;
    uint32_t w[4];
    for (int i = 0; i < 4; ++i) {
      const uint32_t e = 8u * c + 2u * i;
      w[i] = (tq_negative(e) ? 0x8000u : 0u) | (tq_negative(e + 1) ? 0x80000000u : 0u);
    }
    t.sign[h * G::O + k] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

__device__ __forceinline__ void cp16(uint32_t dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_wait_all_but_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// Tile `tile` into the buffer at shared address `buf`: chunk q = k * kThreads + tid of the tile's
// contiguous rows (coalesced; per k the source moves kThreads chunks and the destination a fixed number
// of padded rows, so both are immediate offsets), rows past the end zero-filled; one commit group.
template <class G>
__device__ __forceinline__ void fill_tile(uint32_t buf, const uint4 *__restrict__ src, size_t rows, size_t tile) {
  constexpr int kRowStep = kThreads / G::CH;  // tile rows per k
  const size_t row0 = tile * G::RPT;
  const int c = threadIdx.x % G::CH, r0 = threadIdx.x / G::CH;
  const uint32_t dst = buf + 16u * (uint32_t)(r0 * G::P + (c / G::EC) * G::O + c % G::EC);
  const uint4 *s = src + row0 * G::CH + threadIdx.x;
  if (row0 + G::RPT <= rows) {
#pragma unroll
    for (int k = 0; k < G::EC; ++k) cp16(dst + 16u * (uint32_t)(k * kRowStep * G::P), s + k * kThreads, 16);
  } else {
    const int valid = (int)(rows - row0);
#pragma unroll
    for (int k = 0; k < G::EC; ++k) {
      const bool ok = k * kRowStep + r0 < valid;
      cp16(dst + 16u * (uint32_t)(k * kRowStep * G::P), ok ? s + k * kThreads : src, ok ? 16 : 0);
    }
  }
  cp_commit();
}

// The smallest float T with fl(T * inv) >= b, for b one of the boundaries and inv = 1/norm > 0: then
// |y| >= T exactly when |fl(y * inv)| >= b, since rounding is monotone. t0 = fl(b / inv) is within half
// an ulp of b / inv; the boundaries sit >= 2^-24.8 (relative) above the point where fl(. * inv) reaches b,
// so fl((t0 - 2 steps) * inv) < b and fl((t0 + 1 step) * inv) >= b: T is t0 - 1, t0 or t0 + 1 step.
// inv = 0 (a zero or non-finite norm): NaN, which no |y| reaches (every code magnitude 0, as on the CPU).
__device__ __forceinline__ float fold_threshold(float b, float inv) {
  if (!(inv > 0.0f)) return __uint_as_float(0x7fc00000u);
  const float t0 = __fdiv_rn(b, inv);
  const float below = __uint_as_float(__float_as_uint(t0) - 1u);
  if (__fmul_rn(below, inv) >= b) return below;
  if (__fmul_rn(t0, inv) >= b) return t0;
  return __uint_as_float(__float_as_uint(t0) + 1u);
}

// One thread's E elements of one row (thread h of TPR), from its chunks in shared memory; codes and side
// data stored when `valid` (every thread of the warp runs it: the shuffles need them all).
template <int D, int E, bool V, bool FOLD, bool LEAN>
__device__ __forceinline__ void quantize_part(const uint4 *__restrict__ mine, const Tables &tab, int h, bool valid,
                                              uint8_t *__restrict__ out, uint16_t *__restrict__ side, size_t row) {
  using G = Geo<D, E>;
  constexpr int TPR = G::TPR, EC = G::EC;
  float y[E];
  float part[EC];  // the norm's tree over each chunk of 8 (index bits 0-2)
#pragma unroll
  for (int k = 0; k < EC; ++k) {
    uint4 v = mine[k];
    if (TPR > 1) {
      const uint4 s = tab.sign[h * G::O + k];
      v = make_uint4(v.x ^ s.x, v.y ^ s.y, v.z ^ s.z, v.w ^ s.w);
    }
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float q[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo = __uint_as_float(w[i] << 16), hi = __uint_as_float(w[i] & 0xffff0000u);
      q[2 * i] = __fmul_rn(lo, lo);  // exact: a bf16 squared fits fp32 (the sign does not matter)
      q[2 * i + 1] = __fmul_rn(hi, hi);
      // LEAN: the tree's first level as one FFMA: hi * hi is exact, so fma(hi, hi, lo * lo) rounds the
      // same exact sum once, as __fadd_rn(q[2i], q[2i + 1]) does (the loop below then skips stride 1)
      if (LEAN) q[2 * i] = __fmaf_rn(hi, hi, q[2 * i]);
      if (TPR == 1) {  // compile-time signs: negated operands of the first butterflies
        if (tq_negative(8 * k + 2 * i)) lo = -lo;
        if (tq_negative(8 * k + 2 * i + 1)) hi = -hi;
      }
      y[8 * k + 2 * i] = lo;
      y[8 * k + 2 * i + 1] = hi;
    }
#pragma unroll
    for (int s = LEAN ? 2 : 1; s < 8; s <<= 1)
#pragma unroll
      for (int i = 0; i < 8; i += 2 * s) q[i] = __fadd_rn(q[i], q[i + s]);
    part[k] = q[0];
  }
  // norm: the rest of the pairwise tree, chunks in index order, then the row's threads (top index bits)
#pragma unroll
  for (int s = 1; s < EC; s <<= 1)
#pragma unroll
    for (int k = 0; k < EC; k += 2 * s) part[k] = __fadd_rn(part[k], part[k + s]);
  float s2 = part[0];
#pragma unroll
  for (int m = 1; m < TPR; m <<= 1) s2 = __fadd_rn(s2, __shfl_xor_sync(kFull, s2, m));
  // rotation: strides 1 .. E/2 in registers, then E .. D/2 across the row's threads (lower keeps a + b)
#pragma unroll
  for (int s = 1; s < E; s <<= 1)
#pragma unroll
    for (int i = 0; i < E; ++i)
      if (!(i & s)) {
        const float a = y[i], b = y[i + s];
        y[i] = __fadd_rn(a, b);
        y[i + s] = __fsub_rn(a, b);
      }
#pragma unroll
  for (int m = 1; m < TPR; m <<= 1) {
    const float sg = (h & m) ? -1.0f : 1.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = __fmaf_rn(y[i], sg, __shfl_xor_sync(kFull, y[i], m));
  }
  const float norm = LEAN ? sqrt_rn_nobranch(s2) : __fsqrt_rn(s2);
  const float inv = LEAN ? inv_rn_nobranch(s2, norm) : s2 > 0.0f ? __fdiv_rn(1.0f, norm) : 0.0f;
  const Step st1 = step_of(!FOLD ? KM_TQ_B1 : LEAN ? fold_threshold_near(KM_TQ_B1, norm, inv) : fold_threshold(KM_TQ_B1, inv));
  const Step st2 = step_of(!FOLD ? KM_TQ_B2 : LEAN ? fold_threshold_near(KM_TQ_B2, norm, inv) : fold_threshold(KM_TQ_B2, inv));
  const Step st3 = step_of(!FOLD ? KM_TQ_B3 : LEAN ? fold_threshold_near(KM_TQ_B3, norm, inv) : fold_threshold(KM_TQ_B3, inv));
  // codes: per chunk of 8, code = (4 + idx) ^ (sign ? 7 : 0), idx = [a >= B1] + [a >= B2] + [a >= B3].
  // The steps are 1.0f or 0.0f, so the integer sum of their bits is idx * 0x3f800000 = 127 idx 2^23
  // exactly (idx <= 3); shifted into field j it adds 127 idx 8^j, and one multiply by 127's inverse mod
  // 2^32 per chunk leaves sum idx_j 8^j. The same sum >> 21 is idx * 508, the byte offset of idx's level
  // in the spaced table. Signs one bit each by a funnel shift, spread to 3-bit fields by the table.
  uint32_t g[EC];
  float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int k = 0; k < EC; ++k) {
    uint32_t acc = 0, neg = 0;
#pragma unroll
    for (int j = 7; j >= 0; --j) {
      const float yv = y[8 * k + j];
      const float a = FOLD ? fabsf(yv) : fabsf(__fmul_rn(yv, inv));  // sign(u) = sign(y): inv >= +0
      const uint32_t t = __float_as_uint(reaches(a, st1)) + __float_as_uint(reaches(a, st2)) +
                         __float_as_uint(reaches(a, st3));
      acc += t >> (23 - 3 * j);
      neg = j == 7 ? __float_as_uint(yv) >> 31 : __funnelshift_l(__float_as_uint(yv), neg, 1);
      if (V) {
        const float mag = *reinterpret_cast<const float *>(reinterpret_cast<const char *>(tab.code.level) + (t >> 21));
        const float d = __fsub_rn(a, mag);  // = |u - level|, as on the CPU
        r[j & 3] = __fmaf_rn(d, d, r[j & 3]);
      }
    }
    g[k] = (acc * 0xefdfbf7fu + 0x924924u) ^ tab.code.spread7[neg];  // 0xefdfbf7f * 127 = 1 (mod 2^32)
  }
  // 24-bit groups into words: 4 groups make 3 words
  constexpr int NW = 3 * EC / 4;
  uint32_t wd[NW];
#pragma unroll
  for (int q = 0; q < EC / 4; ++q) {
    wd[3 * q] = g[4 * q] | (g[4 * q + 1] << 24);
    wd[3 * q + 1] = (g[4 * q + 1] >> 8) | (g[4 * q + 2] << 16);
    wd[3 * q + 2] = (g[4 * q + 2] >> 16) | (g[4 * q + 3] << 8);
  }
  float r2 = 0.0f;
  if (V) {
    r2 = __fadd_rn(__fadd_rn(r[0], r[1]), __fadd_rn(r[2], r[3]));
#pragma unroll
    for (int m = 1; m < TPR; m <<= 1) r2 = __fadd_rn(r2, __shfl_xor_sync(kFull, r2, m));
  }
  if (!valid) return;
  if (E == 128) {
    uint4 *o = reinterpret_cast<uint4 *>(out);
#pragma unroll
    for (int q = 0; q < NW / 4; ++q) __stcs(o + q, make_uint4(wd[4 * q], wd[4 * q + 1], wd[4 * q + 2], wd[4 * q + 3]));
  } else {
    uint2 *o = reinterpret_cast<uint2 *>(out);
#pragma unroll
    for (int q = 0; q < NW / 2; ++q) __stcs(o + q, make_uint2(wd[2 * q], wd[2 * q + 1]));
  }
  if (h != 0) return;
  const uint16_t norm_h = __half_as_ushort(__float2half_rn(norm));
  if (V) {
    const float res = __fmul_rn(norm, __fsqrt_rn(__fmul_rn(r2, 1.0f / D)));
    const uint32_t both = norm_h | ((uint32_t)__half_as_ushort(__float2half_rn(res)) << 16);
    __stcs(reinterpret_cast<unsigned int *>(side) + row, both);
  } else {
    __stcs(reinterpret_cast<unsigned short *>(side) + row, norm_h);
  }
}

// Registers per thread: E = 128 keeps the whole row live (~170 registers: 3 blocks of 128 per SM),
// E = 64 half of it (4 blocks).
template <int E>
constexpr int min_blocks() {
  return E == 128 ? 3 : 4;
}

// Persistent blocks walk tiles of RPT rows: tile t + gridDim.x is fetched while tile t is quantized.
template <int D, int E, bool V, bool FOLD, bool LEAN>
__global__ void __launch_bounds__(kThreads, min_blocks<E>())
    tq3_rows_quantize_kernel(const uint4 *__restrict__ src, uint8_t *__restrict__ codes, uint16_t *__restrict__ side,
                             size_t rows) {
  using G = Geo<D, E>;
  extern __shared__ uint4 stage[];
  __shared__ Tables tab;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(stage);
  const size_t tiles = (rows + G::RPT - 1) / G::RPT;
  size_t tile = blockIdx.x;
  if (tile < tiles) fill_tile<G>(base, src, rows, tile);
  else cp_commit();
  fill_tables<D, E>(tab);
  const int rl = threadIdx.x / G::TPR, h = threadIdx.x % G::TPR;
  for (int it = 0; tile < tiles; tile += gridDim.x, ++it) {
    const int buf = it & 1;
    const size_t next = tile + gridDim.x;
    if (next < tiles) fill_tile<G>(base + (uint32_t)((buf ^ 1) * G::STAGE * 16), src, rows, next);
    else cp_commit();
    cp_wait_all_but_one();
    __syncthreads();  // this tile's chunks (and, the first time, the tables) visible to every thread
    const size_t row = tile * G::RPT + rl;
    quantize_part<D, E, V, FOLD, LEAN>(stage + buf * G::STAGE + rl * G::P + h * G::O, tab, h, row < rows,
                                 codes + row * (3 * D / 8) + h * G::CODE_BYTES, side, row);
    __syncthreads();  // every thread done with this buffer before the next trip refills it
  }
}

template <int D, int E, bool V, bool FOLD, bool LEAN>
cudaError_t plan_one(int *per_sm) {
  const auto k = tq3_rows_quantize_kernel<D, E, V, FOLD, LEAN>;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Geo<D, E>::SMEM);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, kThreads, Geo<D, E>::SMEM);
  if (e == cudaSuccess && *per_sm < 1) *per_sm = 1;
  return e;
}

template <int D, int E, bool V, bool FOLD, bool LEAN>
void launch(int sms, int per_sm, const uint16_t *src, uint8_t *codes, uint16_t *side, size_t rows, cudaStream_t s) {
  using G = Geo<D, E>;
  const size_t tiles = (rows + G::RPT - 1) / G::RPT, resident = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1);
  const size_t blocks = tiles < resident ? tiles : resident;
  tq3_rows_quantize_kernel<D, E, V, FOLD, LEAN><<<(unsigned)(blocks > 0 ? blocks : 1), kThreads, G::SMEM, s>>>(
      reinterpret_cast<const uint4 *>(src), codes, side, rows);
}

// Variant index 0..3 = ROWS64, ROWS, ROWS_FOLD, ROWS_LEAN: elements per thread at head_dim D, whether K's
// scale is folded into the thresholds (v4, v5), whether the lean per-row and norm steps are used (v5).
template <int D>
constexpr int elems(int vi) {
  return vi == 0 ? 64 : (D < 128 ? D : 128);
}
constexpr bool folds(int vi, bool v) { return (vi == 2 || vi == 3) && !v; }
constexpr bool lean(int vi) { return vi == 3; }

template <int D, int VI, bool V>
cudaError_t plan_variant(km_quant_plan *p, int slot) {
  return plan_one<D, elems<D>(VI), V, folds(VI, V), lean(VI)>(&p->tq3_rows_quantize[VI][V ? 1 : 0][slot]);
}

template <int D, int VI>
cudaError_t plan_both(km_quant_plan *p, int slot) {
  cudaError_t e = plan_variant<D, VI, false>(p, slot);
  return e == cudaSuccess ? plan_variant<D, VI, true>(p, slot) : e;
}

template <int D>
cudaError_t plan_dim(km_quant_plan *p, int slot) {
  cudaError_t e = plan_both<D, 0>(p, slot);
  if (e == cudaSuccess) e = plan_both<D, 1>(p, slot);
  if (e == cudaSuccess) e = plan_both<D, 2>(p, slot);
  if (e == cudaSuccess) e = plan_both<D, 3>(p, slot);
  return e;
}

template <int D, int VI>
void launch_variant(const km_quant_plan *p, int slot, const uint16_t *src, uint8_t *codes, uint16_t *side,
                    size_t rows, int is_v, cudaStream_t s) {
  constexpr int E = elems<D>(VI);
  if (is_v)
    launch<D, E, true, folds(VI, true), lean(VI)>(p->sms, p->tq3_rows_quantize[VI][1][slot], src, codes, side, rows, s);
  else
    launch<D, E, false, folds(VI, false), lean(VI)>(p->sms, p->tq3_rows_quantize[VI][0][slot], src, codes, side, rows,
                                                    s);
}

template <int D>
void launch_dim(const km_quant_plan *p, int vi, int slot, const uint16_t *src, uint8_t *codes, uint16_t *side,
                size_t rows, int is_v, cudaStream_t s) {
  if (vi == 0) launch_variant<D, 0>(p, slot, src, codes, side, rows, is_v, s);
  else if (vi == 1) launch_variant<D, 1>(p, slot, src, codes, side, rows, is_v, s);
  else if (vi == 2) launch_variant<D, 2>(p, slot, src, codes, side, rows, is_v, s);
  else launch_variant<D, 3>(p, slot, src, codes, side, rows, is_v, s);
}

}  // namespace

extern "C" cudaError_t km_tq3_rows_plan(km_quant_plan *plan) {
  cudaError_t e = plan_dim<64>(plan, 0);
  if (e == cudaSuccess) e = plan_dim<128>(plan, 1);
  if (e == cudaSuccess) e = plan_dim<256>(plan, 2);
  return e;
}

extern "C" cudaError_t km_tq3_rows_quantize(const km_quant_plan *plan, km_tq3_variant variant, const uint16_t *src,
                                            uint8_t *codes, uint16_t *side, size_t rows, int head_dim, int is_v,
                                            cudaStream_t stream) {
  const int vi = variant == KM_TQ3_ROWS64     ? 0
                 : variant == KM_TQ3_ROWS      ? 1
                 : variant == KM_TQ3_ROWS_FOLD ? 2
                 : variant == KM_TQ3_ROWS_LEAN ? 3
                                               : -1;
  if (!plan || vi < 0 || rows == 0) return vi < 0 || !plan ? cudaErrorInvalidValue : cudaSuccess;
  if (head_dim == 64) launch_dim<64>(plan, vi, 0, src, codes, side, rows, is_v, stream);
  else if (head_dim == 128) launch_dim<128>(plan, vi, 1, src, codes, side, rows, is_v, stream);
  else if (head_dim == 256) launch_dim<256>(plan, vi, 2, src, codes, side, rows, is_v, stream);
  else return cudaErrorInvalidValue;
  return cudaGetLastError();
}
