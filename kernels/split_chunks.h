/* The split-KV work list of the decode planners (attn/ and attn/mla): each sequence's range of tiles cut
 * into chunks of nearly equal length (FlashDecoding style), on the host and copied to the device in one
 * array. Kernels read it through the five device pointers; the combine passes through the last two. */
#ifndef KM_KERNELS_SPLIT_CHUNKS_H
#define KM_KERNELS_SPLIT_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct km_split_chunks {
  int batch, num_chunks;
  int split; /* 1 if any sequence has more than one chunk */
  /* host arrays (malloc'ed): per chunk its sequence and tile range [begin, end); per sequence its first
   * chunk and chunk count */
  int32_t *chunk_seq, *chunk_begin, *chunk_end;
  int32_t *seq_chunk0, *seq_chunks;
  int32_t *d_arrays; /* the five on the device, in that order (km_split_chunks_upload) */
  size_t d_bytes;
} km_split_chunks;

/* Chunks of chunk_tiles (>= 1) tiles at most over sequences of tiles[b] tiles. */
long long km_split_chunks_count(int batch, const int32_t *tiles, int chunk_tiles);
/* Sequence b's tiles are [first[b], first[b] + tiles[b]) (first NULL: from 0); it gets
 * ceil(tiles[b] / chunk_tiles) chunks whose lengths differ by at most one. 0, or -1 with no host memory
 * (nothing left allocated). */
int km_split_chunks_make(km_split_chunks *c, int batch, const int32_t *first, const int32_t *tiles, int chunk_tiles);
/* The same with sequence b cut into counts[b] chunks (1 <= counts[b] <= tiles[b] where tiles[b] > 0). */
int km_split_chunks_make_counts(km_split_chunks *c, int batch, const int32_t *first, const int32_t *tiles,
                                const int32_t *counts);
cudaError_t km_split_chunks_upload(km_split_chunks *c, cudaStream_t stream); /* cudaMalloc + copy; synchronized */
void km_split_chunks_free(km_split_chunks *c);                               /* host and device; zeroes *c */

/* The device arrays (after km_split_chunks_upload). */
typedef struct km_split_chunks_dev {
  const int32_t *chunk_seq, *chunk_begin, *chunk_end, *seq_chunk0, *seq_chunks;
} km_split_chunks_dev;
km_split_chunks_dev km_split_chunks_device(const km_split_chunks *c);

#ifdef __cplusplus
}

/* Point a kernel's parameter block (fields chunk_seq, chunk_begin, chunk_end, seq_chunk0, seq_chunks) at
 * the device arrays. */
template <typename Params>
inline void km_split_chunks_bind(Params &p, const km_split_chunks *c) {
  const km_split_chunks_dev d = km_split_chunks_device(c);
  p.chunk_seq = d.chunk_seq;
  p.chunk_begin = d.chunk_begin;
  p.chunk_end = d.chunk_end;
  p.seq_chunk0 = d.seq_chunk0;
  p.seq_chunks = d.seq_chunks;
}
#endif

#endif
