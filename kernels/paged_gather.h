/* Paged KV block-table gather (primitive 1): copy the tokens of a batch of sequences out of a KV pool
 * through their block tables into one contiguous output, and a read-only variant that sums what it
 * reads (what an attention kernel pays). The index math is inline here so CPU tests run it too.
 *
 * Layouts and what "gathered" means (the gather keeps the pool's own layout, so nothing is transposed):
 *  - NHD (vLLM): pool [blocks, block_size, kv_heads, head_dim]. A block is one contiguous piece of
 *    block_size*kv_heads*head_dim elements; output [seqs, tokens, kv_heads, head_dim], i.e. the
 *    sequence's blocks back to back.
 *  - HND (FlashInfer): pool [blocks, kv_heads, block_size, head_dim]. The unit a per-head attention
 *    kernel reads is the (block, head) piece of block_size*head_dim elements (256 bytes at block size 1,
 *    d128, bf16); output head-major [seqs, kv_heads, tokens, head_dim].
 * Every sequence has blocks_per_seq full blocks; the table is int32 [seqs, blocks_per_seq], each id
 * widened to 64 bits before address arithmetic (pools over 4 GiB work). Elements are moved as bytes, so
 * bf16 and fp8 differ only in elem_bytes; accesses are 16 bytes wide when the piece size and the
 * pointers allow, else 8 or 4. */
#ifndef KM_KERNELS_PAGED_GATHER_H
#define KM_KERNELS_PAGED_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kernel_image.h"

#ifdef __CUDACC__
#define KM_PAGED_HD __host__ __device__ __forceinline__
#else
#define KM_PAGED_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum km_paged_layout {
  KM_PAGED_NHD = 0, /* [blocks, block_size, kv_heads, head_dim] */
  KM_PAGED_HND,     /* [blocks, kv_heads, block_size, head_dim] */
  KM_PAGED_LAYOUT_COUNT
} km_paged_layout;

typedef struct km_paged_geom {
  km_paged_layout layout;
  int block_size;     /* tokens per block */
  int kv_heads;
  int head_dim;
  int elem_bytes;     /* 2: bf16, 1: fp8 */
  int64_t num_blocks; /* blocks in the pool (ids must be < this and < 2^31) */
  int num_seqs;
  int blocks_per_seq; /* table entries per sequence */
} km_paged_geom;

/* Threads per CTA, and independent vectors each thread has in flight: a tile is threads x unroll vectors.
 * The gather moves 8 KiB tiles (unroll 2), a CTA per tile, compiled for 8 resident CTAs per SM (<= 32
 * registers); the read walks 16 KiB tiles (unroll 4) over persistent chunks, 4 CTAs per SM (<= 64
 * registers). Both keep 64 KiB in flight per SM, several times what HBM latency x bandwidth asks for.
 * Measured on the H200 against the other pairing: the gather gained 0.6-1.2% of the ceiling at unroll 2,
 * the read lost 3-6%. */
enum { KM_PAGED_THREADS = 256 };
enum { KM_PAGED_GATHER_UNROLL = 2, KM_PAGED_GATHER_CTAS_PER_SM = 8 };
enum { KM_PAGED_READ_UNROLL = 4, KM_PAGED_READ_CTAS_PER_SM = 4 };
/* Output vectors are indexed in 32 bits (cheap division); 2^31 of them is 32 GiB at 16 B. */
#define KM_PAGED_MAX_VECTORS (1u << 31)
#define KM_PAGED_NO_SEQ 0xFFFFFFFFu

/* n / d for every 32-bit n by a multiply-high and two shifts (Granlund-Montgomery, round-up variant):
 * m = floor(2^32 (2^l - d) / d) + 1 with l = ceil(log2 d). */
typedef struct km_paged_divmod {
  uint32_t d, m, s1, s2;
} km_paged_divmod;

/* Everything a launch needs, made on the host by km_paged_plan_make. */
typedef struct km_paged_plan {
  uint32_t total_vectors;    /* output vectors of vec_bytes */
  uint32_t vec_bytes;        /* 16, 8 or 4 */
  uint32_t vecs_per_piece;
  uint32_t blocks_per_seq;
  uint32_t pieces_per_block; /* 1 (NHD: the whole block) or kv_heads (HND) */
  uint32_t num_seqs;
  uint32_t piece_bytes;
  uint64_t block_bytes;      /* pool bytes per block id; below 2^32 */
  km_paged_divmod by_piece;  /* vector -> (piece, vector within piece) */
  km_paged_divmod by_bps;    /* piece -> (seq * pieces_per_block + head, block within seq) */
  km_paged_divmod by_ppb;    /* that -> (seq, head) */
  uint32_t grid;             /* CTAs */
  uint32_t tile;             /* vectors per tile: KM_PAGED_THREADS x the kernel's unroll */
  uint32_t chunk;            /* contiguous output vectors per CTA, a multiple of tile */
} km_paged_plan;

/* Where one output vector comes from: table entry, byte offset inside that pool block, sequence. */
typedef struct km_paged_pos {
  uint32_t entry;  /* seq * blocks_per_seq + block within the sequence */
  uint32_t offset; /* head * piece_bytes + vector within the piece * vec_bytes (< block_bytes) */
  uint32_t seq;
} km_paged_pos;

KM_PAGED_HD uint32_t km_paged_umulhi(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

KM_PAGED_HD uint32_t km_paged_div(km_paged_divmod dm, uint32_t n) {
  uint32_t t = km_paged_umulhi(dm.m, n);
  return (t + ((n - t) >> dm.s1)) >> dm.s2;
}

/* Output vector v (< total_vectors) sits at output byte v * vec_bytes. Output piece order is
 * (seq, head, block within seq): [seqs, tokens, heads, d] for NHD (one piece per block) and
 * [seqs, heads, tokens, d] for HND. */
KM_PAGED_HD km_paged_pos km_paged_position(const km_paged_plan *p, uint32_t v) {
  uint32_t piece = km_paged_div(p->by_piece, v);
  uint32_t within = v - piece * p->vecs_per_piece;
  uint32_t seq_head = km_paged_div(p->by_bps, piece);
  uint32_t blk_in_seq = piece - seq_head * p->blocks_per_seq;
  uint32_t seq = km_paged_div(p->by_ppb, seq_head);
  uint32_t head = seq_head - seq * p->pieces_per_block;
  km_paged_pos pos;
  pos.entry = seq * p->blocks_per_seq + blk_in_seq;
  pos.offset = head * p->piece_bytes + within * p->vec_bytes;
  pos.seq = seq;
  return pos;
}

/* Pool byte offset of block id `blk` (int32, widened before the multiply) plus `offset`. */
KM_PAGED_HD uint64_t km_paged_src(const km_paged_plan *p, int32_t blk, uint32_t offset) {
  return (uint64_t)(int64_t)blk * p->block_bytes + offset;
}

/* The output vectors [*begin, *end) CTA `cta` handles: one contiguous chunk, so a thread rarely changes
 * sequence (the read variant flushes its sum only then). */
KM_PAGED_HD void km_paged_cta_range(const km_paged_plan *p, uint32_t cta, uint32_t *begin, uint32_t *end) {
  uint64_t b = (uint64_t)cta * p->chunk;
  uint64_t e = b + p->chunk;
  if (b > p->total_vectors) b = p->total_vectors;
  if (e > p->total_vectors) e = p->total_vectors;
  *begin = (uint32_t)b;
  *end = (uint32_t)e;
}

/* Host helpers (no device needed). */
km_paged_divmod km_paged_divmod_make(uint32_t d); /* d >= 1 */
uint64_t km_paged_piece_bytes(const km_paged_geom *g);
uint64_t km_paged_block_bytes(const km_paged_geom *g);
uint64_t km_paged_output_bytes(const km_paged_geom *g);
uint64_t km_paged_tokens(const km_paged_geom *g);
/* Fill *plan for `g` with pointers whose low bits are `align` (OR of the pool and output addresses),
 * tiles of KM_PAGED_THREADS x unroll vectors and at most max_ctas CTAs. Returns cudaErrorInvalidValue for a shape it cannot run (sizes not a
 * multiple of 4 bytes, over KM_PAGED_MAX_VECTORS, a block of 4 GiB or more, non-positive sizes). */
cudaError_t km_paged_plan_make(const km_paged_geom *g, uintptr_t align, uint32_t unroll, uint32_t max_ctas,
                               km_paged_plan *plan);

/* Gather: out gets km_paged_output_bytes(g) bytes, moved by vector loads and stores (16, 8 or 4 bytes, the
 * widest that the piece size and the pointers allow), one tile per CTA. */
cudaError_t km_paged_gather(const km_paged_geom *g, const void *pool, const int32_t *table, void *out,
                            cudaStream_t stream);

/* The same gather moved by sm_90 bulk copies (cp.async.bulk) through shared memory: one warp per CTA
 * issues whole pieces (or 16 KiB parts of larger ones) as bulk loads and drains each 16 KiB stage of
 * contiguous output with one bulk store; kCtasPerSm CTAs per SM (sms). Runs only after km_paged_bulk_setup
 * found sm_90 code for it (else the launch fails), on shapes km_paged_bulk_shape_ok accepts (else
 * cudaErrorInvalidValue). Launches query nothing. */
cudaError_t km_paged_gather_bulk(const km_paged_geom *g, const void *pool, const int32_t *table, void *out, int sms,
                                 cudaStream_t stream);
/* 1 when every piece of g is a 16-byte multiple that divides, or is divided by, 16 KiB (host arithmetic). */
int km_paged_bulk_shape_ok(const km_paged_geom *g);
/* What this binary runs for the bulk gather on the current device (*img), and when that is sm_90 code
 * (km_kernel_image_runs(img, KM_BULK_MIN_ARCH)) its shared memory is set up. Once, before launching. */
cudaError_t km_paged_bulk_setup(km_kernel_image *img);

/* Read-only: sums[s] += the wrapping sum of the 32-bit words of every block of sequence s (all heads).
 * Adds to what is there so nothing but the loads sits in the timed region: zero sums first for the
 * plain checksum. */
cudaError_t km_paged_read_sum(const km_paged_geom *g, const void *pool, const int32_t *table, uint32_t *sums,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
