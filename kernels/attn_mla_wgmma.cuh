// What the two sm_90a MLA kernels share (kernels/attn_mla_wgmma.cu: one tile per step; kernels/attn_mla_seesaw.cu:
// two tiles per step, the warpgroups alternating): the 128-byte-swizzled blocked layout of Q and the latent tiles
// in shared memory, its wgmma descriptors, the warpgroup MMAs and their fences. Kernel code only.
#ifndef KM_KERNELS_ATTN_MLA_WGMMA_CUH
#define KM_KERNELS_ATTN_MLA_WGMMA_CUH

#include <math.h>

#include "attn_mla_device.cuh"

namespace {

using namespace km_mla_dev;

constexpr int ROWS = 64;
constexpr int KBLK = D / 64;                 // 9 blocks of 64 dims
constexpr int KB_BYTES = TILE * 128;         // one block of a 64-row region: 8,192 bytes
constexpr int REGION = KBLK * KB_BYTES;      // Q, or one latent tile: 73,728 bytes
constexpr int P_BYTES = ROWS * 128;          // P: 64 rows x 64 tokens bf16
constexpr int ALIGN = 1024;                  // the swizzle pattern repeats every 1,024 bytes

// Byte offset of 16-byte chunk cc (of 72) of row r in a blocked region.
__device__ __forceinline__ uint32_t kaddr(int r, int cc) {
  return (uint32_t)((cc >> 3) * KB_BYTES + r * 128 + (((cc & 7) ^ (r & 7)) << 4));
}

// A shared-memory matrix descriptor with the 128-byte swizzle: start, leading and stride byte offsets.
__device__ __forceinline__ uint64_t desc(uint32_t start, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((start & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
// The descriptor of start + off from desc(start, ...), for off a multiple of 16 that keeps the start field below
// 2^18 (any shared-memory address): off / 16 added to the low word, so a constant off costs one add, not the
// mask, shift and insert of desc().
__device__ __forceinline__ uint64_t desc_at(uint64_t d, uint32_t off) {
  return (d & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)d + (off >> 4));
}
// Blocks B0 .. B1 - 1 (64 dims each) of a bf16 tile -> the blocked layout by the 128 threads of one warpgroup with
// every offset fixed: thread l copies 16-byte chunk c8 = l % 8 of each block b (chunk 8b + c8) of rows l / 8 + 16 g
// (g 0..3). Row r's chunk cc sits at kaddr(r, cc) = b x KB_BYTES + r x 128 + ((c8 ^ (r & 7)) << 4), and r & 7 =
// (l / 8) & 7 for every g, so past the two bases below each copy has an immediate offset (a warp: 4 rows x 128 bytes
// of one block, whole lines). Rows past `valid` read nothing and are zero-filled.
template <int B0, int B1>
__device__ __forceinline__ void load_blocks_lean(uint32_t dst, const char *src, int valid, int l) {
  const int c8 = l & 7, rs = l >> 3;
  const char *s = src + rs * (D * 2) + c8 * 16;
  const uint32_t d = dst + rs * 128 + ((c8 ^ (rs & 7)) << 4);
#pragma unroll
  for (int g = 0; g < TILE / 16; ++g) {
    const int n = rs + 16 * g < valid ? 16 : 0;
#pragma unroll
    for (int b = B0; b < B1; ++b) cp_async16(d + b * KB_BYTES + g * 16 * 128, s + g * 16 * D * 2 + b * 128, n);
  }
}
// This thread's part of a warpgroup's half of O (two m64n256 accumulators' halves), zeroed before the first tile.
__device__ __forceinline__ void zero_o(float (&o)[2][64]) {
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < 64; ++i) o[h][i] = 0.f;
}
// P = 2^(S - m) of this thread's N scores (wgmma's m64nN layout, tokens from tok0; rows r0 with maximum mn0 and r1
// with mn1) as bf16 into the 64 x 64 K-major P tile at p_s (128-byte rows, 16-byte chunk col / 8 at (col / 8) ^
// (r & 7)), and this thread's part of the two rows' sums of P.
template <int N>
__device__ __forceinline__ void exp_to_p(const float (&s)[N], float mn0, float mn1, int tok0, unsigned char *p_s,
                                         int r0, int r1, int c, float &sum0, float &sum1) {
  sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int j = 0; j < N / 4; ++j) {
    const float p0 = exp2f(s[4 * j] - mn0), p1 = exp2f(s[4 * j + 1] - mn0);
    const float p2 = exp2f(s[4 * j + 2] - mn1), p3 = exp2f(s[4 * j + 3] - mn1);
    sum0 += p0 + p1;
    sum1 += p2 + p3;
    const int col = tok0 + 8 * j + 2 * c;
    *reinterpret_cast<uint32_t *>(p_s + r0 * 128 + (((col >> 3) ^ (r0 & 7)) << 4) + (col & 7) * 2) = pack_bf16(p0, p1);
    *reinterpret_cast<uint32_t *>(p_s + r1 * 128 + (((col >> 3) ^ (r1 & 7)) << 4) + (col & 7) * 2) = pack_bf16(p2, p3);
  }
}
// This thread's part of a warpgroup's half of O rescaled by its two rows' corrections (rows r0 and r1: o[h][4j],
// o[h][4j + 1] and o[h][4j + 2], o[h][4j + 3]), before the next P V accumulates into it.
__device__ __forceinline__ void scale_o(float (&o)[2][64], float corr0, float corr1) {
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      o[h][4 * j] *= corr0;
      o[h][4 * j + 1] *= corr0;
      o[h][4 * j + 2] *= corr1;
      o[h][4 * j + 3] *= corr1;
    }
}
// Row `half` (0: r0, 1: r1) of this thread's part of a warpgroup's half of O (the m64n256 accumulator split
// in two: output dims 256 wg + 128 h + 8 j + 2c and + 1 at o[h][4j + 2 half] and + 1), times f: bf16 to the
// output (a sequence in one chunk) or fp32 to the chunk's partial; slot is the (sequence or chunk, head) row.
__device__ __forceinline__ void store_o_row(const Params &p, const float (&o)[2][64], int half, float f, size_t slot,
                                            int wg, int c, bool direct) {
  const int col0 = wg * 256 + 2 * c;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const float a = o[h][4 * j + 2 * half] * f, b = o[h][4 * j + 2 * half + 1] * f;
      const size_t at = slot * DV + col0 + h * 128 + 8 * j;
      if (direct)
        *reinterpret_cast<uint32_t *>(p.out + at) = pack_bf16(a, b);
      else
        *reinterpret_cast<float2 *>(p.part_o + at) = make_float2(a, b);
    }
}

// Scores in base-2 units with tokens past `valid` masked, and this thread's two row maxima: N accumulators of S
// in wgmma's m64nN layout (token tok0 + 8 j + 2c (+1) of rows r0 (e 0, 1) and r1 (e 2, 3) at s[4 j + e]).
template <int N>
__device__ __forceinline__ void scores(float (&s)[N], float s_log2, int valid, int tok0, int c, float &mx0,
                                       float &mx1) {
  mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
  for (int j = 0; j < N / 4; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = tok0 + 8 * j + 2 * c + (e & 1);
      const float x = col < valid ? s[4 * j + e] * s_log2 : -INFINITY;
      s[4 * j + e] = x;
      if (e < 2) mx0 = fmaxf(mx0, x);
      else mx1 = fmaxf(mx1, x);
    }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Generic-proxy writes to shared memory (cp.async, st.shared) made visible to wgmma's async proxy.
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMA's issue and wait.
template <int N>
__device__ __forceinline__ void pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// mbarriers in shared memory (one CTA): init with the arrivals a phase counts, and the wait on a phase's parity.
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// The mbarrier completes its phase when this thread's earlier cp.async writes have landed (counted in its init).
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// S = Q C^T, K-major A and B, m64n64k16.
__device__ __forceinline__ void wgmma_s64(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}
// S = Q C^T, m64n64k16 with Q (A) from registers in mma.sync's A fragment layout (wgmma_o256_rs below) and the
// tile (B) K-major from shared memory.
__device__ __forceinline__ void wgmma_s64_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
}
// O += P V, B (the latent dims) N-major, m64n256k16: P (A) from shared memory, K-major.
__device__ __forceinline__ void wgmma_o256(float (&d0)[64], float (&d1)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d0[0]), "+f"(d0[1]), "+f"(d0[2]), "+f"(d0[3]), "+f"(d0[4]), "+f"(d0[5]), "+f"(d0[6]), "+f"(d0[7]), "+f"(d0[8]), "+f"(d0[9]), "+f"(d0[10]), "+f"(d0[11]), "+f"(d0[12]), "+f"(d0[13]), "+f"(d0[14]), "+f"(d0[15]), "+f"(d0[16]), "+f"(d0[17]), "+f"(d0[18]), "+f"(d0[19]), "+f"(d0[20]), "+f"(d0[21]), "+f"(d0[22]), "+f"(d0[23]), "+f"(d0[24]), "+f"(d0[25]), "+f"(d0[26]), "+f"(d0[27]), "+f"(d0[28]), "+f"(d0[29]), "+f"(d0[30]), "+f"(d0[31]), "+f"(d0[32]), "+f"(d0[33]), "+f"(d0[34]), "+f"(d0[35]), "+f"(d0[36]), "+f"(d0[37]), "+f"(d0[38]), "+f"(d0[39]), "+f"(d0[40]), "+f"(d0[41]), "+f"(d0[42]), "+f"(d0[43]), "+f"(d0[44]), "+f"(d0[45]), "+f"(d0[46]), "+f"(d0[47]), "+f"(d0[48]), "+f"(d0[49]), "+f"(d0[50]), "+f"(d0[51]), "+f"(d0[52]), "+f"(d0[53]), "+f"(d0[54]), "+f"(d0[55]), "+f"(d0[56]), "+f"(d0[57]), "+f"(d0[58]), "+f"(d0[59]), "+f"(d0[60]), "+f"(d0[61]), "+f"(d0[62]), "+f"(d0[63]), "+f"(d1[0]), "+f"(d1[1]), "+f"(d1[2]), "+f"(d1[3]), "+f"(d1[4]), "+f"(d1[5]), "+f"(d1[6]), "+f"(d1[7]), "+f"(d1[8]), "+f"(d1[9]), "+f"(d1[10]), "+f"(d1[11]), "+f"(d1[12]), "+f"(d1[13]), "+f"(d1[14]), "+f"(d1[15]), "+f"(d1[16]), "+f"(d1[17]), "+f"(d1[18]), "+f"(d1[19]), "+f"(d1[20]), "+f"(d1[21]), "+f"(d1[22]), "+f"(d1[23]), "+f"(d1[24]), "+f"(d1[25]), "+f"(d1[26]), "+f"(d1[27]), "+f"(d1[28]), "+f"(d1[29]), "+f"(d1[30]), "+f"(d1[31]), "+f"(d1[32]), "+f"(d1[33]), "+f"(d1[34]), "+f"(d1[35]), "+f"(d1[36]), "+f"(d1[37]), "+f"(d1[38]), "+f"(d1[39]), "+f"(d1[40]), "+f"(d1[41]), "+f"(d1[42]), "+f"(d1[43]), "+f"(d1[44]), "+f"(d1[45]), "+f"(d1[46]), "+f"(d1[47]), "+f"(d1[48]), "+f"(d1[49]), "+f"(d1[50]), "+f"(d1[51]), "+f"(d1[52]), "+f"(d1[53]), "+f"(d1[54]), "+f"(d1[55]), "+f"(d1[56]), "+f"(d1[57]), "+f"(d1[58]), "+f"(d1[59]), "+f"(d1[60]), "+f"(d1[61]), "+f"(d1[62]), "+f"(d1[63])
      : "l"(a), "l"(b), "r"(accumulate));
}
// O += P V with P (A, 64 x 16 bf16) from registers in the accumulator layout of S: thread (warp w, lane 4g + c)
// holds rows 16 (w % 4) + g and + 8, columns 2c, 2c + 1 and + 8 (four bf16 pairs, mma.sync's A fragment).
__device__ __forceinline__ void wgmma_o256_rs(float (&d0)[64], float (&d1)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, {%128,%129,%130,%131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d0[0]), "+f"(d0[1]), "+f"(d0[2]), "+f"(d0[3]), "+f"(d0[4]), "+f"(d0[5]), "+f"(d0[6]), "+f"(d0[7]), "+f"(d0[8]), "+f"(d0[9]), "+f"(d0[10]), "+f"(d0[11]), "+f"(d0[12]), "+f"(d0[13]), "+f"(d0[14]), "+f"(d0[15]), "+f"(d0[16]), "+f"(d0[17]), "+f"(d0[18]), "+f"(d0[19]), "+f"(d0[20]), "+f"(d0[21]), "+f"(d0[22]), "+f"(d0[23]), "+f"(d0[24]), "+f"(d0[25]), "+f"(d0[26]), "+f"(d0[27]), "+f"(d0[28]), "+f"(d0[29]), "+f"(d0[30]), "+f"(d0[31]), "+f"(d0[32]), "+f"(d0[33]), "+f"(d0[34]), "+f"(d0[35]), "+f"(d0[36]), "+f"(d0[37]), "+f"(d0[38]), "+f"(d0[39]), "+f"(d0[40]), "+f"(d0[41]), "+f"(d0[42]), "+f"(d0[43]), "+f"(d0[44]), "+f"(d0[45]), "+f"(d0[46]), "+f"(d0[47]), "+f"(d0[48]), "+f"(d0[49]), "+f"(d0[50]), "+f"(d0[51]), "+f"(d0[52]), "+f"(d0[53]), "+f"(d0[54]), "+f"(d0[55]), "+f"(d0[56]), "+f"(d0[57]), "+f"(d0[58]), "+f"(d0[59]), "+f"(d0[60]), "+f"(d0[61]), "+f"(d0[62]), "+f"(d0[63]), "+f"(d1[0]), "+f"(d1[1]), "+f"(d1[2]), "+f"(d1[3]), "+f"(d1[4]), "+f"(d1[5]), "+f"(d1[6]), "+f"(d1[7]), "+f"(d1[8]), "+f"(d1[9]), "+f"(d1[10]), "+f"(d1[11]), "+f"(d1[12]), "+f"(d1[13]), "+f"(d1[14]), "+f"(d1[15]), "+f"(d1[16]), "+f"(d1[17]), "+f"(d1[18]), "+f"(d1[19]), "+f"(d1[20]), "+f"(d1[21]), "+f"(d1[22]), "+f"(d1[23]), "+f"(d1[24]), "+f"(d1[25]), "+f"(d1[26]), "+f"(d1[27]), "+f"(d1[28]), "+f"(d1[29]), "+f"(d1[30]), "+f"(d1[31]), "+f"(d1[32]), "+f"(d1[33]), "+f"(d1[34]), "+f"(d1[35]), "+f"(d1[36]), "+f"(d1[37]), "+f"(d1[38]), "+f"(d1[39]), "+f"(d1[40]), "+f"(d1[41]), "+f"(d1[42]), "+f"(d1[43]), "+f"(d1[44]), "+f"(d1[45]), "+f"(d1[46]), "+f"(d1[47]), "+f"(d1[48]), "+f"(d1[49]), "+f"(d1[50]), "+f"(d1[51]), "+f"(d1[52]), "+f"(d1[53]), "+f"(d1[54]), "+f"(d1[55]), "+f"(d1[56]), "+f"(d1[57]), "+f"(d1[58]), "+f"(d1[59]), "+f"(d1[60]), "+f"(d1[61]), "+f"(d1[62]), "+f"(d1[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#endif

}  // namespace

#endif
