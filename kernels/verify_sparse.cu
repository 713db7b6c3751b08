// Trusted sparse-family kernels (kernels/verify_sparse.h): grid-stride loops, one thread per output
// element, 64-bit indices, no shared memory and no shuffles.
#include "verify_sparse.h"
#include "verify_diff.cuh"

namespace {

constexpr int kThreads = 256;
constexpr unsigned kBlocks = 4096;
constexpr int kPage = KM_SPARSE_PAGE_TOKENS;

unsigned blocks_for(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return b == 0 ? 1u : (b < kBlocks ? (unsigned)b : kBlocks);
}

#define KM_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * (size_t)kThreads + threadIdx.x; i < (n); i += (size_t)gridDim.x * kThreads)

__device__ __forceinline__ float bf(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

__device__ __forceinline__ size_t key_at(const km_sparse_shape &s, size_t b, size_t t, size_t h) {
  return ((b * s.tokens + t) * s.kv_heads + h) * s.head_dim;
}

int pages_of(const km_sparse_shape &s) { return (s.tokens + kPage - 1) / kPage; }

bool shape_ok(const km_sparse_shape &s) {
  return s.batch > 0 && s.tokens > 0 && s.kv_heads > 0 && s.q_heads > 0 && s.q_heads % s.kv_heads == 0 &&
         s.head_dim > 0;
}

// summary [b][h][page][2][d]
__global__ void summarize_kernel(const uint16_t *keys, uint16_t *summary, km_sparse_shape s, int pages) {
  const size_t d = s.head_dim, n = (size_t)s.batch * s.kv_heads * pages * d;
  KM_GRID_STRIDE(i, n) {
    const size_t dim = i % d, bhp = i / d, page = bhp % pages, bh = bhp / pages, h = bh % s.kv_heads,
                 b = bh / s.kv_heads;
    const size_t t0 = page * kPage, t1 = min((size_t)s.tokens, t0 + kPage);
    uint16_t mx = keys[key_at(s, b, t0, h) + dim], mn = mx;
    for (size_t t = t0 + 1; t < t1; ++t) {
      const uint16_t v = keys[key_at(s, b, t, h) + dim];
      if (bf(v) > bf(mx)) mx = v;
      if (bf(v) < bf(mn)) mn = v;
    }
    summary[bhp * 2 * d + dim] = mx;
    summary[bhp * 2 * d + d + dim] = mn;
  }
}

__global__ void score_kernel(const uint16_t *query, const uint16_t *summary, float *scores, float *mag,
                             km_sparse_shape s, int pages) {
  const size_t d = s.head_dim, group = s.q_heads / s.kv_heads, n = (size_t)s.batch * s.kv_heads * pages;
  KM_GRID_STRIDE(i, n) {
    const size_t row = i / pages, b = row / s.kv_heads, h = row % s.kv_heads;
    const uint16_t *mx = summary + i * 2 * d, *mn = mx + d;
    float acc = 0.0f, m = 0.0f;
    for (size_t g = 0; g < group; ++g) {
      const uint16_t *q = query + ((b * s.q_heads) + h * group + g) * d;
      for (size_t j = 0; j < d; ++j) {
        const float a = __fmul_rn(bf(q[j]), bf(mx[j])), c = __fmul_rn(bf(q[j]), bf(mn[j]));
        const float t = a > c ? a : c;
        acc = __fadd_rn(acc, t);
        m = __fadd_rn(m, fabsf(t));
      }
    }
    scores[i] = acc;
    mag[i] = m;
  }
}

// IEEE total order as an unsigned key, NaN below everything (kernels/sparse_topk.h).
__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__global__ void chosen_kernel(const float *scores, uint8_t *chosen, int rows, int pages, int k) {
  const size_t n = (size_t)rows * pages;
  KM_GRID_STRIDE(i, n) {
    const int p = (int)(i % pages);
    const float *row = scores + (i - p);
    if (p == pages - 1) {
      chosen[i] = 1;
      continue;
    }
    const uint32_t key = order_key(row[p]);
    int rank = 0;
    for (int j = 0; j < pages - 1; ++j) {
      const uint32_t other = order_key(row[j]);
      rank += other > key || (other == key && j < p);
    }
    chosen[i] = rank < k - 1;
  }
}

__global__ void selection_kernel(const int32_t *sel, uint8_t *chosen, int rows, int pages, int k, int ascending,
                                 km_diff *diff) {
  KM_GRID_STRIDE(row, (size_t)rows) {
    uint8_t *c = chosen + row * pages;
    int32_t prev = -1;
    for (int j = 0; j < k; ++j) {
      const size_t slot = row * k + j;
      const int32_t p = sel[slot];
      const bool ok = p >= 0 && p < pages && c[p] == 1 && (!ascending || p > prev);
      if (!ok) km_diff_record(diff, slot, (uint32_t)p, ascending ? (uint32_t)(prev + 1) : 0u);
      if (p >= 0 && p < pages && c[p] == 1) c[p] = 2;
      prev = p;
    }
  }
}

// k_out / v_out [row][slot][token][d] as 32-bit words (d is even).
__global__ void gather_kernel(const uint32_t *keys, const uint32_t *values, const int32_t *sel, int k, uint32_t *ko,
                              uint32_t *vo, km_sparse_shape s) {
  const size_t wpr = s.head_dim / 2, rows = (size_t)s.batch * s.kv_heads, n = rows * k * kPage * wpr;
  KM_GRID_STRIDE(i, n) {
    const size_t w = i % wpr, token_slot = i / wpr, t = token_slot % kPage, slot = token_slot / kPage;
    const size_t row = slot / k, b = row / s.kv_heads, h = row % s.kv_heads;
    const size_t src = key_at(s, b, (size_t)sel[slot] * kPage + t, h) / 2 + w;
    ko[i] = keys[src];
    vo[i] = values[src];
  }
}

__global__ void xor_kernel(const uint32_t *a, const uint32_t *b, size_t words, uint32_t *out) {
  uint32_t acc = 0;
  KM_GRID_STRIDE(i, words) acc ^= a[i] ^ b[i];
  atomicXor(out, acc);
}

}  // namespace

extern "C" cudaError_t km_verify_sparse_summarize(const uint16_t *keys, uint16_t *summary, km_sparse_shape s,
                                                  cudaStream_t stream) {
  if (!shape_ok(s)) return cudaErrorInvalidValue;
  const int pages = pages_of(s);
  summarize_kernel<<<blocks_for((size_t)s.batch * s.kv_heads * pages * s.head_dim), kThreads, 0, stream>>>(
      keys, summary, s, pages);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_sparse_score(const uint16_t *query, const uint16_t *summary, float *scores, float *mag,
                                              km_sparse_shape s, cudaStream_t stream) {
  if (!shape_ok(s)) return cudaErrorInvalidValue;
  const int pages = pages_of(s);
  score_kernel<<<blocks_for((size_t)s.batch * s.kv_heads * pages), kThreads, 0, stream>>>(query, summary, scores, mag,
                                                                                         s, pages);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_sparse_topk_chosen(const float *scores, uint8_t *chosen, int rows, int pages, int k,
                                                    cudaStream_t stream) {
  if (rows <= 0 || pages <= 0 || k < 1 || k > pages) return cudaErrorInvalidValue;
  chosen_kernel<<<blocks_for((size_t)rows * pages), kThreads, 0, stream>>>(scores, chosen, rows, pages, k);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_sparse_selection(const int32_t *selected, uint8_t *chosen, int rows, int pages, int k,
                                                  int ascending, km_diff *diff, cudaStream_t stream) {
  if (rows <= 0 || pages <= 0 || k < 1 || k > pages || !diff) return cudaErrorInvalidValue;
  selection_kernel<<<blocks_for((size_t)rows), kThreads, 0, stream>>>(selected, chosen, rows, pages, k, ascending,
                                                                      diff);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_sparse_gather(const uint16_t *keys, const uint16_t *values, const int32_t *selected,
                                               int k, uint16_t *k_out, uint16_t *v_out, km_sparse_shape s,
                                               cudaStream_t stream) {
  if (!shape_ok(s) || s.head_dim % 2 || s.tokens % kPage || k < 1 || k > pages_of(s)) return cudaErrorInvalidValue;
  const size_t n = (size_t)s.batch * s.kv_heads * k * kPage * (s.head_dim / 2);
  gather_kernel<<<blocks_for(n), kThreads, 0, stream>>>(reinterpret_cast<const uint32_t *>(keys),
                                                        reinterpret_cast<const uint32_t *>(values), selected, k,
                                                        reinterpret_cast<uint32_t *>(k_out),
                                                        reinterpret_cast<uint32_t *>(v_out), s);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_xor(const void *a, const void *b, size_t bytes, uint32_t *out, cudaStream_t stream) {
  if (bytes % 4 || !out) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemsetAsync(out, 0, sizeof *out, stream);
  if (e != cudaSuccess) return e;
  xor_kernel<<<blocks_for(bytes / 4), kThreads, 0, stream>>>(static_cast<const uint32_t *>(a),
                                                             static_cast<const uint32_t *>(b), bytes / 4, out);
  return cudaGetLastError();
}
