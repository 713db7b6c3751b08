// Quest-style sparse read, four stages: page summaries (min/max keys), page scores, an exact radix
// top-k per (sequence, KV head) row with ties to the lower page, and the gather of the chosen pages;
// plus the dense read they are compared with. Launchers return cudaGetLastError() after the launch.
#include "count_in.cuh"
#include "sparse_topk.h"

namespace {

constexpr int kPage = KM_SPARSE_PAGE_TOKENS;
constexpr unsigned kFull = 0xffffffffu;

// Inclusive prefix sum of v over the lanes of a warp (all 32 active).
__device__ __forceinline__ uint32_t warp_inclusive_sum(uint32_t v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const uint32_t u = __shfl_up_sync(kFull, v, off);
    if (lane >= off) v += u;
  }
  return v;
}

__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// Per bf16 lane keep `cur` unless `cand` is strictly larger (want_max) or smaller: ties keep the earlier
// token's bits, which is what makes the summary bitwise reproducible (and equal to the CPU's).
__device__ __forceinline__ uint32_t pick_pair(uint32_t cur, uint32_t cand, bool want_max) {
  const float c_lo = bf16_lo(cur), n_lo = bf16_lo(cand), c_hi = bf16_hi(cur), n_hi = bf16_hi(cand);
  const bool lo = want_max ? (n_lo > c_lo) : (n_lo < c_lo);
  const bool hi = want_max ? (n_hi > c_hi) : (n_hi < c_hi);
  return ((lo ? cand : cur) & 0x0000ffffu) | ((hi ? cand : cur) & 0xffff0000u);
}

__device__ __forceinline__ uint4 pick_vec(uint4 cur, uint4 cand, bool want_max) {
  return make_uint4(pick_pair(cur.x, cand.x, want_max), pick_pair(cur.y, cand.y, want_max),
                    pick_pair(cur.z, cand.z, want_max), pick_pair(cur.w, cand.w, want_max));
}

// ---------------------------------------------------------------- stage 1: summaries
// One thread per (sequence, page, KV head, 8-dim vector): its 16 token loads are all issued before use,
// and neighbouring threads read neighbouring 16-byte pieces of the same token row.
__global__ void summarize_kernel(const uint4 *keys, uint4 *summary, int batch, int tokens, int heads, int vecs,
                                 int pages) {
  const size_t items = (size_t)batch * pages * heads * vecs;
  const size_t tstride = (size_t)heads * vecs;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < items; i += (size_t)gridDim.x * blockDim.x) {
    const int c = (int)(i % vecs);
    size_t r = i / vecs;
    const int h = (int)(r % heads);
    r /= heads;
    const int page = (int)(r % pages);
    const int b = (int)(r / pages);
    const int valid = min(kPage, tokens - page * kPage);
    const uint4 *src = keys + ((size_t)b * tokens + (size_t)page * kPage) * tstride + (size_t)h * vecs + c;
    uint4 v[kPage];
#pragma unroll
    for (int t = 0; t < kPage; ++t) v[t] = (t < valid) ? src[t * tstride] : make_uint4(0, 0, 0, 0);
    uint4 mx = v[0], mn = v[0];
#pragma unroll
    for (int t = 1; t < kPage; ++t) {
      if (t < valid) {
        mx = pick_vec(mx, v[t], true);
        mn = pick_vec(mn, v[t], false);
      }
    }
    uint4 *dst = summary + (((size_t)b * heads + h) * pages + page) * 2 * vecs + c;
    dst[0] = mx;
    dst[vecs] = mn;
  }
}

// One thread per (sequence, KV head, 8-dim vector).
__global__ void append_kernel(const uint4 *keys, uint4 *summary, const int32_t *pos, int batch, int tokens, int heads,
                              int vecs, int pages) {
  const int items = batch * heads * vecs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
    const int c = i % vecs;
    const int h = (i / vecs) % heads;
    const int b = i / (vecs * heads);
    const int p = pos[b];
    if (p < 0 || p >= tokens) continue;
    const int page = p / kPage;
    const uint4 key = keys[((size_t)b * tokens + p) * heads * vecs + (size_t)h * vecs + c];
    uint4 *dst = summary + (((size_t)b * heads + h) * pages + page) * 2 * vecs + c;
    if (p % kPage == 0) {
      dst[0] = key;
      dst[vecs] = key;
    } else {
      dst[0] = pick_vec(dst[0], key, true);
      dst[vecs] = pick_vec(dst[vecs], key, false);
    }
  }
}

// ---------------------------------------------------------------- stage 2: scores
constexpr int kScoreThreads = 256;
constexpr int kScoreUnroll = 4;  // pages per lane group in flight: 2 x 16-byte loads each

template <int D, int WARPS = kScoreThreads / 32, int UNROLL = kScoreUnroll>
struct score_geom {
  static constexpr int lanes_per_page = D / 8;  // each lane covers 8 dims (one 16-byte vector)
  static constexpr int pages_per_warp = 32 / lanes_per_page;
  static constexpr int pages_per_cta = WARPS * pages_per_warp * UNROLL;
};

template <int G>
__device__ __forceinline__ float score_part(const float (&qf)[G][8], uint4 mx, uint4 mn) {
  const uint32_t mw[4] = {mx.x, mx.y, mx.z, mx.w};
  const uint32_t nw[4] = {mn.x, mn.y, mn.z, mn.w};
  float acc = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float m0 = bf16_lo(mw[j]), m1 = bf16_hi(mw[j]), n0 = bf16_lo(nw[j]), n1 = bf16_hi(nw[j]);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      acc += fmaxf(qf[g][2 * j] * m0, qf[g][2 * j] * n0);
      acc += fmaxf(qf[g][2 * j + 1] * m1, qf[g][2 * j + 1] * n1);
    }
  }
  return acc;
}

// Scores of chunk `chunk` (pages_per_cta pages) of row `row`, by a CTA of WARPS warps. A group of D/8
// lanes scores one page; a warp reads pages_per_warp neighbouring pages (contiguous summaries) per step,
// UNROLL steps in flight. Each page's sum depends only on its lane group (lane sub adds its 8 dims
// per group head in a fixed order, then the same butterfly), never on which warp or step took the page:
// so the fused selects, with twice the warps per CTA (v1) or twice the steps in flight (v2 at few rows),
// write bitwise the scores of score_kernel.
template <int D, int G, int WARPS, int UNROLL = kScoreUnroll>
__device__ __forceinline__ void score_chunk(const uint16_t *query, const uint4 *summary, float *scores, int kv_heads,
                                            int pages, int row, int chunk) {
  using geom = score_geom<D, WARPS, UNROLL>;
  constexpr int vecs = D / 8;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int sub = lane % geom::lanes_per_page, slot = lane / geom::lanes_per_page;
  const int b = row / kv_heads, h = row % kv_heads;

  float qf[G][8];
  const uint16_t *q = query + ((size_t)b * kv_heads * G + (size_t)h * G) * D + sub * 8;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const uint4 raw = *reinterpret_cast<const uint4 *>(q + (size_t)g * D);
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      qf[g][2 * j] = bf16_lo(w[j]);
      qf[g][2 * j + 1] = bf16_hi(w[j]);
    }
  }

  const uint4 *rs = summary + (size_t)row * pages * 2 * vecs;
  const int first = chunk * geom::pages_per_cta + warp * geom::pages_per_warp * UNROLL;
  uint4 mx[UNROLL], mn[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int page = first + u * geom::pages_per_warp + slot;
    const bool in = page < pages;
    mx[u] = in ? rs[(size_t)page * 2 * vecs + sub] : make_uint4(0, 0, 0, 0);
    mn[u] = in ? rs[(size_t)page * 2 * vecs + vecs + sub] : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int page = first + u * geom::pages_per_warp + slot;
    float acc = score_part<G>(qf, mx[u], mn[u]);
    // Every lane takes part (out-of-range pages add zeros), so the full mask is exact.
#pragma unroll
    for (int off = geom::lanes_per_page / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(kFull, acc, off);
    if (sub == 0 && page < pages) scores[(size_t)row * pages + page] = acc;
  }
}

// Grid: rows x chunks of pages_per_cta pages.
template <int D, int G>
__global__ __launch_bounds__(kScoreThreads) void score_kernel(const uint16_t *query, const uint4 *summary,
                                                              float *scores, int kv_heads, int pages, int chunks) {
  score_chunk<D, G, kScoreThreads / 32>(query, summary, scores, kv_heads, pages, blockIdx.x / chunks,
                                        blockIdx.x % chunks);
}

template <int D>
cudaError_t launch_score_d(const uint16_t *q, const uint16_t *sum, float *scores, km_sparse_shape s, int pages,
                           int group, cudaStream_t st) {
  const int chunks = (pages + score_geom<D>::pages_per_cta - 1) / score_geom<D>::pages_per_cta;
  const long long grid = (long long)s.batch * s.kv_heads * chunks;
  if (grid > 0x7fffffffLL) return cudaErrorInvalidValue;
  const uint4 *sv = reinterpret_cast<const uint4 *>(sum);
  switch (group) {
    case 1: score_kernel<D, 1><<<(unsigned)grid, kScoreThreads, 0, st>>>(q, sv, scores, s.kv_heads, pages, chunks); break;
    case 2: score_kernel<D, 2><<<(unsigned)grid, kScoreThreads, 0, st>>>(q, sv, scores, s.kv_heads, pages, chunks); break;
    case 4: score_kernel<D, 4><<<(unsigned)grid, kScoreThreads, 0, st>>>(q, sv, scores, s.kv_heads, pages, chunks); break;
    case 8: score_kernel<D, 8><<<(unsigned)grid, kScoreThreads, 0, st>>>(q, sv, scores, s.kv_heads, pages, chunks); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

// ---------------------------------------------------------------- stage 3: top-k
constexpr int kTopkThreads = 512;
constexpr int kTopkWarps = kTopkThreads / 32;
constexpr uint32_t kLastPageKey = 0xffffffffu;  // above every score's key: the last page always wins

// Order-preserving map float -> uint32 (IEEE total order); NaN maps below -inf. The largest a score can
// map to is 0xff800000 (+inf), so kLastPageKey is unique.
__device__ __forceinline__ uint32_t score_key(float s) {
  const uint32_t u = __float_as_uint(s);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

constexpr int kWideBits = 11;  // first pass: an 11-bit digit right below the row's common prefix
constexpr int kWideBins = 1 << kWideBits;
constexpr int kLoadBatch = 4;  // float4 loads per thread in flight before any is used

struct topk_shared {
  // The first pass's 2,048 counters, then (once the boundary bin is known) the keys of that bin: both
  // never live at once, so they share 8 KB.
  union {
    uint32_t wide[kWideBins];
    uint32_t cand[kWideBins];
  } u;
  uint32_t hist[256];  // the narrow 8-bit passes that finish the select
  uint32_t digit;
  uint32_t krem;
  uint32_t count;  // keys in the chosen bin
  uint32_t ncand;
  uint32_t last;  // the fused select: this CTA arrived last at its row and runs the row's top-k
  uint32_t warp_gt[kTopkWarps];
  uint32_t warp_eq[kTopkWarps];
  uint32_t warp_tot[kTopkWarps];
  uint32_t warp_min[kTopkWarps];
  uint32_t warp_max[kTopkWarps];
};

// Histogram of the digit at `shift` of the keys still matching `prefix` under `mask`. Lanes with the same
// digit are merged with __match_any_sync first, so a skewed row (most scores share their top byte) costs
// one shared atomic per distinct digit per warp instead of 32 serialised ones.
__device__ void radix_histogram(const uint32_t *keys, int n, uint32_t prefix, uint32_t mask, int shift,
                                uint32_t *hist) {
  const int lane = threadIdx.x & 31;
  for (int i0 = 0; i0 < n; i0 += kTopkThreads) {  // trip count uniform across the block
    const int i = i0 + (int)threadIdx.x;
    const uint32_t key = i < n ? keys[i] : 0u;
    const bool match = i < n && (key & mask) == prefix;
    const unsigned act = __ballot_sync(kFull, match);
    if (match) {
      const uint32_t digit = (key >> shift) & 255u;
      const unsigned peers = __match_any_sync(act, digit);
      if (lane == __ffs(peers) - 1) atomicAdd(&hist[digit], (uint32_t)__popc(peers));
    }
  }
}

// Warp 0: walk the bins from the top to the one holding the krem-th largest candidate. Lane l owns bins
// 255-8l .. 248-8l; an inclusive warp scan of the lane sums finds the lane, the lane finds the bin.
__device__ void radix_pick_bin(topk_shared &sh, uint32_t krem) {
  const int lane = threadIdx.x & 31;
  uint32_t c[8], sum = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    c[j] = sh.hist[255 - lane * 8 - j];
    sum += c[j];
  }
  const uint32_t incl = warp_inclusive_sum(sum);
  const uint32_t excl = incl - sum;
  if (excl < krem && krem <= incl) {
    uint32_t acc = excl;
    bool found = false;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (!found && acc + c[j] >= krem) {
        found = true;
        sh.digit = (uint32_t)(255 - lane * 8 - j);
        sh.krem = krem - acc;
      }
      if (!found) acc += c[j];
    }
  }
}

// Write the selected indices in ascending order: every key > T, and the first `krem` keys == T.
// Each warp owns a contiguous run of indices, so ballots give in-order ranks without a block scan.
__device__ void topk_compact(const uint32_t *keys, int n, uint32_t thr, uint32_t krem, topk_shared &sh,
                             int32_t *out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned lt = (1u << lane) - 1u;
  const int chunk = ((n + kTopkThreads - 1) / kTopkThreads) * 32;
  const int lo = warp * chunk, hi = min(n, lo + chunk);
  uint32_t gt = 0, eq = 0;
  for (int i0 = lo; i0 < lo + chunk; i0 += 32) {
    const int i = i0 + lane;
    const uint32_t key = i < hi ? keys[i] : 0u;
    gt += __popc(__ballot_sync(kFull, i < hi && key > thr));
    eq += __popc(__ballot_sync(kFull, i < hi && key == thr));
  }
  if (lane == 0) {
    sh.warp_gt[warp] = gt;
    sh.warp_eq[warp] = eq;
  }
  __syncthreads();
  uint32_t pos = 0, eq_run = 0;
  for (int w = 0; w < warp; ++w) {  // how many the earlier warps select
    const uint32_t e = sh.warp_eq[w];
    const uint32_t take = krem > eq_run ? min(e, krem - eq_run) : 0u;
    pos += sh.warp_gt[w] + take;
    eq_run += e;
  }
  for (int i0 = lo; i0 < lo + chunk; i0 += 32) {
    const int i = i0 + lane;
    const uint32_t key = i < hi ? keys[i] : 0u;
    const bool is_eq = i < hi && key == thr;
    const unsigned eqb = __ballot_sync(kFull, is_eq);
    const bool sel = (i < hi && key > thr) || (is_eq && eq_run + __popc(eqb & lt) < krem);
    const unsigned selb = __ballot_sync(kFull, sel);
    if (sel) out[pos + __popc(selb & lt)] = i;
    pos += __popc(selb);
    eq_run += __popc(eqb);
  }
}

// Scores as the top-k reads them. kFresh: written by other CTAs of this same launch (the fused select),
// so loaded at L2 (ld.global.cg): the read-only/L1 path is not coherent with those stores. Otherwise the
// row came from an earlier launch and may use the read-only path.
template <bool kFresh, typename T>
__device__ __forceinline__ T load_score(const T *p) {
  if constexpr (kFresh) return __ldcg(p);
  else return __ldg(p);
}

// Row -> keys in shared memory (the last page as kLastPageKey), each thread keeping the min and max of
// the keys it wrote other than the last page's. kLoadBatch float4 loads are issued before any is used.
template <bool kFresh>
__device__ void load_keys(const float *src, int n, uint32_t *keys, uint32_t &lo, uint32_t &hi) {
  lo = 0xffffffffu;
  hi = 0u;
  const int m = n - 1;
  if ((n & 3) == 0) {  // rows start 16-byte aligned: float4 loads
    const float4 *src4 = reinterpret_cast<const float4 *>(src);
    const int n4 = n / 4;
    for (int i0 = threadIdx.x; i0 < n4; i0 += kLoadBatch * kTopkThreads) {
      float4 v[kLoadBatch];
#pragma unroll
      for (int u = 0; u < kLoadBatch; ++u) {
        const int i = i0 + u * kTopkThreads;
        v[u] = i < n4 ? load_score<kFresh>(src4 + i) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < kLoadBatch; ++u) {
        const int i = i0 + u * kTopkThreads;
        if (i >= n4) break;
        const float f[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int at = 4 * i + j;
          const uint32_t key = at == m ? kLastPageKey : score_key(f[j]);
          keys[at] = key;
          if (at != m) {
            lo = min(lo, key);
            hi = max(hi, key);
          }
        }
      }
    }
  } else {
    for (int i = threadIdx.x; i < n; i += kTopkThreads) {
      const uint32_t key = i == m ? kLastPageKey : score_key(load_score<kFresh>(src + i));
      keys[i] = key;
      if (i != m) {
        lo = min(lo, key);
        hi = max(hi, key);
      }
    }
  }
}

// First pass: histogram of the 11-bit digit at `shift` of keys 0..m-1. Every such key lies in [lo, hi]
// and so shares the bits above the digit: no prefix test. Plain shared atomics, four in flight per thread;
// the digit sits right below the common prefix, so lanes rarely collide (a skewed row costs replays, not
// wrong counts).
__device__ void wide_histogram(const uint32_t *keys, int m, int shift, uint32_t *hist) {
#pragma unroll 4
  for (int i = threadIdx.x; i < m; i += kTopkThreads) atomicAdd(&hist[(keys[i] >> shift) & (kWideBins - 1)], 1u);
}

// Every thread: the bin holding the krem-th largest key, bins walked from the top. Warp w owns bins
// 2047-128w .. 1920-128w, lane l four of them; warp totals meet in shared memory (one barrier inside).
// Writes sh.digit, sh.krem (rank inside the bin), sh.count (keys in the bin); the caller syncs after.
__device__ void pick_wide_bin(topk_shared &sh, uint32_t krem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int low = kWideBins - 4 - warp * 128 - lane * 4;  // lowest of this lane's four bins
  const uint4 q = *reinterpret_cast<const uint4 *>(&sh.u.wide[low]);
  const uint32_t c[4] = {q.w, q.z, q.y, q.x};  // descending bin order
  const uint32_t sum = c[0] + c[1] + c[2] + c[3];
  const uint32_t incl = warp_inclusive_sum(sum);
  if (lane == 31) sh.warp_tot[warp] = incl;
  __syncthreads();
  uint32_t before = 0;
  for (int w = 0; w < warp; ++w) before += sh.warp_tot[w];
  const uint32_t excl = before + incl - sum;
  if (excl < krem && krem <= excl + sum) {
    uint32_t acc = excl;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (acc < krem && krem <= acc + c[j]) {
        sh.digit = (uint32_t)(low + 3 - j);
        sh.krem = krem - acc;
        sh.count = c[j];
      }
      acc += c[j];
    }
  }
}

// Copy the keys of bin `digit` (among keys 0..m-1) to sh.u.cand, in any order: the narrow passes only
// count them. One shared atomic per warp step that finds any.
__device__ void gather_bin(const uint32_t *keys, int m, int shift, uint32_t digit, topk_shared &sh) {
  const int lane = threadIdx.x & 31;
  const unsigned lt = (1u << lane) - 1u;
  for (int i0 = 0; i0 < m; i0 += kTopkThreads) {  // trip count uniform across the block
    const int i = i0 + (int)threadIdx.x;
    const uint32_t key = i < m ? keys[i] : 0u;
    const bool in = i < m && ((key >> shift) & (kWideBins - 1)) == digit;
    const unsigned bal = __ballot_sync(kFull, in);
    if (bal == 0) continue;  // warp-uniform
    uint32_t base = 0;
    if (lane == 0) base = atomicAdd(&sh.ncand, (uint32_t)__popc(bal));
    base = __shfl_sync(kFull, base, 0);
    if (in) sh.u.cand[base + __popc(bal & lt)] = key;
  }
}

// One CTA per row; the last page is always chosen, so the select runs over the other m = n-1 pages for
// the (k-1)-th largest key T and how many keys equal to T to take (krem). Stages:
//  1. load (keys to shared memory, block min/max of the keys: the bits above their highest differing bit
//     are common to all, so the first digit starts right below them);
//  2. one 11-bit histogram pass over the row, the boundary bin picked by the whole block;
//  3. the boundary bin's keys (random scores: a handful to ~100; at most 2,048) gathered into shared
//     memory and the remaining <= 21 bits resolved by 8-bit passes over those only; a bin larger than
//     2,048 (heavy ties, outliers) runs the same passes over the whole row instead;
//  4. the unchanged compaction (all keys > T, then the first krem keys == T, ascending page order).
// Predicted on the H200, r512/p8192 (4 CTAs/SM, one wave): load ~5 us (16 MB from HBM/L2 plus latency),
// min/max ~1 us, wide pass ~5 us, pick ~1 us, gather ~4 us, narrow passes over <= ~100 keys ~3 us
// (9 barriers), compaction ~8 us: ~27 us against 54 us for four full-row radix passes.
// Fewer scans of the row and no __match_any_sync on the common path are where the time goes.
// Shared memory: keys 4n bytes + ~10 KB: four CTAs of 512 per SM for n = 8192 (4 x 42.5 KB).
// The row's select, by the whole CTA (kTopkThreads threads), shared by topk_kernel and the fused select
// (which differ only in how the row is loaded: see load_score): src = the row's n scores, out = its k slots.
template <bool kFresh>
__device__ __forceinline__ void topk_row(const float *src, int32_t *out, int n, int k, uint32_t *keys,
                                         topk_shared &sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, m = n - 1;
  uint32_t lo, hi;
  load_keys<kFresh>(src, n, keys, lo, hi);
  for (int i = threadIdx.x; i < kWideBins; i += kTopkThreads) sh.u.wide[i] = 0;
  if (threadIdx.x == 0) sh.ncand = 0;
  lo = __reduce_min_sync(kFull, lo);
  hi = __reduce_max_sync(kFull, hi);
  if (lane == 0) {
    sh.warp_min[warp] = lo;
    sh.warp_max[warp] = hi;
  }
  __syncthreads();  // keys, cleared counters, warp min/max
#pragma unroll
  for (int w = 0; w < kTopkWarps; ++w) {
    lo = min(lo, sh.warp_min[w]);
    hi = max(hi, sh.warp_max[w]);
  }
  uint32_t thr = kLastPageKey, krem = 1;  // k == 1: the last page alone
  if (k > 1 && lo == hi) {                // every other key equal: the lowest k-1 pages
    thr = lo;
    krem = (uint32_t)(k - 1);
  } else if (k > 1) {
    const int top = 31 - __clz(lo ^ hi);  // highest bit where the row's keys differ
    int shift = max(top - (kWideBits - 1), 0);
    wide_histogram(keys, m, shift, sh.u.wide);
    __syncthreads();
    pick_wide_bin(sh, (uint32_t)(k - 1));
    __syncthreads();
    const uint32_t digit = sh.digit, count = sh.count;
    krem = sh.krem;
    const uint32_t common = top >= 31 ? 0u : ~0u << (top + 1);
    uint32_t mask = common | ((uint32_t)(kWideBins - 1) << shift);
    uint32_t prefix = (lo & common) | (digit << shift);
    const bool narrow = shift > 0 && count <= (uint32_t)kWideBins;  // the bin's keys alone carry the rest
    if (narrow) gather_bin(keys, m, shift, digit, sh);
    const int len = narrow ? (int)count : m;
    while (shift > 0) {  // 8-bit passes over the remaining low bits
      shift = max(shift - 8, 0);
      if (threadIdx.x < 256) sh.hist[threadIdx.x] = 0;
      __syncthreads();  // gathered keys / cleared counters visible; last pass's digit/krem read by all
      radix_histogram(narrow ? sh.u.cand : keys, len, prefix, mask, shift, sh.hist);
      __syncthreads();
      if (threadIdx.x < 32) radix_pick_bin(sh, krem);
      __syncthreads();
      prefix |= sh.digit << shift;
      mask |= 255u << shift;
      krem = sh.krem;
    }
    thr = prefix;
  }
  topk_compact(keys, n, thr, krem, sh, out);
}

__global__ __launch_bounds__(kTopkThreads, 4) void topk_kernel(const float *scores, int32_t *selected, int n, int k) {
  extern __shared__ uint32_t keys[];
  __shared__ topk_shared sh;
  topk_row<false>(scores + (size_t)blockIdx.x * n, selected + (size_t)blockIdx.x * k, n, k, keys, sh);
}

// ---------------------------------------------------------------- stages 2 + 3 fused: select
// One launch for score + top-k, so that a few rows (batch 1: 8) still fill the GPU. Grid: rows x chunks,
// a CTA of kTopkThreads (16 warps) scoring one chunk of 16 * pages_per_warp * kScoreUnroll pages (d 128:
// 128 pages, 16 CTAs per row of 2,048) with score_chunk, as score_kernel does. Each CTA then counts its
// arrival on its row's counter (fences on both sides: its scores are visible at GPU scope before the
// count, and the last arriver's reads come after it); the CTA that arrives last holds the only copy of the
// count that says the row is complete, runs topk_row on the row (read back at L2, where the other CTAs'
// stores are) and puts the counter back to 0 for the next launch. No CTA waits on another, so the grid
// needs no co-residency and works at any size.
// Measured on an H200 (graph replay, summaries rotated past L2), d128 group 4, 2,048 pages, k 128:
//   8 rows (b1):    select 10.3 us; score 4.6 + top-k 5.8 = 10.5 us as two launches; select with k = 1
//                   (no radix passes) 7.4 us. So the tail (one CTA's select of a row after the scores)
//                   is ~5.5 us, ~3 us of it the radix passes over only 2,048 keys: latency, not traffic.
//   128 rows (b16): select 49 us against 43 us for the two launches: slower (the scoring half alone, as
//                   16-warp CTAs 2 per SM, is ~8 us slower than score_kernel's 8-warp CTAs 4 per SM).
// What would make it pay: a top-k tail of ~1 us (keys kept in registers, fewer barriers), and score CTAs
// shaped like score_kernel's. See reports/sparse-notes.md.
// Registers: score_chunk holds G x 8 floats of query (G = 8: 64), so 2 CTAs of 512 per SM, not 4.
template <int D, int G>
__global__ __launch_bounds__(kTopkThreads, G >= 8 ? 1 : 2) void select_kernel(const uint16_t *query, const uint4 *summary,
                                                                 float *scores, uint32_t *counters,
                                                                 int32_t *selected, int kv_heads, int pages,
                                                                 int chunks, int k) {
  extern __shared__ uint32_t keys[];
  __shared__ topk_shared sh;
  const int row = blockIdx.x / chunks;
  score_chunk<D, G, kTopkWarps>(query, summary, scores, kv_heads, pages, row, blockIdx.x % chunks);
  // Release: the barrier orders every thread's score stores before thread 0's count, whose release (cumulative)
  // makes them visible at GPU scope before the arrival is counted (kernels/count_in.cuh); one per CTA rather than a
  // fence per thread (measured with __threadfence: no difference in time either way).
  __syncthreads();
  if (threadIdx.x == 0) sh.last = km_count_in(&counters[row], (unsigned)chunks);
  __syncthreads();
  if (!sh.last) return;  // block-uniform
  topk_row<true>(scores + (size_t)row * pages, selected + (size_t)row * k, pages, k, keys, sh);
}

using select_fn = void (*)(const uint16_t *, const uint4 *, float *, uint32_t *, int32_t *, int, int, int, int);

template <int D>
select_fn select_for_group(int group) {
  switch (group) {
    case 1: return select_kernel<D, 1>;
    case 2: return select_kernel<D, 2>;
    case 4: return select_kernel<D, 4>;
    case 8: return select_kernel<D, 8>;
    default: return nullptr;
  }
}

select_fn select_for(int head_dim, int group) {
  switch (head_dim) {
    case 64: return select_for_group<64>(group);
    case 128: return select_for_group<128>(group);
    case 256: return select_for_group<256>(group);
    default: return nullptr;
  }
}

int select_chunk_pages(int head_dim) {
  switch (head_dim) {
    case 64: return score_geom<64, kTopkWarps>::pages_per_cta;
    case 128: return score_geom<128, kTopkWarps>::pages_per_cta;
    case 256: return score_geom<256, kTopkWarps>::pages_per_cta;
    default: return 0;
  }
}

// ---------------------------------------------------------------- stages 2 + 3 fused, v2
// The same contract as select_kernel (scores bitwise those of score_kernel, the same selection, the same
// counters), reshaped after the measurements above:
//  - scoring CTAs of 256 threads, as score_kernel's, and at UNROLL 4 exactly its geometry (d128: 64 pages
//    per CTA, 32 CTAs per row of 2,048) and its occupancy (same register caps). At few rows (the grid at
//    UNROLL 8 fits one CTA per SM: 8 rows x 2,048 pages at d128 is 128 CTAs) each thread keeps 8 pages,
//    16 loads of 16 bytes, in flight instead of 4: the same bytes in flight per SM as v1 with half its
//    threads, and half the arrivals on each counter;
//  - the top-k tail of the last CTA keeps the row's keys in registers (thread t: pages t*KPT .. t*KPT +
//    KPT-1, KPT = 8 up to 2,048 pages, 16 up to 4,096; the last page as kLastPageKey, so the select is
//    for the k-th largest of all n keys and k = 1 needs no special case) and resolves the k-th key with a
//    radix select of three digits (bits 31..21, 20..10, 9..0), each digit one histogram step on its own
//    pre-zeroed shared counters and one __syncthreads: the boundary bin is then found by every warp on its
//    own (chunk totals by __reduce_add_sync, a suffix scan over the chunk's 32 lanes), so nothing has to
//    be broadcast. A digit whose boundary bin is taken whole (its count equals the keys still needed:
//    random scores after the second digit) ends the select. The compaction is one block-wide exclusive
//    scan of (keys above, keys equal) packed in one word, one more __syncthreads, and each thread writes
//    its own selected pages in order. Four barriers after the arrival (three on random rows) against
//    ~12 in topk_row, and no shared-memory copy of the keys.
constexpr int kSelect2Threads = 256;
constexpr int kSelect2Warps = kSelect2Threads / 32;
constexpr int kSelect2MaxPages = 16 * kSelect2Threads;  // KPT 16: above this, v2 runs select_kernel
constexpr int kDigit1 = 2048, kDigit2 = 2048, kDigit3 = 1024;  // bins of the three digits
constexpr int kHistWords = kDigit1 + kDigit2 + kDigit3;

struct alignas(16) select2_shared {
  uint32_t hist[kHistWords];  // the three digits' counters, each used by one pass only (zeroed up front)
  uint32_t warp_sum[kSelect2Warps];
  uint32_t last;
};

// One digit of the register radix select: count the BITS-bit digit at `shift` of the keys that still
// match `prefix` under `mask` into `hist` (zero, this pass's own), one shared atomic per distinct digit
// per warp and key slot (lanes merged by __match_any_sync; a slot where no lane matches is skipped by the
// whole warp, which is most slots after the first digit), then one barrier. Every warp then finds the
// bin from the top holding the krem-th matching key on its own: bins in chunks of 128 (lane l: bins
// 128c+4l .. 128c+4l+3, one conflict-free 16-byte read), chunk totals by __reduce_add_sync, the chunk
// found by a uniform walk from the top, the lane by a suffix scan over the chunk, the bin by that lane.
// Updates prefix, mask, krem (rank inside the bin) and count (keys in the bin), equal in every thread.
template <int KPT, int BITS>
__device__ __forceinline__ void reg_radix_pass(const uint32_t (&key)[KPT], int nv, int shift, uint32_t *hist,
                                               uint32_t &prefix, uint32_t &mask, uint32_t &krem, uint32_t &count) {
  constexpr int bins = 1 << BITS;
  constexpr int chunks = bins / 128;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    const bool in = j < nv && (key[j] & mask) == prefix;
    const unsigned act = __ballot_sync(kFull, in);
    if (act == 0) continue;  // warp-uniform
    if (in) {
      const uint32_t d = (key[j] >> shift) & (uint32_t)(bins - 1);
      const unsigned peers = __match_any_sync(act, d);
      if (lane == __ffs(peers) - 1) atomicAdd(&hist[d], (uint32_t)__popc(peers));
    }
  }
  __syncthreads();
  uint32_t tot[chunks];
#pragma unroll
  for (int c = 0; c < chunks; ++c) {
    const uint4 q = *reinterpret_cast<const uint4 *>(&hist[128 * c + 4 * lane]);
    tot[c] = __reduce_add_sync(kFull, q.x + q.y + q.z + q.w);
  }
  uint32_t above = 0;  // matching keys in the chunks above the boundary chunk
  int cb = 0;
  bool found = false;
#pragma unroll
  for (int c = chunks - 1; c >= 0; --c) {
    if (!found) {
      if (above + tot[c] >= krem) {
        cb = c;
        found = true;
      } else {
        above += tot[c];
      }
    }
  }
  const uint4 q = *reinterpret_cast<const uint4 *>(&hist[128 * cb + 4 * lane]);
  const uint32_t c4[4] = {q.w, q.z, q.y, q.x};  // descending bin order
  const uint32_t sum = c4[0] + c4[1] + c4[2] + c4[3];
  uint32_t incl = sum;  // this lane and the lanes above it (higher bins)
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const uint32_t v = __shfl_down_sync(kFull, incl, off);
    if (lane + off < 32) incl += v;
  }
  const uint32_t excl = above + incl - sum;
  const bool here = excl < krem && krem <= excl + sum;  // exactly one lane
  const int src = __ffs(__ballot_sync(kFull, here)) - 1;
  uint32_t digit = 0, rank = 0, cnt = 0;
  if (here) {
    uint32_t acc = excl;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (acc < krem && krem <= acc + c4[j]) {
        digit = (uint32_t)(128 * cb + 4 * lane + 3 - j);
        rank = krem - acc;
        cnt = c4[j];
      }
      acc += c4[j];
    }
  }
  digit = __shfl_sync(kFull, digit, src);
  krem = __shfl_sync(kFull, rank, src);
  count = __shfl_sync(kFull, cnt, src);
  prefix |= digit << shift;
  mask |= (uint32_t)(bins - 1) << shift;
}

// The row's select by the whole CTA (kSelect2Threads threads, n <= KPT * kSelect2Threads), keys in
// registers: src = the row's n scores (written by this launch: read at L2), out = its k slots.
template <int KPT>
__device__ __forceinline__ void topk_row_regs(const float *src, int32_t *out, int n, int k, select2_shared &sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int base = (int)threadIdx.x * KPT;
  const int nv = min(max(n - base, 0), KPT);  // this thread's pages
  uint32_t key[KPT];
  if ((n & 3) == 0) {  // rows start 16-byte aligned, nv is a multiple of 4: KPT/4 float4 loads, all in flight
    const float4 *s4 = reinterpret_cast<const float4 *>(src + base);
    float4 v[KPT / 4];
#pragma unroll
    for (int u = 0; u < KPT / 4; ++u) v[u] = 4 * u < nv ? __ldcg(s4 + u) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int u = 0; u < KPT / 4; ++u) {
      key[4 * u] = score_key(v[u].x);
      key[4 * u + 1] = score_key(v[u].y);
      key[4 * u + 2] = score_key(v[u].z);
      key[4 * u + 3] = score_key(v[u].w);
    }
  } else {
    float f[KPT];
#pragma unroll
    for (int j = 0; j < KPT; ++j) f[j] = j < nv ? __ldcg(src + base + j) : 0.f;
#pragma unroll
    for (int j = 0; j < KPT; ++j) key[j] = score_key(f[j]);
  }
#pragma unroll
  for (int j = 0; j < KPT; ++j)
    if (base + j == n - 1) key[j] = kLastPageKey;  // static indices: the keys stay in registers
  uint32_t prefix = 0, mask = 0, krem = (uint32_t)k, count = 0;
  reg_radix_pass<KPT, 11>(key, nv, 21, sh.hist, prefix, mask, krem, count);
  if (count != krem) reg_radix_pass<KPT, 11>(key, nv, 10, sh.hist + kDigit1, prefix, mask, krem, count);
  if (count != krem) reg_radix_pass<KPT, 10>(key, nv, 0, sh.hist + kDigit1 + kDigit2, prefix, mask, krem, count);
  // Selected: every key whose resolved bits are above the boundary, and the first krem equal to it (all
  // of them when the select ended early, as then count == krem). Packed: above in bits 0..15, equal in
  // 16..31 (each at most n <= 4,096, so no carry crosses).
  uint32_t gt = 0, eq = 0;
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    const uint32_t km = key[j] & mask;
    gt += j < nv && km > prefix;
    eq += j < nv && km == prefix;
  }
  const uint32_t packed = gt | eq << 16;
  const uint32_t incl = warp_inclusive_sum(packed);
  if (lane == 31) sh.warp_sum[warp] = incl;
  __syncthreads();
  uint32_t before = incl - packed;
#pragma unroll
  for (int w = 0; w < kSelect2Warps; ++w)
    if (w < warp) before += sh.warp_sum[w];
  uint32_t eq_run = before >> 16;
  uint32_t pos = (before & 0xffffu) + min(eq_run, krem);
#pragma unroll
  for (int j = 0; j < KPT; ++j) {
    const uint32_t km = key[j] & mask;
    const bool is_eq = j < nv && km == prefix;
    if ((j < nv && km > prefix) || (is_eq && eq_run < krem)) out[pos++] = base + j;
    eq_run += is_eq;
  }
}

// Grid: rows x chunks of score_geom<D, 8, UNROLL>::pages_per_cta pages. Register caps as score_kernel's
// occupancy at UNROLL 4 (4 CTAs per SM, 3 at group 8); UNROLL 8 runs one CTA per SM.
template <int D, int G, int UNROLL, int KPT>
__global__ __launch_bounds__(kSelect2Threads, UNROLL >= 8 ? 1 : (G >= 8 ? 3 : 4)) void select2_kernel(
    const uint16_t *query, const uint4 *summary, float *scores, uint32_t *counters, int32_t *selected, int kv_heads,
    int pages, int chunks, int k) {
  __shared__ select2_shared sh;
  // Any CTA may turn out last: every one clears the counters (5 x 16-byte stores a thread) while its
  // summary loads are in flight; the arrival barrier below orders them before the tail's atomics.
  static_assert(kHistWords % (4 * kSelect2Threads) == 0, "whole 16-byte stores per thread");
  uint4 *z = reinterpret_cast<uint4 *>(sh.hist);
#pragma unroll
  for (int i = 0; i < kHistWords / (4 * kSelect2Threads); ++i)
    z[threadIdx.x + i * kSelect2Threads] = make_uint4(0, 0, 0, 0);
  const int row = blockIdx.x / chunks;
  score_chunk<D, G, kSelect2Warps, UNROLL>(query, summary, scores, kv_heads, pages, row, blockIdx.x % chunks);
  // release / acquire on the row's counter exactly as select_kernel
  __syncthreads();
  if (threadIdx.x == 0) sh.last = km_count_in(&counters[row], (unsigned)chunks);
  __syncthreads();
  if (!sh.last) return;  // block-uniform
  topk_row_regs<KPT>(scores + (size_t)row * pages, selected + (size_t)row * k, pages, k, sh);
}

template <int D, int G>
select_fn select2_for_dg(int unroll, int kpt) {
  if (unroll == 8) return kpt == 8 ? select2_kernel<D, G, 8, 8> : select2_kernel<D, G, 8, 16>;
  return kpt == 8 ? select2_kernel<D, G, 4, 8> : select2_kernel<D, G, 4, 16>;
}

template <int D>
select_fn select2_for_d(int group, int unroll, int kpt) {
  switch (group) {
    case 1: return select2_for_dg<D, 1>(unroll, kpt);
    case 2: return select2_for_dg<D, 2>(unroll, kpt);
    case 4: return select2_for_dg<D, 4>(unroll, kpt);
    case 8: return select2_for_dg<D, 8>(unroll, kpt);
    default: return nullptr;
  }
}

select_fn select2_for(int head_dim, int group, int unroll, int kpt) {
  switch (head_dim) {
    case 64: return select2_for_d<64>(group, unroll, kpt);
    case 128: return select2_for_d<128>(group, unroll, kpt);
    case 256: return select2_for_d<256>(group, unroll, kpt);
    default: return nullptr;
  }
}

template <int D>
int select2_chunk_pages_d(int unroll) {
  return unroll == 8 ? score_geom<D, kSelect2Warps, 8>::pages_per_cta : score_geom<D, kSelect2Warps, 4>::pages_per_cta;
}

int select2_chunk_pages(int head_dim, int unroll) {
  switch (head_dim) {
    case 64: return select2_chunk_pages_d<64>(unroll);
    case 128: return select2_chunk_pages_d<128>(unroll);
    case 256: return select2_chunk_pages_d<256>(unroll);
    default: return 0;
  }
}

// ---------------------------------------------------------------- stage 4: sparse read
constexpr int kReadThreads = 256;
constexpr int kReadUnroll = 8;  // 16-byte vectors per lane per tensor in flight (K and V: 16 loads)

// One warp per selected page: a page of one KV head is 16 token rows of D*2 bytes (strided by the other
// heads), copied with every lane issuing kReadUnroll K loads and kReadUnroll V loads before any store.
template <int VECS>
__global__ __launch_bounds__(kReadThreads) void read_kernel(const uint4 *kc, const uint4 *vc, const int32_t *sel,
                                                            uint4 *ko, uint4 *vo, int heads, int tokens, int k,
                                                            size_t items) {
  constexpr int page_vecs = kPage * VECS;
  const int lane = threadIdx.x & 31;
  const size_t warps = (size_t)gridDim.x * (kReadThreads / 32);
  const size_t tstride = (size_t)heads * VECS;
  for (size_t it = blockIdx.x * (size_t)(kReadThreads / 32) + (threadIdx.x >> 5); it < items; it += warps) {
    const size_t row = it / k;
    const int b = (int)(row / heads), h = (int)(row % heads);
    const int page = sel[it];
    const size_t base = ((size_t)b * tokens + (size_t)page * kPage) * tstride + (size_t)h * VECS;
    uint4 *kd = ko + it * page_vecs;
    uint4 *vd = vo + it * page_vecs;
    for (int v0 = 0; v0 < page_vecs; v0 += 32 * kReadUnroll) {
      uint4 a[kReadUnroll], c[kReadUnroll];
#pragma unroll
      for (int u = 0; u < kReadUnroll; ++u) {
        const int f = v0 + u * 32 + lane;
        if (f < page_vecs) {
          const size_t off = base + (size_t)(f / VECS) * tstride + (f % VECS);
          a[u] = kc[off];
          c[u] = vc[off];
        }
      }
#pragma unroll
      for (int u = 0; u < kReadUnroll; ++u) {
        const int f = v0 + u * 32 + lane;
        if (f < page_vecs) {
          kd[f] = a[u];
          vd[f] = c[u];
        }
      }
    }
  }
}

template <int VECS>
cudaError_t launch_read(const uint16_t *keys, const uint16_t *values, const int32_t *sel, int k, uint16_t *ko,
                        uint16_t *vo, km_sparse_shape s, cudaStream_t st) {
  const size_t items = (size_t)s.batch * s.kv_heads * k;
  if (items == 0) return cudaSuccess;
  // a warp per page, a block per 8 pages: the hardware hands pages to SMs as they free up (a persistent
  // grid waited on its slowest SM: 85.7% of the copy ceiling at 128K/2048/b16)
  const size_t grid = (items + kReadThreads / 32 - 1) / (kReadThreads / 32);
  if (grid > 0x7fffffffu) return cudaErrorInvalidValue;
  read_kernel<VECS><<<(unsigned)grid, kReadThreads, 0, st>>>(
      reinterpret_cast<const uint4 *>(keys), reinterpret_cast<const uint4 *>(values), sel,
      reinterpret_cast<uint4 *>(ko), reinterpret_cast<uint4 *>(vo), s.kv_heads, s.tokens, k, items);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- dense read
constexpr int kDenseThreads = 256;
constexpr int kDenseUnroll = 4;

__device__ __forceinline__ uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

__device__ uint32_t xor_stream(const uint4 *p, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  for (; i + (kDenseUnroll - 1) * stride < n; i += kDenseUnroll * stride) {
    uint4 v[kDenseUnroll];
#pragma unroll
    for (int u = 0; u < kDenseUnroll; ++u) v[u] = __ldcs(p + i + u * stride);  // streamed once: evict first
#pragma unroll
    for (int u = 0; u < kDenseUnroll; ++u) acc ^= fold(v[u]);
  }
  for (; i < n; i += stride) acc ^= fold(__ldcs(p + i));
  return acc;
}

__global__ __launch_bounds__(kDenseThreads) void dense_kernel(const uint4 *a, const uint4 *b, size_t n,
                                                              uint32_t *partials) {
  uint32_t acc = xor_stream(a, n) ^ xor_stream(b, n);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc ^= __shfl_xor_sync(kFull, acc, off);
  if ((threadIdx.x & 31) == 0) partials[blockIdx.x * (kDenseThreads / 32) + (threadIdx.x >> 5)] = acc;
}

bool shape_ok(const km_sparse_shape &s) {
  return s.batch > 0 && s.tokens > 0 && s.kv_heads > 0 && s.q_heads > 0 && s.q_heads % s.kv_heads == 0 &&
         (s.head_dim == 64 || s.head_dim == 128 || s.head_dim == 256);
}

int page_count(const km_sparse_shape &s) { return (s.tokens + kPage - 1) / kPage; }

unsigned grid_for(const km_sparse_plan *plan, size_t items, int threads) {
  size_t g = (items + threads - 1) / threads;
  const size_t cap = (size_t)plan->sms * 16;  // grid-stride beyond a few waves
  if (g > cap) g = cap;
  return g == 0 ? 1u : (unsigned)g;
}

}  // namespace

extern "C" cudaError_t km_sparse_plan_make(km_sparse_plan *plan) {
  int dev = 0, sms = 0, optin = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dense_kernel, kDenseThreads, 0);
  if (e != cudaSuccess) return e;
  // the opt-in less the kernel's static shared memory as built (topk_shared rounded up by the compiler:
  // sizeof alone can fall a few bytes short, and then the attribute below is refused)
  cudaFuncAttributes tfa;
  e = cudaFuncGetAttributes(&tfa, topk_kernel);
  if (e != cudaSuccess) return e;
  const int avail = optin - (int)tfa.sharedSizeBytes;
  if (sms < 1 || avail <= 0) return cudaErrorInvalidValue;
  e = cudaFuncSetAttribute(topk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, avail);
  if (e != cudaSuccess) return e;
  // every fused select instance: its own static shared memory (topk_shared, as topk_kernel) off the opt-in
  int select_avail = avail;
  static const int dims[3] = {64, 128, 256}, groups[4] = {1, 2, 4, 8};
  for (int d : dims)
    for (int g : groups) {
      const select_fn fn = select_for(d, g);
      cudaFuncAttributes fa;
      e = cudaFuncGetAttributes(&fa, fn);
      if (e != cudaSuccess) return e;
      const int a = optin - (int)fa.sharedSizeBytes;
      if (a <= 0) return cudaErrorInvalidValue;
      e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, a);
      if (e != cudaSuccess) return e;
      if (a < select_avail) select_avail = a;
    }
  plan->sms = sms;
  plan->dense_grid = sms * (per_sm > 0 ? per_sm : 1);
  plan->topk_max_pages = avail / (int)sizeof(uint32_t);
  plan->select_max_pages = select_avail / (int)sizeof(uint32_t);
  return cudaSuccess;
}

extern "C" cudaError_t km_sparse_summarize(const km_sparse_plan *plan, const uint16_t *keys, uint16_t *summary,
                                           km_sparse_shape s, cudaStream_t stream) {
  if (!plan || !shape_ok(s)) return cudaErrorInvalidValue;
  const int vecs = s.head_dim / 8, pages = page_count(s);
  const size_t items = (size_t)s.batch * pages * s.kv_heads * vecs;
  summarize_kernel<<<grid_for(plan, items, 256), 256, 0, stream>>>(reinterpret_cast<const uint4 *>(keys),
                                                             reinterpret_cast<uint4 *>(summary), s.batch, s.tokens,
                                                             s.kv_heads, vecs, pages);
  return cudaGetLastError();
}

extern "C" cudaError_t km_sparse_summary_append(const km_sparse_plan *plan, const uint16_t *keys, uint16_t *summary,
                                                const int32_t *pos, km_sparse_shape s, cudaStream_t stream) {
  if (!plan || !shape_ok(s)) return cudaErrorInvalidValue;
  const int vecs = s.head_dim / 8;
  const size_t items = (size_t)s.batch * s.kv_heads * vecs;
  if (items > 0x7fffffff) return cudaErrorInvalidValue;
  append_kernel<<<grid_for(plan, items, 128), 128, 0, stream>>>(reinterpret_cast<const uint4 *>(keys),
                                                          reinterpret_cast<uint4 *>(summary), pos, s.batch,
                                                          s.tokens, s.kv_heads, vecs, page_count(s));
  return cudaGetLastError();
}

extern "C" cudaError_t km_sparse_score(const uint16_t *query, const uint16_t *summary, float *scores,
                                       km_sparse_shape s, cudaStream_t stream) {
  if (!shape_ok(s)) return cudaErrorInvalidValue;
  const int group = s.q_heads / s.kv_heads, pages = page_count(s);
  switch (s.head_dim) {
    case 64: return launch_score_d<64>(query, summary, scores, s, pages, group, stream);
    case 128: return launch_score_d<128>(query, summary, scores, s, pages, group, stream);
    case 256: return launch_score_d<256>(query, summary, scores, s, pages, group, stream);
    default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t km_sparse_topk(const km_sparse_plan *plan, const float *scores, int32_t *selected, int rows,
                                      int pages, int k, cudaStream_t stream) {
  if (!plan || rows <= 0 || pages <= 0 || k < 1 || k > pages || pages > plan->topk_max_pages)
    return cudaErrorInvalidValue;
  // shared memory past the default 48 KiB was opted into once, by km_sparse_plan_make
  topk_kernel<<<rows, kTopkThreads, (size_t)pages * sizeof(uint32_t), stream>>>(scores, selected, pages, k);
  return cudaGetLastError();
}

extern "C" cudaError_t km_sparse_select_v(const km_sparse_plan *plan, const uint16_t *query, const uint16_t *summary,
                                          float *scores, uint32_t *counters, int32_t *selected, km_sparse_shape s,
                                          int k, km_sparse_select_variant variant, cudaStream_t stream) {
  if (!plan || !shape_ok(s) || !counters) return cudaErrorInvalidValue;
  if (variant != KM_SPARSE_SELECT_V1 && variant != KM_SPARSE_SELECT_V2) return cudaErrorInvalidValue;
  const int pages = page_count(s), group = s.q_heads / s.kv_heads;
  const select_fn fn = select_for(s.head_dim, group);
  if (!fn || k < 1 || k > pages || pages > plan->select_max_pages) return cudaErrorInvalidValue;
  const long long rows = (long long)s.batch * s.kv_heads;
  if (variant == KM_SPARSE_SELECT_V2 && pages <= kSelect2MaxPages) {
    // 8 pages a lane group in flight where that grid still fits one CTA per SM, else score_kernel's 4
    const int per8 = select2_chunk_pages(s.head_dim, 8);
    const int unroll = rows * ((pages + per8 - 1) / per8) <= plan->sms ? 8 : 4;
    const int per = select2_chunk_pages(s.head_dim, unroll), chunks = (pages + per - 1) / per;
    const long long grid = rows * chunks;
    if (grid > 0x7fffffffLL) return cudaErrorInvalidValue;
    const select_fn fn2 = select2_for(s.head_dim, group, unroll, pages <= 8 * kSelect2Threads ? 8 : 16);
    fn2<<<(unsigned)grid, kSelect2Threads, 0, stream>>>(query, reinterpret_cast<const uint4 *>(summary), scores,
                                                       counters, selected, s.kv_heads, pages, chunks, k);
    return cudaGetLastError();
  }
  const int per = select_chunk_pages(s.head_dim), chunks = (pages + per - 1) / per;
  const long long grid = rows * chunks;
  if (grid > 0x7fffffffLL) return cudaErrorInvalidValue;
  // shared memory past the default 48 KiB was opted into once, by km_sparse_plan_make
  fn<<<(unsigned)grid, kTopkThreads, (size_t)pages * sizeof(uint32_t), stream>>>(
      query, reinterpret_cast<const uint4 *>(summary), scores, counters, selected, s.kv_heads, pages, chunks, k);
  return cudaGetLastError();
}

extern "C" cudaError_t km_sparse_select(const km_sparse_plan *plan, const uint16_t *query, const uint16_t *summary,
                                        float *scores, uint32_t *counters, int32_t *selected, km_sparse_shape s, int k,
                                        cudaStream_t stream) {
  return km_sparse_select_v(plan, query, summary, scores, counters, selected, s, k, KM_SPARSE_SELECT_V1, stream);
}

extern "C" cudaError_t km_sparse_read(const uint16_t *keys, const uint16_t *values, const int32_t *selected, int k,
                                      uint16_t *k_out, uint16_t *v_out, km_sparse_shape s, cudaStream_t stream) {
  if (!shape_ok(s) || s.tokens % kPage != 0 || k < 1 || k > page_count(s)) return cudaErrorInvalidValue;
  switch (s.head_dim) {
    case 64: return launch_read<8>(keys, values, selected, k, k_out, v_out, s, stream);
    case 128: return launch_read<16>(keys, values, selected, k, k_out, v_out, s, stream);
    case 256: return launch_read<32>(keys, values, selected, k, k_out, v_out, s, stream);
    default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t km_sparse_dense_read(const km_sparse_plan *plan, const uint16_t *keys, const uint16_t *values,
                                            size_t bytes, uint32_t *partials, int max_partials, int *used,
                                            cudaStream_t stream) {
  const int warps_per_cta = kDenseThreads / 32;
  if (!plan || bytes % 16 != 0 || max_partials < warps_per_cta || !used) return cudaErrorInvalidValue;
  int grid = plan->dense_grid;
  if (grid > max_partials / warps_per_cta) grid = max_partials / warps_per_cta;
  *used = grid * warps_per_cta;
  dense_kernel<<<grid, kDenseThreads, 0, stream>>>(reinterpret_cast<const uint4 *>(keys),
                                                   reinterpret_cast<const uint4 *>(values), bytes / 16, partials);
  return cudaGetLastError();
}
