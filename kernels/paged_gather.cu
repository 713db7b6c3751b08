// Paged KV gather and its read-only variant (layouts and output order: paged_gather.h).
// Each CTA owns one contiguous chunk of output vectors and walks it in tiles of 256 threads x 4 vectors;
// every thread issues its 4 independent loads (16 B each) before its first store, and a vector finds
// its source with three multiply-high divisions and one table load (cached: a table entry serves a
// whole piece), so no per-element 64-bit division or modulo is paid.
#include "paged_gather.h"

namespace {

template <int VB>
struct vec_of;
template <>
struct vec_of<16> {
  typedef uint4 type;
};
template <>
struct vec_of<8> {
  typedef uint2 type;
};
template <>
struct vec_of<4> {
  typedef uint32_t type;
};

__device__ __forceinline__ uint32_t word_sum(uint4 v) { return v.x + v.y + v.z + v.w; }
__device__ __forceinline__ uint32_t word_sum(uint2 v) { return v.x + v.y; }
__device__ __forceinline__ uint32_t word_sum(uint32_t v) { return v; }

// One tile: all table loads, then all data loads, then all stores, so 4 loads per thread are in
// flight and the table latency is paid once per tile. FULL tiles (all but a CTA's last) carry no
// bounds checks, which keeps the loads unpredicated and free to issue back to back.
template <int VB, int UNROLL, bool FULL>
__device__ __forceinline__ void gather_tile(const km_paged_plan &p, const unsigned char *__restrict__ pool,
                                            const int32_t *__restrict__ table, unsigned char *__restrict__ out,
                                            uint32_t tile, uint32_t end) {
  typedef typename vec_of<VB>::type vec;
  vec r[UNROLL];
  uint32_t off[UNROLL];
  int32_t blk[UNROLL];
#pragma unroll
  for (int k = 0; k < UNROLL; ++k) {
    uint32_t v = tile + k * KM_PAGED_THREADS + threadIdx.x;
    if (FULL || v < end) {
      km_paged_pos pos = km_paged_position(&p, v);
      off[k] = pos.offset;
      blk[k] = table[pos.entry];
    }
  }
#pragma unroll
  for (int k = 0; k < UNROLL; ++k) {
    uint32_t v = tile + k * KM_PAGED_THREADS + threadIdx.x;
    if (FULL || v < end) r[k] = *reinterpret_cast<const vec *>(pool + km_paged_src(&p, blk[k], off[k]));
  }
#pragma unroll
  for (int k = 0; k < UNROLL; ++k) {
    uint32_t v = tile + k * KM_PAGED_THREADS + threadIdx.x;
    if (FULL || v < end) *reinterpret_cast<vec *>(out + (uint64_t)v * VB) = r[k];
  }
}

template <int VB>
__global__ void __launch_bounds__(KM_PAGED_THREADS, KM_PAGED_GATHER_CTAS_PER_SM)
    gather_kernel(const km_paged_plan p, const unsigned char *__restrict__ pool, const int32_t *__restrict__ table,
                  unsigned char *__restrict__ out) {
  constexpr int U = KM_PAGED_GATHER_UNROLL;
  uint32_t tile, end;
  km_paged_cta_range(&p, blockIdx.x, &tile, &end);
  for (; tile + KM_PAGED_THREADS * U <= end; tile += KM_PAGED_THREADS * U)
    gather_tile<VB, U, true>(p, pool, table, out, tile, end);
  if (tile < end) gather_tile<VB, U, false>(p, pool, table, out, tile, end);
}

// One atomic per warp when the whole warp ends on the same sequence (the common case), else per lane.
// Every thread of the CTA reaches this (no early exit), so full-warp shuffles are safe.
__device__ __forceinline__ void flush_warp(uint32_t *sums, uint32_t seq, uint32_t acc) {
  const unsigned full = 0xFFFFFFFFu;
  uint32_t lead = __shfl_sync(full, seq, 0);
  if (__all_sync(full, seq == lead)) {
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(full, acc, off);
    if ((threadIdx.x & 31) == 0 && seq != KM_PAGED_NO_SEQ) atomicAdd(sums + seq, acc);
  } else if (seq != KM_PAGED_NO_SEQ) {
    atomicAdd(sums + seq, acc);
  }
}

// The running sum of one thread: `cur` is the sequence it belongs to; a change of sequence (rare: a
// chunk spans few sequences) flushes it with one atomic.
struct seq_sum {
  uint32_t cur, acc;
};

template <int VB, int UNROLL, bool FULL>
__device__ __forceinline__ void read_tile(const km_paged_plan &p, const unsigned char *__restrict__ pool,
                                          const int32_t *__restrict__ table, uint32_t *__restrict__ sums,
                                          uint32_t tile, uint32_t end, seq_sum &s) {
  typedef typename vec_of<VB>::type vec;
  vec r[UNROLL];
  uint32_t off[UNROLL], seq[UNROLL];
  int32_t blk[UNROLL];
#pragma unroll
  for (int k = 0; k < UNROLL; ++k) {
    uint32_t v = tile + k * KM_PAGED_THREADS + threadIdx.x;
    seq[k] = KM_PAGED_NO_SEQ;
    if (FULL || v < end) {
      km_paged_pos pos = km_paged_position(&p, v);
      off[k] = pos.offset;
      seq[k] = pos.seq;
      blk[k] = table[pos.entry];
    }
  }
#pragma unroll
  for (int k = 0; k < UNROLL; ++k)
    if (FULL || seq[k] != KM_PAGED_NO_SEQ) r[k] = *reinterpret_cast<const vec *>(pool + km_paged_src(&p, blk[k], off[k]));
#pragma unroll
  for (int k = 0; k < UNROLL; ++k) {
    if (!FULL && seq[k] == KM_PAGED_NO_SEQ) continue;
    if (seq[k] != s.cur) {
      if (s.cur != KM_PAGED_NO_SEQ) atomicAdd(sums + s.cur, s.acc);
      s.cur = seq[k];
      s.acc = 0;
    }
    s.acc += word_sum(r[k]);
  }
}

template <int VB>
__global__ void __launch_bounds__(KM_PAGED_THREADS, KM_PAGED_READ_CTAS_PER_SM)
    read_kernel(const km_paged_plan p, const unsigned char *__restrict__ pool, const int32_t *__restrict__ table,
                uint32_t *__restrict__ sums) {
  constexpr int U = KM_PAGED_READ_UNROLL;
  uint32_t tile, end;
  km_paged_cta_range(&p, blockIdx.x, &tile, &end);
  seq_sum s = {KM_PAGED_NO_SEQ, 0};
  for (; tile + KM_PAGED_THREADS * U <= end; tile += KM_PAGED_THREADS * U)
    read_tile<VB, U, true>(p, pool, table, sums, tile, end, s);
  if (tile < end) read_tile<VB, U, false>(p, pool, table, sums, tile, end, s);
  flush_warp(sums, s.cur, s.acc);
}

// The gather launches one CTA per tile: the hardware hands tiles to SMs as they free up, which on the
// H200 moved 88% of the copy ceiling to 92-95% against CTAs that are persistent over one chunk each
// (a static split waits on its slowest SM). The read keeps persistent chunks, exactly the CTAs
// __launch_bounds__ guarantees resident: its per-sequence sums flush with atomics at each chunk's
// sequence boundaries, and one tile per CTA made those flushes dominate (33% of the ceiling).
cudaError_t plan_for(const km_paged_geom *g, uintptr_t align, bool gather, km_paged_plan *p) {
  if (gather) return km_paged_plan_make(g, align, KM_PAGED_GATHER_UNROLL, UINT32_MAX, p);
  int dev = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess) return e;
  return km_paged_plan_make(g, align, KM_PAGED_READ_UNROLL, (uint32_t)(sms > 0 ? sms : 1) * KM_PAGED_READ_CTAS_PER_SM, p);
}

typedef void (*gather_fn)(km_paged_plan, const unsigned char *, const int32_t *, unsigned char *);
typedef void (*read_fn)(km_paged_plan, const unsigned char *, const int32_t *, uint32_t *);

gather_fn gather_for(uint32_t vb) {
  return vb == 16 ? gather_kernel<16> : vb == 8 ? gather_kernel<8> : gather_kernel<4>;
}
read_fn read_for(uint32_t vb) { return vb == 16 ? read_kernel<16> : vb == 8 ? read_kernel<8> : read_kernel<4>; }

uint32_t ceil_log2(uint32_t d) {
  uint32_t l = 0;
  while (l < 32 && ((uint64_t)1 << l) < d) ++l;
  return l;
}

}  // namespace

extern "C" km_paged_divmod km_paged_divmod_make(uint32_t d) {
  km_paged_divmod dm;
  uint32_t l = ceil_log2(d);
  dm.d = d;
  dm.m = (uint32_t)((((uint64_t)1 << 32) * ((((uint64_t)1) << l) - d)) / d + 1);
  dm.s1 = l < 1 ? l : 1;
  dm.s2 = l > 0 ? l - 1 : 0;
  return dm;
}

extern "C" uint64_t km_paged_block_bytes(const km_paged_geom *g) {
  return (uint64_t)g->block_size * (uint64_t)g->kv_heads * (uint64_t)g->head_dim * (uint64_t)g->elem_bytes;
}

extern "C" uint64_t km_paged_piece_bytes(const km_paged_geom *g) {
  uint64_t block = km_paged_block_bytes(g);
  return g->layout == KM_PAGED_HND ? block / (uint64_t)g->kv_heads : block;
}

extern "C" uint64_t km_paged_output_bytes(const km_paged_geom *g) {
  return (uint64_t)g->num_seqs * (uint64_t)g->blocks_per_seq * km_paged_block_bytes(g);
}

extern "C" uint64_t km_paged_tokens(const km_paged_geom *g) {
  return (uint64_t)g->num_seqs * (uint64_t)g->blocks_per_seq * (uint64_t)g->block_size;
}

static int geom_valid(const km_paged_geom *g) {
  return g->block_size > 0 && g->kv_heads > 0 && g->head_dim > 0 && g->elem_bytes > 0 && g->num_blocks > 0 &&
         g->num_blocks <= INT32_MAX + (int64_t)1 && g->num_seqs > 0 && g->blocks_per_seq > 0 &&
         (g->layout == KM_PAGED_NHD || g->layout == KM_PAGED_HND);
}

extern "C" cudaError_t km_paged_plan_make(const km_paged_geom *g, uintptr_t align, uint32_t unroll, uint32_t max_ctas,
                                          km_paged_plan *p) {
  if (!g || !p || !geom_valid(g) || unroll == 0 || unroll > 64) return cudaErrorInvalidValue;
  uint64_t piece = km_paged_piece_bytes(g);
  uint32_t vb = 16;
  while (vb > 4 && ((piece % vb) != 0 || (align % vb) != 0)) vb /= 2;
  if (piece % vb != 0 || align % vb != 0) return cudaErrorInvalidValue;
  uint64_t total = km_paged_output_bytes(g) / vb;
  if (total == 0 || total > KM_PAGED_MAX_VECTORS || km_paged_block_bytes(g) > UINT32_MAX) return cudaErrorInvalidValue;
  p->total_vectors = (uint32_t)total;
  p->vec_bytes = vb;
  p->vecs_per_piece = (uint32_t)(piece / vb);
  p->blocks_per_seq = (uint32_t)g->blocks_per_seq;
  p->pieces_per_block = g->layout == KM_PAGED_HND ? (uint32_t)g->kv_heads : 1u;
  p->num_seqs = (uint32_t)g->num_seqs;
  p->piece_bytes = (uint32_t)piece;
  p->block_bytes = km_paged_block_bytes(g);
  p->by_piece = km_paged_divmod_make(p->vecs_per_piece);
  p->by_bps = km_paged_divmod_make(p->blocks_per_seq);
  p->by_ppb = km_paged_divmod_make(p->pieces_per_block);
  p->tile = KM_PAGED_THREADS * unroll;
  uint64_t tiles = (total + p->tile - 1) / p->tile;
  uint64_t ctas = max_ctas > 0 ? max_ctas : 1;
  uint64_t tiles_per_cta = (tiles + ctas - 1) / ctas;
  p->chunk = (uint32_t)(tiles_per_cta * p->tile);
  p->grid = (uint32_t)((total + p->chunk - 1) / p->chunk);
  return cudaSuccess;
}

extern "C" cudaError_t km_paged_gather(const km_paged_geom *g, const void *pool, const int32_t *table, void *out,
                                       cudaStream_t stream) {
  km_paged_plan p;
  cudaError_t e = plan_for(g, (uintptr_t)pool | (uintptr_t)out, true, &p);
  if (e != cudaSuccess) return e;
  gather_for(p.vec_bytes)<<<p.grid, KM_PAGED_THREADS, 0, stream>>>(
      p, static_cast<const unsigned char *>(pool), table, static_cast<unsigned char *>(out));
  return cudaGetLastError();
}

extern "C" cudaError_t km_paged_read_sum(const km_paged_geom *g, const void *pool, const int32_t *table,
                                         uint32_t *sums, cudaStream_t stream) {
  km_paged_plan p;
  cudaError_t e = plan_for(g, (uintptr_t)pool, false, &p);
  if (e != cudaSuccess) return e;
  read_for(p.vec_bytes)<<<p.grid, KM_PAGED_THREADS, 0, stream>>>(p, static_cast<const unsigned char *>(pool),
                                                                  table, sums);
  return cudaGetLastError();
}
