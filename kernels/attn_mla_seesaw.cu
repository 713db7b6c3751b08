// MLA decode at 64 heads per CTA on sm_90a with two latent tiles per step and the two warpgroups taking turns
// (KM_MLA_WG_SEESAW, bf16 latents). The one-tile kernel of attn_mla_wgmma.cu runs S, the softmax and P V one
// after the other, so the tensor cores idle through every softmax and barrier (Nsight Compute: tensor pipe busy
// 42%). Here each warpgroup owns half of O (256 output dims, 128 fp32 registers) and the S of one tile of each
// pair (t0 for warpgroup 0, t1 for warpgroup 1), and the running row maxima pass from one to the other:
//   wg0: softmax(S0) -> m0, c0    | O_L = O_L c0 + P0 V0_L (P0 from registers)      | O_L = O_L d + P1 V1_L (P1 smem)
//   wg1:   (waits for m0, c0)     softmax(S1) -> m1, d | O_R = O_R c0 d + P1 V1_R + (P0 d) V0_R (P0 d smem)
// then each computes the S of its next tile while the other still multiplies, so one warpgroup's softmax runs
// beside the other's MMAs. With base-2 scores, m0 = max(m, rowmax S0), c0 = 2^(m - m0), m1 = max(m0, rowmax S1),
// d = 2^(m0 - m1): both halves of O and both partial row sums end every pair relative to m1.
// Shared memory (231,720 B with the alignment slack): Q, tiles 0 and 1 (the blocked, 128-byte-swizzled layout of
// attn_mla_wgmma.cuh), P1, row maxima and corrections, 5 mbarriers; P0 d goes to tile 0's rope block (dims
// 512-575: S0 has read it, P V reads dims 0-511 only). Loads: Q by every thread, then each tile in two halves
// (blocks 0-3, the dims warpgroup 0's P V reads; blocks 4-8) by cp.async, each half completing its own mbarrier
// (cp.async.mbarrier.arrive.noinc from the 128 threads that issued it). Every half has one last reader, which
// refills it for the next pair as soon as its MMAs are done: warpgroup 0 the left halves (after P0 V0_L and
// P1 V1_L), warpgroup 1 the right ones (after its P V over each tile), so no "empty" barrier is needed; the S
// of a tile starts on the half that was refilled first. A chunk of odd length ends with a tile of no tokens
// (zero-filled, every score masked: P1 = 0, d = 1). Rows past the context are zero-filled.
// Measured (H200, h128 bf16 b64 x 8K): 363.9-366.0 us against 363.2-365.6 for the one-tile default; Nsight
// Compute gives both the same tensor-pipe share (41.6%), DRAM 35%: reports/attn-notes.md has what that says.
// The warpgroups meet at three named barriers per pair (C0, D, P), both syncing, with the non-.aligned
// barrier.sync: they reach them from different code (the .aligned bar.sync / bar.arrive pairs of the recorded
// run f98a5f0 were reported by synccheck as divergent and by racecheck as unpaired; see the notes).
#include "attn_mla_wgmma.cuh"

#include <math.h>

namespace {

constexpr int SS_THREADS = 256;   // two warpgroups
// shared memory from the 1,024-aligned base: Q, tile 0 (OFF_T0), tile 1 (OFF_T1), then
constexpr int OFF_P1 = 3 * REGION;
constexpr int OFF_M = OFF_P1 + P_BYTES;        // 64 floats: the running row maxima (base 2)
constexpr int OFF_C0 = OFF_M + ROWS * 4;       // 64: warpgroup 0's correction c0 of the pair
constexpr int OFF_D = OFF_C0 + ROWS * 4;       // 64: warpgroup 1's correction d of the pair
constexpr int OFF_SUM = OFF_D + ROWS * 4;      // 128: the two warpgroups' row sums, at the end
constexpr int OFF_BAR = OFF_SUM + 2 * ROWS * 4;
constexpr int NBAR = 5;                        // full(tile, half) 0-3, Q 4
constexpr int SS_SMEM = ALIGN + OFF_BAR + NBAR * 8;
static_assert(SS_SMEM <= 232448, "the seesaw kernel's shared memory exceeds the SM 9.0 opt-in limit");
static_assert(OFF_P1 % 1024 == 0, "P1 must start on a swizzle period");
// named barriers of the two warpgroups (256 threads; 0 is __syncthreads), each passed by both once per pair in
// the same order: C0 (warpgroup 0's m0, c0 written), D (warpgroup 1's m1, d), P (P0 d and P1 in shared memory)
enum { NB_C0 = 1, NB_D = 2, NB_P = 3, NB_END = 4 };

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int ROW_G = D * 2;  // bytes of a latent row in global memory
constexpr int OFF_T0 = REGION, OFF_T1 = 2 * REGION;

// A half of a tile is in shared memory for the wgmma this thread issues next. No proxy fence after the wait:
// the mbarrier completes once the cp.async writes have landed (the fence compiles to MEMBAR.ALL.CTA, which
// would also wait for this thread's own refills still in flight).
__device__ __forceinline__ void wait_loaded(uint32_t bar, int parity) { mbar_wait(bar, parity); }
// The two warpgroups reach each barrier from different code: the non-.aligned form (bar.sync is
// barrier.sync.aligned, which compute-sanitizer's synccheck rejects there as divergent).
__device__ __forceinline__ void nb_sync(int id) { asm volatile("barrier.sync %0, 256;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void pin_u(uint32_t (&a)[4][4]) {
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[k][i])::"memory");
}

// Half h of a tile (0: blocks 0-3, chunks 0-31 of a row; 1: blocks 4-8, chunks 32-71) by thread `idx` of the
// 128 of a warpgroup, each warp 512 contiguous bytes of a row per step: rows past `valid` zero-filled, nothing
// read for them.
__device__ __forceinline__ void load_half(uint32_t dst, const char *src, int valid, int h, int idx) {
  const int cc = (h ? 32 : 0) + (idx & 31);
#pragma unroll 1
  for (int i = 0; i < TILE / 4; ++i) {
    const int r = 4 * i + (idx >> 5);
    const bool ok = r < valid;
    cp_async16(dst + kaddr(r, cc), src + (ok ? (size_t)r * ROW_G + cc * 16 : 0), ok ? 16 : 0);
  }
  if (h) {
#pragma unroll 1
    for (int i = 0; i < TILE / 16; ++i) {  // the rope block: 16 rows of 8 chunks per step
      const int r = 16 * i + (idx >> 3), rc = 64 + (idx & 7);
      const bool ok = r < valid;
      cp_async16(dst + kaddr(r, rc), src + (ok ? (size_t)r * ROW_G + rc * 16 : 0), ok ? 16 : 0);
    }
  }
}

// S (+)= Q C^T over half h of the dims (h 0: k-steps 0-15, the blocks 0-3; 1: k-steps 16-35), one batch. L
// (SEESAW_LEAN): each descriptor one add from the two bases (desc_at), not built per k-step.
template <bool L>
__device__ __forceinline__ void s_half(float (&s)[32], uint32_t q_u, uint32_t t_u, int h, bool first) {
  // the 36 descriptor pairs are the same every pair of tiles: computed here each time, not hoisted out of the
  // loop into registers (ptxas spilled them there)
  asm volatile("" : "+r"(q_u), "+r"(t_u));
  wg_fence();
#pragma unroll
  for (int k = 0; k < (h ? 20 : 16); ++k) {
    const int kk = (h ? 16 : 0) + k;
    const uint32_t koff = (uint32_t)((kk >> 2) * KB_BYTES + (kk & 3) * 32);
    if constexpr (L)
      wgmma_s64(s, desc_at(desc(q_u, 16, 1024), koff), desc_at(desc(t_u, 16, 1024), koff), first && k == 0 ? 0 : 1);
    else
      wgmma_s64(s, desc(q_u + koff, 16, 1024), desc(t_u + koff, 16, 1024), first && k == 0 ? 0 : 1);
  }
  wg_commit();
}

// P = 2^(S - m) in place, this thread's part of the two row sums, and P as bf16 A fragments (k-step ks: tokens
// 16 ks .. +15).
__device__ __forceinline__ void probs(float (&s)[32], float mn0, float mn1, float &sum0, float &sum1,
                                      uint32_t (&pa)[4][4]) {
  sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    s[4 * j] = exp2f(s[4 * j] - mn0), s[4 * j + 1] = exp2f(s[4 * j + 1] - mn0);
    s[4 * j + 2] = exp2f(s[4 * j + 2] - mn1), s[4 * j + 3] = exp2f(s[4 * j + 3] - mn1);
    sum0 += s[4 * j] + s[4 * j + 1];
    sum1 += s[4 * j + 2] + s[4 * j + 3];
  }
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    pa[ks][0] = pack_bf16(s[8 * ks], s[8 * ks + 1]);
    pa[ks][1] = pack_bf16(s[8 * ks + 2], s[8 * ks + 3]);
    pa[ks][2] = pack_bf16(s[8 * ks + 4], s[8 * ks + 5]);
    pa[ks][3] = pack_bf16(s[8 * ks + 6], s[8 * ks + 7]);
  }
}

// P x (f0, f1) as a 64 x 64 bf16 K-major tile (row r: 128 bytes, 16-byte chunk k at k ^ (r & 7)).
__device__ __forceinline__ void store_p(unsigned char *dst, const float (&s)[32], float f0, float f1, int r0, int r1,
                                        int c) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int col = 8 * j + 2 * c;
    *reinterpret_cast<uint32_t *>(dst + r0 * 128 + (((col >> 3) ^ (r0 & 7)) << 4) + (col & 7) * 2) =
        pack_bf16(s[4 * j] * f0, s[4 * j + 1] * f0);
    *reinterpret_cast<uint32_t *>(dst + r1 * 128 + (((col >> 3) ^ (r1 & 7)) << 4) + (col & 7) * 2) =
        pack_bf16(s[4 * j + 2] * f1, s[4 * j + 3] * f1);
  }
}

// The descriptor of k-step ks of this warpgroup's V (blocks 4 wg .. +3 of the tile); L: by desc_at.
template <bool L>
__device__ __forceinline__ uint64_t v_desc(uint32_t t_u, int wg, int ks) {
  if constexpr (L) return desc_at(desc(t_u + wg * 4 * KB_BYTES, KB_BYTES, 1024), ks * 16 * 128);
  return desc(t_u + wg * 4 * KB_BYTES + ks * 16 * 128, KB_BYTES, 1024);
}
// O (+)= P V over this warpgroup's 256 dims, P from registers or shared memory.
template <bool L>
__device__ __forceinline__ void pv_regs(float (&o)[2][64], const uint32_t (&pa)[4][4], uint32_t t_u, int wg) {
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) wgmma_o256_rs(o[0], o[1], pa[ks], v_desc<L>(t_u, wg, ks));
  wg_commit();
}
template <bool L>
__device__ __forceinline__ void pv_smem(float (&o)[2][64], uint32_t p_u, uint32_t t_u, int wg) {
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
    wgmma_o256(o[0], o[1], L ? desc_at(desc(p_u, 16, 1024), ks * 32) : desc(p_u + ks * 32, 16, 1024),
               v_desc<L>(t_u, wg, ks), 1);
  wg_commit();
}
#endif

// Everything a warpgroup's loop needs from the kernel's setup.
struct Ctx {
  unsigned char *base;
  uint32_t q_u, t0_u, t1_u, p1_u, bar_u;
  int chunk, head0, seq, tb, n, ctx;
  const int32_t *table;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t full_bar(const Ctx &x, int t, int h) { return x.bar_u + 8 * (2 * t + h); }

// The latent rows of the chunk's tile it (past the chunk: a tile of no tokens, which reads nothing).
__device__ __forceinline__ const char *pair_tile_src(const Params &p, const Ctx &x, int it) {
  return it < x.n ? tile_src<2>(p, x.table, x.tb + it) : p.cache;
}
// Half h of tile t of pair pr (tile index tb + 2 pr + t), from src, by this warpgroup's 128 threads, then their
// arrivals on the half's mbarrier. L: the copies at fixed offsets (load_blocks_lean).
template <bool L>
__device__ __forceinline__ void refill_from(const Ctx &x, const char *src, int pr, int t, int h, int idx) {
  const int it = 2 * pr + t;
  const int valid = it < x.n ? min(TILE, x.ctx - (x.tb + it) * TILE) : 0;
  const uint32_t dst = t ? x.t1_u : x.t0_u;
  if constexpr (L) {
    if (h)
      load_blocks_lean<4, KBLK>(dst, src, valid, idx);
    else
      load_blocks_lean<0, 4>(dst, src, valid, idx);
  } else {
    load_half(dst, src, valid, h, idx);
  }
  cp_async_arrive(full_bar(x, t, h));
}
template <bool L>
__device__ __forceinline__ void refill(const Params &p, const Ctx &x, int pr, int t, int h, int idx) {
  refill_from<L>(x, pair_tile_src(p, x, 2 * pr + t), pr, t, h, idx);
}

// L (SEESAW_LEAN): the next pair's two block-table entries read at the top of the pair, a softmax before the
// refills that use them.
template <int WG, bool L>
__device__ __forceinline__ void seesaw_warpgroup(const Params &p, const Ctx &x) {
  const int tid = threadIdx.x & 127, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
  const int r0 = 16 * warp + g, r1 = r0 + 8;
  float *sm = reinterpret_cast<float *>(x.base + OFF_M), *sc0 = reinterpret_cast<float *>(x.base + OFF_C0);
  float *sd = reinterpret_cast<float *>(x.base + OFF_D), *ssum = reinterpret_cast<float *>(x.base + OFF_SUM);
  const uint32_t my_u = WG ? x.t1_u : x.t0_u;
  const int pairs = (x.n + 1) / 2;
  const float s_log2 = p.scale_log2;
  float o[2][64];
  zero_o(o);
  float ls0 = 0.f, ls1 = 0.f;
  float s[32];
  uint32_t pa[4][4];

  // ---- the S of this warpgroup's tile of pair 0, the half this warpgroup loads first
  mbar_wait(x.bar_u + 8 * 4, 0);  // Q
  constexpr int HF = WG;          // warpgroup 0 loads left halves, so its own tile's left half comes first
  wait_loaded(full_bar(x, WG, HF), 0);
  s_half<L>(s, x.q_u, my_u, HF, true);
  wait_loaded(full_bar(x, WG, HF ^ 1), 0);
  s_half<L>(s, x.q_u, my_u, HF ^ 1, false);
  wg_wait<0>();
  pin(s);

  for (int pr = 0; pr < pairs; ++pr) {
    const bool more = pr + 1 < pairs;
    const int nxt = (pr + 1) & 1;
    const char *src0 = nullptr, *src1 = nullptr;  // L: the next pair's tiles
    if (L && more) src0 = pair_tile_src(p, x, 2 * pr + 2), src1 = pair_tile_src(p, x, 2 * pr + 3);
    // half h of the next pair's tile t
    const auto next = [&](int t, int h) {
      if constexpr (L)
        refill_from<true>(x, t ? src1 : src0, pr + 1, t, h, tid);
      else
        refill<false>(p, x, pr + 1, t, h, tid);
    };
    if (WG == 0) {
      // ---- softmax of tile t0: m0, c0 to warpgroup 1
      const int valid = min(TILE, x.ctx - (x.tb + 2 * pr) * TILE);
      float mx0, mx1;
      scores(s, s_log2, valid, 0, c, mx0, mx1);
      const float mo0 = sm[r0], mo1 = sm[r1];
      const float mn0 = fmaxf(mo0, mx0), mn1 = fmaxf(mo1, mx1);
      const float c00 = exp2f(mo0 - mn0), c01 = exp2f(mo1 - mn1);
      float sum0, sum1;
      probs(s, mn0, mn1, sum0, sum1, pa);
      __syncwarp();  // the quad has read the old maxima
      if (c == 0) sm[r0] = mn0, sm[r1] = mn1, sc0[r0] = c00, sc0[r1] = c01;
      nb_sync(NB_C0);
      ls0 = ls0 * c00 + sum0, ls1 = ls1 * c01 + sum1;
      scale_o(o, c00, c01);
      // ---- O_L = O_L c0 + P0 V0_L (P0 from registers), and while it runs P0 d to tile 0's rope block for
      // warpgroup 1; then tile 0's left half is read: refill it (after the proxy fence, which would wait for the
      // refill's loads)
      pin(o[0]), pin(o[1]);
      pv_regs<L>(o, pa, x.t0_u, 0);
      nb_sync(NB_D);
      const float d0 = sd[r0], d1 = sd[r1];
      store_p(x.base + OFF_T0 + 8 * KB_BYTES, s, d0, d1, r0, r1, c);
      fence_async_smem();
      nb_sync(NB_P);
      wg_wait<0>();
      pin(o[0]), pin(o[1]), pin_u(pa);
      if (more) next(0, 0);
      // ---- O_L = O_L d + P1 V1_L (P1 from shared memory)
      ls0 *= d0, ls1 *= d1;
      scale_o(o, d0, d1);
      pin(o[0]), pin(o[1]);
      pv_smem<L>(o, x.p1_u, x.t1_u, 0);
      if (more) {
        // ---- the next t0's S beside P1 V1_L; tile 1's left half refilled as soon as P1 V1_L has read it
        wait_loaded(full_bar(x, 0, 0), nxt);
        s_half<L>(s, x.q_u, x.t0_u, 0, true);
        wg_wait<1>();
        next(1, 0);
        wait_loaded(full_bar(x, 0, 1), nxt);
        s_half<L>(s, x.q_u, x.t0_u, 1, false);
      }
      wg_wait<0>();
      pin(o[0]), pin(o[1]), pin(s);
    } else {
      // ---- softmax of tile t1 after warpgroup 0's: m1 = max(m0, rowmax), d = 2^(m0 - m1)
      const int it = 2 * pr + 1;
      const int valid = it < x.n ? min(TILE, x.ctx - (x.tb + it) * TILE) : 0;
      float mx0, mx1;
      scores(s, s_log2, valid, 0, c, mx0, mx1);
      nb_sync(NB_C0);
      const float m00 = sm[r0], m01 = sm[r1];
      const float f00 = sc0[r0], f01 = sc0[r1];
      const float mn0 = fmaxf(m00, mx0), mn1 = fmaxf(m01, mx1);
      const float d0 = exp2f(m00 - mn0), d1 = exp2f(m01 - mn1);
      float sum0, sum1;
      probs(s, mn0, mn1, sum0, sum1, pa);
      __syncwarp();
      if (c == 0) sm[r0] = mn0, sm[r1] = mn1, sd[r0] = d0, sd[r1] = d1;
      nb_sync(NB_D);
      const float f0 = f00 * d0, f1 = f01 * d1;
      ls0 = ls0 * f0 + sum0, ls1 = ls1 * f1 + sum1;
      scale_o(o, f0, f1);
      store_p(x.base + OFF_P1, s, 1.f, 1.f, r0, r1, c);
      fence_async_smem();
      nb_sync(NB_P);
      // ---- O_R = O_R c0 d + (P0 d) V0_R + P1 V1_R, tile 0's right half first so that it is refilled first
      pin(o[0]), pin(o[1]);
      pv_smem<L>(o, x.t0_u + 8 * KB_BYTES, x.t0_u, 1);
      pv_regs<L>(o, pa, x.t1_u, 1);
      wg_wait<1>();
      if (more) next(0, 1);
      wg_wait<0>();
      pin(o[0]), pin(o[1]), pin_u(pa);
      if (more) {
        // ---- tile 1's right half refilled, then the next t1's S, its left half (refilled by warpgroup 0 after
        // P1 V1_L) first
        next(1, 1);
        wait_loaded(full_bar(x, 1, 0), nxt);
        s_half<L>(s, x.q_u, x.t1_u, 0, true);
        wait_loaded(full_bar(x, 1, 1), nxt);
        s_half<L>(s, x.q_u, x.t1_u, 1, false);
        wg_wait<0>();
        pin(s);
      }
    }
  }

  // ---- the row sums of both warpgroups, then the output (one chunk) or the partial
  ls0 += __shfl_xor_sync(0xffffffffu, ls0, 1);
  ls0 += __shfl_xor_sync(0xffffffffu, ls0, 2);
  ls1 += __shfl_xor_sync(0xffffffffu, ls1, 1);
  ls1 += __shfl_xor_sync(0xffffffffu, ls1, 2);
  if (c == 0) ssum[WG * ROWS + r0] = ls0, ssum[WG * ROWS + r1] = ls1;
  nb_sync(NB_END);
  const bool direct = __ldg(p.seq_chunks + x.seq) == 1;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half ? r1 : r0;
    const float tot = ssum[r] + ssum[ROWS + r];
    const float f = 1.f / tot;  // tot > 0: every chunk holds a visible token
    const size_t slot = direct ? (size_t)x.seq * p.heads + x.head0 + r : (size_t)x.chunk * p.heads + x.head0 + r;
    store_o_row(p, o, half, f, slot, WG, c, direct);
    if (!direct && WG == 0 && c == 0) p.part_lse[slot] = sm[r] + log2f(tot);
  }
}
#endif

template <bool L>
__global__ void __launch_bounds__(SS_THREADS, 1) mla_seesaw_kernel(const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  Ctx x;
  x.base = reinterpret_cast<unsigned char *>(((uintptr_t)smem_raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
  x.q_u = smem_addr(x.base);
  x.t0_u = x.q_u + OFF_T0, x.t1_u = x.q_u + OFF_T1, x.p1_u = x.q_u + OFF_P1, x.bar_u = x.q_u + OFF_BAR;
  const ChunkWork w = chunk_work(p, ROWS);
  x.chunk = w.chunk, x.head0 = w.head0, x.seq = w.seq, x.tb = w.tb, x.n = w.te - w.tb, x.ctx = w.ctx, x.table = w.table;
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int i = 0; i < 4; ++i) mbar_init(x.bar_u + 8 * i, 128);  // full(tile, half): the loading warpgroup's threads
    mbar_init(x.bar_u + 8 * 4, SS_THREADS);                        // Q: every thread
  }
  if (tid < ROWS) reinterpret_cast<float *>(x.base + OFF_M)[tid] = -INFINITY;
  __syncthreads();

  // ---- Q by every thread, then pair 0: warpgroup 0 the left halves (the dims its P V reads), 1 the right ones
  const char *qsrc = reinterpret_cast<const char *>(p.q + ((size_t)x.seq * p.heads + x.head0) * D);
  for (int i = tid; i < ROWS * 72; i += SS_THREADS) {
    const int r = i / 72, cc = i - r * 72;
    cp_async16(x.q_u + kaddr(r, cc), qsrc + (size_t)i * 16, 16);
  }
  cp_async_arrive(x.bar_u + 8 * 4);
  const int wg = tid >> 7;
  refill<L>(p, x, 0, wg, wg, tid & 127);
  refill<L>(p, x, 0, wg ^ 1, wg, tid & 127);
  if (wg == 0)
    seesaw_warpgroup<0, L>(p, x);
  else
    seesaw_warpgroup<1, L>(p, x);
#endif
}

}  // namespace

namespace km_mla_dev {

const void *seesaw_kernel(bool lean) {
  return lean ? (const void *)&mla_seesaw_kernel<true> : (const void *)&mla_seesaw_kernel<false>;
}
int seesaw_smem_bytes() { return SS_SMEM; }
int seesaw_threads() { return SS_THREADS; }

}  // namespace km_mla_dev
