// TurboQuant 3-bit quantize on tensor cores (KM_TQ3_MMA, head_dim 128). A warp takes 16 rows at a time
// (a warp tile, staged in shared memory by its own cp.async ring, NS tiles deep) and, per 16-element group j
// of the row:
//   - Y_j = X_j B_j on the tensor cores (bf16 mma, fp32 sums): B_j = diag(sign) H16 with its columns permuted
//     so that lane (g, c) receives elements 4c .. 4c + 3 of the group (rows g and g + 8). That is the sign flip
//     and the rotation's first four stages (strides 1-8); the products are exact (+-1 times bf16).
//   - G += X_j X_j^T (the same A fragment as B): the sum of squares of each row is the Gram matrix's diagonal.
// The remaining stages (strides 16, 32, 64: across groups) are in-lane FADD butterflies in the reference's
// order, and the codes are the rows kernels' (FFMA.SAT steps against the row's thresholds, 8 codes per 24-bit
// word). The words are exchanged among the quad through shared memory so that each lane writes 12 bytes of a
// row. Tensor-core sums round differently from the reference's tree (micro/quant_ref.c), so a code can be the
// adjacent one where the exact rotated value sits on a boundary and a norm one fp16 unit off; rows whose Gram
// sum is not a normal number >= 2^-90 (squares that under- or overflow) take the reference's exact tree from
// shared memory instead. Why this layout and what it costs per element: reports/quant-notes.md.
// LEAN (v8): the Gram mma's B operands are the A fragment's matrices in another order ((0, 2) and (1, 3)), which are
// not adjacent registers, so v6 copies four registers per group before its two Gram mma; v8 loads them with a second
// ldmatrix in that order instead, and accumulates the even and odd groups' Gram products in two chains of 4 mma
// (v6: one chain of 8), summed once per tile. Same rotation and codes; the sum of squares rounds once more.
#include "quant_tq3_mma.h"
#include "tq3_codes.cuh"
#include "tq3_mma_layout.h"
#include "tq3_sign.h"

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int D = 128, NG = D / 16;        // head_dim, 16-element groups per row
constexpr int PITCH = 2 * D + 16;          // bytes per staged row: 16-byte rows of 8 lanes hit 8 bank groups
constexpr int WTILE = 16 * PITCH;          // bytes per staged warp tile
constexpr int CODE_BYTES = 3 * D / 8;      // 48 per row
constexpr int XPITCH = 20;                 // words per row of the code exchange (conflict-free, 16-byte rows)
constexpr unsigned kFull = 0xffffffffu;

template <int NS>
constexpr size_t smem_bytes() {
  return (size_t)kWarps * NS * WTILE;
}

__device__ __forceinline__ void cp16(uint32_t dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Rows [r0, r0 + 16) of src into the warp's buffer: per k the warp copies rows 2k and 2k + 1 whole (coalesced;
// the lane's offsets are fixed, so every copy is an immediate offset from two bases); rows past the end
// zero-filled.
__device__ __forceinline__ void load_wtile(uint32_t buf, const uint16_t *__restrict__ src, size_t rows, size_t r0,
                                           int lane) {
  const int col = lane & 15, sub = lane >> 4;
  const uint32_t dst = buf + (uint32_t)(sub * PITCH + 16 * col);
  const uint16_t *from = src + (r0 + sub) * D + 8 * col;
  if (r0 + 16 <= rows) {
#pragma unroll
    for (int k = 0; k < 8; ++k) cp16(dst + (uint32_t)(2 * k * PITCH), from + 2 * k * D, 16);
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const bool ok = r0 + 2 * k + sub < rows;
      cp16(dst + (uint32_t)(2 * k * PITCH), ok ? from + 2 * k * D : src, ok ? 16 : 0);
    }
  }
  cp_commit();
}

__device__ __forceinline__ void ldsm4(uint32_t (&a)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr)
               : "memory");
}

// d += A B (m16n8k16, bf16 in, fp32 sums)
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// +-1 in bf16 for two k rows of a B fragment: negative where the bit is set.
__device__ __forceinline__ uint32_t pm1(bool neg0, bool neg1) {
  return (neg0 ? 0xBF80u : 0x3F80u) | ((neg1 ? 0xBF80u : 0x3F80u) << 16);
}

// B_j for lane (g, c), n-half h: the fragment's column g holds element e of the group (tq3_mma_layout.h), entry
// k = sign(16 j + k) x H16[k][e]; its k rows are 2c, 2c + 1 (b0) and 2c + 8, 2c + 9 (b1).
__device__ __forceinline__ void rotation_operand(int j, int h, int g, int c, uint32_t &b0, uint32_t &b1) {
  const int e = km_tq3_mma_column_element(h, g);
  bool n[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int k = 2 * c + (q & 1) + 8 * (q >> 1);
    n[q] = (km_tq3_negative((uint32_t)(16 * j + k)) != 0) != ((__popc(k & e) & 1) != 0);
  }
  b0 = pm1(n[0], n[1]);
  b1 = pm1(n[2], n[3]);
}

// The reference's sum of squares of one staged row, exactly: its tree over the index bits, low bit first (the
// first level as one FFMA per pair, as the rows kernels do: both squares are exact).
__device__ __forceinline__ float exact_s2(const char *row) {
  float part[D / 8];
#pragma unroll
  for (int k = 0; k < D / 8; ++k) {
    const uint4 v = *reinterpret_cast<const uint4 *>(row + 16 * k);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float q[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float lo = __uint_as_float(w[i] << 16), hi = __uint_as_float(w[i] & 0xffff0000u);
      q[i] = __fmaf_rn(hi, hi, __fmul_rn(lo, lo));
    }
    part[k] = __fadd_rn(__fadd_rn(q[0], q[1]), __fadd_rn(q[2], q[3]));
  }
#pragma unroll
  for (int s = 1; s < D / 8; s <<= 1)
#pragma unroll
    for (int k = 0; k < D / 8; k += 2 * s) part[k] = __fadd_rn(part[k], part[k + s]);
  return part[0];
}

struct __align__(16) Shared {
  uint32_t xchg[kWarps][16 * XPITCH];  // per warp: row r's word from lane c to lane p at r * XPITCH + 4 p + c
                                       // (first: its rows are read as 16-byte vectors)
  CodeTables code;
};

// V: the residual needs u = y / norm; K folds 1 / norm into the thresholds (the rows kernels' v5). LEAN: v8 (above).
template <bool V, int NS, int CTAS, bool LEAN>
__global__ void __launch_bounds__(kThreads, CTAS)
    tq3_mma_quantize_kernel(const uint16_t *__restrict__ src, uint8_t *__restrict__ codes,
                            uint16_t *__restrict__ side, size_t rows) {
  extern __shared__ __align__(16) char stage[];
  __shared__ Shared sh;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const uint32_t ring = (uint32_t)__cvta_generic_to_shared(stage) + (uint32_t)(warp * NS * WTILE);
  const size_t tiles = (rows + 15) / 16, stride = (size_t)gridDim.x * kWarps;
  size_t t = (size_t)blockIdx.x * kWarps + warp;
#pragma unroll
  for (int s = 0; s < NS; ++s) {
    const size_t u = t + s * stride;
    if (u < tiles) load_wtile(ring + s * WTILE, src, rows, 16 * u, lane);
    else cp_commit();
  }
  fill_code_tables(sh.code, threadIdx.x, kThreads);
  uint32_t bop[NG][2][2];
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) rotation_operand(j, h, g, c, bop[j][h][0], bop[j][h][1]);
  __syncthreads();  // the tables; from here on every warp runs on its own
  uint32_t *xw = sh.xchg[warp];
  const int rr = lane & 15;  // the row whose per-row steps this lane computes (lanes 16-31 repeat 0-15)
  int slot = 0;
  for (; t < tiles; t += stride) {
    const uint32_t buf = ring + slot * WTILE;
    cp_wait<NS - 1>();
    __syncwarp();
    // ---- tensor cores: the first four stages of every group, and the Gram diagonal
    float y[NG][2][4];
    float glo[2][4] = {}, ghi[2][4] = {};  // [chain]: v6 uses chain 0 only, v8 the even groups' and the odd ones'
#pragma unroll
    for (int j = 0; j < NG; ++j) {
      uint32_t a[4];
      ldsm4(a, buf + (uint32_t)((lane & 15) * PITCH + 32 * j + 16 * (lane >> 4)));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        y[j][h][0] = y[j][h][1] = y[j][h][2] = y[j][h][3] = 0.f;
        mma(y[j][h], a, bop[j][h][0], bop[j][h][1]);
      }
      if constexpr (LEAN) {
        // the same 16 x 16 block as matrices (rows 0-7, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 0-7),
        // (rows 8-15, k 8-15): lanes 8q .. 8q + 7 address matrix q's rows
        uint32_t bt[4];
        ldsm4(bt, buf + (uint32_t)(((lane & 7) + 8 * (lane >> 4)) * PITCH + 32 * j + 16 * ((lane >> 3) & 1)));
        mma(glo[j & 1], a, bt[0], bt[1]);
        mma(ghi[j & 1], a, bt[2], bt[3]);
      } else {
        mma(glo[0], a, a[0], a[2]);  // B = rows 0-7 of X, transposed
        mma(ghi[0], a, a[1], a[3]);  // rows 8-15
      }
    }
    // row r's sum of squares sits at lane (r & 7) * 4 + ((r & 7) >> 1): G_lo's or G_hi's diagonal
    float dl = (g & 1) ? glo[0][1] : glo[0][0], dh = (g & 1) ? ghi[0][3] : ghi[0][2];
    if constexpr (LEAN) {
      dl = __fadd_rn(dl, (g & 1) ? glo[1][1] : glo[1][0]);
      dh = __fadd_rn(dh, (g & 1) ? ghi[1][3] : ghi[1][2]);
    }
    const int from = km_tq3_mma_gram_lane(rr);
    const float vl = __shfl_sync(kFull, dl, from), vh = __shfl_sync(kFull, dh, from);
    float s2 = rr < 8 ? vl : vh;
    const bool tiny_or_inf = !(s2 >= 8.07793567e-28f && s2 <= 3.40282347e38f);  // 2^-90, FLT_MAX
    if (__any_sync(kFull, tiny_or_inf)) {
      // squares under 2^-126 count in the reference's tree (subnormal) but need not in the mma's sums; and an
      // infinite or NaN sum: the reference's tree from the staged row itself
      s2 = exact_s2(stage + (size_t)(warp * NS + slot) * WTILE + (size_t)rr * PITCH);
    }
    __syncwarp();  // every lane is done with the buffer: refill it with the tile NS trips ahead
    {
      const size_t u = t + NS * stride;
      if (u < tiles) load_wtile(buf, src, rows, 16 * u, lane);
      else cp_commit();
    }
    slot = slot + 1 == NS ? 0 : slot + 1;
    // ---- per-row steps (lane rr), then to the quad lanes that hold rows g and g + 8
    const float norm = sqrt_rn_nobranch(s2);
    const float inv = inv_rn_nobranch(s2, norm);
    Step st[2][3];
    float invr[2];
    if constexpr (V) {
      invr[0] = __shfl_sync(kFull, inv, g);
      invr[1] = __shfl_sync(kFull, inv, g + 8);
#pragma unroll
      for (int h = 0; h < 2; ++h) st[h][0] = step_of(KM_TQ_B1), st[h][1] = step_of(KM_TQ_B2), st[h][2] = step_of(KM_TQ_B3);
    } else {
      const Step own[3] = {step_of(fold_threshold_near(KM_TQ_B1, norm, inv)),
                           step_of(fold_threshold_near(KM_TQ_B2, norm, inv)),
                           step_of(fold_threshold_near(KM_TQ_B3, norm, inv))};
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        st[0][k] = Step{__shfl_sync(kFull, own[k].big, g), __shfl_sync(kFull, own[k].off, g)};
        st[1][k] = Step{__shfl_sync(kFull, own[k].big, g + 8), __shfl_sync(kFull, own[k].off, g + 8)};
      }
      invr[0] = invr[1] = 0.f;
    }
    // ---- strides 16, 32, 64: across the groups, in the lane (lower index keeps a + b)
#pragma unroll
    for (int s = 1; s < NG; s <<= 1)
#pragma unroll
      for (int j = 0; j < NG; ++j)
        if (!(j & s))
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float a = y[j][h][e], b = y[j + s][h][e];
              y[j][h][e] = __fadd_rn(a, b);
              y[j + s][h][e] = __fsub_rn(a, b);
            }
    // ---- codes: per row half (row g, row g + 8) and group pair p, the 8 codes of elements 4c .. 4c + 3 of
    // groups 2p and 2p + 1 as one 24-bit word (the rows kernels' step sums: see quant_tq3_rows.cu)
    float res[2] = {0.f, 0.f};
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      float r4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int p = 0; p < NG / 2; ++p) {
        uint32_t acc = 0, neg = 0;
#pragma unroll
        for (int k = 7; k >= 0; --k) {
          const float yv = y[2 * p + (k >> 2)][(k >> 1) & 1][2 * rh + (k & 1)];
          const float a = V ? fabsf(__fmul_rn(yv, invr[rh])) : fabsf(yv);  // sign(u) = sign(y): inv >= +0
          const uint32_t tb = __float_as_uint(reaches(a, st[rh][0])) + __float_as_uint(reaches(a, st[rh][1])) +
                              __float_as_uint(reaches(a, st[rh][2]));
          acc += tb >> (23 - 3 * k);
          neg = k == 7 ? __float_as_uint(yv) >> 31 : __funnelshift_l(__float_as_uint(yv), neg, 1);
          if constexpr (V) {
            const float mag =
                *reinterpret_cast<const float *>(reinterpret_cast<const char *>(sh.code.level) + (tb >> 21));
            const float dd = __fsub_rn(a, mag);
            r4[k & 3] = __fmaf_rn(dd, dd, r4[k & 3]);
          }
        }
        const uint32_t word = (acc * 0xefdfbf7fu + 0x924924u) ^ sh.code.spread7[neg];
        xw[(g + 8 * rh) * XPITCH + 4 * p + c] = word;
      }
      if constexpr (V) res[rh] = __fadd_rn(__fadd_rn(r4[0], r4[1]), __fadd_rn(r4[2], r4[3]));
    }
    __syncwarp();
    // ---- lane c writes bytes [12c, 12c + 12) of rows g and g + 8: groups 2c and 2c + 1, each lane's 12 bits
    // of them at 12 x (its c) in the group's 48 bits
    const size_t row0 = 16 * t;
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      const int r = g + 8 * rh;
      const uint4 q = *reinterpret_cast<const uint4 *>(xw + r * XPITCH + 4 * c);
      uint32_t w0, w1, w2;
      km_tq3_mma_assemble(q.x, q.y, q.z, q.w, &w0, &w1, &w2);
      if (row0 + r < rows) {
        uint32_t *o = reinterpret_cast<uint32_t *>(codes + (row0 + r) * CODE_BYTES + 12 * c);
        __stcs(o, w0);
        __stcs(o + 1, w1);
        __stcs(o + 2, w2);
      }
    }
    // ---- side data: lane r < 16 writes row r's
    float r2 = 0.f;
    if constexpr (V) {
#pragma unroll
      for (int rh = 0; rh < 2; ++rh) {
        res[rh] = __fadd_rn(res[rh], __shfl_xor_sync(kFull, res[rh], 1));
        res[rh] = __fadd_rn(res[rh], __shfl_xor_sync(kFull, res[rh], 2));
      }
      const float a0 = __shfl_sync(kFull, res[0], 4 * (rr & 7)), a1 = __shfl_sync(kFull, res[1], 4 * (rr & 7));
      r2 = rr < 8 ? a0 : a1;
    }
    __syncwarp();  // the exchange words are read before the next tile writes them
    if (lane < 16 && row0 + lane < rows) {
      const uint16_t norm_h = __half_as_ushort(__float2half_rn(norm));
      if constexpr (V) {
        const float rn = __fmul_rn(norm, __fsqrt_rn(__fmul_rn(r2, 1.0f / D)));
        __stcs(reinterpret_cast<unsigned int *>(side) + row0 + lane,
               norm_h | ((uint32_t)__half_as_ushort(__float2half_rn(rn)) << 16));
      } else {
        __stcs(reinterpret_cast<unsigned short *>(side) + row0 + lane, norm_h);
      }
    }
  }
  cp_wait<0>();
}

constexpr int kStages = 3, kCtas = 3;

template <bool V, bool LEAN>
cudaError_t plan_one(int *per_sm) {
  const auto k = tq3_mma_quantize_kernel<V, kStages, kCtas, LEAN>;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes<kStages>());
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, kThreads, smem_bytes<kStages>());
  if (e == cudaSuccess && *per_sm < 1) *per_sm = 1;
  return e;
}

template <bool V, bool LEAN>
void launch(int sms, int per_sm, const uint16_t *src, uint8_t *codes, uint16_t *side, size_t rows, cudaStream_t s) {
  const size_t tiles = (rows + 15) / 16, warps = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1) * kWarps;
  const size_t need = tiles < warps ? tiles : warps, blocks = (need + kWarps - 1) / kWarps;
  tq3_mma_quantize_kernel<V, kStages, kCtas, LEAN><<<(unsigned)(blocks > 0 ? blocks : 1), kThreads, smem_bytes<kStages>(), s>>>(
      src, codes, side, rows);
}

// K or V of v6 (LEAN false) or v8, with the blocks per SM the plan found for that kernel.
template <bool LEAN>
void launch_kv(const km_quant_plan *plan, int is_v, const uint16_t *src, uint8_t *codes, uint16_t *side, size_t rows,
               cudaStream_t s) {
  const int *per_sm = plan->tq3_mma_quantize[LEAN ? 1 : 0];
  if (is_v) launch<true, LEAN>(plan->sms, per_sm[1], src, codes, side, rows, s);
  else launch<false, LEAN>(plan->sms, per_sm[0], src, codes, side, rows, s);
}

}  // namespace

extern "C" cudaError_t km_tq3_mma_plan(km_quant_plan *plan) {
  cudaError_t e = plan_one<false, false>(&plan->tq3_mma_quantize[0][0]);
  if (e == cudaSuccess) e = plan_one<true, false>(&plan->tq3_mma_quantize[0][1]);
  if (e == cudaSuccess) e = plan_one<false, true>(&plan->tq3_mma_quantize[1][0]);
  return e == cudaSuccess ? plan_one<true, true>(&plan->tq3_mma_quantize[1][1]) : e;
}

extern "C" cudaError_t km_tq3_mma_quantize(const km_quant_plan *plan, int lean, const uint16_t *src, uint8_t *codes,
                                           uint16_t *side, size_t rows, int head_dim, int is_v, cudaStream_t stream) {
  if (!plan || head_dim != D) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (lean) launch_kv<true>(plan, is_v, src, codes, side, rows, stream);
  else launch_kv<false>(plan, is_v, src, codes, side, rows, stream);
  return cudaGetLastError();
}
