// The split-KV work list (see split_chunks.h).
#include "split_chunks.h"

#include <stdlib.h>
#include <string.h>

// Sequence b's chunks: counts[b], or (counts NULL) ceil(tiles[b] / chunk_tiles).
static int chunks_of(const int32_t *tiles, int chunk_tiles, const int32_t *counts, int b) {
  return counts ? counts[b] : (tiles[b] + chunk_tiles - 1) / chunk_tiles;
}

static long long total_chunks(int batch, const int32_t *tiles, int chunk_tiles, const int32_t *counts) {
  long long chunks = 0;
  for (int b = 0; b < batch; ++b) chunks += chunks_of(tiles, chunk_tiles, counts, b);
  return chunks;
}

extern "C" long long km_split_chunks_count(int batch, const int32_t *tiles, int chunk_tiles) {
  return total_chunks(batch, tiles, chunk_tiles, NULL);
}

static int make_chunks(km_split_chunks *c, int batch, const int32_t *first, const int32_t *tiles, int chunk_tiles,
                       const int32_t *counts) {
  memset(c, 0, sizeof *c);
  const long long chunks = total_chunks(batch, tiles, chunk_tiles, counts);
  c->batch = batch;
  c->num_chunks = (int)chunks;
  c->chunk_seq = (int32_t *)malloc((size_t)chunks * sizeof(int32_t));
  c->chunk_begin = (int32_t *)malloc((size_t)chunks * sizeof(int32_t));
  c->chunk_end = (int32_t *)malloc((size_t)chunks * sizeof(int32_t));
  c->seq_chunk0 = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
  c->seq_chunks = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
  if (!c->chunk_seq || !c->chunk_begin || !c->chunk_end || !c->seq_chunk0 || !c->seq_chunks) {
    km_split_chunks_free(c);
    return -1;
  }
  int k = 0;
  for (int b = 0; b < batch; ++b) {
    const int f = first ? first[b] : 0, n = tiles[b], nc = chunks_of(tiles, chunk_tiles, counts, b);
    c->seq_chunk0[b] = k;
    c->seq_chunks[b] = nc;
    if (nc > 1) c->split = 1;
    for (int j = 0; j < nc; ++j, ++k) {  // chunk j: tiles [n j / nc, n (j + 1) / nc), sizes differ by <= 1
      c->chunk_seq[k] = b;
      c->chunk_begin[k] = f + (int)((long long)n * j / nc);
      c->chunk_end[k] = f + (int)((long long)n * (j + 1) / nc);
    }
  }
  return 0;
}

extern "C" int km_split_chunks_make(km_split_chunks *c, int batch, const int32_t *first, const int32_t *tiles,
                                    int chunk_tiles) {
  return make_chunks(c, batch, first, tiles, chunk_tiles, NULL);
}

extern "C" int km_split_chunks_make_counts(km_split_chunks *c, int batch, const int32_t *first, const int32_t *tiles,
                                           const int32_t *counts) {
  return make_chunks(c, batch, first, tiles, 1, counts);
}

extern "C" cudaError_t km_split_chunks_upload(km_split_chunks *c, cudaStream_t stream) {
  const size_t nc = (size_t)c->num_chunks, nb = (size_t)c->batch;
  c->d_bytes = (3 * nc + 2 * nb) * sizeof(int32_t);
  cudaError_t e = cudaMalloc(&c->d_arrays, c->d_bytes);
  if (e != cudaSuccess) {
    c->d_arrays = NULL;
    return e;
  }
  const int32_t *src[5] = {c->chunk_seq, c->chunk_begin, c->chunk_end, c->seq_chunk0, c->seq_chunks};
  const size_t len[5] = {nc, nc, nc, nb, nb};
  size_t off = 0;
  for (int i = 0; i < 5 && e == cudaSuccess; off += len[i], ++i)
    e = cudaMemcpyAsync(c->d_arrays + off, src[i], len[i] * sizeof(int32_t), cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  return e;
}

extern "C" void km_split_chunks_free(km_split_chunks *c) {
  free(c->chunk_seq);
  free(c->chunk_begin);
  free(c->chunk_end);
  free(c->seq_chunk0);
  free(c->seq_chunks);
  if (c->d_arrays) cudaFree(c->d_arrays);
  memset(c, 0, sizeof *c);
}

extern "C" km_split_chunks_dev km_split_chunks_device(const km_split_chunks *c) {
  const size_t nc = (size_t)c->num_chunks;
  const int32_t *d = c->d_arrays;
  km_split_chunks_dev v = {d, d + nc, d + 2 * nc, d + 3 * nc, d + 3 * nc + c->batch};
  return v;
}
