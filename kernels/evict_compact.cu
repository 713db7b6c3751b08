// Eviction selection and compaction (see evict.h). The selection is km_sparse_topk over the score rows
// (the forced last entry stands for the window). The compaction walks the compacted pools in their own
// order: vector g of the output is piece (sequence, slot, head) = g / (head_dim / 8), so a CTA's stores are
// contiguous (a destination block is block_size x kv_heads pieces back to back) and its loads are 16-byte
// vectors of whole source pieces (head_dim x 2 bytes each). By default a CTA per tile of 8 KiB of K and 8 KiB
// of V (the shape of the 16 KiB-tile copy that reached 95% of the ceiling on the H200, roofline.cu); each
// thread has 4 x 16 bytes in flight at 34 registers, 6 CTAs per SM. The variants (km_evict_compact_opts):
// unroll 4 and 8 put 8 and 16 vectors in flight per thread (60 and 104 registers on sm_90: 4 and 2 CTAs
// per SM); persistent keeps the resident CTAs (2 stages of 2 x unroll vectors, 56 / 96 / 214 registers),
// each issuing its next tile's index loads (the selection, then both tables: two dependent latencies
// before any data moves) and data loads while the current tile's data is still in flight.
#include "evict.h"

#include "paged_gather.h"
#include "sparse_topk.h"

namespace {

constexpr int kThreads = KM_EVICT_COMPACT_THREADS;

struct CompactArgs {
  const uint4 *k, *v;
  const int32_t *table, *selected, *dst_table;
  uint4 *dk, *dv;
  uint32_t total;  // output vectors (of K; V has as many)
  km_paged_divmod by_heads, by_budget, by_block;
  int kv_heads, budget, select_len, context, bps, dst_bps, block_size;
};

// Where output vector g (< total) comes from and goes to, as 16-byte vector indices into the pools.
template <int VPP>
__device__ __forceinline__ void vector_addrs(const CompactArgs &a, uint32_t g, size_t &src, size_t &dst) {
  const uint32_t piece = g / VPP, c = g % VPP;
  const uint32_t sj = km_paged_div(a.by_heads, piece), h = piece - sj * a.kv_heads;
  const uint32_t b = km_paged_div(a.by_budget, sj), j = sj - b * a.budget;
  const uint32_t row = b * a.kv_heads + h;
  const uint32_t tok = j < (uint32_t)a.select_len ? (uint32_t)__ldg(a.selected + (size_t)row * a.select_len + j)
                                                  : j + a.context - a.budget;
  const uint32_t tb = km_paged_div(a.by_block, tok), db = km_paged_div(a.by_block, j);
  const int64_t blk = __ldg(a.table + (size_t)b * a.bps + tb), dblk = __ldg(a.dst_table + (size_t)b * a.dst_bps + db);
  src = (((size_t)blk * a.block_size + (tok - tb * a.block_size)) * a.kv_heads + h) * VPP + c;
  dst = (((size_t)dblk * a.block_size + (j - db * a.block_size)) * a.kv_heads + h) * VPP + c;
}

// A thread's share of one tile in flight: U vectors of K and U of V (thread x, vectors x + u x kThreads of
// the tile) and where they go.
template <int U>
struct Stage {
  size_t dst[U];
  uint4 k[U], v[U];
};

// All of a tile's index loads, then all its data loads, so the index latencies overlap and the data loads
// issue back to back. FULL tiles (every one but the last) carry no bounds checks, so those loads issue
// unpredicated; a partial tile's vectors past the end take vector 0's (valid) indices and load nothing.
// The data loads are plain (coherent), not __ldg: ptxas may move a store above a non-coherent load (the
// two cannot alias), and at 4 and 8 vectors per thread and in the persistent walk it did, each hoisted
// store waiting for its data before the remaining loads issued (the SASS of the __ldg version); a coherent
// load may alias the stores, so the loads stay first.
template <int VPP, int U, bool FULL>
__device__ __forceinline__ void fetch(const CompactArgs &a, uint32_t first, Stage<U> &st) {
  size_t src[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t g = first + u * kThreads;
    vector_addrs<VPP>(a, FULL || g < a.total ? g : 0u, src[u], st.dst[u]);
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (FULL || first + u * kThreads < a.total) {
      st.k[u] = a.k[src[u]];
      st.v[u] = a.v[src[u]];
    }
}

template <int U, bool FULL>
__device__ __forceinline__ void put(const CompactArgs &a, uint32_t first, const Stage<U> &st) {
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (FULL || first + u * kThreads < a.total) {
      a.dk[st.dst[u]] = st.k[u];
      a.dv[st.dst[u]] = st.v[u];
    }
}

template <int VPP, int U, bool FULL>
__device__ __forceinline__ void copy_tile(const CompactArgs &a, uint32_t tile) {
  const uint32_t first = tile * (uint32_t)(kThreads * U) + threadIdx.x;
  Stage<U> st;
  fetch<VPP, U, FULL>(a, first, st);
  put<U, FULL>(a, first, st);
}

// Tiles of a grid of total vectors (the last one partial when kThreads x U does not divide it).
template <int U>
__device__ __forceinline__ uint32_t full_tiles(const CompactArgs &a) {
  return a.total / (uint32_t)(kThreads * U);
}

// A CTA per tile.
template <int VPP, int U>  // VPP: 16-byte vectors per piece, head_dim / 8
__global__ __launch_bounds__(kThreads) void compact_kernel(CompactArgs a) {
  static_assert((VPP & (VPP - 1)) == 0, "head_dim / 8 is a power of two");
  if (blockIdx.x < full_tiles<U>(a))  // CTA-uniform
    copy_tile<VPP, U, true>(a, blockIdx.x);
  else
    copy_tile<VPP, U, false>(a, blockIdx.x);
}

// One step of a persistent CTA's walk: tile t's loads are in flight in cur; issue tile t + grid's into next
// (so its index latencies pass while cur's data is on its way), then store cur (a full tile: no bounds).
// false once t has walked past the full tiles.
template <int VPP, int U>
__device__ __forceinline__ bool advance(const CompactArgs &a, uint32_t &t, uint32_t full, Stage<U> &cur,
                                        Stage<U> &next) {
  const uint32_t n = t + gridDim.x;
  if (n < full) fetch<VPP, U, true>(a, n * (uint32_t)(kThreads * U) + threadIdx.x, next);
  put<U, true>(a, 0, cur);
  t = n;
  return n < full;
}

// Resident CTAs walking the tiles with a grid stride (CTA c: tiles c, c + grid, ...), two stages in turn:
// copying the next stage into the current would stall on its loads. The CTA whose walk lands on the
// partial tile (index full) copies it last.
template <int VPP, int U>
__global__ __launch_bounds__(kThreads) void compact_persistent(CompactArgs a) {
  static_assert((VPP & (VPP - 1)) == 0, "head_dim / 8 is a power of two");
  const uint32_t full = full_tiles<U>(a);
  uint32_t t = blockIdx.x;
  if (t < full) {
    Stage<U> x, y;
    fetch<VPP, U, true>(a, t * (uint32_t)(kThreads * U) + threadIdx.x, x);
    while (advance<VPP, U>(a, t, full, x, y) && advance<VPP, U>(a, t, full, y, x)) {
      // each call does one step; the two stages swap roles between the calls
    }
  }
  if (t == full && full * (uint32_t)(kThreads * U) < a.total) copy_tile<VPP, U, false>(a, full);
}

typedef void (*compact_fn)(CompactArgs);

template <int U>
compact_fn kernel_of(int vpp, bool persistent) {
  if (persistent)
    return vpp == 8 ? compact_persistent<8, U> : vpp == 16 ? compact_persistent<16, U> : compact_persistent<32, U>;
  return vpp == 8 ? compact_kernel<8, U> : vpp == 16 ? compact_kernel<16, U> : compact_kernel<32, U>;
}

compact_fn kernel_for(int head_dim, const km_evict_compact_opts &o) {
  const int vpp = head_dim / 8;
  return o.unroll == 8 ? kernel_of<8>(vpp, o.persistent) : o.unroll == 4 ? kernel_of<4>(vpp, o.persistent)
                                                                         : kernel_of<2>(vpp, o.persistent);
}

uint64_t output_vectors(const km_evict_shape *s) {
  return (uint64_t)s->batch * s->budget * s->kv_heads * (s->head_dim / 8);
}

uint64_t tiles_of(const km_evict_shape *s, int unroll) {
  const uint64_t tile = (uint64_t)kThreads * unroll;
  return (output_vectors(s) + tile - 1) / tile;
}

// A persistent grid of at most `resident` CTAs that deals the tiles evenly: each CTA walks per =
// ceil(tiles / resident) of them (the remainder one fewer), so all are busy until the last step. 8,192
// tiles on 528 resident CTAs: 512 CTAs of 16, not 272 of 16 and 256 of 15 (half the loads in flight for the
// last step).
uint64_t balanced_grid(uint64_t tiles, uint64_t resident) {
  const uint64_t per = (tiles + resident - 1) / resident;
  return (tiles + per - 1) / per;
}

CompactArgs args_of(const km_evict_shape *s, const uint16_t *k_pool, const uint16_t *v_pool, const int32_t *table,
                    const int32_t *selected, uint16_t *dst_k, uint16_t *dst_v, const int32_t *dst_table) {
  CompactArgs a;
  a.k = reinterpret_cast<const uint4 *>(k_pool);
  a.v = reinterpret_cast<const uint4 *>(v_pool);
  a.dk = reinterpret_cast<uint4 *>(dst_k);
  a.dv = reinterpret_cast<uint4 *>(dst_v);
  a.table = table;
  a.selected = selected;
  a.dst_table = dst_table;
  a.total = (uint32_t)output_vectors(s);
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
  return a;
}

}  // namespace

extern "C" cudaError_t km_evict_select(const km_sparse_plan *plan, const km_evict_shape *s, const float *scores,
                                       int32_t *selected, cudaStream_t stream) {
  if (!plan || !s || km_evict_shape_error(s) || !scores || !selected) return cudaErrorInvalidValue;
  return km_sparse_topk(plan, scores, selected, km_evict_rows(s), km_evict_score_len(s), km_evict_select_len(s), stream);
}

extern "C" cudaError_t km_evict_compact_opts_make(const km_evict_shape *s, int unroll, int persistent,
                                                  km_evict_compact_opts *o) {
  if (!s || !o || km_evict_shape_error(s)) return cudaErrorInvalidValue;
  km_evict_compact_opts made = {unroll, persistent, persistent ? 1 : 0};
  if (km_evict_compact_opts_error(&made)) return cudaErrorInvalidValue;
  if (persistent) {
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_for(s->head_dim, made), kThreads, 0);
    if (e != cudaSuccess) return e;
    const uint64_t resident = (uint64_t)(sms > 0 ? sms : 1) * (uint64_t)(per_sm > 0 ? per_sm : 1);
    made.grid = (int)balanced_grid(tiles_of(s, unroll), resident);
  }
  *o = made;
  return cudaSuccess;
}

extern "C" cudaError_t km_evict_compact(const km_evict_compact_opts *opts, const km_evict_shape *s,
                                        const uint16_t *k_pool, const uint16_t *v_pool, const int32_t *table,
                                        const int32_t *selected, uint16_t *dst_k, uint16_t *dst_v,
                                        const int32_t *dst_table, cudaStream_t stream) {
  const km_evict_compact_opts fallback = {KM_EVICT_COMPACT_UNROLL, 0, 0};
  const km_evict_compact_opts &o = opts ? *opts : fallback;
  if (!s || km_evict_shape_error(s) || km_evict_compact_opts_error(&o) || !k_pool || !v_pool || !table || !selected ||
      !dst_k || !dst_v || !dst_table)
    return cudaErrorInvalidValue;
  if ((((uintptr_t)k_pool | (uintptr_t)v_pool | (uintptr_t)dst_k | (uintptr_t)dst_v) & 15u) != 0)
    return cudaErrorInvalidValue;
  const CompactArgs a = args_of(s, k_pool, v_pool, table, selected, dst_k, dst_v, dst_table);
  const unsigned grid = o.persistent ? (unsigned)o.grid : (unsigned)tiles_of(s, o.unroll);
  kernel_for(s->head_dim, o)<<<grid, kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}
