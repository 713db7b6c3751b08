// The decode kernel itself (see attn_decode.h and attn_decode.cu): fragments, tile sources, the kernel
// template and the launch descriptor of each instantiation. Included by one translation unit per KV format
// (attn_decode_<format>.cu), which instantiates that format's kernels, so that they compile in parallel;
// attn_decode.cu holds the planner, the combine pass and the launch.
//
// Decode attention over the paged cache (see attn_decode.h). One warp per work item (a chunk of 16-token
// tiles of one (sequence, KV head)); four independent warps per CTA. The warp's rows are the q_len x group
// query rows of its KV head, padded to m16 tiles. Tiles come from one of two sources (the shape's pipe):
// straight from global memory into each thread's fragment registers with 16-byte loads, one or two tiles
// ahead (RegSource), or through a ring of shared-memory slots the warp fills with coalesced cp.async, NS - 1
// tiles ahead (RingSource), or through a ring the tensor memory accelerator fills, one copy per K and per V tile
// (TmaSource, sm_90, fp8 at head_dim 128). Every K/V byte is loaded once; the fragments are:
//   S^T = Q K^T  (A = Q rows, B = K, k = head dims): thread (g = lane/4, c = lane%4) owns head dims
//        [c*D/4, (c+1)*D/4) of K rows g and g+8 of the tile; the same permutation of the k index is applied
//        to Q's fragment, which leaves the dot products unchanged.
//   O += P V     (A = P from S's accumulators, B = V, k = tokens): thread owns dims [g*D/8, (g+1)*D/8) of V
//        rows 2c, 2c+1, 2c+8, 2c+9; output columns are permuted so that each thread ends up holding the
//        contiguous dims [c*D/4, (c+1)*D/4) of its rows, stored with 16-byte writes.
#ifndef KM_KERNELS_ATTN_DECODE_KERNEL_CUH
#define KM_KERNELS_ATTN_DECODE_KERNEL_CUH

#include <cuda.h>  // CUtensorMap (the TMA pipeline's tensor maps; a type only, no driver call here)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <math.h>
#include <string.h>

#include <type_traits>

#include "attn_decode.h"
#include "attn_merge.h"
#include "bulk_copy.cuh"
#include "count_in.cuh"
#include "grid_dependency.cuh"
#include "tq3_sign.h"
#include "u3_unpack.h"

namespace km_attn_detail {


constexpr int WARPS = 4;
#ifndef KM_ATTN_MIN_BLOCKS
#define KM_ATTN_MIN_BLOCKS 2
#endif
constexpr float LOG2E = 1.4426950408889634f;

struct Params {
  const uint16_t *q;
  const char *k, *v;
  const float *k_scale, *v_scale;
  const int32_t *table, *ctx_lens, *sel;
  const int32_t *chunk_seq, *chunk_begin, *chunk_end, *seq_chunk0, *seq_chunks;
  uint16_t *out;
  float *part_o, *part_lse;
  int *arrive;    // CTA merge: per (sequence, KV head) the CTAs that have written their partial (zero between steps)
  int cta_merge;  // 1: a CTA's warps take WARPS consecutive chunks of one (sequence, KV head) (cta_merge below);
                  // 2: WARPS KV heads of one chunk, each warp's partial in the workspace (heads_merge below)
  int heads, kv_heads, group, rows, q_len, block_size, window, mbps, sparse_pages, per_token, items;
  float scale_log2;
  const uint16_t *k_side, *v_side;  // TurboQuant: fp16 norms, K [rows x kv_heads], V [rows x kv_heads][2]
  uint32_t sign[4];                 // TurboQuant: bit i of word w flips element 32 w + i (head_dim 128)
  unsigned long long *stamps;       // the stamped instantiation (ST 1): KM_ATTN_STAMPS values per item
};

// The TMA pipeline's tensor maps of the K and V pools (a __grid_constant__ parameter of every decode kernel, used
// by the KM_ATTN_PIPE_TMA instantiations only): each pool as [pool rows][kv_heads][128 bytes], a box of 16 rows of
// one head, written to shared memory with the 128-byte swizzle (TmaSource).
struct TmaMaps {
  CUtensorMap k, v;
};

// Stamps (decode_kernel's ST 1, km_attn_args.stamps; the slots are KM_ATTN_STAMP_*): lane 0 of each warp
// writes when it reached each point. A point that waits for a value (the chunk's metadata, Q, the first
// tile's result) branches on it first: the branch needs the value, and the clock is read after it.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void stamp_after(unsigned long long *st, int slot, uint32_t dep, int lane) {
  if (dep == 0x7fbfffdeu) st[KM_ATTN_STAMP_SPARE] = 1;  // never taken by a real step; needs dep
  const unsigned long long t = clock64();
  if (lane == 0) st[slot] = t;
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// m16n8k8: half the k of the above (RegHalfSource's P V, one 8-token half of a tile at a time)
__device__ __forceinline__ void mma_bf16_k8(float (&d)[4], const uint32_t (&a)[2], uint32_t b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b));
}

__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <bool F16>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (F16)
    mma_f16(d, a, b0, b1);
  else
    mma_bf16(d, a, b0, b1);
}

__device__ __forceinline__ uint32_t pack_f32x2(float lo, float hi, bool f16) {
  uint32_t r;
  if (f16) {
    const __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&r, &h, 4);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &h, 4);
  }
  return r;
}

// Two fp8 codes (low 16 bits of x) -> fp16x2, exact.
template <int KV>
__device__ __forceinline__ uint32_t fp8x2_to_f16x2(uint32_t x) {
  if constexpr (KV == KM_ATTN_FP8_E5M2) {
    return __byte_perm(x, 0u, 0x1404);  // e5m2 is the top byte of an fp16
  } else {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(x & 0xFFFFu), __NV_E4M3);
    return (uint32_t)h.x | ((uint32_t)h.y << 16);
  }
}

template <int BYTES>
struct Row {
  uint32_t w[BYTES / 4];
};

// A hint that the 32-byte sector holding p will be read soon: into L2, holding no register and no shared memory
// while in flight. (The copy engine's bulk prefetch takes one address per warp: 32 lanes' rows would be 32 of
// them in a loop.)
__device__ __forceinline__ void l2_prefetch(const void *p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }
// Every sector of `bytes` at p.
template <int BYTES>
__device__ __forceinline__ void l2_prefetch_row(const char *p) {
#pragma unroll
  for (int o = 0; o < BYTES; o += 32) l2_prefetch(p + o);
  if constexpr (BYTES % 32 != 0) l2_prefetch(p + BYTES - 1);
}

template <int BYTES>
__device__ __forceinline__ void load_row(Row<BYTES> &r, const char *p) {
  if constexpr (BYTES % 16 == 0) {
#pragma unroll
    for (int k = 0; k < BYTES / 16; ++k) {
      const uint4 x = __ldg(reinterpret_cast<const uint4 *>(p) + k);
      r.w[4 * k] = x.x;
      r.w[4 * k + 1] = x.y;
      r.w[4 * k + 2] = x.z;
      r.w[4 * k + 3] = x.w;
    }
  } else if constexpr (BYTES == 12) {  // TurboQuant code slices: 4-byte aligned
#pragma unroll
    for (int k = 0; k < 3; ++k) r.w[k] = __ldg(reinterpret_cast<const uint32_t *>(p) + k);
  } else {
    static_assert(BYTES == 8, "rows of 8, 12 or 16k bytes");
    const uint2 x = __ldg(reinterpret_cast<const uint2 *>(p));
    r.w[0] = x.x;
    r.w[1] = x.y;
  }
}

template <int BYTES>
__device__ __forceinline__ void zero_row(Row<BYTES> &r) {
#pragma unroll
  for (int k = 0; k < BYTES / 4; ++k) r.w[k] = 0;
}

// MT: m16 tiles of query rows; 0 = one tile of which only rows 0..7 are real (q_len x group <= 8), so its
// upper half is never loaded or softmaxed.
// PFO: tiles in flight per warp of the register pipeline when not 0 (the default below otherwise), for
// the prefetch-depth rows that time the choice; the TMA pipeline's ring slots per warp (decode_kernel).
template <int D, int KV, int MT, int PFO = 0>
struct Tile {
  static constexpr int DIM = D;
  static constexpr int M = MT == 0 ? 1 : MT;
  static constexpr int HALVES = MT == 0 ? 1 : 2;
  static constexpr bool FP8 = KV == KM_ATTN_FP8_E4M3 || KV == KM_ATTN_FP8_E5M2;
  static constexpr bool U3 = KV == KM_ATTN_U3;  // head_dim 128 only: a thread's K slice is one group record
  static constexpr bool TQ = KV == KM_ATTN_TQ3;  // head_dim 128 only: codes of the rotated vector, 3d/8 bytes
  static constexpr int EB = KV == KM_ATTN_BF16 ? 2 : 1;  // element bytes (bf16, fp8)
  static constexpr int RB = U3 ? D / 2 : TQ ? 3 * D / 8 : D * EB;  // bytes of one head's row
  static constexpr int KSTEPS = D / 16;  // k-steps of Q K^T
  static constexpr int NT = D / 8;       // n8 tiles of P V (output dims)
  static constexpr int KBYTES = RB / 4;  // a thread's K slice: dims [c D/4, (c+1) D/4)
  static constexpr int VDIMS = D / 8;
  // a thread's V slice: dims [g D/8, (g+1) D/8); 3-bit: the whole 16-byte record of group g / 2 holding them
  // (TurboQuant: the 12 code bytes of dims [32 (g / 2), 32 (g / 2) + 32))
  static constexpr int VBYTES = U3 ? KM_ATTN_U3_RECORD : TQ ? 12 : VDIMS * EB;
  static constexpr bool F16 = KV != KM_ATTN_BF16;
  // register source: tiles in flight per warp (an fp8 tile is half the bytes, so twice as many keep the same
  // bytes in flight; measured on the H200: two bf16 tiles lost 1-5%, registers)
  // (3-bit: a tile is a quarter of bf16's, 24 registers a thread)
  static constexpr int PF = PFO ? PFO : KV == KM_ATTN_BF16 ? 1 : U3 ? KM_ATTN_U3_PF : 2;
  // shared-memory ring: per thread and slot, 16-byte chunks (chunk q of lane l at (q * 32 + (l ^ (q & 7))) *
  // 16: a warp's 16-byte reads of one chunk are conflict-free; the copies' writes are not, 2- to 4-way by a host
  // model of quarter-warp phases, and Nsight Compute counts 78% of the ring's wavefronts excessive: see
  // reports/attn-notes.md): K rows g and g + 8, then V rows 2c, 2c+1, 2c+8,
  // 2c+9 (rows under 16 bytes take a whole chunk), then for fp8 one chunk of the warp's 32 per-token scales
  static constexpr int KCH = KBYTES / 16;
  static constexpr int VCH = VBYTES < 16 ? 1 : VBYTES / 16;
  static constexpr int SCH = FP8 ? 1 : 0;
  static constexpr int CH = 2 * KCH + 4 * VCH + SCH;
  static constexpr int SLOT_BYTES = CH * 512;  // per warp
  // slots per warp: ~24 KiB of ring per warp (eight warps per SM fit in shared memory), 2..6 slots (an fp8
  // slot is about half a bf16 one, so both keep ~16 KiB ahead at head_dim 128)
  static constexpr int NS = 24576 / SLOT_BYTES < 2 ? 2 : 24576 / SLOT_BYTES > 6 ? 6 : 24576 / SLOT_BYTES;
  static constexpr int SMEM = WARPS * NS * SLOT_BYTES;  // per CTA
  // per-token V scales are folded into P before it is rounded to fp16; scale x VSF keeps p x scale out of
  // fp16's subnormals (scales are ~amax / fp8 max: 1e-4 for e5m2), and the output is divided by VSF
  static constexpr float VSF = KV == KM_ATTN_FP8_E5M2 ? 8192.f : (KV == KM_ATTN_FP8_E4M3 || TQ) ? 64.f : 1.f;
};

// B fragment of K^T for k-step s from a thread's slice of one K row: logical k {2c,2c+1} | {2c+8,2c+9}
// are its physical dims 4s + {0,1} | {2,3}.
// 3-bit records (see attn_decode.h): 24-bit chunk k (codes 8k..8k+7) of a record's words w[0..2].
__device__ __forceinline__ uint32_t u3_chunk(const uint32_t *w, int k) {
  return k == 0 ? w[0] & 0xFFFFFFu
         : k == 1 ? __funnelshift_r(w[0], w[1], 24) & 0xFFFFFFu
         : k == 2 ? __funnelshift_r(w[1], w[2], 16) & 0xFFFFFFu
                  : w[2] >> 8;
}
// fp16x2 (1024 + code_a, 1024 + code_b) -> (code_a, code_b) x scale + zero (both fp16x2): 1024 comes off
// exactly, then one fused multiply-add.
__device__ __forceinline__ uint32_t u3_finish(uint32_t u, uint32_t scale, uint32_t zero) {
  __half2 h, sc, z;
  memcpy(&h, &u, 4);
  memcpy(&sc, &scale, 4);
  memcpy(&z, &zero, 4);
  const __half2 r = __hfma2(__hsub2(h, __float2half2_rn(1024.f)), sc, z);
  uint32_t out;
  memcpy(&out, &r, 4);
  return out;
}
// unpack 2: fp16x2 (1 + code_a / 8, 1 + code_b / 8) -> code x scale + zero in one fused multiply-add by
// (8 scale, zero - 8 scale) (u3_unpack.h), which u3_scale8 makes from a record's (scale, zero) once per record.
__device__ __forceinline__ uint32_t u3_finish8(uint32_t u, uint32_t scale8, uint32_t zero8) {
  __half2 h, sc, z;
  memcpy(&h, &u, 4);
  memcpy(&sc, &scale8, 4);
  memcpy(&z, &zero8, 4);
  const __half2 r = __hfma2(h, sc, z);
  uint32_t out;
  memcpy(&out, &r, 4);
  return out;
}
__device__ __forceinline__ void u3_scale8(uint32_t &scale, uint32_t &zero) {
  __half2 sc, z;
  memcpy(&sc, &scale, 4);
  memcpy(&z, &zero, 4);
  const __half2 e = __float2half2_rn(8.f), z8 = __hfma2(__hneg2(e), sc, z), s8 = __hmul2(sc, e);
  memcpy(&scale, &s8, 4);
  memcpy(&zero, &z8, 4);
}
// Codes at bit offsets sa of a and sb of b, each put into the mantissa of 1024.0 (exact), then u3_finish.
__device__ __forceinline__ uint32_t u3_pair(uint32_t a, int sa, uint32_t b, int sb, uint32_t scale, uint32_t zero) {
  return u3_finish(((a >> sa) & 7u) | (((b >> sb) & 7u) << 16) | KM_U3_F16_ONES, scale, zero);
}

// TurboQuant: codes at bit offsets sa of a and sb of b -> fp16x2 (level(code_a), level(code_b)), looked up in
// the fp16 level tables (tq3_sign.h) with three byte permutes.
__device__ __forceinline__ uint32_t tq_pair(uint32_t a, int sa, uint32_t b, int sb) {
  return km_u3_tq_levels(((a >> sa) & 7u) | (((b >> sb) & 7u) << 8));
}

template <int D, int KV>
__device__ __forceinline__ void k_frag(const uint32_t *w, int s, uint32_t &b0, uint32_t &b1) {
  if constexpr (KV == KM_ATTN_BF16) {
    b0 = w[2 * s];
    b1 = w[2 * s + 1];
  } else if constexpr (KV == KM_ATTN_TQ3) {
    // the slice is dims 32c..32c+31 of the rotated vector: dims 4s..4s+3 are codes 4(s & 1).. of chunk s / 2
    const uint32_t ch = u3_chunk(w, s >> 1);
    const int base = 12 * (s & 1);
    b0 = tq_pair(ch, base, ch, base + 3);
    b1 = tq_pair(ch, base + 6, ch, base + 9);
  } else if constexpr (KV == KM_ATTN_U3) {
    // the slice is one group: dims 4s..4s+3 are codes 4(s & 1).. of chunk s / 2; fp16 scale and zero in w[3]
    const uint32_t ch = u3_chunk(w, s >> 1), sc = __byte_perm(w[3], 0, 0x1010), z = __byte_perm(w[3], 0, 0x3232);
    const int base = 12 * (s & 1);
    b0 = u3_pair(ch, base, ch, base + 3, sc, z);
    b1 = u3_pair(ch, base + 6, ch, base + 9, sc, z);
  } else {
    b0 = fp8x2_to_f16x2<KV>(w[s]);
    b1 = fp8x2_to_f16x2<KV>(w[s] >> 16);
  }
}

// B fragment of V for output tile j: element j of rows (lo, hi) packed as (k, k+1).
template <int KV>
__device__ __forceinline__ uint32_t v_frag(const uint32_t *lo, const uint32_t *hi, int j) {
  if constexpr (KV == KM_ATTN_BF16) {
    return (j & 1) ? __byte_perm(lo[j >> 1], hi[j >> 1], 0x7632) : __byte_perm(lo[j >> 1], hi[j >> 1], 0x5410);
  } else {
    const int b = j & 3;
    return fp8x2_to_f16x2<KV>(__byte_perm(lo[j >> 2], hi[j >> 2], (unsigned)(b | ((4 + b) << 4))));
  }
}

// B fragments of V for output tiles j from rows (lo, hi) of a thread's slice.
template <int KV, int VB, int UW = 0>
struct VPair {
  const uint32_t *lo, *hi;
  __device__ __forceinline__ VPair(const Row<VB> &l, const Row<VB> &h, int) : lo(l.w), hi(h.w) {}
  __device__ __forceinline__ uint32_t frag(int j) const { return v_frag<KV>(lo, hi, j); }
};
// 3-bit: the slice is half (`half`) of the record's group: codes 16 half + j, in chunks 2 half and 2 half + 1.
template <int VB>
struct VPair<KM_ATTN_U3, VB, 0> {
  uint32_t lo0, lo1, hi0, hi1, scale, zero;  // scale, zero: fp16x2 (lo's, hi's)
  __device__ __forceinline__ VPair(const Row<VB> &l, const Row<VB> &h, int half) {
    lo0 = half ? u3_chunk(l.w, 2) : u3_chunk(l.w, 0);
    lo1 = half ? u3_chunk(l.w, 3) : u3_chunk(l.w, 1);
    hi0 = half ? u3_chunk(h.w, 2) : u3_chunk(h.w, 0);
    hi1 = half ? u3_chunk(h.w, 3) : u3_chunk(h.w, 1);
    scale = __byte_perm(l.w[3], h.w[3], 0x5410);
    zero = __byte_perm(l.w[3], h.w[3], 0x7632);
  }
  __device__ __forceinline__ uint32_t frag(int j) const {
    return j < 8 ? u3_pair(lo0, 3 * j, hi0, 3 * j, scale, zero) : u3_pair(lo1, 3 * (j - 8), hi1, 3 * (j - 8), scale, zero);
  }
};
// 3-bit, 16-bit windows (u3_unpack.h): the three windows of this half of both rows, then one shift and one
// mask per pair of codes (codes 5 and 10 cross a window and come from the rows' words); UW 2 takes the codes as
// 1 + code / 8 and dequantizes each pair by one fma (u3_finish8).
template <int VB, int UW>
struct VPair<KM_ATTN_U3, VB, UW> {
  const uint32_t *lo, *hi;
  uint32_t z[3], scale, zero;
  int half;
  __device__ __forceinline__ VPair(const Row<VB> &l, const Row<VB> &h, int hf) : lo(l.w), hi(h.w), half(hf) {
#pragma unroll
    for (int m = 0; m < 3; ++m) z[m] = km_u3_v_window(l.w, h.w, hf, m);
    scale = __byte_perm(l.w[3], h.w[3], 0x5410);
    zero = __byte_perm(l.w[3], h.w[3], 0x7632);
    if constexpr (UW == 2) u3_scale8(scale, zero);
  }
  __device__ __forceinline__ uint32_t frag(int j) const {
    if constexpr (UW == 2) return u3_finish8(km_u3_v_pair_bits7(z, lo, hi, half, j), scale, zero);
    return u3_finish(km_u3_v_pair_bits(z, lo, hi, half, j), scale, zero);
  }
};

// TurboQuant: the slice is half (`half`) of the 32 dims whose 12 code bytes the row holds.
template <int VB>
struct VPair<KM_ATTN_TQ3, VB, 0> {
  uint32_t lo0, lo1, hi0, hi1;
  __device__ __forceinline__ VPair(const Row<VB> &l, const Row<VB> &h, int half) {
    lo0 = half ? u3_chunk(l.w, 2) : u3_chunk(l.w, 0);
    lo1 = half ? u3_chunk(l.w, 3) : u3_chunk(l.w, 1);
    hi0 = half ? u3_chunk(h.w, 2) : u3_chunk(h.w, 0);
    hi1 = half ? u3_chunk(h.w, 3) : u3_chunk(h.w, 1);
  }
  __device__ __forceinline__ uint32_t frag(int j) const {
    return j < 8 ? tq_pair(lo0, 3 * j, hi0, 3 * j) : tq_pair(lo1, 3 * (j - 8), hi1, 3 * (j - 8));
  }
};

// TurboQuant, 16-bit windows (unpack 1, as uniform 3-bit's): each pair of codes by one shift and one mask, then
// its levels by km_u3_tq_levels16 (one LEA.HI for the selector, three byte permutes).
template <int VB>
struct VPair<KM_ATTN_TQ3, VB, 1> {
  uint32_t z[3];
  const uint32_t *lo, *hi;
  int half;
  __device__ __forceinline__ VPair(const Row<VB> &l, const Row<VB> &h, int hf) : lo(l.w), hi(h.w), half(hf) {
#pragma unroll
    for (int m = 0; m < 3; ++m) z[m] = km_u3_v_window(l.w, h.w, hf, m);
  }
  __device__ __forceinline__ uint32_t frag(int j) const { return km_u3_tq_levels16(km_u3_v_pair_or(z, lo, hi, half, j, 0u)); }
};
// unpack 3: the same pairs, where two are taken together (codes 2j and 2j + 1, v_frags) looked up from one selector
// (km_u3_tq_levels2: four byte permutes for two pairs instead of six)
template <int VB>
struct VPair<KM_ATTN_TQ3, VB, 3> : VPair<KM_ATTN_TQ3, VB, 1> {
  using VPair<KM_ATTN_TQ3, VB, 1>::VPair;
};
// Codes 2j and 2j + 1 of a VPair as two fragments: each by frag, or TurboQuant's unpack 3 both at once.
template <class VP>
__device__ __forceinline__ void v_frags(const VP &v, int j, uint32_t &a, uint32_t &b) {
  a = v.frag(2 * j), b = v.frag(2 * j + 1);
}
template <int VB>
__device__ __forceinline__ void v_frags(const VPair<KM_ATTN_TQ3, VB, 3> &v, int j, uint32_t &a, uint32_t &b) {
  km_u3_tq_levels2(km_u3_v_pair_or(v.z, v.lo, v.hi, v.half, 2 * j, 0u),
                   km_u3_v_pair_or(v.z, v.lo, v.hi, v.half, 2 * j + 1, 0u), &a, &b);
}

// TurboQuant: the unnormalised Walsh-Hadamard transform of the 128 values a quad of lanes holds, 32 each
// (lane c: indices 32c + i), then the sign flip `post` (or before it, `pre`): in-lane butterflies over the
// index's low 5 bits, then across lanes 1 and 2 apart for bits 5 and 6.
__device__ __forceinline__ void quad_fwht(float (&v)[32], int c) {
#pragma unroll
  for (int len = 1; len < 32; len <<= 1)
#pragma unroll
    for (int i = 0; i < 32; ++i)
      if (!(i & len)) {
        const float a = v[i], b = v[i | len];
        v[i] = a + b;
        v[i | len] = a - b;
      }
#pragma unroll
  for (int m = 1; m <= 2; m <<= 1)
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const float other = __shfl_xor_sync(0xffffffffu, v[i], m);
      v[i] = (c & m) ? other - v[i] : v[i] + other;
    }
}
__device__ __forceinline__ void tq_flip(float (&v)[32], uint32_t word) {
#pragma unroll
  for (int i = 0; i < 32; ++i)
    if ((word >> i) & 1u) v[i] = -v[i];
}

__device__ __forceinline__ float bf16_to_f32(uint16_t x) { return __uint_as_float((uint32_t)x << 16); }

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

template <int BYTES>
__device__ __forceinline__ void cp_async(uint32_t dst, const void *src) {
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(BYTES));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Byte offset of lane `lane`'s piece of chunk `chunk` in a slot (see Tile).
__device__ __forceinline__ int chunk_off(int chunk, int lane) { return (chunk * 32 + (lane ^ (chunk & 7))) * 16; }

// A thread's row of BYTES from its chunks starting at `chunk` of a slot (see Tile).
template <int BYTES>
__device__ __forceinline__ void smem_row(Row<BYTES> &r, const char *slot, int chunk, int lane) {
  if constexpr (BYTES % 16 == 0) {
#pragma unroll
    for (int k = 0; k < BYTES / 16; ++k) {
      const uint4 x = *reinterpret_cast<const uint4 *>(slot + chunk_off(chunk + k, lane));
      r.w[4 * k] = x.x;
      r.w[4 * k + 1] = x.y;
      r.w[4 * k + 2] = x.z;
      r.w[4 * k + 3] = x.w;
    }
  } else {
    const uint2 x = *reinterpret_cast<const uint2 *>(slot + chunk_off(chunk, lane));
    r.w[0] = x.x;
    r.w[1] = x.y;
  }
}

// cp.async of one 16-token tile of a head's K and V rows (RB = D x element bytes each, `stride` bytes apart)
// into a slot, coalesced: each copy instruction takes whole rows (32 lanes x 16 bytes; V rows under 16
// bytes per consumer in pieces of VBYTES), and every piece lands in the chunk of the lane whose fragment
// needs it (see Tile). So the warp's copies fetch every 32-byte sector once, and a lane reads back bytes
// other lanes copied: the warp synchronises between the wait and the reads.
template <typename T>
__device__ __forceinline__ void issue_tile(uint32_t slot, int lane, const char *k0, const char *v0, size_t stride) {
  constexpr int RB = T::RB;
  {
    constexpr int LPR = RB / 16, RPS = 32 / LPR;  // lanes per row, rows per step
    const int o = (lane % LPR) * 16, c = o / T::KBYTES, q = (o % T::KBYTES) / 16;
#pragma unroll
    for (int st = 0; st < KM_ATTN_TILE / RPS; ++st) {
      const int r = st * RPS + lane / LPR;
      const int dst_lane = (r & 7) * 4 + c, chunk = (r >> 3) * T::KCH + q;
      cp_async<16>(slot + chunk_off(chunk, dst_lane), k0 + (size_t)r * stride + o);
    }
  }
  {
    constexpr int P = T::VBYTES < 16 ? T::VBYTES : 16;
    constexpr int LPR = RB / P, RPS = 32 / LPR;
    const int o = (lane % LPR) * P, g = o / T::VBYTES, q = (o % T::VBYTES) / 16;
#pragma unroll
    for (int st = 0; st < KM_ATTN_TILE / RPS; ++st) {
      const int r = st * RPS + lane / LPR;
      const int dst_lane = g * 4 + ((r & 7) >> 1), w = (r & 1) + 2 * (r >> 3);
      const int chunk = 2 * T::KCH + w * T::VCH + q;
      cp_async<P>(slot + chunk_off(chunk, dst_lane), v0 + (size_t)r * stride + o);
    }
  }
}

// What both tile sources need of the work item: where its tiles are (the chunk's tile list, 32 at a time
// in lanes: lane j holds (tile index, pool row of its token 0) of tile base + j), and where its K/V rows are.
struct Item {
  const Params *p;
  const int32_t *table, *sel;
  size_t row_stride;  // bytes between tokens of one head
  int lane, g, c, kvh, tb, te;
  int list_tile;
  long long list_row;
  int next_tile;       // tile_row_early: the list after list_tile / list_row
  long long next_row;

  // Pool row of token 0 of list entry i (the chunk's i-th tile, or the selection's i-th page), and its tile.
  __device__ __forceinline__ long long pool_row(int i, int &tile) const {
    tile = sel ? __ldg(sel + i) : i;
    const int tok = tile * KM_ATTN_TILE;
    return (long long)__ldg(table + tok / p->block_size) * p->block_size + tok % p->block_size;
  }
  // The list of tiles base.. base + 31 into (tile, row): lane j's entry base + j.
  __device__ __forceinline__ void load_list_into(int base, int &tile, long long &row) const {
    const int i = base + lane;
    if (i < te) row = pool_row(i, tile);
  }
  __device__ __forceinline__ void load_list(int base) { load_list_into(base, list_tile, list_row); }
  // Entry src of the current list: its pool row of token 0 (and its tile index).
  __device__ __forceinline__ long long list_entry(int src, int &tile) const {
    tile = __shfl_sync(0xffffffffu, list_tile, src);
    return shfl_row(list_row, src);
  }
  // Tile i's pool row of token 0 (and its tile index); warp-uniform i, tiles asked for in order.
  __device__ __forceinline__ long long tile_row(int i, int &tile) {
    if (((i - tb) & 31) == 0) load_list(i);  // tiles asked for earlier hold their rows: the old list is done with
    return list_entry((i - tb) & 31, tile);
  }
  // tile_row with each list loaded one list early (into next_tile / next_row), so that only the first list's
  // block-table loads are waited for (the TMA pipeline, whose tiles are asked for N - 1 ahead of their use).
  __device__ __forceinline__ long long tile_row_early(int i, int &tile) {
    const int src = (i - tb) & 31;
    if (src == 0) {
      if (i == tb) {
        load_list(i);
      } else {
        list_tile = next_tile;
        list_row = next_row;
      }
      load_list_into(i + 32, next_tile, next_row);
    }
    return list_entry(src, tile);
  }
  static __device__ __forceinline__ long long shfl_row(long long row, int src) {
    const int lo = __shfl_sync(0xffffffffu, (int)(row & 0xffffffff), src);
    const int hi = __shfl_sync(0xffffffffu, (int)(row >> 32), src);
    return (long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
  }
  // Offset of the head's row `row` in the K or V pool.
  __device__ __forceinline__ size_t head_row(long long row, int row_bytes) const {
    return ((size_t)row * p->kv_heads + kvh) * row_bytes;
  }
};

// Value x of lane 4 gs + (this lane's c): shfl.idx with segment mask 3, so the source lane's low two bits are
// the caller's and the rest the immediate 4 gs (no lane index register).
template <int GS>
__device__ __forceinline__ float shfl_same_c(float x) {
  float r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x31f, 0xffffffff;\n" : "=f"(r) : "f"(x), "n"(4 * GS));
  return r;
}

// A tile's 32 per-token scales (fp8 per token-head) or fp16 norms (TurboQuant), one per lane: lane (g, c) loads
// value g of column c of the tile, i.e. K (g < 4) or V of token 8 (g / 2 % 2) + 2c + g % 2, and the threads take
// their 4 + 4 from the lanes of their c with shuffles when the tile is computed on (a TurboQuant norm is
// converted and scaled then, once per lane, not at its load).
template <typename T>
struct LaneScale {
  using Scale = typename std::conditional<T::TQ, uint16_t, float>::type;  // as stored: fp16 norm, fp32 scale
  const Scale *src;  // this lane's value of a tile at pool row 0
  int stride;        // elements per pool row (fp8 kv_heads; TurboQuant K norms kv_heads, V 2 kv_heads)
  float mul;         // TurboQuant: 1 / d for a K norm, VSF / d for a V norm

  __device__ __forceinline__ void init(const Item &it) {
    const int tok = 8 * ((it.g >> 1) & 1) + 2 * it.c + (it.g & 1);
    const size_t si = (size_t)tok * it.p->kv_heads + it.kvh;
    if constexpr (T::TQ) {
      stride = it.g < 4 ? it.p->kv_heads : 2 * it.p->kv_heads;
      src = it.g < 4 ? it.p->k_side + si : it.p->v_side + 2 * si;
      mul = it.g < 4 ? 1.f / T::DIM : T::VSF / T::DIM;
    } else {
      src = (it.g < 4 ? it.p->k_scale : it.p->v_scale) + si;
      stride = it.p->kv_heads;
    }
  }
  // this lane's value of the tile whose token 0 is at pool row `row`
  __device__ __forceinline__ Scale load(long long row) const { return __ldg(src + (size_t)row * stride); }
  // the values each thread multiplies by: K's scales and V's scales x VSF (fp8, as loaded), or norm / d and norm
  // x VSF / d (TurboQuant: converted here, mul holding the factor of this lane's norm)
  __device__ __forceinline__ void spread(Scale v_lane, float (&k)[2][2], float (&v)[2][2]) const {
    float x;
    if constexpr (T::TQ)
      x = __half2float(__ushort_as_half(v_lane)) * mul;
    else
      x = v_lane;
    constexpr float VM = T::TQ ? 1.f : T::VSF;  // TurboQuant's VSF is in mul already
    k[0][0] = shfl_same_c<0>(x), k[0][1] = shfl_same_c<1>(x);
    k[1][0] = shfl_same_c<2>(x), k[1][1] = shfl_same_c<3>(x);
    v[0][0] = shfl_same_c<4>(x) * VM, v[0][1] = shfl_same_c<5>(x) * VM;
    v[1][0] = shfl_same_c<6>(x) * VM, v[1][1] = shfl_same_c<7>(x) * VM;
  }
};

// Tile source 1 (KM_ATTN_PIPE_REGISTERS): K and V straight from global memory into each thread's fragment
// registers, PF tiles in flight: slot u holds tile i0 + u while the loop works through the ring, and is
// refilled with tile i0 + u + PF as soon as its K (then its V) has been consumed. Per-token scales travel
// with their tile's K: each thread loads its own 4 + 4 (SL 0), or (SL 1: fp8's scales, TurboQuant's fp16
// norms) one per lane (LaneScale).
// PD > 0: the PD tiles after those in flight are prefetched into L2 (l2_tile), meant to let a slot's refill wait
// on L2 rather than on HBM: the tile's K and V rows of the warp's head, and its per-token scales (fp8 per
// token-head) or norms (TurboQuant) of every KV head. Measured slower on the H200 (about half the hinted
// sectors are read from HBM twice; reports/attn-notes.md): the l2_ahead rows only.
template <typename T, int SL = 0, int PD = 0>
struct RegSource {
  static_assert(!SL || T::FP8 || T::TQ, "one scale load per lane: fp8 per token-head, TurboQuant's norms");
  static constexpr int N = T::PF;
  Row<T::KBYTES> kr[N][2];
  Row<T::VBYTES> vr[N][4];
  long long row[N];
  int tile[N];
  float ksc[N][2][2], vsc[N][2][2];     // SL 0
  typename LaneScale<T>::Scale lsc[N];  // SL 1: this lane's scale of the slot's tile
  LaneScale<T> ls;                      // SL 1
  long long pf_list;                    // PD: lane j holds the pool row of a tile 32 k + j after tile tb + N

  // Hint tile j (warp-uniform, >= tb + N, asked for in order, one after another) into L2: lane l takes K row l
  // (l < 16) or V row l - 16, and sector l % 16 (then + 16 ...) of the tile's K or V scales of every KV head.
  __device__ __forceinline__ void l2_tile(Item &it, int j) {
    const int k = (j - it.tb - N) & 31;
    if (k == 0 && j + it.lane < it.te) {
      int tile;
      pf_list = it.pool_row(j + it.lane, tile);
    }
    const long long row0 = Item::shfl_row(pf_list, k);
    const int r = it.lane & 15;
    const bool kside = it.lane < 16;
    l2_prefetch_row<T::RB>((kside ? it.p->k : it.p->v) + it.head_row(row0 + r, T::RB));
    const int heads = it.p->kv_heads;
    const char *sc = nullptr;
    int span = 0;  // bytes of the tile's scales (norms) of every head
    if constexpr (T::TQ) {  // fp16 norms: K one, V two per (token, head)
      sc = kside ? reinterpret_cast<const char *>(it.p->k_side + (size_t)row0 * heads)
                 : reinterpret_cast<const char *>(it.p->v_side + 2 * (size_t)row0 * heads);
      span = KM_ATTN_TILE * heads * (kside ? 2 : 4);
    } else if constexpr (T::FP8) {
      if (it.p->per_token) {
        sc = reinterpret_cast<const char *>((kside ? it.p->k_scale : it.p->v_scale) + (size_t)row0 * heads);
        span = KM_ATTN_TILE * heads * 4;
      }
    }
    for (int o = 32 * r; o < span; o += 32 * 16) l2_prefetch(sc + o);
  }
  __device__ __forceinline__ void load_k(Item &it, int u) {
    const char *base = it.p->k + it.head_row(row[u], T::RB) + it.c * T::KBYTES;
    load_row(kr[u][0], base + (size_t)it.g * it.row_stride);
    load_row(kr[u][1], base + (size_t)(it.g + 8) * it.row_stride);
    // per-token scales of the thread's four tokens: fp8 per token-head, or TurboQuant's norms / head_dim
    // (scores and P carry them: the rotation has no scale)
    if constexpr (SL) {
      if (T::TQ || it.p->per_token) lsc[u] = ls.load(row[u]);
    } else if constexpr (T::FP8 || T::TQ) {
      if (T::TQ || it.p->per_token) {
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const size_t si = ((size_t)row[u] + 8 * t + 2 * it.c + e) * it.p->kv_heads + it.kvh;
            if constexpr (T::TQ) {
              ksc[u][t][e] = __half2float(__ushort_as_half(__ldg(it.p->k_side + si))) * (1.f / T::DIM);
              vsc[u][t][e] = __half2float(__ushort_as_half(__ldg(it.p->v_side + 2 * si))) * (T::VSF / T::DIM);
            } else {
              ksc[u][t][e] = __ldg(it.p->k_scale + si);
              vsc[u][t][e] = __ldg(it.p->v_scale + si) * T::VSF;
            }
          }
      }
    }
  }
  __device__ __forceinline__ void load_v(Item &it, int u) {
    const char *base = it.p->v + it.head_row(row[u], T::RB) + ((T::U3 || T::TQ) ? (it.g >> 1) * T::VBYTES : it.g * T::VBYTES);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      load_row(vr[u][w], base + (size_t)(2 * it.c + (w & 1) + 8 * (w >> 1)) * it.row_stride);
  }
  __device__ __forceinline__ void start(Item &it) {
    if constexpr (SL) ls.init(it);
#pragma unroll
    for (int u = 0; u < N; ++u)
      if (it.tb + u < it.te) {
        row[u] = it.tile_row(it.tb + u, tile[u]);
        load_k(it, u);
        load_v(it, u);
      }
    if constexpr (PD > 0) {
#pragma unroll
      for (int d = 0; d < PD; ++d)
        if (it.tb + N + d < it.te) l2_tile(it, it.tb + N + d);
    }
  }
  __device__ __forceinline__ void arrive(Item &, int, int) {}
  __device__ __forceinline__ int tile_of(int u) const { return tile[u]; }
  __device__ __forceinline__ void k_row(Item &, int u, int t, Row<T::KBYTES> &r) const { r = kr[u][t]; }
  __device__ __forceinline__ void scales(Item &, int u, float (&k)[2][2], float (&v)[2][2]) const {
    if constexpr (SL) {
      ls.spread(lsc[u], k, v);  // the values SL 0 has
    } else {
#pragma unroll
      for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          k[t][e] = ksc[u][t][e];
          v[t][e] = vsc[u][t][e];
        }
    }
  }
  // K of tile i is consumed: the slot's next tile's K is in flight during the softmax
  __device__ __forceinline__ void after_s(Item &it, int i, int u) {
    if (i + N < it.te) {
      row[u] = it.tile_row(i + N, tile[u]);
      load_k(it, u);
    }
    if constexpr (PD > 0)
      if (i + N + PD < it.te) l2_tile(it, i + N + PD);
  }
  __device__ __forceinline__ void v_rows(Item &, int u, Row<T::VBYTES> (&v)[4]) const {
#pragma unroll
    for (int w = 0; w < 4; ++w) v[w] = vr[u][w];
  }
  __device__ __forceinline__ void after_pv(Item &it, int i, int u) {
    if (i + N < it.te) load_v(it, u);
  }
  __device__ __forceinline__ void finish() {}
};

// Tile source 1b (KM_ATTN_PIPE_REGISTERS at head_dim 256, bf16, O^T accumulators): one tile in flight as source 1's,
// in two halves of its tokens, each loaded into the registers the half before it has just left: the thread's K row
// g + 8t (tokens 8t..8t + 7 of S's n8 tile t) is consumed, then V rows 2c + 8t, 2c + 8t + 1 of the same tile are
// requested (after_k_part t); those are consumed by P V's m16n8k8 products over the tile's tokens 8t..8t + 7, then
// K row g + 8t of the next tile (after_v_part t). A warp keeps 8 KiB in flight, as at head_dim 128, in 64 registers
// instead of source 1's 128 (which spilled: 1,076 bytes at 255 registers, sm_90), and each half is whole 128-byte
// lines of the pool (a first version split each thread's slices by dims, i.e. every line in two: 1,190 us, 80% of
// the read ceiling at b16 x 32K, DRAM 77% busy, L2 hit rate 36%).
template <typename T>
struct RegHalfSource {
  static_assert(T::DIM == 256 && !T::F16, "tiles in halves: bf16 at head_dim 256");
  static constexpr int N = 1;
  Row<T::KBYTES> kr[2];
  Row<T::VBYTES> vr[2][2];
  long long row;
  int tile;

  __device__ __forceinline__ void load_k(Item &it, int t) {
    load_row(kr[t], it.p->k + it.head_row(row, T::RB) + it.c * T::KBYTES + (size_t)(it.g + 8 * t) * it.row_stride);
  }
  __device__ __forceinline__ void load_v(Item &it, int t) {
    const char *base = it.p->v + it.head_row(row, T::RB) + it.g * T::VBYTES;
#pragma unroll
    for (int e = 0; e < 2; ++e) load_row(vr[t][e], base + (size_t)(2 * it.c + e + 8 * t) * it.row_stride);
  }
  __device__ __forceinline__ void start(Item &it) {
    if (it.tb < it.te) {
      row = it.tile_row(it.tb, tile);
#pragma unroll
      for (int t = 0; t < 2; ++t) load_k(it, t);
    }
  }
  __device__ __forceinline__ void arrive(Item &, int, int) {}
  __device__ __forceinline__ int tile_of(int) const { return tile; }
  __device__ __forceinline__ void k_row(Item &, int, int t, Row<T::KBYTES> &r) const { r = kr[t]; }
  __device__ __forceinline__ void after_k_part(Item &it, int, int t) { load_v(it, t); }
  __device__ __forceinline__ void after_s(Item &, int, int) {}
  __device__ __forceinline__ void v_part(int t, Row<T::VBYTES> (&v)[2]) const { v[0] = vr[t][0], v[1] = vr[t][1]; }
  __device__ __forceinline__ void after_v_part(Item &it, int i, int t) {
    if (i + 1 < it.te) {
      if (t == 0) row = it.tile_row(i + 1, tile);
      load_k(it, t);
    }
  }
  __device__ __forceinline__ void after_pv(Item &, int, int) {}
  __device__ __forceinline__ void finish() {}
};

// The scale lane l copies into a slot's 32 (fp8 per token-head): the K scale (l < 16) or the V scale of token
// l % 16 of the tile whose token 0 is at pool row row0.
__device__ __forceinline__ const float *lane_slot_scale(const Item &it, long long row0) {
  return (it.lane < 16 ? it.p->k_scale : it.p->v_scale) + ((size_t)row0 + (it.lane & 15)) * it.p->kv_heads + it.kvh;
}

// A thread's K scales and V scales x VSF of its tokens 2c + e + 8t from a slot's 32 scales in shared memory
// (K of tokens 0..15, then V of tokens 0..15).
template <typename T>
__device__ __forceinline__ void slot_scales(const float *sc, int c, float (&k)[2][2], float (&v)[2][2]) {
#pragma unroll
  for (int t = 0; t < 2; ++t) {
    const float2 kk = *reinterpret_cast<const float2 *>(sc + 8 * t + 2 * c);
    const float2 vv = *reinterpret_cast<const float2 *>(sc + 16 + 8 * t + 2 * c);
    k[t][0] = kk.x;
    k[t][1] = kk.y;
    v[t][0] = vv.x * T::VSF;
    v[t][1] = vv.y * T::VSF;
  }
}

// Tile source 2 (KM_ATTN_PIPE_SMEM_RING): the warp copies each tile with coalesced cp.async into its ring
// of NS slots in shared memory (issue_tile), NS - 1 tiles ahead of the one it computes on; slot u holds
// tile tb + u (mod NS), and tile i + NS - 1 goes into the slot tile i - 1 left.
template <typename T>
struct RingSource {
  static_assert(!T::U3 && !T::TQ, "3-bit tiles come through registers only");
  static constexpr int N = T::NS;
  char *ring;
  uint32_t ring_s;
  int tile[N];

  __device__ __forceinline__ void issue(Item &it, int i, int u) {
    const long long row0 = it.tile_row(i, tile[u]);
    const uint32_t slot = ring_s + u * T::SLOT_BYTES;
    const size_t first = it.head_row(row0, T::RB);
    issue_tile<T>(slot, it.lane, it.p->k + first, it.p->v + first, it.row_stride);
    if constexpr (T::SCH) {
      if (it.p->per_token)  // 4 bytes each, lane l's at l * 4
        cp_async<4>(slot + (2 * T::KCH + 4 * T::VCH) * 512 + it.lane * 4, lane_slot_scale(it, row0));
    }
  }
  __device__ __forceinline__ void start(Item &it) {
#pragma unroll
    for (int u = 0; u < N - 1; ++u) {
      if (it.tb + u < it.te) issue(it, it.tb + u, u);
      cp_async_commit();
    }
  }
  __device__ __forceinline__ void arrive(Item &it, int i, int u) {
    __syncwarp();  // the slot of tile i - 1 is free once every lane has read it
    if (i + N - 1 < it.te) issue(it, i + N - 1, (u + N - 1) % N);
    cp_async_commit();
    cp_async_wait<N - 1>();  // this lane's copies of tile i are complete
    __syncwarp();            // and every lane's: the slot is the warp's
  }
  __device__ __forceinline__ int tile_of(int u) const { return tile[u]; }
  __device__ __forceinline__ void k_row(Item &it, int u, int t, Row<T::KBYTES> &r) const {
    smem_row(r, ring + u * T::SLOT_BYTES, t * T::KCH, it.lane);
  }
  __device__ __forceinline__ void scales(Item &it, int u, float (&k)[2][2], float (&v)[2][2]) const {
    slot_scales<T>(reinterpret_cast<const float *>(ring + u * T::SLOT_BYTES + (2 * T::KCH + 4 * T::VCH) * 512), it.c, k, v);
  }
  __device__ __forceinline__ void after_s(Item &, int, int) {}
  __device__ __forceinline__ void v_rows(Item &it, int u, Row<T::VBYTES> (&v)[4]) const {
#pragma unroll
    for (int w = 0; w < 4; ++w) smem_row(v[w], ring + u * T::SLOT_BYTES, 2 * T::KCH + w * T::VCH, it.lane);
  }
  __device__ __forceinline__ void after_pv(Item &, int, int) {}
  __device__ __forceinline__ void finish() { cp_async_wait<0>(); }  // no copy outlives the kernel
};

// Tile source 3 (KM_ATTN_PIPE_TMA, sm_90): the tensor memory accelerator copies a tile's K rows and its V rows of
// the warp's head (16 rows of 128 bytes each, kv_heads x 128 bytes apart in the pool) into a slot of the warp's
// ring of NS, one bulk tensor copy each, issued by lane 0 and counted in bytes on the slot's mbarrier, NS - 1
// tiles ahead of the one computed on (slot u holds tile tb + u, mod NS; tile i + NS - 1 goes into the slot tile
// i - 1 left). No thread holds a tile in flight in registers and no lane issues per-row copies: the bytes in
// flight are NS - 1 slots per warp whatever the registers. The copies store the rows with the 128-byte swizzle
// (16-byte chunk j of row r at chunk j ^ (r % 8) of its 128 bytes), under which the fragments' reads are
// conflict-free: K chunks 2c and 2c + 1 of rows g and g + 8, V chunk g of rows 2c, 2c + 1, 2c + 8, 2c + 9; each
// quarter-warp's eight lanes read eight distinct chunk positions. Per-token scales (SC 0) one per lane in a
// register (LaneScale), loaded when the tile's copies are issued, or (SC 1) copied with the tile into 128 bytes
// of its slot by the warp's lanes (one 4-byte cp.async each: lane l the K scale of token l, or for l >= 16 the V
// scale of token l - 16), whose completion each lane counts on the slot's mbarrier (cp.async.mbarrier.arrive
// .noinc; the barrier then expects 33 arrivals), so that no register waits on them: Nsight Compute put 86% of
// SC 0's long-scoreboard stalls on the first use of the register scale loaded three tiles earlier, but SC 1
// measured slower (b16 x 32K 301.5 us against 283.4, H200, 3fd60e7; reports/attn-notes.md), so SC 0 is the
// default. SC 2: SC 0's register scales, but every lane arrives on the slot's mbarrier when its tile is issued (32
// arrivals a phase: lane 0's with the copies' byte count, 31 plain ones), written to test whether synccheck's failure
// on SC 0 (where 31 lanes wait without arriving; SC 1, where all 32 arrive, passes) is that: it is not, SC 2 fails the
// same way (H200, 961c824), and it is level in time. SC 3: SC 0's register scales, and every lane's arrival through
// cp.async.mbarrier.arrive.noinc with no cp.async of its own (33 arrivals a phase: lane 0's with the copies' bytes,
// then the 32 noinc ones), the one trait of SC 1 that SC 0 and SC 2 lack; in the default's 3-slot ring. The tile
// lists one list early (Item::tile_row_early).
template <typename T, int NS, int SC = 0>
struct TmaSource {
  static_assert(T::FP8 && T::RB == 128 && T::KBYTES == 32 && T::VBYTES == 16,
                "TMA tiles: fp8 at head_dim 128 (a row is one 128-byte swizzle span)");
  static_assert(NS >= 2, "a ring of at least two slots");
  static constexpr int N = NS;
  static constexpr int TILE_BYTES = KM_ATTN_TILE * T::RB;  // K or V of one tile: 2 KiB, two swizzle atoms
  static constexpr int SLOT_BYTES = 2 * TILE_BYTES;
  static_assert(SC >= 0 && SC <= 3, "SC 0, 1, 2 or 3");
  static constexpr int SCALE_BYTES = SC == 1 ? 2 * KM_ATTN_TILE * 4 : 0;  // SC 1: a slot's K and V scales
  // per CTA: the rings (1024-byte aligned, the swizzle's period: up to 1008 bytes of padding after the static
  // shared memory), then (SC 1) each warp's NS slots of scales, then each warp's NS mbarriers
  static constexpr int SMEM = 1024 + WARPS * NS * (SLOT_BYTES + SCALE_BYTES + 8);
  const CUtensorMap *kmap, *vmap;
  char *ring;     // this warp's slot 0
  float *sc;      // SC 1: this warp's slot 0 of scales (2 x 16 floats a slot)
  uint64_t *bar;  // this warp's NS mbarriers
  LaneScale<T> ls;
  float lsc[N];  // this lane's scale of the slot's tile (per-token scales)
  int tile[N];

  // the CTA's dynamic shared memory `smem`: this warp's ring and mbarriers
  __device__ __forceinline__ void place(char *smem, int warp) {
    const uint32_t a = smem_addr(smem), pad = ((a + 1023u) & ~1023u) - a;
    ring = smem + pad + (size_t)warp * NS * SLOT_BYTES;
    char *scales0 = smem + pad + (size_t)WARPS * NS * SLOT_BYTES;
    sc = reinterpret_cast<float *>(scales0 + (size_t)warp * NS * SCALE_BYTES);
    bar = reinterpret_cast<uint64_t *>(scales0 + (size_t)WARPS * NS * SCALE_BYTES) + warp * NS;
  }
  __device__ __forceinline__ void issue(Item &it, int i, int u) {
    const long long row0 = it.tile_row_early(i, tile[u]);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
    if (it.lane == 0) {
      km_bulk::fence_async_shared();  // the warp's reads of the slot (its previous tile's), before the copies
      km_bulk::bar_expect(bar + u, SLOT_BYTES);
      char *slot = ring + u * SLOT_BYTES;
      km_bulk::load_box3(slot, kmap, 0, it.kvh, (int)row0, bar + u);
      km_bulk::load_box3(slot + TILE_BYTES, vmap, 0, it.kvh, (int)row0, bar + u);
    } else if constexpr (SC == 2) {
      km_bulk::bar_arrive(bar + u);
    }
    if constexpr (SC == 3) km_bulk::arrive_on_copies(bar + u);  // every lane, no copy of its own: arrives at once
#else
    __trap();  // the host launches this pipeline only where sm_90 code runs (kernel_pipe)
#endif
    if constexpr (SC == 1) {
      if (it.p->per_token) {  // every lane: its scale into the slot, then an arrival when that copy has landed
        cp_async<4>(smem_addr(sc + u * 2 * KM_ATTN_TILE + it.lane), lane_slot_scale(it, row0));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
        km_bulk::arrive_on_copies(bar + u);
#endif
      }
    } else if (it.p->per_token) {
      lsc[u] = ls.load(row0);
    }
  }
  __device__ __forceinline__ void start(Item &it) {
    ls.init(it);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
    if (it.lane == 0) {
      // lane 0's arrival with the copies' byte count, and with SC 1 and per-token scales every lane's arrival
      // when its scale has landed, with SC 2 the 31 other lanes' arrivals when the tile is issued
      const uint32_t arrivals = (SC == 1 && it.p->per_token) || SC == 3 ? 33u : SC == 2 ? 32u : 1u;
      for (int u = 0; u < N; ++u) km_bulk::bar_init(bar + u, arrivals);
      km_bulk::bar_init_fence();
    }
    __syncwarp();
#endif
#pragma unroll
    for (int u = 0; u < N - 1; ++u)
      if (it.tb + u < it.te) issue(it, it.tb + u, u);
  }
  __device__ __forceinline__ void arrive(Item &it, int i, int u) {
    __syncwarp();  // every lane has read the slot of tile i - 1
    if (i + N - 1 < it.te) issue(it, i + N - 1, (u + N - 1) % N);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
    const uint32_t parity = (uint32_t)((i - it.tb) / N) & 1u;  // tile i's bytes (SC 1: and scales) have landed
    // a phase that never completes (a wrong arrival or byte count) traps after 2^20 polls instead of hanging.
    // synccheck: every variant passes with --num-cuda-barriers 1024 (H200, 3fdda59; scripts/sanitize-gpu.sh's
    // default); with the tool's own count, or 16 to 256, SC 0, 2 and 3 fail the launch after "Detected overflow of
    // tracked cuda::barrier structures", the tool's capacity, not the protocol
    km_bulk::bar_wait_or_trap(bar + u, parity, 1u << 20);
#endif
  }
  __device__ __forceinline__ int tile_of(int u) const { return tile[u]; }
  // 16-byte chunk j of row r of a tile at `base`, under the swizzle
  static __device__ __forceinline__ uint4 chunk(const char *base, int r, int j) {
    return *reinterpret_cast<const uint4 *>(base + r * T::RB + ((j ^ (r & 7)) << 4));
  }
  __device__ __forceinline__ void k_row(Item &it, int u, int t, Row<T::KBYTES> &r) const {
    const char *base = ring + u * SLOT_BYTES;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const uint4 x = chunk(base, it.g + 8 * t, 2 * it.c + k);
      r.w[4 * k] = x.x, r.w[4 * k + 1] = x.y, r.w[4 * k + 2] = x.z, r.w[4 * k + 3] = x.w;
    }
  }
  __device__ __forceinline__ void scales(Item &it, int u, float (&k)[2][2], float (&v)[2][2]) const {
    if constexpr (SC == 1) {
      slot_scales<T>(sc + u * 2 * KM_ATTN_TILE, it.c, k, v);
    } else {
      ls.spread(lsc[u], k, v);
    }
  }
  __device__ __forceinline__ void after_s(Item &, int, int) {}
  __device__ __forceinline__ void v_rows(Item &it, int u, Row<T::VBYTES> (&v)[4]) const {
    const char *base = ring + u * SLOT_BYTES + TILE_BYTES;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint4 x = chunk(base, 2 * it.c + (w & 1) + 8 * (w >> 1), it.g);
      v[w].w[0] = x.x, v[w].w[1] = x.y, v[w].w[2] = x.z, v[w].w[3] = x.w;
    }
  }
  __device__ __forceinline__ void after_pv(Item &, int, int) {}
  // every copy issued was waited for: once every lane is past its last wait, lane 0 invalidates the warp's mbarriers
  // (PTX asks it before their memory serves anything else)
  __device__ __forceinline__ void finish() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
    __syncwarp();
    if ((threadIdx.x & 31) == 0)
      for (int u = 0; u < N; ++u) km_bulk::bar_inval(bar + u);
#endif
  }
};

// Shared memory the CTA merge takes: each warp's partial (rows x D outputs and rows log2-sum-exps).
__host__ __device__ constexpr size_t cta_merge_smem(int rows, int d) {
  return (size_t)WARPS * rows * (d + 1) * sizeof(float);
}

// The merges' arithmetic is kernels/attn_merge.h's (km_attn_merge_block: a block of partials at a time). The last
// CTA takes each round of U loaded partials as one block; until 5206b20 it took them one at a time, chaining a
// maximum, two exponentials and the rescale through every partial (about 60 dependent cycles each: ~1 us of the
// last CTA's 32 partials at b1 x 32K).

// The CTA counts itself in for (sequence `seq`, KV head `kvh`) once its partials are written: true for the last of
// the step's `arrivals` CTAs there, which sets the count back to zero (no other CTA of the step touches it again)
// and may then read the others' partials. `counted` (the stamped kernel's KM_ATTN_STAMP_COUNTED slot of the warp,
// else nullptr): the SM clock once the count is in, from each warp's lane 0.
__device__ __forceinline__ bool last_to_arrive(const Params &p, int seq, int kvh, int arrivals,
                                               unsigned long long *counted) {
  __shared__ int s_last;
  __syncthreads();  // every warp's partials are written before thread 0's count (a release cumulative over them)
  if (threadIdx.x == 0) s_last = km_count_in(p.arrive + (size_t)seq * p.kv_heads + kvh, (unsigned)arrivals);
  __syncthreads();  // the last CTA's threads read the others' partials after thread 0's acquire
  if (counted && (threadIdx.x & 31) == 0) *counted = clock64();
  return s_last;
}

// Output dims e .. e + 3 of row r of KV head kvh of sequence seq: the merge of the n partials in workspace slots
// ((first + j) x kv_heads + kvh) x rows + r, U of them in flight per thread.
template <int D, int U>
__device__ __forceinline__ void merge_to_output(const Params &p, int seq, int kvh, int r, int e, int first, int n) {
  const int rows = p.rows;
  km_attn_merge mg = km_attn_merge_start();
  for (int j0 = 0; j0 < n; j0 += U) {
    float lse[U], o[U][4];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = j0 + u;
      const size_t slot = ((size_t)(first + (j < n ? j : 0)) * p.kv_heads + kvh) * rows + r;
      lse[u] = j < n ? __ldcg(p.part_lse + slot) : -INFINITY;
      const float4 x = __ldcg(reinterpret_cast<const float4 *>(p.part_o + slot * D + e));
      o[u][0] = x.x, o[u][1] = x.y, o[u][2] = x.z, o[u][3] = x.w;
    }
    km_attn_merge_block(&mg, lse, &o[0][0], U, 4);
  }
  const float inv = km_attn_merge_scale(&mg);
  const int qi = r / p.group, head = kvh * p.group + r % p.group;
  uint16_t *orow = p.out + ((size_t)(seq * p.q_len + qi) * p.heads + head) * D + e;
  *reinterpret_cast<uint2 *>(orow) = make_uint2(pack_f32x2(mg.acc[0] * inv, mg.acc[1] * inv, false),
                                                pack_f32x2(mg.acc[2] * inv, mg.acc[3] * inv, false));
}

// The CTA's four warps' partials in shared memory (`sm`: WARPS x rows x D outputs, then WARPS x rows lses) merged at
// row r, dims e .. e + 3: one partial at a time (four: merging them as one block raised the d64 bf16 kernel from 128
// to 161 registers).
template <int D>
__device__ __forceinline__ km_attn_merge merge_cta_warps(const float *sm, int rows, int r, int e) {
  const float *slse = sm + (size_t)WARPS * rows * D;
  km_attn_merge mg = km_attn_merge_start();
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const float4 x = *reinterpret_cast<const float4 *>(sm + (size_t)(w * rows + r) * D + e);
    const float lse1 = slse[w * rows + r], o1[4] = {x.x, x.y, x.z, x.w};
    km_attn_merge_block(&mg, &lse1, o1, 1, 4);
  }
  return mg;
}

// CTA merge (the plan's cta_merge 1): the CTA's warps have left the partials of chunks WARPS q .. WARPS q + 3
// of one (sequence, KV head) in shared memory (`sm`: WARPS x rows x D outputs, then WARPS x rows lses).
// They become the CTA's one partial (workspace slot blockIdx.x), and the CTA counts itself in; the last CTA
// of the (sequence, KV head) merges the sequence's partials into the bf16 output and sets the count back to
// zero for the next step. No second launch, and a quarter of the partials a separate pass would read.
// Returns whether this CTA was its (sequence, KV head)'s last, the one that wrote the output. U: the CTA
// partials each of the last CTA's threads has in flight (b1 x 32K: 32 per (sequence, KV head), so 16 take two
// rounds of L2 loads and 32 one).
template <int D, int U = 16>
__device__ __forceinline__ bool cta_merge(const Params &p, const float *sm, int seq, int kvh, unsigned long long *counted) {
  constexpr int D4 = D / 4;
  const int rows = p.rows, n4 = rows * D4;
  __syncthreads();
  float *po = p.part_o + (size_t)blockIdx.x * rows * D, *pl = p.part_lse + (size_t)blockIdx.x * rows;
  for (int i = threadIdx.x; i < n4; i += WARPS * 32) {
    const int r = i / D4, e = i % D4 * 4;
    km_attn_merge mg = merge_cta_warps<D>(sm, rows, r, e);
    const float inv = km_attn_merge_scale(&mg);
    __stcg(reinterpret_cast<float4 *>(po + (size_t)r * D + e),
           make_float4(mg.acc[0] * inv, mg.acc[1] * inv, mg.acc[2] * inv, mg.acc[3] * inv));
    if (e == 0) __stcg(pl + r, km_attn_merge_lse(&mg));
  }
  const int quads = __ldg(p.seq_chunks + seq) / WARPS, q0 = __ldg(p.seq_chunk0 + seq) / WARPS;
  if (!last_to_arrive(p, seq, kvh, quads, counted)) return false;
  for (int i = threadIdx.x; i < n4; i += WARPS * 32) merge_to_output<D, U>(p, seq, kvh, i / D4, i % D4 * 4, q0, quads);
  return true;
}

// A flag in global memory set (1) after the CTA's earlier stores: thread 0, after the CTA's barrier; the release is
// cumulative over the stores the barrier ordered before it.
__device__ __forceinline__ void flag_release(int *flag) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flag), "r"(1) : "memory");
}
__device__ __forceinline__ int flag_relaxed(const int *flag) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// Merges into mg, as each is flagged, the CTA partials of quads first .. first + n - 1 of KV head kvh (slot and flag:
// the quad's CTA, quad x kv_heads + kvh): row r, dims e .. e + 3. Each pass reads the flags of the partials still
// pending (32 at a time, all loads in flight), and after one acquire fence merges those found set, U in flight.
template <int D, int U>
__device__ __forceinline__ void merge_flagged(const Params &p, km_attn_merge &mg, int kvh, int r, int e, int first,
                                              int n) {
  const int rows = p.rows;
  for (int g0 = 0; g0 < n; g0 += 32) {
    uint32_t pending = n - g0 >= 32 ? ~0u : (1u << (n - g0)) - 1u;
    while (pending) {
      uint32_t ready = 0;
#pragma unroll
      for (int k = 0; k < 32; ++k)
        if ((pending >> k) & 1u)
          ready |= (uint32_t)(flag_relaxed(p.arrive + (size_t)(first + g0 + k) * p.kv_heads + kvh) != 0) << k;
      if (!ready) continue;
      pending &= ~ready;
      asm volatile("fence.acq_rel.gpu;" ::: "memory");  // the flags read above acquire their CTAs' partials
      while (ready) {
        float lse[U], o[U][4];
        int k0 = 0;  // u = 0 always takes a flagged partial: the padding reads it again (its weight is 0), never an
                     // unflagged slot, which may be unwritten or being written
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int k = ready ? __ffs(ready) - 1 : -1;
          ready &= ready - 1u;
          if (u == 0) k0 = k;
          const size_t slot = ((size_t)(first + g0 + (k < 0 ? k0 : k)) * p.kv_heads + kvh) * rows + r;
          lse[u] = k >= 0 ? __ldcg(p.part_lse + slot) : -INFINITY;
          const float4 x = __ldcg(reinterpret_cast<const float4 *>(p.part_o + slot * D + e));
          o[u][0] = x.x, o[u][1] = x.y, o[u][2] = x.z, o[u][3] = x.w;
        }
        km_attn_merge_block(&mg, lse, &o[0][0], U, 4);
      }
    }
  }
}

// CTA merge by flags (decode_kernel's MP, plans with cta_merge 1 and poll: every CTA of the grid is resident at
// once). As cta_merge, the CTA's four warps' partials in shared memory become one CTA partial; but the CTA of the
// (sequence, KV head)'s last quad does not write its own: it keeps it in registers and merges the others' into it as
// their flags appear (merge_flagged), while they are still computing, then writes the output and clears the
// flags for the next step. Every other CTA writes its partial and sets its flag. So what follows the last partial
// is one flag, one fence and that partial's loads, instead of a count and every partial's loads. The merging CTA
// waits on CTAs of the same grid: the plan takes this only where the grid fits on the device at once.
template <int D, int U = 16>
__device__ __forceinline__ bool cta_merge_poll(const Params &p, const float *sm, int seq, int kvh,
                                               unsigned long long *counted) {
  constexpr int D4 = D / 4;
  const int rows = p.rows, n4 = rows * D4;
  __syncthreads();
  const int quads = __ldg(p.seq_chunks + seq) / WARPS, q0 = __ldg(p.seq_chunk0 + seq) / WARPS;
  const bool merger = (int)(blockIdx.x / p.kv_heads) == q0 + quads - 1;
  float *po = p.part_o + (size_t)blockIdx.x * rows * D, *pl = p.part_lse + (size_t)blockIdx.x * rows;
  if (counted && (threadIdx.x & 31) == 0) *counted = clock64();
  for (int i = threadIdx.x; i < n4; i += WARPS * 32) {
    const int r = i / D4, e = i % D4 * 4;
    km_attn_merge mg = merge_cta_warps<D>(sm, rows, r, e);
    if (!merger) {
      const float inv = km_attn_merge_scale(&mg);
      __stcg(reinterpret_cast<float4 *>(po + (size_t)r * D + e),
             make_float4(mg.acc[0] * inv, mg.acc[1] * inv, mg.acc[2] * inv, mg.acc[3] * inv));
      if (e == 0) __stcg(pl + r, km_attn_merge_lse(&mg));
      continue;
    }
    merge_flagged<D, U>(p, mg, kvh, r, e, q0, quads - 1);
    const float inv = km_attn_merge_scale(&mg);
    const int qi = r / p.group, head = kvh * p.group + r % p.group;
    uint16_t *orow = p.out + ((size_t)(seq * p.q_len + qi) * p.heads + head) * D + e;
    *reinterpret_cast<uint2 *>(orow) = make_uint2(pack_f32x2(mg.acc[0] * inv, mg.acc[1] * inv, false),
                                                  pack_f32x2(mg.acc[2] * inv, mg.acc[3] * inv, false));
  }
  __syncthreads();  // the partial's stores before the flag; the merger's flag reads before the flags are cleared
  if (!merger) {
    if (threadIdx.x == 0) flag_release(p.arrive + blockIdx.x);
    return false;
  }
  for (int j = threadIdx.x; j < quads - 1; j += WARPS * 32) p.arrive[(size_t)(q0 + j) * p.kv_heads + kvh] = 0;
  return true;
}

// Head merge (the plan's cta_merge 2): the CTA's warps are KV heads kvh0 .. kvh0 + 3 of one chunk of sequence `seq`
// and have written their partials to the workspace (slot chunk x kv_heads + kvh, as for the combine pass). The
// CTA counts itself in for (sequence, kvh0); the last CTA of the sequence's chunks merges every chunk's partial
// of its four KV heads into the bf16 output and sets the count back to zero. U partials in flight per thread.
// Returns whether this CTA was the last, the one that wrote the output.
template <int D, int U = 16>
__device__ __forceinline__ bool heads_merge(const Params &p, int seq, int kvh0, unsigned long long *counted) {
  constexpr int D4 = D / 4;
  const int rows = p.rows, n4 = WARPS * rows * D4;
  const int chunks = __ldg(p.seq_chunks + seq), c0 = __ldg(p.seq_chunk0 + seq);
  if (!last_to_arrive(p, seq, kvh0, chunks, counted)) return false;
  for (int i = threadIdx.x; i < n4; i += WARPS * 32)
    merge_to_output<D, U>(p, seq, kvh0 + i / (rows * D4), i / D4 % rows, i % D4 * 4, c0, chunks);
  return true;
}

// Work stealing inside a CTA (decode_kernel's WS > 0, plans with cta_merge 1, whose CTA is four chunks of one
// (sequence, KV head)): the last WS tiles of each warp's chunk, its tail, may be computed by any warp of the CTA,
// each tile claimed once through a flag in shared memory. The owner claims its tail front to back, each tile before
// the pipeline issues its loads, and its chunk ends at the first tile it finds taken; a warp done with its own chunk
// walks the other warps' tails back to front, until a tile it finds taken. So a tail is split into the owner's
// prefix and one thief's suffix (a second thief stops at the first thief's first tile), every tile is computed
// exactly once, and the CTA's four partials merge as before (the online softmax is order-free; a warp left without a
// tile has an empty partial, which the merge skips). Warps that run slower than their CTA's others leave tiles for
// the faster ones instead of ending the CTA late.
template <int WS>
struct Steal {
  static_assert(WS >= 0 && WS <= 32, "a warp's tail: at most 32 tiles (one flag per lane)");
  int *flag = nullptr;  // this CTA's WARPS x WS flags, 0 while the tile is free; nullptr: no stealing (the plan)
  int warp = 0, lane = 0, end = 0;  // this warp, its lane, and its chunk's end (its tail: end - WS .. end - 1)

  __device__ __forceinline__ void init(int *f, int w, int l, int te) {
    flag = f, warp = w, lane = l, end = te;
    if (lane < WS) flag[warp * WS + lane] = 0;
    __syncthreads();  // every flag is free before any warp claims
  }
  // Flag k of warp w's tail, for the whole warp: true when this warp took it.
  __device__ __forceinline__ bool claim(int w, int k, int l) const {
    int got = 0;
    if (l == 0) got = atomicExch(flag + w * WS + k, 1) == 0;
    return __shfl_sync(0xffffffffu, got, 0);
  }
  // The owner's tile i, before its loads: a tile of the tail that another warp has taken ends the chunk there.
  __device__ __forceinline__ void own(Item &it, int i) const {
    if (flag && i < it.te && i >= end - WS && !claim(warp, i - (end - WS), lane)) it.te = i;
  }
};

// The start of a programmatic dependent launch (PL tiles): this CTA lets the next grid in the stream start, then
// requests into L2 what does not depend on the grid before it, the first N tiles of the warp's chunk (K and V
// rows of its KV head: lane l row l % 16 of K (l < 16) or V, row bytes RB), and waits for that grid. Its block-table
// entries and the chunk's metadata are read here too; Q, the selection (which the step before computes: a sparse
// step requests nothing) and every write come after the wait. A tile that holds a position from q_first on (a
// token this step adds to the cache, which the grid before may be writing) is not requested.
template <int RB, int N>
__device__ __forceinline__ void pdl_start(const Params &p, int seq, int kvh, int tb, int te, int q_first, int lane) {
  grid_launch_next();
  if (!p.sel) {
    const int32_t *table = p.table + (size_t)seq * p.mbps;
    const char *base = (lane < 16 ? p.k : p.v) + (size_t)kvh * RB;
    const size_t stride = (size_t)p.kv_heads * RB;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int tile = tb + j;
      if (tile >= te || (tile + 1) * KM_ATTN_TILE > q_first) break;
      const int tok = tile * KM_ATTN_TILE + (lane & 15);
      const long long row = (long long)__ldg(table + tok / p.block_size) * p.block_size + tok % p.block_size;
      l2_prefetch_row<RB>(base + (size_t)row * stride);
    }
  }
  grid_wait();
}

// TT: tiles per softmax step (1; 2 for the paired-tile rows: one max/sum reduction and one O rescale per
// 32 tokens).
// OT: 1 accumulates O^T = V^T P^T (A = V^T, m16 = 16 output dims; B = P^T, n8 = the <= 8 query rows), for
// warps whose rows fit one half tile (MT_ 0): half the P V products and half the accumulator registers of
// O = P V, whose m16 rows 8..15 are padding there. Thread (g, c) then holds dims [g D/8, (g+1) D/8) of rows
// 2c and 2c+1: o[0][j][s + 2e] is dim g D/8 + 2j + s of row 2c + e.
// CTAS: CTAs per SM the kernel's registers are capped for (__launch_bounds__'s minimum blocks).
// UW: uniform 3-bit only, 1 unpacks codes two at a time from 16-bit windows (u3_unpack.h): K's pairs are
// codes (i, i + 16) of a group, taken in KM_U3_K_PAIR's order, and the query's fragment takes its dims in
// that order; 2 takes V's pairs as 1 + code / 8, dequantized by one fma each instead of a subtraction and an fma
// (K's stay as 1: the rounding of zero - 8 scale is one error for all 32 dims of a group, so it shifts the token's
// logit by that error times the group's sum of q; measured on an H100 at fc24c22 with K so too, 4 to 120 outputs
// of the realistic-data rows fell outside the rows' tolerance, reports/attn-notes.md). TurboQuant (with SL 1): 1 takes
// its codes from the same windows and looks each pair's levels up by three byte permutes; 3 looks up the two pairs
// a K k-step or a V^T fragment takes together by four (km_u3_tq_levels2).
// SL: fp8 and TurboQuant, register pipeline only, 1 loads a tile's per-token scales (norms) once, one per
// lane, and shuffles them to the threads that use them (RegSource); the same values multiply the same products.
// ST: 1 records when each warp reaches the step's points in p.stamps (stamp_after; a debug instantiation of
// the bf16 kernel, kernel_bf16_extra; every other instantiation is ST 0 and has none of it).
// MW: the CTA merge's partials in flight per thread in the last CTA (cta_merge's U; 32 only in
// kernel_bf16_extra's instantiations).
// PD: register pipeline only, tiles prefetched into L2 beyond those in flight (RegSource::l2_tile; 0: none).
// LZ: 1 skips the rescale of O in a step where no row's running maximum moved (the same values).
// TS: the TMA pipeline only, 1 copies per-token scales into the tile's slot, 2 has every lane arrive on the slot's
// mbarrier (TmaSource's SC).
// WS: 0, or the tiles at the end of each warp's chunk that the other warps of its CTA may take (the shape's steal;
// plans with cta_merge 1 only, where a CTA's four warps are four chunks of one (sequence, KV head)): see Steal.
// PL: 0, or a programmatic dependent launch (the shape's pdl; register pipeline, not stamped, no stealing) that
// requests the first PL tiles of the warp's chunk into L2 before it waits for the grid before it: see pdl_start.
// MP: 1 merges a cta_merge 1 plan's CTA partials by flags (the plan's poll: the grid is one wave), see
// cta_merge_poll; 0 by the count.
// QS: 1 keeps Q's fragments in shared memory (the shape's q_smem: head_dim 256, O^T, register pipeline), each k-step's
// two words read back as S needs them, instead of in registers.
template <int D, int KV, int MT_, int PIPE, int PFO = 0, int TT = 1, int OT = 0, int CTAS = KM_ATTN_MIN_BLOCKS,
          int UW = 0, int SL = 0, int ST = 0, int MW = 16, int PD = 0, int LZ = 0, int TS = 0, int WS = 0, int PL = 0,
          int MP = 0, int QS = 0>
__global__ void __launch_bounds__(WARPS * 32, CTAS) decode_kernel(const Params p, const __grid_constant__ TmaMaps maps) {
  using T = Tile<D, KV, MT_, PFO>;
  constexpr int MT = T::M;
  static_assert(!OT || (T::HALVES == 1 && PIPE != KM_ATTN_PIPE_SMEM_RING), "O^T: <= 8 rows, registers or TMA");
  static_assert(!UW || (T::U3 && UW <= 2) || (T::TQ && (UW == 1 || UW == 3)),
                "16-bit window unpacking: uniform 3-bit (1, 2), TurboQuant (1, 3)");
  static_assert(!SL || ((T::FP8 || T::TQ) && PIPE == KM_ATTN_PIPE_REGISTERS),
                "one scale load per lane: fp8 or TurboQuant, register pipeline");
  static_assert(!PD || PIPE == KM_ATTN_PIPE_REGISTERS, "L2 prefetch: register pipeline");
  static_assert(!TS || PIPE == KM_ATTN_PIPE_TMA, "scales in the slot: the TMA pipeline");
  constexpr int OJ = OT ? T::NT / 2 : T::NT;  // accumulator tiles: m16 dim tiles of O^T, or n8 dim tiles of O
  extern __shared__ __align__(16) char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int item = blockIdx.x * WARPS + warp;
  if (item >= p.items) return;  // never with cta_merge (items = WARPS x CTAs)
  [[maybe_unused]] unsigned long long *stamp = nullptr;
  if constexpr (ST) {
    stamp = p.stamps + (size_t)item * KM_ATTN_STAMPS;
    const unsigned long long t = global_ns(), k = clock64();
    if (lane == 0) stamp[KM_ATTN_STAMP_START_NS] = t, stamp[KM_ATTN_STAMP_START] = k;
  }
  const int g = lane >> 2, c = lane & 3;
  // item = chunk x kv_heads + kvh, or with cta_merge CTA = quad x kv_heads + kvh and chunk = WARPS x quad + warp
  const int chunk = p.cta_merge == 1 ? WARPS * (int)(blockIdx.x / p.kv_heads) + warp : item / p.kv_heads;
  const int kvh = p.cta_merge == 1 ? (int)(blockIdx.x % p.kv_heads) : item % p.kv_heads;
  const int seq = __ldg(p.chunk_seq + chunk);
  const int tb = __ldg(p.chunk_begin + chunk), te = __ldg(p.chunk_end + chunk);
  const int ctx = __ldg(p.ctx_lens + seq);
  const int q_first = ctx - p.q_len;  // position of query token 0
  if constexpr (ST) stamp_after(stamp, KM_ATTN_STAMP_METADATA, (uint32_t)(ctx ^ tb ^ te), lane);
  if constexpr (PL > 0) {
    static_assert(PIPE == KM_ATTN_PIPE_REGISTERS && ST == 0 && WS == 0,
                  "programmatic launch: register pipeline, not stamped, no stealing");
    pdl_start<T::RB, PL>(p, seq, kvh, tb, te, q_first, lane);
  }

  // ---- Q fragments (rows r = g + 8h + 16mt; row r is query token r / group, head kvh * group + r % group)
  uint32_t qa[MT][T::KSTEPS][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int s = 0; s < T::KSTEPS; ++s) qa[mt][s][1] = qa[mt][s][3] = 0u;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < T::HALVES; ++h) {
      const int r = g + 8 * h + 16 * mt;
      const bool real = r < p.rows;
      const int qi = real ? r / p.group : 0, head = kvh * p.group + (real ? r % p.group : 0);
      const uint16_t *qrow = p.q + ((size_t)(seq * p.q_len + qi) * p.heads + head) * D + c * (D / 4);
      if constexpr (T::TQ) {
        // q' = H (S q) once per row, so that q.k = (norm_k / d) q'.level(codes) (H symmetric, H H = d I);
        // every lane of the quad takes part in the shuffles, padding rows included (they stay 0)
        float v[32];
#pragma unroll
        for (int i = 0; i < 32; i += 4) {
          uint2 x = make_uint2(0, 0);
          if (real) x = __ldg(reinterpret_cast<const uint2 *>(qrow + i));
          v[i] = bf16_to_f32(x.x & 0xFFFF), v[i + 1] = bf16_to_f32(x.x >> 16);
          v[i + 2] = bf16_to_f32(x.y & 0xFFFF), v[i + 3] = bf16_to_f32(x.y >> 16);
        }
        tq_flip(v, p.sign[c]);
        quad_fwht(v, c);
#pragma unroll
        for (int s = 0; s < T::KSTEPS; ++s) {
          if constexpr (UW) {  // K's codes from 16-bit windows: pair n is dims (i, i + 16), i = km_u3_k_pair(n)
            const int i0 = km_u3_k_pair(2 * s), i1 = km_u3_k_pair(2 * s + 1);
            qa[mt][s][h] = pack_f32x2(v[i0], v[i0 + 16], true);      // k 2c, 2c+1
            qa[mt][s][2 + h] = pack_f32x2(v[i1], v[i1 + 16], true);  // k 2c+8, 2c+9
          } else {
            qa[mt][s][h] = pack_f32x2(v[4 * s], v[4 * s + 1], true);          // k 2c, 2c+1
            qa[mt][s][2 + h] = pack_f32x2(v[4 * s + 2], v[4 * s + 3], true);  // k 2c+8, 2c+9
          }
        }
      } else if constexpr (UW) {
        // the thread's 32 dims (its K group), paired as K's codes are: k-step s takes pairs 2s and 2s + 1,
        // pair n being dims (i, i + 16) with i = km_u3_k_pair(n)
        float v[32];
#pragma unroll
        for (int i = 0; i < 32; i += 8) {
          uint4 x = make_uint4(0, 0, 0, 0);
          if (real) x = __ldg(reinterpret_cast<const uint4 *>(qrow + i));
          const uint32_t xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) v[i + 2 * e] = bf16_to_f32(xs[e] & 0xFFFF), v[i + 2 * e + 1] = bf16_to_f32(xs[e] >> 16);
        }
#pragma unroll
        for (int s = 0; s < T::KSTEPS; ++s) {
          const int i0 = km_u3_k_pair(2 * s), i1 = km_u3_k_pair(2 * s + 1);
          qa[mt][s][h] = pack_f32x2(v[i0], v[i0 + 16], true);      // k 2c, 2c+1
          qa[mt][s][2 + h] = pack_f32x2(v[i1], v[i1 + 16], true);  // k 2c+8, 2c+9
        }
      } else {
#pragma unroll
        for (int s = 0; s < T::KSTEPS; ++s) {
          uint2 x = make_uint2(0, 0);
          if (real) x = __ldg(reinterpret_cast<const uint2 *>(qrow + 4 * s));
          if constexpr (T::F16) {
            x.x = pack_f32x2(bf16_to_f32(x.x & 0xFFFF), bf16_to_f32(x.x >> 16), true);
            x.y = pack_f32x2(bf16_to_f32(x.y & 0xFFFF), bf16_to_f32(x.y >> 16), true);
          }
          qa[mt][s][h] = x.x;      // k 2c, 2c+1
          qa[mt][s][2 + h] = x.y;  // k 2c+8, 2c+9
        }
      }
    }
  if constexpr (ST) stamp_after(stamp, KM_ATTN_STAMP_Q, qa[0][0][0] ^ qa[MT - 1][T::KSTEPS - 1][T::HALVES - 1], lane);
  // QS: the warp's Q fragments in shared memory, k-step s of lane l at s_q[warp][s][l] (the two words of row g; rows
  // g + 8 are zero with <= 8 rows): 8-byte reads, conflict-free
  static_assert(!QS || (D == 256 && OT && MT == 1 && T::HALVES == 1 && PIPE == KM_ATTN_PIPE_REGISTERS && !T::TQ && !UW),
                "Q in shared memory: head_dim 256, O^T, register pipeline");
  __shared__ uint2 s_q[QS ? WARPS : 1][QS ? T::KSTEPS : 1][32];
  if constexpr (QS) {
#pragma unroll
    for (int s = 0; s < T::KSTEPS; ++s) s_q[warp][s][lane] = make_uint2(qa[0][s][0], qa[0][s][2]);
    __syncwarp();
  }
  int qpos[MT][2];  // position of each of the thread's rows' query token
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = g + 8 * h + 16 * mt;
      qpos[mt][h] = q_first + (r < p.rows ? r / p.group : p.q_len - 1);
    }

  float o[MT][OJ][4];
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int j = 0; j < OJ; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }
  float kscl = 1.f, vscl = 1.f;
  if (!p.per_token && p.k_scale) {
    kscl = __ldg(p.k_scale);
    vscl = __ldg(p.v_scale);
  }
  if (p.per_token || T::TQ) vscl = 1.f / T::VSF;
  const float s_log2 = p.scale_log2 * kscl;

  Item it{&p, p.table + (size_t)seq * p.mbps,
          p.sel ? p.sel + ((size_t)seq * p.kv_heads + kvh) * p.sparse_pages : nullptr,
          (size_t)p.kv_heads * T::RB, lane, g, c, kvh, tb, te, 0, 0, 0, 0};
  // bf16 at head_dim 256 with O^T accumulators: the register pipeline in half-slices (RegHalfSource)
  constexpr bool HALF = PIPE == KM_ATTN_PIPE_REGISTERS && D == 256 && KV == KM_ATTN_BF16 && OT;
  static_assert(!HALF || (PFO == 0 && TT == 1 && SL == 0 && PD == 0 && WS == 0),
                "tiles in halves: one tile in flight, no pairs, L2 prefetch or stealing");
  using Source = typename std::conditional<
      PIPE == KM_ATTN_PIPE_SMEM_RING, RingSource<T>,
      typename std::conditional<
          PIPE == KM_ATTN_PIPE_TMA, TmaSource<T, PFO ? PFO : KM_ATTN_TMA_SLOTS, TS>,
          typename std::conditional<HALF, RegHalfSource<T>, RegSource<T, SL, PD>>::type>::type>::type;
  constexpr int P = HALF ? 2 : 1;  // each tile in P halves of its tokens (RegHalfSource), or whole
  Source src;
  if constexpr (PIPE == KM_ATTN_PIPE_SMEM_RING) {
    src.ring = smem + (threadIdx.x >> 5) * T::NS * T::SLOT_BYTES;
    src.ring_s = smem_addr(src.ring);
  } else if constexpr (PIPE == KM_ATTN_PIPE_TMA) {
    src.place(smem, warp);
    src.kmap = &maps.k;
    src.vmap = &maps.v;
  }
  constexpr int N = Source::N;
  static_assert(TT == 1 || (PIPE == KM_ATTN_PIPE_REGISTERS && N % 2 == 0), "pairs of tiles: registers, even depth");
  // One step over CNT (1 or 2) consecutive tiles i.. in slots u..: their scores, one online-softmax update
  // over all their tokens (one max and sum reduction, one rescale of O), then P V tile by tile.
  auto step = [&](auto cnt_c, const int u, const int i) {
    constexpr int CNT = decltype(cnt_c)::value;
    int tok0[CNT];
#pragma unroll
    for (int k = 0; k < CNT; ++k) {
      src.arrive(it, i + k, u + k);
      tok0[k] = src.tile_of(u + k) * KM_ATTN_TILE;
    }
    // ---- S = Q K^T for the tiles' tokens (n8 tile tt: tokens 8 (tt % 2) + g of tile tt / 2)
    float s[MT][2 * CNT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int tt = 0; tt < 2 * CNT; ++tt) s[mt][tt][0] = s[mt][tt][1] = s[mt][tt][2] = s[mt][tt][3] = 0.f;
#pragma unroll
    for (int k = 0; k < CNT; ++k)
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        Row<T::KBYTES> kr;
        src.k_row(it, u + k, t, kr);
        if constexpr (UW) {
          // codes from 16-bit windows: uniform 3-bit's pairs dequantized by the record's scale and zero,
          // TurboQuant's (the same windows) looked up as levels by one selector each
          uint32_t z[3];
#pragma unroll
          for (int w = 0; w < 3; ++w) z[w] = km_u3_k_window(kr.w, w);
          [[maybe_unused]] uint32_t sc = 0u, zr = 0u;  // uniform 3-bit's scale and zero
          if constexpr (T::U3) sc = __byte_perm(kr.w[3], 0, 0x1010), zr = __byte_perm(kr.w[3], 0, 0x3232);
          auto pair = [&](int n) {
            if constexpr (T::TQ)
              return km_u3_tq_levels16(km_u3_k_pair_or(z, kr.w, n, 0u));
            else
              return u3_finish(km_u3_k_pair_bits(z, kr.w, n), sc, zr);
          };
#pragma unroll
          for (int ks = 0; ks < T::KSTEPS; ++ks) {
            uint32_t b0, b1;
            if constexpr (T::TQ && UW == 3)  // a k-step's two pairs looked up from one selector
              km_u3_tq_levels2(km_u3_k_pair_or(z, kr.w, 2 * ks, 0u), km_u3_k_pair_or(z, kr.w, 2 * ks + 1, 0u), &b0, &b1);
            else
              b0 = pair(2 * ks), b1 = pair(2 * ks + 1);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) mma<T::F16>(s[mt][2 * k + t], qa[mt][ks], b0, b1);
          }
        } else {
#pragma unroll
          for (int ks = 0; ks < T::KSTEPS; ++ks) {
            uint32_t b0, b1;
            k_frag<D, KV>(kr.w, ks, b0, b1);
            if constexpr (QS) {
              const uint2 q = s_q[warp][ks][lane];
              const uint32_t a[4] = {q.x, 0u, q.y, 0u};
              mma<T::F16>(s[0][2 * k + t], a, b0, b1);
            } else {
#pragma unroll
              for (int mt = 0; mt < MT; ++mt) mma<T::F16>(s[mt][2 * k + t], qa[mt][ks], b0, b1);
            }
          }
        }
        if constexpr (P > 1) src.after_k_part(it, i + k, t);  // the tile's V rows of tokens 8t..8t + 7
      }
    // per-token scales of this thread's tokens (2c + e + 8 (tt % 2) of tile tt / 2)
    float ksc[2 * CNT][2], vsc[2 * CNT][2];
#pragma unroll
    for (int k = 0; k < CNT; ++k) {
      float kk[2][2] = {{1.f, 1.f}, {1.f, 1.f}}, vv[2][2] = {{1.f, 1.f}, {1.f, 1.f}};
      if constexpr (T::FP8 || T::TQ) {
        if (T::TQ || p.per_token) src.scales(it, u + k, kk, vv);
      }
      if constexpr (T::TQ) {
        // the pool's rows past the context may hold any norm: their P is 0, and so must be P x norm
        if (tok0[k] + KM_ATTN_TILE > ctx) {
#pragma unroll
          for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (tok0[k] + 8 * t + 2 * c + e >= ctx) vv[t][e] = 0.f;
        }
      }
#pragma unroll
      for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          ksc[2 * k + t][e] = kk[t][e];
          vsc[2 * k + t][e] = vv[t][e];
        }
    }
#pragma unroll
    for (int k = 0; k < CNT; ++k) src.after_s(it, i + k, u + k);
    // ---- mask (only tiles that reach past a query's position or before a window), online softmax
    bool edge[CNT];
#pragma unroll
    for (int k = 0; k < CNT; ++k)
      edge[k] = tok0[k] + KM_ATTN_TILE - 1 > q_first || (p.window > 0 && tok0[k] <= ctx - 1 - p.window);
    uint32_t pa[CNT][MT][4];
    if constexpr (T::HALVES == 1) {
#pragma unroll
      for (int k = 0; k < CNT; ++k)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) pa[k][mt][1] = pa[k][mt][3] = 0u;
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < T::HALVES; ++h) {
        float x[2 * CNT][2];
        float mx = -INFINITY;
#pragma unroll
        for (int tt = 0; tt < 2 * CNT; ++tt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float v = s[mt][tt][2 * h + e] * s_log2 * ksc[tt][e];
            if (edge[tt / 2]) {
              const int pos = tok0[tt / 2] + 8 * (tt % 2) + 2 * c + e;
              if (pos > qpos[mt][h] || (p.window > 0 && pos <= qpos[mt][h] - p.window)) v = -INFINITY;
            }
            x[tt][e] = v;
            mx = fmaxf(mx, v);
          }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[mt][h], mx);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        const float corr = exp2f(m[mt][h] - m_use);
        m[mt][h] = m_new;
        float pr[2 * CNT][2], sum = 0.f;
#pragma unroll
        for (int tt = 0; tt < 2 * CNT; ++tt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            pr[tt][e] = exp2f(x[tt][e] - m_use);
            sum += pr[tt][e];
          }
        l[mt][h] = l[mt][h] * corr + sum;
        // LZ: O is rescaled only when some row of the warp has a new maximum (corr is exactly 1.0 otherwise, and
        // x 1.0 changes no value): past a chunk's first tiles most tiles skip the shuffles and multiplies
        if (LZ && __all_sync(0xffffffffu, corr == 1.f)) {
        } else if constexpr (OT) {
          // this thread's O^T columns are rows 2c and 2c + 1: their factors come from lanes 8c and 8c + 4
          const float c0 = __shfl_sync(0xffffffffu, corr, 8 * c), c1 = __shfl_sync(0xffffffffu, corr, 8 * c + 4);
#pragma unroll
          for (int j = 0; j < OJ; ++j) {
            o[mt][j][0] *= c0;
            o[mt][j][1] *= c1;
            o[mt][j][2] *= c0;
            o[mt][j][3] *= c1;
          }
        } else {
#pragma unroll
          for (int j = 0; j < T::NT; ++j) {
            o[mt][j][2 * h] *= corr;
            o[mt][j][2 * h + 1] *= corr;
          }
        }
#pragma unroll
        for (int k = 0; k < CNT; ++k) {
          const int t0 = 2 * k, t1 = 2 * k + 1;
          pa[k][mt][h] = pack_f32x2(pr[t0][0] * vsc[t0][0], pr[t0][1] * vsc[t0][1], T::F16);      // k 2c, 2c+1
          pa[k][mt][2 + h] = pack_f32x2(pr[t1][0] * vsc[t1][0], pr[t1][1] * vsc[t1][1], T::F16);  // k 2c+8, 2c+9
        }
      }
    // ---- O += P V tile by tile; V rows past the context are zeroed (the pool may hold anything there)
#pragma unroll
    for (int k = 0; k < CNT; ++k) {
      if constexpr (P > 1) {
        // RegHalfSource: tokens 8t..8t + 7 at a time (rows 2c + 8t, 2c + 8t + 1 of the thread's V slice), as
        // m16n8k8 products whose A is the first half of the m16n8k16 one below and whose B is P^T's k half t
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          Row<T::VBYTES> vr[2];
          src.v_part(t, vr);
          if (tok0[k] + KM_ATTN_TILE > ctx) {
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (tok0[k] + 2 * c + e + 8 * t >= ctx) zero_row(vr[e]);
          }
          const VPair<KV, T::VBYTES, UW> vt(vr[0], vr[1], g & 1);
#pragma unroll
          for (int j = 0; j < OJ; ++j) {
            uint32_t a[2];
            v_frags(vt, j, a[0], a[1]);
            mma_bf16_k8(o[0][j], a, pa[k][0][2 * t]);
          }
          src.after_v_part(it, i + k, t);
        }
      } else {
        Row<T::VBYTES> vr[4];
        src.v_rows(it, u + k, vr);
        if (tok0[k] + KM_ATTN_TILE > ctx) {
#pragma unroll
          for (int w = 0; w < 4; ++w)
            if (tok0[k] + 2 * c + (w & 1) + 8 * (w >> 1) >= ctx) zero_row(vr[w]);
        }
        const VPair<KV, T::VBYTES, UW> v01(vr[0], vr[1], g & 1), v23(vr[2], vr[3], g & 1);
        if constexpr (OT) {
          // A = V^T of dims (2j, 2j + 1) of the thread's slice (m rows g, g + 8) at tokens (2c, 2c+1 | 2c+8, 2c+9);
          // B = P^T: P of row g at the same tokens, i.e. the A fragment of O = P V's product
#pragma unroll
          for (int j = 0; j < OJ; ++j) {
            uint32_t a[4];
            v_frags(v01, j, a[0], a[1]);
            v_frags(v23, j, a[2], a[3]);
            mma<T::F16>(o[0][j], a, pa[k][0][0], pa[k][0][2]);
          }
        } else {
#pragma unroll
          for (int j = 0; j < T::NT; ++j) {
            const uint32_t b0 = v01.frag(j), b1 = v23.frag(j);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) mma<T::F16>(o[mt][j], pa[k][mt], b0, b1);
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < CNT; ++k) src.after_pv(it, i + k, u + k);
  };
  // ---- WS: the tail of the warp's chunk is claimed tile by tile before its loads are issued (Steal)
  static_assert(!WS || (TT == 1 && ST == 0), "work stealing: one tile per step, not stamped");
  [[maybe_unused]] Steal<WS> steal{};
  if constexpr (WS > 0) {
    __shared__ int s_claim[WS > 0 ? WARPS * WS : 1];
    if (p.cta_merge == 1) {  // the grid's plan: uniform over the CTA (no warp of it has returned)
      steal.init(s_claim, warp, lane, te);
      for (int u = 0; u < N && tb + u < it.te; ++u) steal.own(it, tb + u);
    }
  }
  src.start(it);
  for (int i0 = tb; i0 < it.te; i0 += N) {
#pragma unroll
    for (int u = 0; u < N; u += TT) {
      const int i = i0 + u;
      if (i >= it.te) break;
      if constexpr (WS > 0) steal.own(it, i + N);  // the tile after_s would load next
      if (TT == 2 && i + 1 < te)
        step(std::integral_constant<int, 2>{}, u, i);
      else
        step(std::integral_constant<int, 1>{}, u, i);
      if constexpr (ST)
        if (i == tb) stamp_after(stamp, KM_ATTN_STAMP_FIRST_TILE, __float_as_uint(o[0][0][0]), lane);
    }
  }
  if constexpr (WS > 0) {
    // the warp's own tiles are done: take the other warps' free tail tiles, from each tail's end, one at a time
    // (each restarts the pipeline on its one tile)
    for (int v = 1; v < WARPS && steal.flag; ++v) {
      const int w = (warp + v) % WARPS, vc = chunk - warp + w;
      const int ve = __ldg(p.chunk_end + vc), lo = max(__ldg(p.chunk_begin + vc), ve - WS);
      for (int t = ve - 1; t >= lo && steal.claim(w, t - (ve - WS), lane); --t) {
        it.tb = t, it.te = t + 1;
        src.start(it);
        step(std::integral_constant<int, 1>{}, 0, t);
      }
    }
  }
  src.finish();
  if constexpr (ST) stamp_after(stamp, KM_ATTN_STAMP_LOOP, __float_as_uint(o[0][0][0]) ^ __float_as_uint(l[0][0]), lane);

  // ---- TurboQuant: O holds sum p (norm_v / d) level(codes): back from the rotated domain, o = S H o', once
  // per row (the combine pass is linear, so partials can be rotated back before it); output dim 32c + i of a
  // row is o[mt][i % 16][2h + i / 16] of lane c
  if constexpr (T::TQ && OT) {
    // dim 16 g + 2j + s of row 2c + e is o[0][j][s + 2e]: butterflies over s and j in the lane, then across
    // lanes 4, 8 and 16 apart for the dim's bits 4-6 (g's bits), then the sign flip
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
      for (int j = 0; j < OJ; ++j) {
        const float a = o[0][j][e], b = o[0][j][2 + e];
        o[0][j][e] = a + b;
        o[0][j][2 + e] = a - b;
      }
#pragma unroll
      for (int len = 1; len < OJ; len <<= 1)
#pragma unroll
        for (int j = 0; j < OJ; ++j)
          if (!(j & len))
#pragma unroll
            for (int s2 = 0; s2 < 4; s2 += 2) {
              const float a = o[0][j][s2 + e], b = o[0][j | len][s2 + e];
              o[0][j][s2 + e] = a + b;
              o[0][j | len][s2 + e] = a - b;
            }
#pragma unroll
      for (int m = 4; m <= 16; m <<= 1)
#pragma unroll
        for (int j = 0; j < OJ; ++j)
#pragma unroll
          for (int s2 = 0; s2 < 4; s2 += 2) {
            const float mine = o[0][j][s2 + e], other = __shfl_xor_sync(0xffffffffu, mine, m);
            o[0][j][s2 + e] = (lane & m) ? other - mine : mine + other;
          }
      const uint32_t word = p.sign[g >> 1] >> (16 * (g & 1));
#pragma unroll
      for (int j = 0; j < OJ; ++j)
#pragma unroll
        for (int sd = 0; sd < 2; ++sd)
          if ((word >> (2 * j + sd)) & 1u) o[0][j][2 * sd + e] = -o[0][j][2 * sd + e];
    }
  } else if constexpr (T::TQ) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < T::HALVES; ++h) {
        // in place: index bits 0-3 are j, bit 4 is e, bits 5-6 the lane's c
#pragma unroll
        for (int len = 1; len < 16; len <<= 1)
#pragma unroll
          for (int j = 0; j < 16; ++j)
            if (!(j & len))
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const float a = o[mt][j][2 * h + e], b = o[mt][j | len][2 * h + e];
                o[mt][j][2 * h + e] = a + b;
                o[mt][j | len][2 * h + e] = a - b;
              }
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const float a = o[mt][j][2 * h], b = o[mt][j][2 * h + 1];
          o[mt][j][2 * h] = a + b;
          o[mt][j][2 * h + 1] = a - b;
        }
#pragma unroll
        for (int m = 1; m <= 2; m <<= 1)
#pragma unroll
          for (int j = 0; j < 16; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float mine = o[mt][j][2 * h + e], other = __shfl_xor_sync(0xffffffffu, mine, m);
              o[mt][j][2 * h + e] = (c & m) ? other - mine : mine + other;
            }
        const uint32_t word = p.sign[c];
#pragma unroll
        for (int j = 0; j < 16; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if ((word >> (16 * e + j)) & 1u) o[mt][j][2 * h + e] = -o[mt][j][2 * h + e];
      }
  }
  // ---- finish: full row sums, then the output (one chunk) or the partial (normalised output, log2-sum-exp):
  // this item's slot of the workspace, or with cta_merge the warp's slot in shared memory
  const bool direct = __ldg(p.seq_chunks + seq) == 1;
  float *part_o = p.part_o + (size_t)item * p.rows * D, *part_lse = p.part_lse + (size_t)item * p.rows;
  if (p.cta_merge == 1) {
    if constexpr (PIPE != KM_ATTN_PIPE_REGISTERS) __syncthreads();  // the rings are done with the memory
    float *sm = reinterpret_cast<float *>(smem);
    part_o = sm + (size_t)warp * p.rows * D;
    part_lse = sm + (size_t)WARPS * p.rows * D + warp * p.rows;
  }
  if constexpr (OT) {
    float ls = l[0][0];
    ls += __shfl_xor_sync(0xffffffffu, ls, 1);
    ls += __shfl_xor_sync(0xffffffffu, ls, 2);
    float lr[2], mr[2];  // sum and max of rows 2c and 2c + 1 (held by lanes 8c and 8c + 4)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      lr[e] = __shfl_sync(0xffffffffu, ls, 8 * c + 4 * e);
      mr[e] = __shfl_sync(0xffffffffu, m[0][0], 8 * c + 4 * e);
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int r = 2 * c + e;
      if (r >= p.rows) continue;
      const float f = (lr[e] > 0.f ? 1.f / lr[e] : 0.f) * vscl;
      const int qi = r / p.group, head = kvh * p.group + r % p.group;
      if (direct) {
        uint32_t w[OJ];
#pragma unroll
        for (int j = 0; j < OJ; ++j) w[j] = pack_f32x2(o[0][j][e] * f, o[0][j][2 + e] * f, false);
        uint4 *dst = reinterpret_cast<uint4 *>(p.out + ((size_t)(seq * p.q_len + qi) * p.heads + head) * D + g * T::VDIMS);
#pragma unroll
        for (int k = 0; k < OJ / 4; ++k) dst[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
      } else {
        float4 *po = reinterpret_cast<float4 *>(part_o + (size_t)r * D + g * T::VDIMS);
#pragma unroll
        for (int j = 0; j < OJ; j += 2)
          po[j / 2] = make_float4(o[0][j][e] * f, o[0][j][2 + e] * f, o[0][j + 1][e] * f, o[0][j + 1][2 + e] * f);
        if (g == 0) part_lse[r] = lr[e] > 0.f ? mr[e] + log2f(lr[e]) : -INFINITY;
      }
    }
  } else {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < T::HALVES; ++h) {
        float ls = l[mt][h];
        ls += __shfl_xor_sync(0xffffffffu, ls, 1);
        ls += __shfl_xor_sync(0xffffffffu, ls, 2);
        const int r = g + 8 * h + 16 * mt;
        if (r >= p.rows) continue;
        const float inv = ls > 0.f ? 1.f / ls : 0.f;
        const int qi = r / p.group, head = kvh * p.group + r % p.group;
        if (direct) {
          uint16_t *orow = p.out + ((size_t)(seq * p.q_len + qi) * p.heads + head) * D + c * (D / 4);
          const float f = inv * vscl;
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            uint32_t w[T::VDIMS / 2];
#pragma unroll
            for (int j = 0; j < T::VDIMS; j += 2)
              w[j / 2] = pack_f32x2(o[mt][j][2 * h + e] * f, o[mt][j + 1][2 * h + e] * f, false);
            uint16_t *dst = orow + e * T::VDIMS;
            if constexpr (T::VDIMS % 8 == 0) {
#pragma unroll
              for (int k = 0; k < T::VDIMS / 8; ++k)
                reinterpret_cast<uint4 *>(dst)[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
            }
          }
        } else {
          // partial slot: the item (chunk * kv_heads + kvh), rows of the group
          float *po = part_o + (size_t)r * D + c * (D / 4);
          const float f = inv * vscl;
#pragma unroll
          for (int e = 0; e < 2; ++e)
#pragma unroll
            for (int j = 0; j < T::VDIMS; j += 4)
              *reinterpret_cast<float4 *>(po + e * T::VDIMS + j) =
                  make_float4(o[mt][j][2 * h + e] * f, o[mt][j + 1][2 * h + e] * f, o[mt][j + 2][2 * h + e] * f,
                              o[mt][j + 3][2 * h + e] * f);
          if (c == 0) part_lse[r] = ls > 0.f ? m[mt][h] + log2f(ls) : -INFINITY;
        }
      }
  }
  if constexpr (ST) {
    const unsigned long long k = clock64();
    if (lane == 0)
      stamp[KM_ATTN_STAMP_WRITTEN] = stamp[KM_ATTN_STAMP_COUNTED] = k,
      stamp[KM_ATTN_STAMP_TILES] = (unsigned long long)(te - tb);
  }
  bool last = direct;
  unsigned long long *const counted = ST ? stamp + KM_ATTN_STAMP_COUNTED : nullptr;  // the merges overwrite it
  if (p.cta_merge == 1) {
    if constexpr (MP)
      last = cta_merge_poll<D, MW>(p, reinterpret_cast<float *>(smem), seq, kvh, counted);
    else
      last = cta_merge<D, MW>(p, reinterpret_cast<float *>(smem), seq, kvh, counted);
  } else if (p.cta_merge == 2 && !direct) {  // every warp of the CTA is in one chunk: `direct` is the CTA's
    last = heads_merge<D, MW>(p, seq, kvh - warp, counted);
  }
  if constexpr (ST) {
    const unsigned long long k = clock64(), t = global_ns();
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    if (lane == 0)
      stamp[KM_ATTN_STAMP_END] = k, stamp[KM_ATTN_STAMP_END_NS] = t, stamp[KM_ATTN_STAMP_SM] = sm | (last ? 1u << 16 : 0u);
  }
}

// Dynamic shared memory of a ring pipeline's CTA (the TMA pipeline's ring has PFO slots per warp, 0: the default).
template <typename T, int PIPE, int PFO, int TS>
constexpr int ring_smem() {
  if constexpr (PIPE == KM_ATTN_PIPE_TMA)
    return TmaSource<T, PFO ? PFO : KM_ATTN_TMA_SLOTS, TS>::SMEM;
  else
    return T::SMEM;
}

// A decode kernel and the dynamic shared memory (its slot ring) it launches with.
struct Kern {
  const void *fn;
  int smem;
  int pipe;  // the kernel's km_attn_pipe (fp8's default shape takes the TMA pipeline where it runs)
};

template <int D, int KV, int MT, int PIPE, int PFO = 0, int TT = 1, int OT = 0, int CTAS = KM_ATTN_MIN_BLOCKS,
          int UW = 0, int SL = 0, int ST = 0, int MW = 16, int PD = 0, int LZ = 0, int TS = 0, int WS = 0, int PL = 0,
          int MP = 0, int QS = 0>
Kern kernel_pipe() {
  using T = Tile<D, KV, MT, PFO>;
  const void *fn = reinterpret_cast<const void *>(
      &decode_kernel<D, KV, MT, PIPE, PFO, TT, OT, CTAS, UW, SL, ST, MW, PD, LZ, TS, WS, PL, MP, QS>);
  if constexpr (PIPE == KM_ATTN_PIPE_REGISTERS && QS) {
    // beside Q's 16 KiB of static shared memory, the CTA merge's partials of up to 8 rows (32.1 KiB at head_dim 256)
    // pass the 48 KiB a launch may take without the opt-in; once per kernel (a failure shows up at launch)
    static const cudaError_t set =
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cta_merge_smem(8, D));
    (void)set;
  }
  if constexpr (PIPE == KM_ATTN_PIPE_REGISTERS) return Kern{fn, 0};
  constexpr int smem = ring_smem<T, PIPE, PFO, TS>();
  if constexpr (PIPE == KM_ATTN_PIPE_TMA) {
    // the bulk tensor copies exist in sm_90 code only: no kernel where another image would run (its body traps)
    static const bool runs = [fn] {
      km_kernel_image img;
      return km_kernel_image_query(fn, &img) == cudaSuccess && km_kernel_image_runs(&img, KM_BULK_MIN_ARCH);
    }();
    if (!runs) return Kern{nullptr, 0};
  }
  // rings over 48 KiB need the opt-in, once per kernel (a failure shows up at launch)
  static const cudaError_t set = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  (void)set;
  return Kern{fn, smem, PIPE};
}

template <int D, int KV, int MT>
Kern kernel_ptr(km_attn_pipe pipe) {
  return pipe == KM_ATTN_PIPE_SMEM_RING ? kernel_pipe<D, KV, MT, KM_ATTN_PIPE_SMEM_RING>()
                                        : kernel_pipe<D, KV, MT, KM_ATTN_PIPE_REGISTERS>();
}

// The register kernel at head_dim 256 with <= 8 rows of bf16 or fp8 (kernel_for_mt), QS 1: Q in shared memory (the
// shape's q_smem 1; bf16's default: 1,021.2 us against 1,126.0 with Q in registers at b16 x 32K, fp8 e4m3 per
// token-head level at 536.9 / 536.7, H200, d82222d; reports/attn-notes.md "Head dim 256").
template <int KV, int QS = KV == KM_ATTN_BF16>
Kern kernel_d256() {
  constexpr int R = KM_ATTN_PIPE_REGISTERS, B = KM_ATTN_MIN_BLOCKS;
  if constexpr (KV == KM_ATTN_BF16)
    return kernel_pipe<256, KV, 0, R, 0, 1, 1, B, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, QS>();
  else
    return kernel_pipe<256, KV, 0, R, 1, 1, 1, B, 0, 1, 0, 16, 0, 0, 0, 0, 0, 0, QS>();
}

template <int D, int KV>
Kern kernel_for_mt(int mt, km_attn_pipe pipe) {
  // head_dim 256 with <= 8 rows through registers: O^T accumulators (half the registers of O), and one tile in flight,
  // in halves of its tokens for bf16 (RegHalfSource), whole for fp8 (not two) with its per-token scales loaded once
  // per lane (SL 1): 8 KiB a warp either way, as bf16 at head_dim 128. Before (O, one bf16 tile or two fp8 ones): 255
  // registers and 1,076 / 1,644 bytes of spill stores (sm_90); now none (bf16 with Q in shared memory; 148 bytes with
  // Q in registers, the shape's q_smem KM_ATTN_Q_REGS).
  if constexpr (D == 256 && (KV == KM_ATTN_BF16 || KV == KM_ATTN_FP8_E4M3 || KV == KM_ATTN_FP8_E5M2))
    if (mt == 0)
      return pipe == KM_ATTN_PIPE_SMEM_RING ? kernel_pipe<D, KV, 0, KM_ATTN_PIPE_SMEM_RING>() : kernel_d256<KV>();
  if constexpr (D == 256)
    return mt == 0 ? kernel_ptr<D, KV, 0>(pipe) : mt == 1 ? kernel_ptr<D, KV, 1>(pipe) : Kern{nullptr, 0};
  else
    return mt == 0   ? kernel_ptr<D, KV, 0>(pipe)
           : mt == 1 ? kernel_ptr<D, KV, 1>(pipe)
           : mt == 2 ? kernel_ptr<D, KV, 2>(pipe)
                     : Kern{nullptr, 0};
}

// One listed variant of format KV; the window unpacking exists for uniform 3-bit (1, 2) and TurboQuant (1 and 3, with
// its norms loaded once per lane) only, the one scale load per lane for fp8 e4m3 and TurboQuant only.
template <int KV, int PF, int O, int CT, int UW, int SL, int PD = 0, int LZ = 0>
Kern variant_kern() {
  if constexpr (!km_attn_unpack_exists(KV, UW, SL) || (SL && KV != KM_ATTN_FP8_E4M3 && KV != KM_ATTN_TQ3))
    return Kern{nullptr, 0};
  else
    return kernel_pipe<128, KV, 0, KM_ATTN_PIPE_REGISTERS, PF, 1, O, CT ? CT : KM_ATTN_MIN_BLOCKS, UW, SL, 0, 16, PD,
                       LZ>();
}
// The depth / accumulator / occupancy / unpacking / scale-load variants of a format (head_dim 128, <= 8 rows,
// register pipeline): prefetch 1, 2 or 4 tiles in flight per warp, ot 1 for O^T accumulators, ctas 0 (the
// default cap, KM_ATTN_MIN_BLOCKS), 3 or 4 CTAs per SM, unpack 1 for 3-bit codes from 16-bit windows,
// scale_load 1 for fp8's per-token scales or TurboQuant's norms loaded once per tile; {nullptr, 0} for a
// combination without one
// (KM_ATTN_VARIANTS lists them).
template <int KV>
Kern kernel_variant(int prefetch, int ot, int ctas, int unpack, int scale_load) {
#define KM_ATTN_VARIANT_KERN(pf, o, ct, uw, sl)                                      \
  if (prefetch == pf && ot == o && ctas == ct && unpack == uw && scale_load == sl) \
    return variant_kern<KV, pf, o, ct, uw, sl>();
  KM_ATTN_VARIANTS(KM_ATTN_VARIANT_KERN)
#undef KM_ATTN_VARIANT_KERN
  return Kern{nullptr, 0};
}

// The paired-tile variant of a format (head_dim 128, <= 8 rows, register pipeline, the format's depth, or 2
// where that is odd (bf16, uniform 3-bit): a pair needs an even depth).
template <int KV>
Kern kernel_paired() {
  constexpr int pf = Tile<128, KV, 0>::PF % 2 ? 2 : 0;
  return kernel_pipe<128, KV, 0, KM_ATTN_PIPE_REGISTERS, pf, 2>();
}

// A format's kernels at head_dim 64, 128 and 256.
template <int KV>
Kern kernel_for_dims(int head_dim, int mt, km_attn_pipe pipe) {
  switch (head_dim) {
    case 64: return kernel_for_mt<64, KV>(mt, pipe);
    case 128: return kernel_for_mt<128, KV>(mt, pipe);
    case 256: return kernel_for_mt<256, KV>(mt, pipe);
    default: return Kern{nullptr, 0};
  }
}

// A shape's variant (prefetch, otrans, ctas, unpack, scale_load) or paired-tile kernel of format KV.
inline bool is_variant(const km_attn_shape &s) { return s.prefetch || s.otrans || s.ctas || s.unpack || s.scale_load; }
// bf16's default kernel at head_dim 128 with <= 8 rows (mt 0), register pipeline, no variant, not paired, no
// L2 prefetch or lazy rescale: the shape kernel_bf16_extra has its other instantiations for (stamps,
// merge_inflight 32).
inline bool bf16_default_shape(const km_attn_shape &s, int mt) {
  return s.kv == KM_ATTN_BF16 && s.head_dim == 128 && mt == 0 && s.pipe == KM_ATTN_PIPE_REGISTERS && !s.pair &&
         !is_variant(s) && !s.l2_ahead && !s.lazy_rescale;
}
template <int KV>
Kern kernel_variant_or_paired(const km_attn_shape &s) {
  return s.pair ? kernel_paired<KV>() : kernel_variant<KV>(s.prefetch, s.otrans, s.ctas, s.unpack, s.scale_load);
}

// The default kernel of a quantized format for warps of <= 8 rows at head_dim 128 (GQA 32:8 at q_len 1-2) in the
// register pipeline (fp8's default is the TMA pipeline's kernel where sm_90 code runs, kernels_of; this one where
// it does not, and as the variant rows ot1s / ot1),
// the measured best of its variants (H200, b16 x 32K, revision 54356d7a950f, reports/attn-notes.md): fp8
// e4m3 O^T depth 1 (364.4 us; 432.9 for depth 2 without O^T), uniform 3-bit O^T depth 2 capped for 3 CTAs
// per SM (355.4; 372.4), TurboQuant the same (484.5; 547.2). bf16 keeps its kernel (O^T: 510.0 vs 510.9 us);
// e5m2 has no variants. Uniform 3-bit then took its codes from 16-bit windows (the same variant with window
// unpacking: 322.8 us, revision 261d074; 319.0 in the recorded run of c9c3ff8), then with V's pairs as 1 + code / 8
// (unpack 2, H100, 5d26cf2: 287.8 against 295.1 us). TurboQuant takes its codes from the same windows (unpack 1, its
// norms loaded once per lane: the variant rows ot2c3sw against ot2c3s; H200, 4482f8e, b16 x 32K 427.0 against 447.7
// us), and looks up the two pairs a k-step or a V^T fragment takes together from one selector (unpack 3: the rows
// ot2c3sx against ot2c3sw, H100, fc79032, b16 x 32K 363.0 against 424.5 us, b64 1,384.9 against 1,623.4; sm_90 SASS
// of the plain-rescale kernel 6,205 instructions against 6,386, PRMT 295 against 423, 165 registers against 168).
template <int KV>
constexpr bool has_default_variant() {
  return KV == KM_ATTN_FP8_E4M3 || KV == KM_ATTN_U3 || KV == KM_ATTN_TQ3;
}
// fp8 e4m3: O^T at depth 1, and with per-token-head scales a tile's scales loaded once per lane (H200,
// 547ef6a, b16 x 32K in the same chunks: 379.1 against 457.4 us; b1 x 32K 33.2 against 37.3; b06fbe9 in
// the planner's chunks: 315.4 against 365.1). TurboQuant: its norms loaded so too (b06fbe9, b16 x 32K 446.6
// against 496.7 us, b64 1,723.6 against 1,921.7, b1 42.9 against 45.3).
// TurboQuant rescales O lazily (the lazy_rescale rows, H200, 4c25d5d, b16 x 32K: 433.6 against 444.8 us; with unpack
// 3 on an H100, fc79032: the default 354.4 against ot2c3sx's 363.0).
// Uniform 3-bit did so too (309.0 against 320.7 us there) until its pairs took one LOP3 each (5d26cf2): on an H100
// the lazy rescale then measured 294.2 against 295.1 us at b16 x 32K and 1,130.0 against 1,127.0 at b64, and the
// plain rescale with V's pairs as 1 + code / 8 (unpack 2) 287.8 and 1,096.6, so uniform 3-bit's default is that
// kernel (its lazy_rescale rows measure the pair). fp8 (316.7 against 315.3) and bf16 (507.8 against 508.0) gained
// nothing and keep the plain rescale.
template <int KV>
constexpr int lazy_default() {
  return KV == KM_ATTN_TQ3;
}
// PD, LZ: with that many tiles prefetched into L2 (the l2_ahead rows), with the lazy rescale (lazy_rescale);
// bf16's default kernel so too.
template <int KV, int PD = 0, int LZ = lazy_default<KV>()>
Kern kernel_default_variant(const km_attn_shape &s) {
  constexpr int R = KM_ATTN_PIPE_REGISTERS, B = KM_ATTN_MIN_BLOCKS;
  if constexpr (KV == KM_ATTN_BF16)
    return kernel_pipe<128, KV, 0, R, 0, 1, 0, B, 0, 0, 0, 16, PD, LZ>();
  else if constexpr (KV == KM_ATTN_FP8_E4M3)
    return s.scale == KM_ATTN_SCALE_TOKEN_HEAD ? variant_kern<KV, 1, 1, 0, 0, 1, PD, LZ>()
                                               : variant_kern<KV, 1, 1, 0, 0, 0, PD, LZ>();
  else if constexpr (KV == KM_ATTN_U3)
    return variant_kern<KV, 2, 1, 3, 2, 0, PD, LZ>();
  else if constexpr (KV == KM_ATTN_TQ3)
    return variant_kern<KV, 2, 1, 3, 3, 1, PD, LZ>();
  else
    return Kern{nullptr, 0};
}
// The default kernel (above) with s.l2_ahead tiles prefetched into L2 (2 or 4), or with s.lazy_rescale (one or
// the other; km_attn_shape_error).
template <int KV>
Kern kernel_default_option(const km_attn_shape &s) {
  if (s.lazy_rescale) return kernel_default_variant<KV, 0, 1>(s);
  return s.l2_ahead == 2 ? kernel_default_variant<KV, 2>(s) : s.l2_ahead == 4 ? kernel_default_variant<KV, 4>(s) : Kern{nullptr, 0};
}

// The TMA pipeline's kernel of fp8 format KV (head_dim 128, <= 8 rows, O^T accumulators) with s.tma_slots ring
// slots per warp (0: the format's default, km_attn_tma_slots: e4m3 3, e5m2 4), registers capped so that the CTAs
// the rings leave room for fit: 3 slots 4 CTAs per SM, 4 slots 3, 6 slots 2 (about 49, 65 and 97 KiB of shared
// memory per CTA); s.tma_scales 1 (4 slots): the per-token scales copied into the slots (67 KiB); s.tma_scales 2
// (4 slots): every lane arrives; s.tma_scales 3 (3 slots): every lane arrives through cp.async.mbarrier.arrive.noinc.
template <int KV>
Kern kernel_tma(const km_attn_shape &s) {
  constexpr int P = KM_ATTN_PIPE_TMA;
  if (s.tma_scales == 1)
    return s.tma_slots == 0 || s.tma_slots == 4 ? kernel_pipe<128, KV, 0, P, 4, 1, 1, 3, 0, 0, 0, 16, 0, 0, 1>()
                                                 : Kern{nullptr, 0};
  if (s.tma_scales == 2)
    return s.tma_slots == 0 || s.tma_slots == 4 ? kernel_pipe<128, KV, 0, P, 4, 1, 1, 3, 0, 0, 0, 16, 0, 0, 2>()
                                                 : Kern{nullptr, 0};
  if (s.tma_scales == 3)
    return s.tma_slots == 0 || s.tma_slots == 3 ? kernel_pipe<128, KV, 0, P, 3, 1, 1, 4, 0, 0, 0, 16, 0, 0, 3>()
                                                 : Kern{nullptr, 0};
  switch (km_attn_tma_slots(&s)) {
    case 3: return kernel_pipe<128, KV, 0, P, 3, 1, 1, 4>();
    case 4: return kernel_pipe<128, KV, 0, P, 4, 1, 1, 3>();
    case 6: return kernel_pipe<128, KV, 0, P, 6, 1, 1, 2>();
    default: return Kern{nullptr, 0};
  }
}

// Format KV's launch descriptor for a shape (mt: its m16 row tiles, 0 for <= 8 rows); {nullptr, 0} where it
// has none. 3-bit formats: head_dim 128 and the register pipeline only (km_attn_shape_error says so).
template <int KV>
Kern kernels_of(const km_attn_shape &s, int mt) {
  constexpr bool three_bit = KV == KM_ATTN_U3 || KV == KM_ATTN_TQ3;
  constexpr bool fp8 = Tile<128, KV, 0>::FP8;
  if (three_bit && (s.head_dim != 128 || s.pipe != KM_ATTN_PIPE_REGISTERS)) return Kern{nullptr, 0};
  if (s.pipe == KM_ATTN_PIPE_TMA) {
    if constexpr (fp8)
      return mt == 0 && s.head_dim == 128 ? kernel_tma<KV>(s) : Kern{nullptr, 0};
    else
      return Kern{nullptr, 0};
  }
  if (s.q_smem) {  // km_attn_shape_error: head_dim 256, <= 8 rows, register pipeline, bf16 or fp8
    if constexpr (KV == KM_ATTN_BF16 || fp8)
      return mt != 0 || s.head_dim != 256 || s.pipe != KM_ATTN_PIPE_REGISTERS ? Kern{nullptr, 0}
             : s.q_smem == KM_ATTN_Q_SMEM                                    ? kernel_d256<KV, 1>()
                                                                             : kernel_d256<KV, 0>();
    else
      return Kern{nullptr, 0};
  }
  // the shape of the quantized formats' default variants and of the default kernels' options
  const bool variant_default = mt == 0 && s.head_dim == 128 && s.pipe == KM_ATTN_PIPE_REGISTERS;
  if (s.l2_ahead || s.lazy_rescale) return variant_default ? kernel_default_option<KV>(s) : Kern{nullptr, 0};
  if (s.pair || is_variant(s)) {
    if constexpr (KV == KM_ATTN_FP8_E5M2)
      return Kern{nullptr, 0};
    else
      return kernel_variant_or_paired<KV>(s);
  }
  if constexpr (fp8)
    if (variant_default) {  // fp8's default kernel: the TMA pipeline where sm_90 code runs (kernel_tma)
      const Kern t = kernel_tma<KV>(s);
      if (t.fn) return t;
    }
  if constexpr (has_default_variant<KV>())
    if (variant_default) return kernel_default_variant<KV>(s);
  if constexpr (three_bit)
    return mt == 1 ? kernel_pipe<128, KV, 1, KM_ATTN_PIPE_REGISTERS>()
           : mt == 2 ? kernel_pipe<128, KV, 2, KM_ATTN_PIPE_REGISTERS>()
                     : Kern{nullptr, 0};
  else
    return kernel_for_dims<KV>(s.head_dim, mt, s.pipe);
}

// The other instantiations of bf16's default kernel at head_dim 128 with <= 8 rows (the register pipeline, no
// variant): stamped (ST 1) and/or with the shape's merge_inflight 32 (MW 32), steal (WS), pdl (PL) or, where the
// plan polls, merge_poll (MP); {nullptr, 0} for any other shape; in attn_decode_bf16.cu.
Kern kernel_bf16_extra(const km_attn_shape &s, int mt, bool stamps, bool poll);

// Each format's kernels_of, instantiated in its own translation unit (attn_decode_<format>.cu).
Kern kernels_bf16(const km_attn_shape &s, int mt);
Kern kernels_e4m3(const km_attn_shape &s, int mt);
Kern kernels_e5m2(const km_attn_shape &s, int mt);
Kern kernels_u3(const km_attn_shape &s, int mt);
Kern kernels_tq3(const km_attn_shape &s, int mt);

}  // namespace km_attn_detail

#endif
