// Eviction selection and compaction (see evict.h). The selection is km_sparse_topk over the score rows
// (the forced last entry stands for the window). The compaction walks the compacted pools in their own
// order: vector g of the output is piece (sequence, slot, head) = g / (head_dim / 8), so a CTA's stores are
// contiguous (a destination block is block_size x kv_heads pieces back to back) and its loads are 16-byte
// vectors of whole source pieces (head_dim x 2 bytes each). A CTA per tile of 8 KiB of K and 8 KiB of V
// (the shape of the 16 KiB-tile copy that reached 95% of the ceiling on the H200, roofline.cu); each thread
// has 4 x 16 bytes in flight at 34 registers, 6 CTAs per SM.
#include "evict.h"

#include "paged_gather.h"
#include "sparse_topk.h"

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 2;

struct CompactArgs {
  const uint4 *k, *v;
  const int32_t *table, *selected, *dst_table;
  uint4 *dk, *dv;
  uint32_t total;  // output vectors (of K; V has as many)
  km_paged_divmod by_heads, by_budget, by_block;
  int kv_heads, budget, select_len, context, bps, dst_bps, block_size;
};

// One tile of kThreads x kUnroll vectors of K and of V: all index loads (selection, then both tables),
// then all data loads, then all stores. FULL tiles (all but the grid's last) carry no bounds checks, so
// the loads issue unpredicated, back to back.
template <int VPP, bool FULL>
__device__ __forceinline__ void compact_tile(const CompactArgs &a, uint32_t first) {
  size_t src[kUnroll], dst[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint32_t g = first + u * kThreads;
    const uint32_t piece = (FULL || g < a.total ? g : 0u) / VPP, c = g % VPP;
    const uint32_t sj = km_paged_div(a.by_heads, piece), h = piece - sj * a.kv_heads;
    const uint32_t b = km_paged_div(a.by_budget, sj), j = sj - b * a.budget;
    const uint32_t row = b * a.kv_heads + h;
    const uint32_t tok = j < (uint32_t)a.select_len ? (uint32_t)__ldg(a.selected + (size_t)row * a.select_len + j)
                                                    : j + a.context - a.budget;
    const uint32_t tb = km_paged_div(a.by_block, tok), db = km_paged_div(a.by_block, j);
    const int64_t blk = __ldg(a.table + (size_t)b * a.bps + tb), dblk = __ldg(a.dst_table + (size_t)b * a.dst_bps + db);
    src[u] = (((size_t)blk * a.block_size + (tok - tb * a.block_size)) * a.kv_heads + h) * VPP + c;
    dst[u] = (((size_t)dblk * a.block_size + (j - db * a.block_size)) * a.kv_heads + h) * VPP + c;
  }
  uint4 kv[kUnroll], vv[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (FULL || first + u * kThreads < a.total) {
      kv[u] = __ldg(a.k + src[u]);
      vv[u] = __ldg(a.v + src[u]);
    }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (FULL || first + u * kThreads < a.total) {
      a.dk[dst[u]] = kv[u];
      a.dv[dst[u]] = vv[u];
    }
}

template <int VPP>  // 16-byte vectors per piece: head_dim / 8
__global__ __launch_bounds__(kThreads) void compact_kernel(CompactArgs a) {
  static_assert((VPP & (VPP - 1)) == 0, "head_dim / 8 is a power of two");
  const uint32_t base = blockIdx.x * (uint32_t)(kThreads * kUnroll);
  if (base + kThreads * kUnroll <= a.total)  // CTA-uniform
    compact_tile<VPP, true>(a, base + threadIdx.x);
  else
    compact_tile<VPP, false>(a, base + threadIdx.x);
}

}  // namespace

extern "C" cudaError_t km_evict_select(const km_sparse_plan *plan, const km_evict_shape *s, const float *scores,
                                       int32_t *selected, cudaStream_t stream) {
  if (!plan || !s || km_evict_shape_error(s) || !scores || !selected) return cudaErrorInvalidValue;
  return km_sparse_topk(plan, scores, selected, km_evict_rows(s), km_evict_score_len(s), km_evict_select_len(s), stream);
}

extern "C" cudaError_t km_evict_compact(const km_evict_shape *s, const uint16_t *k_pool, const uint16_t *v_pool,
                                        const int32_t *table, const int32_t *selected, uint16_t *dst_k,
                                        uint16_t *dst_v, const int32_t *dst_table, cudaStream_t stream) {
  if (!s || km_evict_shape_error(s) || !k_pool || !v_pool || !table || !selected || !dst_k || !dst_v || !dst_table)
    return cudaErrorInvalidValue;
  if ((((uintptr_t)k_pool | (uintptr_t)v_pool | (uintptr_t)dst_k | (uintptr_t)dst_v) & 15u) != 0)
    return cudaErrorInvalidValue;
  CompactArgs a;
  a.k = reinterpret_cast<const uint4 *>(k_pool);
  a.v = reinterpret_cast<const uint4 *>(v_pool);
  a.dk = reinterpret_cast<uint4 *>(dst_k);
  a.dv = reinterpret_cast<uint4 *>(dst_v);
  a.table = table;
  a.selected = selected;
  a.dst_table = dst_table;
  const int vpp = s->head_dim / 8;
  a.total = (uint32_t)((long long)s->batch * s->budget * s->kv_heads * vpp);
  a.by_heads = km_paged_divmod_make((uint32_t)s->kv_heads);
  a.by_budget = km_paged_divmod_make((uint32_t)s->budget);
  a.by_block = km_paged_divmod_make((uint32_t)s->block_size);
  a.kv_heads = s->kv_heads;
  a.budget = s->budget;
  a.select_len = km_evict_select_len(s);
  a.context = s->context;
  a.bps = s->blocks_per_seq;
  a.dst_bps = s->dst_blocks_per_seq;
  a.block_size = s->block_size;
  const unsigned blocks = (unsigned)(((uint64_t)a.total + kThreads * kUnroll - 1) / (kThreads * kUnroll));
  switch (vpp) {
    case 8: compact_kernel<8><<<blocks, kThreads, 0, stream>>>(a); break;
    case 16: compact_kernel<16><<<blocks, kThreads, 0, stream>>>(a); break;
    default: compact_kernel<32><<<blocks, kThreads, 0, stream>>>(a); break;
  }
  return cudaGetLastError();
}
