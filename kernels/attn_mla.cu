// MLA decode over the paged latent cache (see attn_mla.h for the layouts and the CTA's budget). One CTA per
// (chunk, group of ROWS query heads), 8 warps. Per 64-token tile: the latent rows land in shared memory by
// cp.async (XOR-swizzled 16-byte chunks: chunk c of row r sits at c ^ (r & 7), so the 8 rows an ldmatrix
// reads hit 8 different bank groups), S = Q C^T with warps split over (rows, tokens), a shared-memory
// exchange of row maxima, P to shared memory, then O += P V with warps split over the 512 output dims.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_mla.h"
#include "attn_mla_device.cuh"

namespace {

using namespace km_mla_dev;

constexpr int WARPS = 8;
constexpr int THREADS = WARPS * 32;
constexpr int ROW_BYTES = D * 2;               // a bf16 row of Q or of the latent in shared memory
constexpr int ROW_CHUNKS = ROW_BYTES / 16;     // 72
constexpr int TILE_BYTES = TILE * ROW_BYTES;   // 73,728
constexpr int P_ROW_BYTES = TILE * 2;          // P: 64 bf16 per row, 8 chunks
constexpr int RED_FLOATS = 256;                // row maxima / sums: token groups x rows <= 256
constexpr int MRUN_FLOATS = 2 * 64;            // running row maxima, two parities
constexpr int COMBINE_THREADS = DV / 4;        // one thread per 4 output dims
constexpr int COMBINE_GROUPS = 4;              // combine: at most this many chunk groups of COMBINE_THREADS per CTA
static_assert(COMBINE_GROUPS == 4, "combine_kernel instantiates the combine pass for 1, 2 and 4 groups");

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of 16-byte chunk c of row r in a swizzled region of rows of `row_bytes`.
__device__ __forceinline__ uint32_t swz(int r, int c, int row_bytes) {
  return (uint32_t)(r * row_bytes + ((c ^ (r & 7)) << 4));
}

// bf16 tile -> swizzled shared rows.
__device__ __forceinline__ void load_tile_bf16(uint32_t dst, const char *src, int valid, int tid) {
  load_bf16_tile<THREADS>(dst, src, valid, tid, [](int r, int c) { return swz(r, c, ROW_BYTES); });
}

// fp8 codes -> the swizzled bf16 tile.
__device__ __forceinline__ void convert_tile(const unsigned char *raw, unsigned char *tile, int tid) {
  convert_raw_tile<THREADS>(raw, tile, tid, [](int r, int c) { return swz(r, c, ROW_BYTES); });
}

// 16-row CTAs keep Q in registers (Layout::QREG): no Q region, room for a third bf16 stage.
__host__ __device__ constexpr bool q_in_registers(int rows) { return rows == 16; }
__host__ __device__ constexpr int q_region_bytes(int rows) { return q_in_registers(rows) ? 0 : rows * ROW_BYTES; }
// The most bf16 stages the kernel runs at `rows` (three need Q out of shared memory).
__host__ __device__ constexpr int max_bf16_stages(int rows) { return q_in_registers(rows) ? 3 : 2; }

template <int ROWS>
struct Layout {
  static constexpr int MT = ROWS / 16;               // m16 tiles of the O phase (all rows, per warp)
  static constexpr int SMT = ROWS == 64 ? 2 : 1;     // m16 tiles per warp in the S phase
  static constexpr int RG = ROWS / (16 * SMT);       // row groups of the S phase: 2, 2, 1
  static constexpr int TG = WARPS / RG;              // token groups: 4, 4, 8
  static constexpr int STOK = TILE / TG;             // tokens per warp in S: 16, 16, 8
  static constexpr int SNT = STOK / 8;               // n8 tiles per warp in S: 2, 2, 1
  static constexpr int OCOLS = DV / WARPS;           // output dims per warp: 64
  static constexpr int ONT = OCOLS / 8;              // n8 tiles per warp in O: 8
  // 16 rows: every warp needs the same 16 Q rows in S, so each keeps their fragments in registers (144) instead
  // of re-reading 18 KiB from shared memory per tile, and Q's region goes to a third stage
  static constexpr bool QREG = q_in_registers(ROWS);
  static constexpr int S_UNROLL = QREG ? D / 32 : 3;  // QREG indexes qf by the k-step: the S loop unrolled fully
  // accumulator chains of S per warp: one m16n8 tile (16 rows) would chain all 36 mma, so even and odd k-steps
  // accumulate apart and meet at the end
  static constexpr int SCH = SMT * SNT == 1 ? 2 : 1;
  static_assert(TG * ROWS <= RED_FLOATS, "row exchange fits");
};

// This warp's Q fragments (rows srow0..+16, every k-step of 16 dims) from Q's swizzled shared copy.
template <bool QREG>
__device__ __forceinline__ void load_q_fragments(uint32_t (&qf)[QREG ? D / 16 : 1][4], uint32_t q_u, int srow0,
                                                 int lane) {
  if constexpr (QREG) {
#pragma unroll
    for (int k = 0; k < D / 16; ++k)
      ldsm_x4(q_u + swz(srow0 + (lane & 15), 2 * k + (lane >> 4), ROW_BYTES), qf[k][0], qf[k][1], qf[k][2], qf[k][3]);
  }
}

// The last CTA of a split sequence's head group merges its chunks' partials into the output (MERGE): rows x 128
// float4 of output per CTA, each thread ROWS / 2 of them, the chunks' partials (written by this step, so read
// through L2) in chunk order with the combine pass's arithmetic (its G = 1 sums: the same values). The loads of U
// outputs' partials go out at once (U x chunks x 5 registers; the main loop's are free by now): one L2 round per U.
template <int ROWS>
__device__ __forceinline__ void merge_chunks(const Params &p, int seq, int head0, int tid) {
  // U: the most that leaves each kernel unspilled (ptxas, nvcc 13.0): at 16 rows 8 on sm_90 (one round), 4 on sm_80
  // (8 spilled 32 bytes); 4 at 32 rows; 2 at 64 rows (sm_90 takes 4 too; sm_80's 64-row bf16 merge kernel spills
  // ~136 bytes with 2 or 4, its kernel without the merge 16)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int U16 = 8;
#else
  constexpr int U16 = 4;
#endif
  constexpr int ITEMS = ROWS * (DV / 4) / THREADS, U = ROWS == 16 ? U16 : ROWS == 32 ? 4 : 2;
  static_assert(ITEMS % U == 0 && ROWS * (DV / 4) % THREADS == 0, "whole rounds of outputs per thread");
  constexpr int NC = KM_MLA_MERGE_CHUNKS;
  const int n = __ldg(p.seq_chunks + seq), c0 = __ldg(p.seq_chunk0 + seq);
#pragma unroll 1
  for (int i0 = 0; i0 < ITEMS; i0 += U) {
    float l[U][NC];
    float4 po[U][NC];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = tid + (i0 + u) * THREADS, head = head0 + i / (DV / 4), d4 = i % (DV / 4);
#pragma unroll
      for (int k = 0; k < NC; ++k)
        if (k < n) {
          const size_t slot = (size_t)(c0 + k) * p.heads + head;
          l[u][k] = __ldcg(p.part_lse + slot);
          po[u][k] = __ldcg(reinterpret_cast<const float4 *>(p.part_o + slot * DV) + d4);
        }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = tid + (i0 + u) * THREADS, head = head0 + i / (DV / 4), d4 = i % (DV / 4);
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < NC; ++k)
        if (k < n) m = fmaxf(m, l[u][k]);
      float w = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int k = 0; k < NC; ++k)
        if (k < n) {
          const float b = exp2f(l[u][k] - m);  // <= 1; 1 for the largest
          w += b;
          acc[0] += b * po[u][k].x;
          acc[1] += b * po[u][k].y;
          acc[2] += b * po[u][k].z;
          acc[3] += b * po[u][k].w;
        }
      const float inv = 1.f / w;
      const uint2 v = make_uint2(pack_bf16(acc[0] * inv, acc[1] * inv), pack_bf16(acc[2] * inv, acc[3] * inv));
      *reinterpret_cast<uint2 *>(p.out + ((size_t)seq * p.heads + head) * DV + 4 * d4) = v;
    }
  }
}

// merge_count (MERGE): per (sequence, head group) arrival counts, zero between steps. A kernel parameter of its own:
// one more Params field made ptxas spill 24-44 bytes in the 64-row bf16 kernel (255 registers), as it did before.
template <int ROWS, int KV, bool MERGE>
__global__ void __launch_bounds__(THREADS, 1) mla_kernel(const Params p, unsigned *merge_count) {
  using L = Layout<ROWS>;
  constexpr bool FP8 = KV == KM_MLA_FP8_E4M3;
  constexpr bool QREG = L::QREG;
  constexpr int EB = FP8 ? 1 : 2;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char *q_s = smem;
  unsigned char *st = q_s + q_region_bytes(ROWS);  // bf16: stages x tile; fp8: raw codes, then the bf16 tile
  const int stage_bytes = FP8 ? RAW_BYTES + TILE_BYTES : p.stages * TILE_BYTES;
  unsigned char *p_s = st + stage_bytes;
  float *red = reinterpret_cast<float *>(p_s + ROWS * P_ROW_BYTES);
  float *mrun = red + RED_FLOATS;
  const uint32_t st_u = smem_addr(st), p_u = smem_addr(p_s);
  // Q's shared copy: its own region, or (QREG) a stage that nothing writes before the first tile's barrier:
  // fp8's bf16 tile, the last bf16 stage; with one bf16 stage, stage 0 before the first tile is loaded
  const bool q_alone = QREG && !FP8 && p.stages == 1;
  const bool three = !FP8 && p.stages == 3;  // a tile's wait leaves the next one in flight
  const uint32_t q_u = !QREG ? smem_addr(q_s) : st_u + (FP8 ? RAW_BYTES : (p.stages - 1) * TILE_BYTES);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
  const auto [chunk, head0, seq, tb, te, ctx, table] = chunk_work(p, ROWS);
  const int rg = warp % L::RG, tgi = warp / L::RG;
  const int srow0 = rg * 16 * L::SMT, stok0 = tgi * L::STOK, ocol0 = warp * L::OCOLS;
  const int n = te - tb;

  // ---- Q (once) and the first tile, one cp.async group; with three stages the second tile, a second group
  uint32_t qf[QREG ? D / 16 : 1][4];  // QREG: this warp's Q fragments of every k-step, loaded once
  {
    const char *qsrc = reinterpret_cast<const char *>(p.q + ((size_t)seq * p.heads + head0) * D);
    for (int i = tid; i < ROWS * ROW_CHUNKS; i += THREADS) {
      const int r = i / ROW_CHUNKS, cc = i - r * ROW_CHUNKS;
      cp_async16(q_u + swz(r, cc, ROW_BYTES), qsrc + (size_t)i * 16, 16);
    }
    if (q_alone) {
      cp_async_commit();
      cp_async_wait_all();
      __syncthreads();
      load_q_fragments<QREG>(qf, q_u, srow0, lane);
      __syncthreads();  // every warp holds its Q before the first tile overwrites it
    }
    const int valid = min(TILE, ctx - tb * TILE);
    if constexpr (FP8)
      load_raw_tile<THREADS>(st_u, tile_src<EB>(p, table, tb), valid, tid);
    else
      load_tile_bf16(st_u, tile_src<EB>(p, table, tb), valid, tid);
    cp_async_commit();
    if (three) {
      if (n > 1) load_tile_bf16(st_u + TILE_BYTES, tile_src<EB>(p, table, tb + 1), min(TILE, ctx - (tb + 1) * TILE), tid);
      cp_async_commit();
    }
  }
  if (tid < 64) mrun[tid] = -INFINITY;
  if (QREG && !q_alone) {
    if (three)
      cp_async_wait_one();
    else
      cp_async_wait_all();
    __syncthreads();
    load_q_fragments<QREG>(qf, q_u, srow0, lane);  // the loop's first barrier orders it before Q's stage is reused
  }

  const float tscale = FP8 ? __ldg(p.scale) : 1.f;
  const float s_log2 = p.scale_log2 * tscale;

  float o[L::MT][L::ONT][4];
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt)
#pragma unroll
    for (int j = 0; j < L::ONT; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
  float lsum[L::SMT][2];
#pragma unroll
  for (int mt = 0; mt < L::SMT; ++mt) lsum[mt][0] = lsum[mt][1] = 0.f;

  int par = 0, buf = 0;
  for (int it = 0; it < n; ++it) {
    const int t = tb + it;
    if (three)
      cp_async_wait_one();  // tile t + 1 may still be in flight
    else
      cp_async_wait_all();
    __syncthreads();  // tile t is in shared memory; every warp is done with tile t - 1
    uint32_t tile_u;
    if constexpr (FP8) {
      convert_tile(st, st + RAW_BYTES, tid);
      __syncthreads();  // the bf16 tile is complete and the raw stage is free
      if (it + 1 < n) load_raw_tile<THREADS>(st_u, tile_src<EB>(p, table, t + 1), min(TILE, ctx - (t + 1) * TILE), tid);
      cp_async_commit();
      tile_u = st_u + RAW_BYTES;
    } else {
      if (p.stages >= 2) {  // tile t + stages - 1 into the stage tile t - 1 held (free since the barrier above)
        const int ahead = p.stages - 1, nb = buf == 0 ? ahead : buf - 1;
        if (it + ahead < n)
          load_tile_bf16(st_u + nb * TILE_BYTES, tile_src<EB>(p, table, t + ahead),
                         min(TILE, ctx - (t + ahead) * TILE), tid);
        cp_async_commit();
      }
      tile_u = st_u + buf * TILE_BYTES;
      buf = buf + 1 == p.stages ? 0 : buf + 1;
    }
    const int valid = min(TILE, ctx - t * TILE);

    // ---- S = Q C^T for rows srow0.., tokens stok0..
    float s[L::SMT][L::SNT][4];
#pragma unroll
    for (int mt = 0; mt < L::SMT; ++mt)
#pragma unroll
      for (int j = 0; j < L::SNT; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
    float s_odd[L::SCH == 2 ? 4 : 1] = {};  // SCH 2 (one m16n8 tile): the odd k-steps' chain
#pragma unroll(L::S_UNROLL)
    for (int kk = 0; kk < D / 16; kk += 2) {  // two k-steps of 16 dims
      uint32_t a[L::SMT][2][4], b[2][L::SNT][2];
#pragma unroll
      for (int mt = 0; mt < L::SMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if constexpr (QREG) {
#pragma unroll
            for (int e = 0; e < 4; ++e) a[mt][h][e] = qf[kk + h][e];
          } else {
            ldsm_x4(q_u + swz(srow0 + 16 * mt + (lane & 15), 2 * (kk + h) + (lane >> 4), ROW_BYTES), a[mt][h][0],
                    a[mt][h][1], a[mt][h][2], a[mt][h][3]);
          }
      if constexpr (L::SNT == 2) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          ldsm_x4(tile_u + swz(stok0 + (lane & 7) + ((lane >> 4) << 3), 2 * (kk + h) + ((lane >> 3) & 1), ROW_BYTES),
                  b[h][0][0], b[h][0][1], b[h][1][0], b[h][1][1]);
      } else {
        ldsm_x4(tile_u + swz(stok0 + (lane & 7), 2 * kk + (lane >> 3), ROW_BYTES), b[0][0][0], b[0][0][1], b[1][0][0],
                b[1][0][1]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int mt = 0; mt < L::SMT; ++mt)
#pragma unroll
          for (int j = 0; j < L::SNT; ++j) {
            if constexpr (L::SCH == 2) {
              if (h) {
                mma_bf16(s_odd, a[mt][h], b[h][j][0], b[h][j][1]);
                continue;
              }
            }
            mma_bf16(s[mt][j], a[mt][h], b[h][j][0], b[h][j][1]);
          }
    }
    if constexpr (L::SCH == 2) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[0][0][e] += s_odd[e];
    }

    // ---- scores in log2 units, tokens past the context masked, this warp's row maxima to shared memory
    float mx[L::SMT][2];
#pragma unroll
    for (int mt = 0; mt < L::SMT; ++mt) {
      mx[mt][0] = mx[mt][1] = -INFINITY;
#pragma unroll
      for (int j = 0; j < L::SNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = stok0 + 8 * j + 2 * c + (e & 1);
          const float x = col < valid ? s[mt][j][e] * s_log2 : -INFINITY;
          s[mt][j][e] = x;
          mx[mt][e >> 1] = fmaxf(mx[mt][e >> 1], x);
        }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mx[mt][h] = fmaxf(mx[mt][h], __shfl_xor_sync(0xffffffffu, mx[mt][h], 1));
        mx[mt][h] = fmaxf(mx[mt][h], __shfl_xor_sync(0xffffffffu, mx[mt][h], 2));
        if (c == 0) red[tgi * ROWS + srow0 + 16 * mt + g + 8 * h] = mx[mt][h];
      }
    }
    __syncthreads();  // every token group's maxima are in

    // ---- the new row maxima (each thread for the rows it needs), P = exp2(S - max) to shared memory
    const float *mold = mrun + par * 64;
#pragma unroll
    for (int mt = 0; mt < L::SMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = srow0 + 16 * mt + g + 8 * h;
        float mn = mold[r];
#pragma unroll
        for (int k = 0; k < L::TG; ++k) mn = fmaxf(mn, red[k * ROWS + r]);
        const float corr = exp2f(mold[r] - mn);
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < L::SNT; ++j) {
          const float p0 = exp2f(s[mt][j][2 * h] - mn), p1 = exp2f(s[mt][j][2 * h + 1] - mn);
          sum += p0 + p1;
          const int col = stok0 + 8 * j + 2 * c;
          *reinterpret_cast<uint32_t *>(p_s + swz(r, col >> 3, P_ROW_BYTES) + (col & 7) * 2) = pack_bf16(p0, p1);
        }
        lsum[mt][h] = lsum[mt][h] * corr + sum;
      }
    float oc[L::MT][2];
#pragma unroll
    for (int mt = 0; mt < L::MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * mt + g + 8 * h;
        float mn = mold[r];
#pragma unroll
        for (int k = 0; k < L::TG; ++k) mn = fmaxf(mn, red[k * ROWS + r]);
        oc[mt][h] = exp2f(mold[r] - mn);
        if (warp == 0 && c == 0) mrun[(par ^ 1) * 64 + r] = mn;
      }
    __syncthreads();  // P is complete

    // ---- O = O x corr + P V over this warp's 64 output dims
#pragma unroll
    for (int mt = 0; mt < L::MT; ++mt)
#pragma unroll
      for (int j = 0; j < L::ONT; ++j) {
        o[mt][j][0] *= oc[mt][0];
        o[mt][j][1] *= oc[mt][0];
        o[mt][j][2] *= oc[mt][1];
        o[mt][j][3] *= oc[mt][1];
      }
#pragma unroll
    for (int ks = 0; ks < TILE / 16; ++ks) {
      uint32_t a[L::MT][4];
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt)
        ldsm_x4(p_u + swz(16 * mt + (lane & 15), 2 * ks + (lane >> 4), P_ROW_BYTES), a[mt][0], a[mt][1], a[mt][2],
                a[mt][3]);
#pragma unroll
      for (int jj = 0; jj < L::ONT / 2; ++jj) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(tile_u + swz(16 * ks + (lane & 7) + (((lane >> 3) & 1) << 3), (ocol0 >> 3) + 2 * jj + (lane >> 4),
                               ROW_BYTES),
                  b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < L::MT; ++mt) {
          mma_bf16(o[mt][2 * jj], a[mt], b0, b1);
          mma_bf16(o[mt][2 * jj + 1], a[mt], b2, b3);
        }
      }
    }
    if constexpr (!FP8) {
      if (p.stages == 1) {
        __syncthreads();  // every warp is done with the one stage
        if (it + 1 < n) load_tile_bf16(st_u, tile_src<EB>(p, table, t + 1), min(TILE, ctx - (t + 1) * TILE), tid);
        cp_async_commit();
      }
    }
    par ^= 1;
  }

  // ---- row sums of the token groups meet in shared memory (the maxima exchange is no longer read)
#pragma unroll
  for (int mt = 0; mt < L::SMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float ls = lsum[mt][h];
      ls += __shfl_xor_sync(0xffffffffu, ls, 1);
      ls += __shfl_xor_sync(0xffffffffu, ls, 2);
      if (c == 0) red[tgi * ROWS + srow0 + 16 * mt + g + 8 * h] = ls;
    }
  __syncthreads();

  // ---- the output (one chunk) or the partial: normalised output and log2-sum-exp
  const bool direct = __ldg(p.seq_chunks + seq) == 1;
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 16 * mt + g + 8 * h;
      float tot = 0.f;
#pragma unroll
      for (int k = 0; k < L::TG; ++k) tot += red[k * ROWS + r];
      const float f = tscale / tot;  // tot > 0: every chunk holds a visible token
      const size_t slot = direct ? (size_t)seq * p.heads + head0 + r : (size_t)chunk * p.heads + head0 + r;
      if (direct) {
        uint16_t *orow = p.out + slot * DV + ocol0 + 2 * c;
#pragma unroll
        for (int j = 0; j < L::ONT; ++j)
          *reinterpret_cast<uint32_t *>(orow + 8 * j) = pack_bf16(o[mt][j][2 * h] * f, o[mt][j][2 * h + 1] * f);
      } else {
        float *po = p.part_o + slot * DV + ocol0 + 2 * c;
#pragma unroll
        for (int j = 0; j < L::ONT; ++j)
          *reinterpret_cast<float2 *>(po + 8 * j) = make_float2(o[mt][j][2 * h] * f, o[mt][j][2 * h + 1] * f);
        if (warp == 0 && c == 0) p.part_lse[slot] = mrun[par * 64 + r] + log2f(tot);
      }
    }
  if constexpr (MERGE) {
    // the plan merges here (at most KM_MLA_MERGE_CHUNKS chunks a sequence): the last of a sequence's chunks to
    // count itself in, per head group, merges them all; its count goes back to 0 for the next step
    if (!direct) {
      __shared__ int last;
      __threadfence();  // this thread's partial stores, before the count
      __syncthreads();
      if (tid == 0) {
        unsigned *cnt = merge_count + (size_t)seq * p.groups + head0 / ROWS;
        const unsigned before = atomicAdd(cnt, 1u);
        last = before + 1 == (unsigned)__ldg(p.seq_chunks + seq);
        if (last) *cnt = 0u;  // every other chunk has counted itself in
      }
      __syncthreads();
      if (!last) return;
      __threadfence();  // the other chunks' partials, after their counts
      merge_chunks<ROWS>(p, seq, head0, tid);
    }
  }
}

// Combine: one CTA per (sequence, head) of a split sequence, G groups (1, 2 or 4: the plan's combine_groups)
// of a thread per 4 output dims. The largest log2-sum-exp of the sequence's
// chunks first (every thread reads them all: 4 B per chunk, the same addresses across the CTA), then group g
// sums 2^(lse - max) x partial over chunks g, g + G, .. with its loads unrolled, so that a sequence of many
// chunks (batch 1 splits into up to one chunk per tile) has G x 4 partial rows in flight per CTA instead of
// one at a time; the groups meet in shared memory. Few chunks per sequence (large batches) take one group:
// 512-thread CTAs there would double the CTAs' waves and leave groups idle.
template <int G>
__global__ void __launch_bounds__(COMBINE_THREADS *G) mla_combine_kernel(const Params p) {
  __shared__ float4 part_acc[G > 1 ? G - 1 : 1][COMBINE_THREADS];
  __shared__ float part_w[G > 1 ? G - 1 : 1];
  const int seq = blockIdx.x / p.heads, head = blockIdx.x % p.heads;
  const int n = __ldg(p.seq_chunks + seq);
  if (n <= 1) return;
  const int c0 = __ldg(p.seq_chunk0 + seq);
  const int d4 = threadIdx.x % COMBINE_THREADS, grp = threadIdx.x / COMBINE_THREADS;
  const float *lse = p.part_lse + (size_t)c0 * p.heads + head;  // chunk k's at lse[k * heads]
  float m = -INFINITY;
#pragma unroll 8
  for (int k = 0; k < n; ++k) m = fmaxf(m, __ldg(lse + (size_t)k * p.heads));
  float w = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int k = grp; k < n; k += G) {
    const size_t slot = (size_t)(c0 + k) * p.heads + head;
    const float4 po = __ldg(reinterpret_cast<const float4 *>(p.part_o + slot * DV) + d4);
    const float b = exp2f(__ldg(lse + (size_t)k * p.heads) - m);  // <= 1; 1 for the largest
    w += b;
    acc[0] += b * po.x;
    acc[1] += b * po.y;
    acc[2] += b * po.z;
    acc[3] += b * po.w;
  }
  if constexpr (G > 1) {
    if (grp > 0) {
      part_acc[grp - 1][d4] = make_float4(acc[0], acc[1], acc[2], acc[3]);
      if (d4 == 0) part_w[grp - 1] = w;
    }
    __syncthreads();
    if (grp > 0) return;
  }
#pragma unroll
  for (int g = 0; g < G - 1; ++g) {
    const float4 a = part_acc[g][d4];
    acc[0] += a.x, acc[1] += a.y, acc[2] += a.z, acc[3] += a.w;
    w += part_w[g];
  }
  const float inv = 1.f / w;  // >= 1: the largest chunk contributes 1
  uint2 v = make_uint2(pack_bf16(acc[0] * inv, acc[1] * inv), pack_bf16(acc[2] * inv, acc[3] * inv));
  *reinterpret_cast<uint2 *>(p.out + ((size_t)seq * p.heads + head) * DV + 4 * d4) = v;
}

template <bool M>
const void *kernel_for_merge(int rows, km_mla_kv kv) {
  const bool f8 = kv == KM_MLA_FP8_E4M3;
  switch (rows) {
    case 16: return f8 ? (const void *)&mla_kernel<16, KM_MLA_FP8_E4M3, M> : (const void *)&mla_kernel<16, KM_MLA_BF16, M>;
    case 32: return f8 ? (const void *)&mla_kernel<32, KM_MLA_FP8_E4M3, M> : (const void *)&mla_kernel<32, KM_MLA_BF16, M>;
    case 64: return f8 ? (const void *)&mla_kernel<64, KM_MLA_FP8_E4M3, M> : (const void *)&mla_kernel<64, KM_MLA_BF16, M>;
    default: return nullptr;
  }
}

// The mma.sync kernel for `rows` heads per CTA; merge: the one whose last chunk CTAs merge (the plan's merge).
const void *kernel_for(int rows, km_mla_kv kv, bool merge = false) {
  return merge ? kernel_for_merge<true>(rows, kv) : kernel_for_merge<false>(rows, kv);
}

int rows_for(int heads) { return heads % 64 == 0 ? 64 : heads % 32 == 0 ? 32 : 16; }
int tiles_of(int ctx) { return (ctx + TILE - 1) / TILE; }
double tile_bytes(km_mla_kv kv) { return (double)TILE * D * (kv == KM_MLA_BF16 ? 2 : 1); }

// Chunk length (tiles): the resident CTAs run the work in waves, each as long as its longest chunk plus a
// start (the first tile's latency and Q, ~1 tile) and, when split, the partial's write and combine read
// (in tiles of cache bytes); the whole work spread evenly bounds it from below. The cheapest candidate wins,
// ties to the longer chunk.
int pick_chunk_tiles(const km_mla_shape *s, const km_mla_config *cfg, int batch, const int32_t *ctx) {
  const double W = cfg->ctas > 0 ? cfg->ctas : 1, groups = s->num_heads / cfg->rows;
  const double part_tiles = 2.0 * cfg->rows * (DV + 1) * 4 / tile_bytes(s->kv);
  int longest = 1;
  for (int b = 0; b < batch; ++b) longest = tiles_of(ctx[b]) > longest ? tiles_of(ctx[b]) : longest;
  int best = longest;
  double best_cost = 1e300;
  for (int ct = longest; ct >= 1; ct = ct > 64 ? ct - (ct >> 6) : ct - 1) {
    double items = 0, work = 0;
    int maxlen = 0;
    bool split = false;
    for (int b = 0; b < batch; ++b) {
      const int n = tiles_of(ctx[b]), nc = (n + ct - 1) / ct, len = (n + nc - 1) / nc;
      items += nc;
      split |= nc > 1;
      maxlen = len > maxlen ? len : maxlen;
    }
    const double startup = 1.0 + (split ? part_tiles : 0.0);
    for (int b = 0; b < batch; ++b) {
      const int n = tiles_of(ctx[b]), nc = (n + ct - 1) / ct;
      work += n + nc * startup;
    }
    items *= groups;
    work *= groups;
    double cost = ceil(items / W) * (maxlen + startup);
    if (cost < work / W) cost = work / W;
    if (cost < best_cost * (1 - 1e-9)) {
      best_cost = cost;
      best = ct;
    }
  }
  return best;
}

// The combine pass instantiated for `groups` chunk groups (1, 2 or COMBINE_GROUPS), nullptr for another count.
const void *combine_kernel(int groups) {
  return groups == COMBINE_GROUPS ? (const void *)&mla_combine_kernel<COMBINE_GROUPS>
         : groups == 2            ? (const void *)&mla_combine_kernel<2>
         : groups == 1            ? (const void *)&mla_combine_kernel<1>
                                  : nullptr;
}

// The most chunks of one sequence in the plan (at least 1).
int most_chunks(const km_mla_plan *p) {
  int most = 1;
  for (int b = 0; b < p->batch; ++b) most = p->ch.seq_chunks[b] > most ? p->ch.seq_chunks[b] : most;
  return most;
}

// The combine pass's chunk groups: one while every sequence has fewer than 8 chunks, 2 from 8, 4 from 16.
int combine_groups_for(const km_mla_plan *p) {
  const int most = most_chunks(p);
  return most >= 16 ? COMBINE_GROUPS : most >= 8 ? 2 : 1;
}

}  // namespace

extern "C" const char *km_mla_shape_error(const km_mla_shape *s) {
  if (s->num_heads < 16 || s->num_heads % 16) return "query heads must be a positive multiple of 16";
  if (s->block_size < TILE || s->block_size % TILE) return "block size must be a multiple of 64";
  if (s->kv < 0 || s->kv >= KM_MLA_KV_COUNT) return "unknown latent format";
  return nullptr;
}

extern "C" int km_mla_smem_bytes(km_mla_kv kv, int rows, int stages) {
  const int st = kv == KM_MLA_BF16 ? stages * TILE_BYTES : RAW_BYTES + TILE_BYTES;
  return q_region_bytes(rows) + st + rows * P_ROW_BYTES + (RED_FLOATS + MRUN_FLOATS) * (int)sizeof(float);
}

extern "C" int km_mla_q_in_registers(int rows) { return q_in_registers(rows); }

extern "C" int km_mla_wgmma_smem_bytes(km_mla_kv kv) { return wg_smem_bytes(kv, KM_MLA_WG_DEFAULT); }

extern "C" int km_mla_seesaw_smem_bytes(void) { return seesaw_smem_bytes(); }

extern "C" int km_mla_wgmma_usable(int device) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return 0;
  if (major != 9 || minor != 0) return 0;
  cudaFuncAttributes fa;
  // the sm_90a code runs on SM 9.0 only; a build without it has only the stub of another architecture
  if (cudaFuncGetAttributes(&fa, wg_kernel(KM_MLA_BF16, KM_MLA_WG_DEFAULT)) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return fa.binaryVersion == 90;
}

static const void *config_kernel(const km_mla_config *cfg, km_mla_kv kv, bool merge = false) {
  if (cfg->wgmma) return cfg->rows == 64 && !merge ? wg_kernel(kv, cfg->wgmma) : nullptr;
  return kernel_for(cfg->rows, kv, merge);
}

static int config_smem_need(const km_mla_config *cfg, km_mla_kv kv) {
  return cfg->wgmma ? wg_smem_bytes(kv, cfg->wgmma) : km_mla_smem_bytes(kv, cfg->rows, cfg->stages);
}

static int config_threads(const km_mla_config *cfg) { return cfg->wgmma ? wg_threads(cfg->wgmma) : THREADS; }

extern "C" cudaError_t km_mla_config_prepare(const km_mla_config *cfg, km_mla_kv kv) {
  const void *k = config_kernel(cfg, kv);
  if (!k) return cudaErrorInvalidValue;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg->smem_bytes);
  if (e == cudaSuccess && !cfg->wgmma)  // the same kernel with the in-kernel merge (a plan's merge)
    e = cudaFuncSetAttribute(config_kernel(cfg, kv, true), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             cfg->smem_bytes);
  return e;
}

// Resident CTAs of configuration c on the device (0: none fits); c->smem_bytes set and prepared.
static cudaError_t resident_ctas(km_mla_config *c, km_mla_kv kv, int sms, int optin) {
  c->smem_bytes = config_smem_need(c, kv);
  c->ctas = 0;
  if (c->smem_bytes > optin) return cudaSuccess;
  cudaError_t e = km_mla_config_prepare(c, kv);
  int blocks = 0;
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, config_kernel(c, kv), config_threads(c), c->smem_bytes);
  c->ctas = blocks * sms;
  return e;
}

extern "C" cudaError_t km_mla_pick_config_kernel(const km_mla_shape *s, int device, km_mla_kernel kind,
                                                 km_mla_config *out) {
  memset(out, 0, sizeof *out);
  if (km_mla_shape_error(s)) return cudaErrorInvalidValue;
  int optin = 0, sms = 0;
  cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  if (kind != KM_MLA_KERNEL_MMA) {
    const int variant = kind >= KM_MLA_KERNEL_WGMMA_SPLIT_S ? KM_MLA_WG_SPLIT_S + (kind - KM_MLA_KERNEL_WGMMA_SPLIT_S)
                                                            : KM_MLA_WG_DEFAULT;
    // the seesaw and Q-in-registers kernels take bf16 latents only
    const bool can = s->num_heads % 64 == 0 && (!KM_MLA_WG_BF16_ONLY(variant) || s->kv == KM_MLA_BF16) &&
                     km_mla_wgmma_usable(device);
    if (can) {
      km_mla_config c = {64, s->kv == KM_MLA_BF16 ? 2 : 1, 0, 0, variant};
      if ((e = resident_ctas(&c, s->kv, sms, optin)) != cudaSuccess) return e;
      if (c.ctas > 0) {
        *out = c;
        return cudaSuccess;
      }
    }
    if (kind >= KM_MLA_KERNEL_WGMMA) return cudaErrorNotSupported;
  }
  for (int rows = rows_for(s->num_heads); rows >= 16; rows /= 2)
    for (int stages = s->kv == KM_MLA_BF16 ? max_bf16_stages(rows) : 1; stages >= 1; --stages) {
      km_mla_config c = {rows, stages, 0, 0, 0};
      if ((e = resident_ctas(&c, s->kv, sms, optin)) != cudaSuccess) return e;
      if (c.ctas < 1) continue;
      *out = c;
      return cudaSuccess;
    }
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t km_mla_pick_config(const km_mla_shape *s, int device, km_mla_config *out) {
  return km_mla_pick_config_kernel(s, device, KM_MLA_KERNEL_AUTO, out);
}

extern "C" int km_mla_plan_make(km_mla_plan *p, const km_mla_shape *s, const km_mla_config *cfg, int batch,
                                const int32_t *context_lens, int max_blocks_per_seq, int chunk_tiles, char *err,
                                size_t errlen) {
  memset(p, 0, sizeof *p);
  const char *why = km_mla_shape_error(s);
  if (!why && batch < 1) why = "batch must be >= 1";
  if (!why && (cfg->rows != 16 && cfg->rows != 32 && cfg->rows != 64)) why = "rows per CTA must be 16, 32 or 64";
  if (!why && cfg->wgmma && cfg->rows != 64) why = "the wgmma kernel takes 64 rows per CTA";
  if (!why && s->num_heads % cfg->rows) why = "query heads must be a multiple of the rows per CTA";
  if (!why && s->kv == KM_MLA_BF16 && (cfg->stages < 1 || cfg->stages > max_bf16_stages(cfg->rows)))
    why = cfg->rows == 16 ? "bf16 stages must be 1, 2 or 3 at 16 rows per CTA" : "bf16 stages must be 1 or 2";
  if (why) {
    snprintf(err, errlen, "%s", why);
    return -1;
  }
  for (int b = 0; b < batch; ++b) {
    const int ctx = context_lens[b];
    if (ctx < 1) {
      snprintf(err, errlen, "sequence %d: context %d must be >= 1", b, ctx);
      return -1;
    }
    if ((long long)(ctx + s->block_size - 1) / s->block_size > max_blocks_per_seq) {
      snprintf(err, errlen, "sequence %d: context %d needs more than %d blocks of %d", b, ctx, max_blocks_per_seq,
               s->block_size);
      return -1;
    }
  }
  if (chunk_tiles <= 0) chunk_tiles = pick_chunk_tiles(s, cfg, batch, context_lens);
  int32_t *tiles = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
  if (!tiles) {
    snprintf(err, errlen, "no host memory for the plan");
    return -1;
  }
  for (int b = 0; b < batch; ++b) tiles[b] = tiles_of(context_lens[b]);
  const long long chunks = km_split_chunks_count(batch, tiles, chunk_tiles);
  int rc = 0;
  if (chunks * (s->num_heads / cfg->rows) > (1LL << 31) - 1) {
    snprintf(err, errlen, "too many CTAs (%lld chunks)", chunks);
    rc = -1;
  } else if (km_split_chunks_make(&p->ch, batch, NULL, tiles, chunk_tiles) != 0) {
    snprintf(err, errlen, "no host memory for the plan");
    rc = -1;
  }
  free(tiles);
  if (rc) return rc;
  p->shape = *s;
  p->cfg = *cfg;
  p->batch = batch;
  p->max_blocks_per_seq = max_blocks_per_seq;
  p->chunk_tiles = chunk_tiles;
  p->num_chunks = p->ch.num_chunks;
  p->split = p->ch.split;
  p->combine_groups = combine_groups_for(p);
  p->merge = 0;
  return 0;
}

extern "C" int km_mla_plan_can_merge(const km_mla_plan *p) {
  return p->split && !p->cfg.wgmma && most_chunks(p) <= KM_MLA_MERGE_CHUNKS;
}

extern "C" cudaError_t km_mla_plan_upload(km_mla_plan *p, cudaStream_t stream) {
  if (p->merge && !km_mla_plan_can_merge(p)) return cudaErrorInvalidValue;
  cudaError_t e = km_split_chunks_upload(&p->ch, stream);
  if (e != cudaSuccess || !p->merge || p->d_merge_count) return e;
  const size_t bytes = (size_t)p->batch * (p->shape.num_heads / p->cfg.rows) * sizeof(unsigned);
  e = cudaMalloc((void **)&p->d_merge_count, bytes);
  if (e == cudaSuccess) e = cudaMemsetAsync(p->d_merge_count, 0, bytes, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  return e;
}

extern "C" void km_mla_plan_free(km_mla_plan *p) {
  km_split_chunks_free(&p->ch);
  if (p->d_merge_count) cudaFree(p->d_merge_count);
  memset(p, 0, sizeof *p);
}

extern "C" size_t km_mla_workspace_bytes(const km_mla_plan *p) {
  if (!p->split) return 0;
  return (size_t)p->num_chunks * p->shape.num_heads * (DV + 1) * sizeof(float);
}

extern "C" double km_mla_cache_bytes_read(const km_mla_plan *p, const int32_t *context_lens) {
  double tokens = 0;
  for (int b = 0; b < p->batch; ++b) tokens += context_lens[b];
  return tokens * D * (p->shape.kv == KM_MLA_BF16 ? 2 : 1);
}

extern "C" double km_mla_partial_bytes(const km_mla_plan *p) {
  if (!p->split) return 0;
  double slots = 0;
  for (int b = 0; b < p->batch; ++b)
    if (p->ch.seq_chunks[b] > 1) slots += (double)p->ch.seq_chunks[b] * p->shape.num_heads;
  return slots * (DV + 1) * sizeof(float);
}

extern "C" double km_mla_flops(const km_mla_shape *s, int batch, const int32_t *context_lens) {
  double tokens = 0;
  for (int b = 0; b < batch; ++b) tokens += context_lens[b];
  return 2.0 * s->num_heads * tokens * (D + DV);
}

extern "C" cudaError_t km_mla_decode(const km_mla_plan *pl, const km_mla_args *a, cudaStream_t stream) {
  const km_mla_shape *s = &pl->shape;
  const bool merge = pl->split && pl->merge;
  const void *k = config_kernel(&pl->cfg, s->kv, merge);
  if (!k || !pl->ch.d_arrays || pl->cfg.smem_bytes < config_smem_need(&pl->cfg, s->kv) ||
      (merge && !pl->d_merge_count))
    return cudaErrorInvalidValue;
  if (s->kv != KM_MLA_BF16 && !a->scale) return cudaErrorInvalidValue;
  if (pl->split && (!a->workspace || (!merge && !combine_kernel(pl->combine_groups)))) return cudaErrorInvalidValue;
  Params p;
  memset(&p, 0, sizeof p);
  p.q = a->q;
  p.cache = (const char *)a->cache;
  p.scale = a->scale;
  p.table = a->block_table;
  p.ctx_lens = a->context_lens;
  const size_t nc = (size_t)pl->num_chunks;
  km_split_chunks_bind(p, &pl->ch);
  p.out = a->out;
  p.heads = s->num_heads;
  p.groups = s->num_heads / pl->cfg.rows;
  p.block_size = s->block_size;
  p.mbps = pl->max_blocks_per_seq;
  p.stages = pl->cfg.stages;
  p.scale_log2 = a->sm_scale * LOG2E;
  if (pl->split) {
    p.part_o = (float *)a->workspace;
    p.part_lse = p.part_o + nc * s->num_heads * DV;
  }
  unsigned *merge_count = merge ? pl->d_merge_count : nullptr;
  void *args[] = {&p, &merge_count};  // the wgmma kernels and the combine pass take p alone
  const unsigned grid = (unsigned)(nc * p.groups);
  cudaError_t e =
      cudaLaunchKernel(k, dim3(grid), dim3(config_threads(&pl->cfg)), args, (size_t)pl->cfg.smem_bytes, stream);
  if (e != cudaSuccess || !pl->split || merge) return e;
  return cudaLaunchKernel(combine_kernel(pl->combine_groups), dim3((unsigned)(pl->batch * s->num_heads)),
                          dim3(COMBINE_THREADS * pl->combine_groups), args, 0, stream);
}
