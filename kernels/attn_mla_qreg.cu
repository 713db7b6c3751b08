// MLA decode at 64 heads per CTA on sm_90a with Q in registers and three latent stages (KM_MLA_WG_QREG, bf16
// latents). The one-tile kernel of attn_mla_wgmma.cu reads both operands of S from shared memory and runs S, the
// softmax and P V one after the other (Nsight Compute: the warps wait at the CTA barrier and on the tensor pipe;
// reports/attn-notes.md). Here three warpgroups split the step by what they hold:
//   warpgroup 0 (the scorer): Q's dims 0-511 as the register A operand of S (32 k-steps x 4 registers = 128; the
//     rope dims' 4 k-steps read Q from one 8 KiB block in shared memory), S = Q C^T for all 64 tokens of a tile,
//     the softmax, P into the tile's own rope block (dims 512-575: S has read it and P V reads dims 0-511 only),
//     the row corrections into shared memory;
//   warpgroups 1 and 2: O's output dims 0-255 and 256-511 (128 fp32 registers each), O = O corr + P V, and the
//     copies of the tiles (warpgroup 1 blocks 0-3 and the rope block, warpgroup 2 blocks 4-7: each refills the
//     blocks it read last, once its P V is done).
// Q's 72 KiB (all but its rope block) leave shared memory, which makes room for a third stage: the scorer computes
// S of tile t + 1 while the other two multiply tile t, and S reads only its B operand from shared memory (64 B per
// cycle at the tensor peak, against 128 with Q there too). setmaxnreg moves registers to the scorer (184) from the
// other two (160 each, the least ptxas keeps for their region): 184 + 2 x 160 = 504 = 3 x 168, what the CTA was
// given. Per stage three mbarriers (and one for the row sums at the end): FULL (256 arrivals: the copying threads'
// cp.async.mbarrier.arrive.noinc), READY (128: the scorer's P and corrections written), PDONE (128: warpgroup 2's
// P V of the tile retired, so warpgroup 1 may refill the rope block that held P). The k-th use of a stage has
// parity k & 1 on all three. Rows past the context are zero-filled by the copies; their scores are masked.
#include "attn_mla_wgmma.cuh"

#include <math.h>

namespace {

constexpr int QR_THREADS = 384;   // three warpgroups
constexpr int STAGES = 3;
constexpr int OFF_QR = STAGES * REGION;                    // Q's rope dims (512-575), one swizzled block
constexpr int OFF_CORR = OFF_QR + KB_BYTES;                // per stage 64 floats: the rows' corrections
constexpr int OFF_SUM = OFF_CORR + STAGES * ROWS * 4;      // 64: the row sums, at the end
constexpr int OFF_BAR = OFF_SUM + ROWS * 4;
constexpr int NBAR = 3 * STAGES + 1;                       // FULL 0-2, READY 3-5, PDONE 6-8, SUMS 9
constexpr int QR_SMEM = ALIGN + OFF_BAR + NBAR * 8;
static_assert(QR_SMEM <= 232448, "the Q-in-registers kernel's shared memory exceeds the SM 9.0 opt-in limit");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int QK = 32;                                     // k-steps of S with Q from registers (dims 0-511)
constexpr int BAR_SUMS = 3 * STAGES;  // the scorer's row sums written (128 arrivals), before the output
// registers per thread after setmaxnreg. The increase draws only on what the decreases released (the CTA's pool of
// 168 x 384 at launch), so INC + 2 DEC <= 504: a first version with 192 / 160 spun in USETMAXREG.TRY_ALLOC for ever.
// ptxas keeps the P V warpgroups' region (O's 128 accumulators and the m64n256 MMAs) at no fewer than 160 (it
// ignores 152 with C7507), which leaves the scorer 184: Q's dims 0-511 (128) and S (32) fit with a 32-byte spill.
constexpr int INC = 184, DEC = 160;
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }

// Tile t into stage `st` by warpgroup j (1: blocks 0-3, then the rope block once warpgroup 2 has retired its P V
// of the stage's previous tile, pdone_parity >= 0; 2: blocks 4-7), then this thread's arrival on FULL.
__device__ __forceinline__ void refill(const Params &p, const int32_t *table, uint32_t base, int st, int t, int ctx,
                                       int j, int l, int pdone_parity) {
  const uint32_t dst = base + st * REGION, bars = base + OFF_BAR;
  const char *src = tile_src<2>(p, table, t);
  const int valid = min(TILE, ctx - t * TILE);
  if (j == 1) {
    load_blocks_lean<0, 4>(dst, src, valid, l);
    if (pdone_parity >= 0) mbar_wait(bars + (2 * STAGES + st) * 8, pdone_parity);
    load_blocks_lean<8, KBLK>(dst, src, valid, l);
  } else {
    load_blocks_lean<4, 8>(dst, src, valid, l);
  }
  cp_async_arrive(bars + st * 8);
}
#endif

__global__ void __launch_bounds__(QR_THREADS, 1) mla_qreg_kernel(const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  unsigned char *sm = reinterpret_cast<unsigned char *>(((uintptr_t)smem_raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
  const uint32_t base = smem_addr(sm), bars = base + OFF_BAR;
  float *corr_s = reinterpret_cast<float *>(sm + OFF_CORR);
  float *sum_s = reinterpret_cast<float *>(sm + OFF_SUM);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
  const int wg = warp >> 2, r0 = 16 * (warp & 3) + g, r1 = r0 + 8;  // this thread's two rows
  const auto [chunk, head0, seq, tb, te, ctx, table] = chunk_work(p, ROWS);
  const int n = te - tb;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bars + s * 8, 256);
      mbar_init(bars + (STAGES + s) * 8, 128);
      mbar_init(bars + (2 * STAGES + s) * 8, 128);
    }
    mbar_init(bars + BAR_SUMS * 8, 128);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ---------------- the scorer: S, the softmax, P
    setmaxnreg_inc<INC>();
    uint32_t q[QK][4];  // k-step kk: rows r0, r1 x dims 16 kk + 2c (+1) and + 8
    {
      const uint16_t *qg = p.q + ((size_t)seq * p.heads + head0) * D;
      for (int i = tid; i < ROWS * 8; i += 128) {  // the rope dims: 8 chunks of 16 bytes per row
        const int r = i >> 3, cc = i & 7;
        *reinterpret_cast<uint4 *>(sm + OFF_QR + kaddr(r, cc)) =
            __ldg(reinterpret_cast<const uint4 *>(qg + r * D + 512) + cc);
      }
      fence_async_smem();
      asm volatile("bar.sync 2, 128;\n" ::: "memory");  // the scorer's four warps: Q's rope block is written
      const uint32_t *q32 = reinterpret_cast<const uint32_t *>(qg);
#pragma unroll
      for (int kk = 0; kk < QK; ++kk) {
        q[kk][0] = __ldg(q32 + r0 * (D / 2) + 8 * kk + c);
        q[kk][1] = __ldg(q32 + r1 * (D / 2) + 8 * kk + c);
        q[kk][2] = __ldg(q32 + r0 * (D / 2) + 8 * kk + 4 + c);
        q[kk][3] = __ldg(q32 + r1 * (D / 2) + 8 * kk + 4 + c);
      }
    }
    const float s_log2 = p.scale_log2;
    float m0 = -INFINITY, m1 = -INFINITY, lsum0 = 0.f, lsum1 = 0.f;
    for (int it = 0; it < n; ++it) {
      const int t = tb + it, st = it % STAGES, ph = (it / STAGES) & 1;
      const uint32_t tile_u = base + st * REGION;
      mbar_wait(bars + st * 8, ph);
      fence_async_smem();
      float s[32];
#pragma unroll
      for (int i = 0; i < 32; ++i) s[i] = 0.f;
      pin(s);
      wg_fence();
      const uint64_t td = desc(tile_u, 16, 1024), qd = desc(base + OFF_QR, 16, 1024);
#pragma unroll
      for (int kk = 0; kk < QK; ++kk)
        wgmma_s64_rs(s, q[kk], desc_at(td, (uint32_t)((kk >> 2) * KB_BYTES + (kk & 3) * 32)), kk);
#pragma unroll
      for (int kk = QK; kk < KBLK * 4; ++kk)
        wgmma_s64(s, desc_at(qd, (uint32_t)((kk & 3) * 32)),
                  desc_at(td, (uint32_t)((kk >> 2) * KB_BYTES + (kk & 3) * 32)), 1);
      wg_commit();
      wg_wait_all();
      pin(s);

      float mx0, mx1;
      scores(s, s_log2, min(TILE, ctx - t * TILE), 0, c, mx0, mx1);
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);  // finite: every tile holds a visible token
      const float corr0 = exp2f(m0 - mn0), corr1 = exp2f(m1 - mn1);
      m0 = mn0, m1 = mn1;
      unsigned char *p_s = sm + st * REGION + 8 * KB_BYTES;  // the tile's rope block
      float sum0, sum1;
      exp_to_p(s, mn0, mn1, 0, p_s, r0, r1, c, sum0, sum1);
      lsum0 = lsum0 * corr0 + sum0;
      lsum1 = lsum1 * corr1 + sum1;
      if (c == 0) {
        corr_s[st * ROWS + r0] = corr0;
        corr_s[st * ROWS + r1] = corr1;
      }
      fence_async_smem();
      mbar_arrive(bars + (STAGES + st) * 8);
    }
    lsum0 += __shfl_xor_sync(0xffffffffu, lsum0, 1);
    lsum0 += __shfl_xor_sync(0xffffffffu, lsum0, 2);
    lsum1 += __shfl_xor_sync(0xffffffffu, lsum1, 1);
    lsum1 += __shfl_xor_sync(0xffffffffu, lsum1, 2);
    if (c == 0) sum_s[r0] = lsum0, sum_s[r1] = lsum1;
    mbar_arrive(bars + BAR_SUMS * 8);
    const bool direct = __ldg(p.seq_chunks + seq) == 1;
    if (!direct && c == 0) {
      p.part_lse[(size_t)chunk * p.heads + head0 + r0] = m0 + log2f(lsum0);
      p.part_lse[(size_t)chunk * p.heads + head0 + r1] = m1 + log2f(lsum1);
    }
  } else {
    // ---------------- warpgroups 1 and 2: half of O each, and the copies
    setmaxnreg_dec<DEC>();
    const int j = wg, l = tid & 127, oh = wg - 1;  // oh: output dims 256 oh ..
    for (int it = 0; it < n && it < STAGES; ++it) refill(p, table, base, it, tb + it, ctx, j, l, -1);
    float o[2][64];
    zero_o(o);
    for (int it = 0; it < n; ++it) {
      const int st = it % STAGES, ph = (it / STAGES) & 1;
      const uint32_t tile_u = base + st * REGION;
      mbar_wait(bars + (STAGES + st) * 8, ph);
      const float corr0 = corr_s[st * ROWS + r0], corr1 = corr_s[st * ROWS + r1];
      scale_o(o, corr0, corr1);
      pin(o[0]);
      pin(o[1]);
      wg_fence();
      const uint64_t pd = desc(tile_u + 8 * KB_BYTES, 16, 1024), vd = desc(tile_u + oh * 4 * KB_BYTES, KB_BYTES, 1024);
#pragma unroll
      for (int ks = 0; ks < TILE / 16; ++ks)
        wgmma_o256(o[0], o[1], desc_at(pd, ks * 32), desc_at(vd, ks * 16 * 128), 1);
      wg_commit();
      wg_wait_all();
      pin(o[0]);
      pin(o[1]);
      if (j == 2) mbar_arrive(bars + (2 * STAGES + st) * 8);
      if (it + STAGES < n) refill(p, table, base, st, tb + it + STAGES, ctx, j, l, j == 1 ? ph : -1);
    }
    mbar_wait(bars + BAR_SUMS * 8, 0);
    const bool direct = __ldg(p.seq_chunks + seq) == 1;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = half ? r1 : r0;
      const float f = 1.f / sum_s[r];  // > 0: every chunk holds a visible token
      const size_t slot = direct ? (size_t)seq * p.heads + head0 + r : (size_t)chunk * p.heads + head0 + r;
      store_o_row(p, o, half, f, slot, oh, c, direct);
    }
  }
#endif
}

}  // namespace

namespace km_mla_dev {

const void *qreg_kernel() { return (const void *)&mla_qreg_kernel; }
int qreg_smem_bytes() { return QR_SMEM; }
int qreg_threads() { return QR_THREADS; }

}  // namespace km_mla_dev
