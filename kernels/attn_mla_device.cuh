// What the two MLA decode kernels share (kernels/attn_mla.cu: mma.sync, any SM 8.0+ GPU;
// kernels/attn_mla_wgmma.cu: wgmma, sm_90a only): the parameter block, the cache's geometry, cp.async, the
// bf16 packing and the exact e4m3 -> bf16 conversion. Kernel code only (no timing, no host I/O).
#ifndef KM_KERNELS_ATTN_MLA_DEVICE_CUH
#define KM_KERNELS_ATTN_MLA_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <stdint.h>
#include <string.h>

#include "attn_mla.h"

namespace km_mla_dev {

constexpr int D = KM_MLA_DIM, DV = KM_MLA_VDIM, TILE = KM_MLA_TILE;
constexpr int RAW_CHUNKS = D / 16;  // an fp8 row: 36 chunks of 16 bytes
constexpr int RAW_BYTES = TILE * D; // an fp8 tile: 36,864 bytes
constexpr float LOG2E = 1.4426950408889634f;

struct Params {
  const uint16_t *q;
  const char *cache;
  const float *scale;
  const int32_t *table, *ctx_lens;
  const int32_t *chunk_seq, *chunk_begin, *chunk_end, *seq_chunk0, *seq_chunks;
  uint16_t *out;
  float *part_o, *part_lse;
  int heads, groups, block_size, mbps, stages;
  float scale_log2;
};

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared; src_bytes 0 fills the 16 bytes with zeros and reads nothing.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  uint32_t r;
  memcpy(&r, &h, 4);
  return r;
}

// Two e4m3 codes (low 16 bits) -> two bf16, exact (every e4m3 value is a bf16 value).
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t x) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(x & 0xFFFFu), __NV_E4M3);
  __half2 hh;
  memcpy(&hh, &h, 4);
  const float2 f = __half22float2(hh);
  return pack_bf16(f.x, f.y);
}

// What a CTA of `rows` heads works on: its chunk (blockIdx.x / groups), first head, sequence, tiles [tb, te),
// the sequence's context and block table row.
struct ChunkWork {
  int chunk, head0, seq, tb, te, ctx;
  const int32_t *table;
};
__device__ __forceinline__ ChunkWork chunk_work(const Params &p, int rows) {
  ChunkWork w;
  w.chunk = blockIdx.x / p.groups;
  w.head0 = (blockIdx.x % p.groups) * rows;
  w.seq = __ldg(p.chunk_seq + w.chunk);
  w.tb = __ldg(p.chunk_begin + w.chunk);
  w.te = __ldg(p.chunk_end + w.chunk);
  w.ctx = __ldg(p.ctx_lens + w.seq);
  w.table = p.table + (size_t)w.seq * p.mbps;
  return w;
}

// Global address of the first latent row of tile t (a tile lies inside one block: block_size % 64 == 0).
template <int EB>
__device__ __forceinline__ const char *tile_src(const Params &p, const int32_t *table, int t) {
  const int tok = t * TILE;
  const long long row = (long long)__ldg(table + tok / p.block_size) * p.block_size + tok % p.block_size;
  return p.cache + row * (long long)(D * EB);
}

// bf16 tile -> shared memory, 16-byte chunk cc of row r at addr(r, cc), by thread `idx` of STEP loaders;
// rows past the context are zero-filled (the pool may hold anything).
template <int STEP, class Addr>
__device__ __forceinline__ void load_bf16_tile(uint32_t dst, const char *src, int valid, int idx, Addr addr) {
  constexpr int CHUNKS = D * 2 / 16;  // 72 per row
#pragma unroll 6
  for (int i = idx; i < TILE * CHUNKS; i += STEP) {
    const int r = i / CHUNKS, cc = i - r * CHUNKS;
    const bool ok = r < valid;
    cp_async16(dst + addr(r, cc), src + (ok ? (size_t)i * 16 : 0), ok ? 16 : 0);
  }
}

// fp8 tile -> a plain shared copy of its codes, by thread `idx` of STEP loaders; rows past the context are
// zero-filled (the pool may hold anything).
template <int STEP>
__device__ __forceinline__ void load_raw_tile(uint32_t dst, const char *src, int valid, int idx) {
#pragma unroll 1
  for (int i = idx; i < TILE * RAW_CHUNKS; i += STEP) {
    const bool ok = i / RAW_CHUNKS < valid;
    cp_async16(dst + (uint32_t)i * 16, src + (ok ? (size_t)i * 16 : 0), ok ? 16 : 0);
  }
}

// fp8 codes -> a bf16 tile, 16 codes per thread and step, two 16-byte stores at addr(row, 16-byte chunk).
template <int STEP, class Addr>
__device__ __forceinline__ void convert_raw_tile(const unsigned char *raw, unsigned char *tile, int idx, Addr addr) {
#pragma unroll 1
  for (int i = idx; i < TILE * RAW_CHUNKS; i += STEP) {
    const int r = i / RAW_CHUNKS, c = i - r * RAW_CHUNKS;
    const uint4 x = *reinterpret_cast<const uint4 *>(raw + (size_t)i * 16);
    const uint4 lo = make_uint4(e4m3x2_to_bf16x2(x.x), e4m3x2_to_bf16x2(x.x >> 16), e4m3x2_to_bf16x2(x.y),
                                e4m3x2_to_bf16x2(x.y >> 16));
    const uint4 hi = make_uint4(e4m3x2_to_bf16x2(x.z), e4m3x2_to_bf16x2(x.z >> 16), e4m3x2_to_bf16x2(x.w),
                                e4m3x2_to_bf16x2(x.w >> 16));
    *reinterpret_cast<uint4 *>(tile + addr(r, 2 * c)) = lo;
    *reinterpret_cast<uint4 *>(tile + addr(r, 2 * c + 1)) = hi;
  }
}

// The sm_90a kernel for a latent format and variant (km_mla_config.wgmma, 1-12: attn_mla_wgmma.cu,
// attn_mla_seesaw.cu for KM_MLA_WG_SEESAW(_LEAN), attn_mla_qreg.cu for KM_MLA_WG_QREG; nullptr for another, and for
// the bf16-only ones over fp8), a stub where
// this build holds no sm_90a code (km_mla_wgmma_usable says whether a device can run it), its shared memory and
// its threads per CTA.
const void *wg_kernel(km_mla_kv kv, int variant);
int wg_smem_bytes(km_mla_kv kv, int variant);
int wg_threads(int variant);
// The two-tile kernel of attn_mla_seesaw.cu (bf16 latents).
const void *seesaw_kernel(bool lean);  // lean: KM_MLA_WG_SEESAW_LEAN
int seesaw_smem_bytes();
int seesaw_threads();
// The three-warpgroup kernel of attn_mla_qreg.cu (bf16 latents): Q in the scorer's registers, three stages.
const void *qreg_kernel();
int qreg_smem_bytes();
int qreg_threads();

}  // namespace km_mla_dev

#endif
