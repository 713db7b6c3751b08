// MLA decode over the paged latent cache on Hopper's warpgroup MMA (wgmma, sm_90a): the kernel that
// km_mla_pick_config takes for 64 query heads per CTA on an SM 9.0 device (attn_mla.h has the layouts; the
// mma.sync kernel of attn_mla.cu is the fallback and the /mma comparison rows). One CTA per (chunk, 64 heads),
// two warpgroups. Q and every latent tile sit in shared memory as 9 blocks of 64 dims (128-byte rows, the
// 16-byte chunk c of row r at c ^ (r & 7): wgmma's 128-byte swizzle), so both products read their operands
// straight from shared memory through descriptors:
//   S = Q C^T    K-major A (Q) and B (the tile), 36 k-steps of 16 dims;
//   softmax      fp32, base 2, running row maxima; P goes to shared memory as one 64 x 64 bf16 K-major tile;
//   O += P V     each warpgroup its 256 output dims, B = the same tile read N-major (transposed).
// Variants (km_mla_config.wgmma, attn_mla.h): SPLIT_S, both warpgroups compute S for 32 tokens each
// (m64n32k16) and exchange row maxima; ONE_S, warpgroup 0 computes S for all 64 tokens (m64n64k16: Q read
// from shared memory once per tile, not twice) and the softmax while warpgroup 1 issues the next tile's
// loads; ONE_S_N256, the same with each warpgroup's P V as one m64n256k16 per k-step; LEAN_DESC (the default),
// ONE_S_N256 with fixed-offset copies, the block table read ahead and each descriptor one add (below);
// SPLIT_K, S's 36 k-steps split over both warpgroups, warpgroup 1's partial handed over in shared memory.
// Shared memory read per tile and CTA by the MMAs: SPLIT_S 216 KiB (S) + 96 KiB (O), ONE_S 144 + 96,
// ONE_S_N256 144 + 80, against 573 KiB of ldmatrix traffic in the mma.sync kernel. Measured at 128 heads,
// batch 64 x 8K on an H200 (e37e176): mma.sync 636.7 us, SPLIT_S 437.0, ONE_S 368.8, ONE_S_N256 361.4;
// SPLIT_K (40b4c8a) 509.9 against the default's 366.4 in the same call.
// Nsight Compute on ONE_S: the tensor pipe is busy 41% of the cycles and issue 43%, with 2 warps per
// scheduler of which 0.66 are eligible: S, the softmax and P V run one after the other in each CTA (one CTA
// per SM: Q and two tiles fill its shared memory), so the tensor cores wait out the softmax, the barriers
// and each MMA batch's drain. fp8 latents: two stages of raw codes (the next tile's load is in flight for a
// whole step) converted into the one bf16 tile. Without sm_90a code (an sm_80 build, or a build without 90
// in CMAKE_CUDA_ARCHITECTURES) the kernels are empty stubs that the host side never picks.
#include "attn_mla_wgmma.cuh"

#include <math.h>

namespace {

using namespace km_mla_dev;

constexpr int THREADS = 256;
constexpr int RED_FLOATS = 2 * ROWS;         // row maxima / sums of the two warpgroups
constexpr int MRUN_FLOATS = 2 * ROWS;        // running row maxima, two parities

constexpr int smem_need(bool fp8) {
  return ALIGN + REGION + (fp8 ? REGION + 2 * RAW_BYTES : 2 * REGION) + P_BYTES + (RED_FLOATS + MRUN_FLOATS) * 4;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// S = Q C^T, K-major A and B: m64n32k16 (both warpgroups, 32 tokens each) and m64n64k16 (one, all 64).
__device__ __forceinline__ void wgmma_s32(float (&d)[16], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b), "r"(accumulate));
}
// O += P V, B (the latent dims) N-major: m64n128k16 (each warpgroup's 256 dims in two).
__device__ __forceinline__ void wgmma_o128(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}
// bf16 tile -> the blocked layout, by thread `idx` of STEP loaders.
template <int STEP>
__device__ __forceinline__ void load_tile(uint32_t dst, const char *src, int valid, int idx) {
  load_bf16_tile<STEP>(dst, src, valid, idx, [](int r, int cc) { return kaddr(r, cc); });
}

// fp8 codes -> the blocked bf16 tile.
__device__ __forceinline__ void convert_raw(const unsigned char *raw, unsigned char *tile, int tid) {
  convert_raw_tile<THREADS>(raw, tile, tid, [](int r, int cc) { return kaddr(r, cc); });
}

// Tile t's latent rows (contiguous: a tile lies inside one block) requested into L2, a hint that moves no data
// into the SM: this CTA's share of the valid rows' bytes, the sequence's head-group CTAs taking one share each
// (16-byte multiples, as the bulk prefetch needs), so that every byte is requested once per sequence.
template <int EB>
__device__ __forceinline__ void prefetch_share_l2(const Params &p, const char *src, int t, int ctx) {
  const uint32_t bytes = (uint32_t)min(TILE, ctx - t * TILE) * (uint32_t)(D * EB);
  const uint32_t share = (bytes + p.groups * 16u - 1) / (p.groups * 16u) * 16u;
  const uint32_t off = (uint32_t)(blockIdx.x % p.groups) * share;
  if (off >= bytes) return;
  const uint32_t len = min(share, bytes - off);
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src + off), "r"(len) : "memory");
}
template <int EB>
__device__ __forceinline__ void prefetch_tile_l2(const Params &p, const int32_t *table, int t, int ctx) {
  prefetch_share_l2<EB>(p, tile_src<EB>(p, table, t), t, ctx);
}

// fp8 tile -> its plain shared copy by the 128 threads of one warpgroup: the tile is contiguous in the pool and in
// shared memory, so thread l's 18 copies sit at l x 16 + 2,048 k on both sides; rows past `valid` (chunk indices
// from valid x 36 on) read nothing and are zero-filled.
__device__ __forceinline__ void load_raw_lean(uint32_t dst, const char *src, int valid, int l) {
  const int lim = valid * RAW_CHUNKS;
#pragma unroll
  for (int k = 0; k < TILE * RAW_CHUNKS / 128; ++k)
    cp_async16(dst + l * 16 + k * 2048, src + l * 16 + k * 2048, l + 128 * k < lim ? 16 : 0);
}

// bf16 tile -> the blocked layout by the 128 threads of one warpgroup, all nine blocks at fixed offsets.
__device__ __forceinline__ void load_tile_lean(uint32_t dst, const char *src, int valid, int l) {
  load_blocks_lean<0, KBLK>(dst, src, valid, l);
}
// LEAN, at step t: tile t + 1's copies into dst from nx1 (fp8: the raw codes; L2: nx2's tile requested into L2),
// then the entries move up a tile and tile t + 3's is read.
template <bool FP8, bool L2>
__device__ __forceinline__ void lean_next(const Params &p, const int32_t *table, uint32_t dst, int t, int te, int ctx,
                                          int lidx, const char *&nx1, const char *&nx2) {
  constexpr int EB = FP8 ? 1 : 2;
  const int valid = min(TILE, ctx - (t + 1) * TILE);
  if constexpr (FP8)
    load_raw_lean(dst, nx1, valid, lidx);
  else
    load_tile_lean(dst, nx1, valid, lidx);
  if (L2 && lidx == 0 && t + 2 < te) prefetch_share_l2<EB>(p, nx2, t + 2, ctx);
  nx1 = nx2;
  if (t + 3 < te) nx2 = tile_src<EB>(p, table, t + 3);
}
#endif

// The variants (km_mla_config.wgmma): SPLIT_S, both warpgroups compute S for 32 tokens each and exchange
// row maxima; ONE_S, warpgroup 0 computes S for all 64 tokens (m64n64k16: Q, the A operand, read from
// shared memory once instead of twice) and the softmax while warpgroup 1 issues the next tile's loads;
// ONE_S_N256, the same with each warpgroup's P V as one m64n256k16 per k-step (P read once, not twice);
// SPLIT_K, as ONE_S_N256 but both warpgroups compute S for all 64 tokens over half of the 576 dims each
// (18 k-steps), warpgroup 1's fp32 partial handed to warpgroup 0 through shared memory (the P region and
// the tile's rope block, both free at that point), and every thread loads.
// L2_AHEAD1 / L2_AHEAD2: ONE_S_N256, and one thread of the loading warpgroup requests tile t + 1 + N into L2 when
// it issues tile t + 1's copies into shared memory (tiles tb + 1 .. tb + N before the loop).
constexpr int SPLIT_S = KM_MLA_WG_SPLIT_S, ONE_S = KM_MLA_WG_ONE_S, ONE_S_N256 = KM_MLA_WG_ONE_S_N256,
              SPLIT_K = KM_MLA_WG_SPLIT_K, L2_AHEAD1 = KM_MLA_WG_L2_AHEAD1, L2_AHEAD2 = KM_MLA_WG_L2_AHEAD2,
              LEAN_LOAD = KM_MLA_WG_LEAN_LOAD, LEAN_L2 = KM_MLA_WG_LEAN_L2, LEAN_DESC = KM_MLA_WG_LEAN_DESC;
// LEAN_LOAD / LEAN_L2: ONE_S_N256 with load_tile_lean (fp8: load_raw_lean), and the block-table entries of the next two tiles
// held in registers (nx1: the tile whose copies go out this step; nx2: the one after, read a step early, so no
// copy waits on a table load); LEAN_L2 requests nx2's tile into L2 when nx1's copies go out. LEAN_DESC: LEAN_LOAD
// with the wgmma descriptors one add each from per-tile bases (desc_at): Nsight Compute put ~420 uniform-datapath
// instructions per warp and tile (mask, shift, insert per descriptor) among S's 36 wgmma issues.

template <int KV, int V>
__global__ void __launch_bounds__(THREADS, 1) mla_wg_kernel(const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool FP8 = KV == KM_MLA_FP8_E4M3;
  constexpr bool ONE = V != SPLIT_S;  // S over all 64 tokens, the softmax by warpgroup 0 alone
  constexpr bool SK = V == SPLIT_K;   // S's k-steps split over both warpgroups
  constexpr int L2A = V == L2_AHEAD1 ? 1 : V == L2_AHEAD2 ? 2 : 0;  // tiles requested into L2 ahead of the copies
  constexpr bool LEAN = V == LEAN_LOAD || V == LEAN_L2 || V == LEAN_DESC;
  constexpr bool DESC = V == LEAN_DESC;
  constexpr bool WG1_LOADS = V == ONE_S || V == ONE_S_N256 || L2A > 0 || LEAN;
  constexpr bool N256 = V == ONE_S_N256 || V == SPLIT_K || L2A > 0 || LEAN;
  constexpr int EB = FP8 ? 1 : 2;
  constexpr int SN = ONE ? 64 : 32;   // tokens of S per warpgroup
  constexpr int KSTEPS = SK ? D / 32 : D / 16;  // k-steps of S per warpgroup
  constexpr int LSTEP = WG1_LOADS ? 128 : THREADS;  // threads that issue a tile's loads
  extern __shared__ unsigned char smem_raw[];
  unsigned char *q_s = reinterpret_cast<unsigned char *>(((uintptr_t)smem_raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
  unsigned char *st = q_s + REGION;  // bf16: two tiles; fp8: the bf16 tile, then two stages of raw codes
  unsigned char *raw = st + REGION;
  unsigned char *p_s = st + (FP8 ? REGION + 2 * RAW_BYTES : 2 * REGION);
  float *red = reinterpret_cast<float *>(p_s + P_BYTES);  // SPLIT_S: maxima, then sums; ONE: corrections, sums
  float *mrun = red + RED_FLOATS;
  const uint32_t q_u = smem_addr(q_s), st_u = smem_addr(st), raw_u = smem_addr(raw), p_u = smem_addr(p_s);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
  const int wg = warp >> 2, r0 = 16 * (warp & 3) + g, r1 = r0 + 8;  // this thread's two rows
  const bool loader = !WG1_LOADS || wg == 1;
  const bool scorer = !ONE || wg == 0;  // computes the softmax of its S
  const bool computes_s = scorer || SK;
  const int lidx = WG1_LOADS ? tid - 128 : tid;
  const auto [chunk, head0, seq, tb, te, ctx, table] = chunk_work(p, ROWS);

  // ---- Q (once) and the first tile, one cp.async group
  {
    const char *qsrc = reinterpret_cast<const char *>(p.q + ((size_t)seq * p.heads + head0) * D);
    for (int i = tid; i < ROWS * 72; i += THREADS) {
      const int r = i / 72, cc = i - r * 72;
      cp_async16(q_u + kaddr(r, cc), qsrc + (size_t)i * 16, 16);
    }
    const int valid = min(TILE, ctx - tb * TILE);
    if constexpr (FP8)
      load_raw_tile<THREADS>(raw_u, tile_src<EB>(p, table, tb), valid, tid);
    else
      load_tile<THREADS>(st_u, tile_src<EB>(p, table, tb), valid, tid);
    cp_async_commit();
    if (L2A > 0 && tid == 128)
      for (int d = 1; d <= L2A && tb + d < te; ++d) prefetch_tile_l2<EB>(p, table, tb + d, ctx);
  }
  if (tid < MRUN_FLOATS) mrun[tid] = -INFINITY;

  const float tscale = FP8 ? __ldg(p.scale) : 1.f;
  const float s_log2 = p.scale_log2 * tscale;
  float o[2][64];
  zero_o(o);
  float lsum0 = 0.f, lsum1 = 0.f;

  // LEAN: the sources of tiles tb + 1 and tb + 2 (their table entries read now, used one and two steps later)
  const char *nx1 = nullptr, *nx2 = nullptr;
  if constexpr (LEAN) {
    if (loader && tb + 1 < te) nx1 = tile_src<EB>(p, table, tb + 1);
    if (loader && tb + 2 < te) nx2 = tile_src<EB>(p, table, tb + 2);
  }

  int par = 0;
  const int n = te - tb;
  for (int it = 0; it < n; ++it) {
    const int t = tb + it;
    const bool more = it + 1 < n;
    if (L2A > 0 && tid == 128 && t + 1 + L2A < te) prefetch_tile_l2<EB>(p, table, t + 1 + L2A, ctx);
    cp_async_wait_all();
    uint32_t tile_u;
    if constexpr (FP8) {
      __syncthreads();  // tile t's codes are in; every warpgroup is done with tile t - 1 (the bf16 tile and the
                        // other raw stage, converted last time, are free)
      const int rb = it & 1;
      if constexpr (LEAN) {
        if (more && loader) lean_next<FP8, V == LEAN_L2>(p, table, raw_u + (rb ^ 1) * RAW_BYTES, t, te, ctx, lidx, nx1, nx2);
      } else if (more && loader) {
        load_raw_tile<LSTEP>(raw_u + (rb ^ 1) * RAW_BYTES, tile_src<EB>(p, table, t + 1), min(TILE, ctx - (t + 1) * TILE),
                        lidx);
      }
      cp_async_commit();
      convert_raw(raw + rb * RAW_BYTES, st, tid);
      fence_async_smem();
      __syncthreads();  // the bf16 tile is complete
      tile_u = st_u;
    } else {
      fence_async_smem();
      __syncthreads();  // tile t is in shared memory; every warpgroup is done with tile t - 1
      const int buf = it & 1;
      if constexpr (LEAN) {
        if (more && loader) lean_next<FP8, V == LEAN_L2>(p, table, st_u + (buf ^ 1) * REGION, t, te, ctx, lidx, nx1, nx2);
      } else if (more && loader) {
        load_tile<LSTEP>(st_u + (buf ^ 1) * REGION, tile_src<EB>(p, table, t + 1), min(TILE, ctx - (t + 1) * TILE),
                         lidx);
      }
      cp_async_commit();
      tile_u = st_u + buf * REGION;
    }
    const int valid = min(TILE, ctx - t * TILE);

    float corr0, corr1;
    float s[SN / 2];
    if (computes_s) {
      // ---- S = Q C^T: all 64 rows, this warpgroup's SN tokens (SPLIT_K: its half of the dims)
#pragma unroll
      for (int i = 0; i < SN / 2; ++i) s[i] = 0.f;
      pin(s);  // the accumulators are written before the fence, not sunk past the first MMA
      wg_fence();
      const int k0 = SK ? wg * KSTEPS : 0;
      const uint64_t qd = desc(q_u, 16, 1024), td = desc(tile_u, 16, 1024);  // DESC's bases (ONE: no token offset)
#pragma unroll
      for (int k = 0; k < KSTEPS; ++k) {
        const int kk = k0 + k;
        const uint32_t koff = (uint32_t)((kk >> 2) * KB_BYTES + (kk & 3) * 32);
        const uint64_t a = DESC ? desc_at(qd, koff) : desc(q_u + koff, 16, 1024),
                       b = DESC ? desc_at(td, koff) : desc(tile_u + koff + (ONE ? 0 : wg * 32 * 128), 16, 1024);
        if constexpr (ONE)
          wgmma_s64(s, a, b, k);
        else
          wgmma_s32(s, a, b, k);
      }
      wg_commit();
      wg_wait_all();
      pin(s);
    }
    if constexpr (SK) {
      // ---- warpgroup 1's partial S to warpgroup 0, thread for thread (the same fragment layout): its first
      // 16 values in the P region (P of tile t - 1 is consumed), the other 16 in this tile's rope block (dims
      // 512-575, read by warpgroup 1's own S only, which has completed; P V reads dims 0-511)
      const int wt = tid & 127;
      float4 *lo = reinterpret_cast<float4 *>(p_s) + wt * 4;
      float4 *hi = reinterpret_cast<float4 *>(q_s + (tile_u - q_u) + 8 * KB_BYTES) + wt * 4;
      if (wg == 1) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          lo[i] = make_float4(s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]);
          hi[i] = make_float4(s[16 + 4 * i], s[16 + 4 * i + 1], s[16 + 4 * i + 2], s[16 + 4 * i + 3]);
        }
      }
      __syncthreads();  // the partial is in
      if (wg == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 a = lo[i], b = hi[i];
          s[4 * i] += a.x, s[4 * i + 1] += a.y, s[4 * i + 2] += a.z, s[4 * i + 3] += a.w;
          s[16 + 4 * i] += b.x, s[16 + 4 * i + 1] += b.y, s[16 + 4 * i + 2] += b.z, s[16 + 4 * i + 3] += b.w;
        }
        asm volatile("bar.sync 1, 128;\n" ::: "memory");  // warpgroup 0 has read the partial: P may overwrite it
      }
    }
    if (scorer) {

      // ---- scores in log2 units, tokens past the context masked, the row maxima of these tokens
      const int tok0 = ONE ? 0 : wg * 32;
      float mx0, mx1;
      scores(s, s_log2, valid, tok0, c, mx0, mx1);
      const float *mold = mrun + par * ROWS;
      float mn0, mn1;
      if constexpr (ONE) {
        mn0 = fmaxf(mold[r0], mx0);
        mn1 = fmaxf(mold[r1], mx1);
      } else {
        if (c == 0) {
          red[wg * ROWS + r0] = mx0;
          red[wg * ROWS + r1] = mx1;
        }
        __syncthreads();  // both warpgroups' maxima are in
        mn0 = fmaxf(mold[r0], fmaxf(red[r0], red[ROWS + r0]));
        mn1 = fmaxf(mold[r1], fmaxf(red[r1], red[ROWS + r1]));
      }

      // ---- P = exp2(S - max) to shared memory, the running sums and O's correction
      corr0 = exp2f(mold[r0] - mn0);
      corr1 = exp2f(mold[r1] - mn1);
      float sum0, sum1;
      exp_to_p(s, mn0, mn1, tok0, p_s, r0, r1, c, sum0, sum1);
      lsum0 = lsum0 * corr0 + sum0;
      lsum1 = lsum1 * corr1 + sum1;
      if (wg == 0 && c == 0) {
        mrun[(par ^ 1) * ROWS + r0] = mn0;
        mrun[(par ^ 1) * ROWS + r1] = mn1;
        if (ONE) {  // warpgroup 1's corrections
          red[r0] = corr0;
          red[r1] = corr1;
        }
      }
      fence_async_smem();
    }
    __syncthreads();  // P (and, ONE, the corrections) complete
    if (!scorer) {
      corr0 = red[r0];
      corr1 = red[r1];
    }

    // ---- O = O x corr + P V over this warpgroup's 256 output dims
    scale_o(o, corr0, corr1);
    pin(o[0]);
    pin(o[1]);
    wg_fence();
    const uint64_t pd = desc(p_u, 16, 1024), vd = desc(tile_u + wg * 4 * KB_BYTES, KB_BYTES, 1024);  // DESC's bases
#pragma unroll
    for (int ks = 0; ks < TILE / 16; ++ks) {
      const uint64_t a = DESC ? desc_at(pd, ks * 32) : desc(p_u + ks * 32, 16, 1024);
      if constexpr (N256) {
        wgmma_o256(o[0], o[1], a,
                   DESC ? desc_at(vd, ks * 16 * 128) : desc(tile_u + wg * 4 * KB_BYTES + ks * 16 * 128, KB_BYTES, 1024),
                   1);
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          wgmma_o128(o[h], a, desc(tile_u + (wg * 4 + 2 * h) * KB_BYTES + ks * 16 * 128, KB_BYTES, 1024), 1);
      }
    }
    wg_commit();
    wg_wait_all();
    pin(o[0]);
    pin(o[1]);
    par ^= 1;
  }

  // ---- the row sums (SPLIT_S: both warpgroups' halves) in shared memory
  lsum0 += __shfl_xor_sync(0xffffffffu, lsum0, 1);
  lsum0 += __shfl_xor_sync(0xffffffffu, lsum0, 2);
  lsum1 += __shfl_xor_sync(0xffffffffu, lsum1, 1);
  lsum1 += __shfl_xor_sync(0xffffffffu, lsum1, 2);
  __syncthreads();  // the last tile's exchange is read
  if (scorer && c == 0) {
    red[wg * ROWS + r0] = lsum0;
    red[wg * ROWS + r1] = lsum1;
  }
  __syncthreads();

  // ---- the output (one chunk) or the partial: normalised output and log2-sum-exp
  const bool direct = __ldg(p.seq_chunks + seq) == 1;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half ? r1 : r0;
    const float tot = ONE ? red[r] : red[r] + red[ROWS + r];
    const float f = tscale / tot;  // tot > 0: every chunk holds a visible token
    const size_t slot = direct ? (size_t)seq * p.heads + head0 + r : (size_t)chunk * p.heads + head0 + r;
    store_o_row(p, o, half, f, slot, wg, c, direct);
    if (!direct && wg == 0 && c == 0) p.part_lse[slot] = mrun[par * ROWS + r] + log2f(tot);
  }
#endif
}

}  // namespace

namespace km_mla_dev {

template <int V>
const void *pick(km_mla_kv kv) {
  return kv == KM_MLA_FP8_E4M3 ? (const void *)&mla_wg_kernel<KM_MLA_FP8_E4M3, V>
                               : (const void *)&mla_wg_kernel<KM_MLA_BF16, V>;
}

const void *wg_kernel(km_mla_kv kv, int variant) {
  switch (variant) {
    case SPLIT_S: return pick<SPLIT_S>(kv);
    case ONE_S: return pick<ONE_S>(kv);
    case ONE_S_N256: return pick<ONE_S_N256>(kv);
    case SPLIT_K: return pick<SPLIT_K>(kv);
    case L2_AHEAD1: return pick<L2_AHEAD1>(kv);
    case L2_AHEAD2: return pick<L2_AHEAD2>(kv);
    case LEAN_LOAD: return pick<LEAN_LOAD>(kv);
    case LEAN_L2: return pick<LEAN_L2>(kv);
    case LEAN_DESC: return pick<LEAN_DESC>(kv);
    case KM_MLA_WG_SEESAW:
    case KM_MLA_WG_SEESAW_LEAN: return kv == KM_MLA_BF16 ? seesaw_kernel(variant == KM_MLA_WG_SEESAW_LEAN) : nullptr;
    case KM_MLA_WG_QREG: return kv == KM_MLA_BF16 ? qreg_kernel() : nullptr;
    default: return nullptr;
  }
}

int wg_smem_bytes(km_mla_kv kv, int variant) {
  if (variant == KM_MLA_WG_QREG) return qreg_smem_bytes();
  return KM_MLA_WG_IS_SEESAW(variant) ? seesaw_smem_bytes() : smem_need(kv == KM_MLA_FP8_E4M3);
}

int wg_threads(int variant) {
  if (variant == KM_MLA_WG_QREG) return qreg_threads();
  return KM_MLA_WG_IS_SEESAW(variant) ? seesaw_threads() : THREADS;
}

}  // namespace km_mla_dev
