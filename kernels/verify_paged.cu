// Trusted paged gather and per-sequence sums (kernels/verify_paged.h): a grid-stride loop of one
// thread per 32-bit word, every index computed from the layout in 64-bit arithmetic.
#include "verify_paged.h"

namespace {

constexpr int kThreads = 256;
constexpr unsigned kBlocks = 4096;

struct layout {
  uint64_t row_words;   // words per (token, head) row
  uint64_t tokens;      // per sequence
  uint64_t heads, block_size, blocks_per_seq, block_bytes, row_bytes;
  int hnd;
};

__device__ __forceinline__ uint64_t row_in_block(const layout &l, uint64_t t, uint64_t h) {
  return l.hnd ? h * l.block_size + t : t * l.heads + h;
}

__global__ void gather_kernel(const unsigned char *pool, const int32_t *table, uint32_t *out, uint64_t words,
                              layout l) {
  const uint64_t seq_rows = l.tokens * l.heads;
  for (uint64_t w = blockIdx.x * (uint64_t)kThreads + threadIdx.x; w < words; w += (uint64_t)gridDim.x * kThreads) {
    const uint64_t word = w % l.row_words, row = w / l.row_words;
    const uint64_t seq = row / seq_rows, r = row % seq_rows;
    const uint64_t token = l.hnd ? r % l.tokens : r / l.heads, head = l.hnd ? r / l.tokens : r % l.heads;
    const int64_t blk = table[seq * l.blocks_per_seq + token / l.block_size];
    const unsigned char *src = pool + (uint64_t)blk * l.block_bytes +
                               row_in_block(l, token % l.block_size, head) * l.row_bytes + 4 * word;
    out[w] = *reinterpret_cast<const uint32_t *>(src);
  }
}

__global__ void sums_kernel(const unsigned char *pool, const int32_t *table, uint32_t *sums, uint64_t entries,
                            uint64_t block_words, uint64_t blocks_per_seq, uint64_t block_bytes) {
  const uint64_t words = entries * block_words;
  for (uint64_t w = blockIdx.x * (uint64_t)kThreads + threadIdx.x; w < words; w += (uint64_t)gridDim.x * kThreads) {
    const uint64_t entry = w / block_words, word = w % block_words;
    const int64_t blk = table[entry];
    atomicAdd(sums + entry / blocks_per_seq,
              *reinterpret_cast<const uint32_t *>(pool + (uint64_t)blk * block_bytes + 4 * word));
  }
}

bool shape_ok(const km_paged_geom *g) {
  return g && g->block_size > 0 && g->kv_heads > 0 && g->head_dim > 0 && g->elem_bytes > 0 && g->num_seqs > 0 &&
         g->blocks_per_seq > 0 && ((uint64_t)g->head_dim * g->elem_bytes) % 4 == 0;
}

unsigned blocks_for(uint64_t n) {
  const uint64_t b = (n + kThreads - 1) / kThreads;
  return b == 0 ? 1u : (b < kBlocks ? (unsigned)b : kBlocks);
}

}  // namespace

extern "C" cudaError_t km_verify_paged_gather(const km_paged_geom *g, const void *pool, const int32_t *table, void *out,
                                              cudaStream_t stream) {
  if (!shape_ok(g)) return cudaErrorInvalidValue;
  layout l;
  l.row_bytes = (uint64_t)g->head_dim * g->elem_bytes;
  l.row_words = l.row_bytes / 4;
  l.block_size = (uint64_t)g->block_size;
  l.tokens = (uint64_t)g->blocks_per_seq * l.block_size;
  l.heads = (uint64_t)g->kv_heads;
  l.blocks_per_seq = (uint64_t)g->blocks_per_seq;
  l.block_bytes = l.block_size * l.heads * l.row_bytes;
  l.hnd = g->layout == KM_PAGED_HND;
  const uint64_t words = (uint64_t)g->num_seqs * l.tokens * l.heads * l.row_words;
  gather_kernel<<<blocks_for(words), kThreads, 0, stream>>>(static_cast<const unsigned char *>(pool), table,
                                                            static_cast<uint32_t *>(out), words, l);
  return cudaGetLastError();
}

extern "C" cudaError_t km_verify_paged_sums(const km_paged_geom *g, const void *pool, const int32_t *table,
                                            uint32_t *sums, cudaStream_t stream) {
  if (!shape_ok(g)) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemsetAsync(sums, 0, (size_t)g->num_seqs * sizeof *sums, stream);
  if (e != cudaSuccess) return e;
  const uint64_t block_bytes = (uint64_t)g->block_size * g->kv_heads * g->head_dim * g->elem_bytes;
  const uint64_t entries = (uint64_t)g->num_seqs * g->blocks_per_seq;
  sums_kernel<<<blocks_for(entries * (block_bytes / 4)), kThreads, 0, stream>>>(
      static_cast<const unsigned char *>(pool), table, sums, entries, block_bytes / 4, (uint64_t)g->blocks_per_seq,
      block_bytes);
  return cudaGetLastError();
}
