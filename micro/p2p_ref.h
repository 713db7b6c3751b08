/* CPU side of the p2p family: the plan of a transfer (which source pool block lands in which receiving
 * pool block), the pointer lists the per-block and batched copies take, the check of a whole received
 * pool against the source's pattern, and the per-token arithmetic. No GPU. */
#ifndef KM_MICRO_P2P_REF_H
#define KM_MICRO_P2P_REF_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

/* A scattered transfer's pools hold twice the moved blocks on each GPU, so both block tables are random
 * subsets in random order (a prefill GPU's blocks to a decode GPU's free blocks), and the receiving pool's
 * unlisted half must still hold its poison afterwards. */
enum { KM_P2P_POOL_FACTOR = 2 };

typedef struct km_p2p_plan {
  size_t nblocks, block_bytes, pool_blocks;
  int32_t *src_ids; /* [nblocks]: block i of the transfer is source pool block src_ids[i] */
  int32_t *dst_ids; /* [nblocks]: and lands in receiving pool block dst_ids[i] */
  int32_t *recv_of; /* [pool_blocks]: the block i receiving pool block k gets, -1 for none */
} km_p2p_plan;

/* scattered: pools of nblocks x KM_P2P_POOL_FACTOR blocks, both tables drawn from `seed`; else one pool
 * block per moved block, in order (nblocks 1 is a contiguous buffer). block_bytes a positive multiple of 8.
 * 0 ok; -1 on bad sizes (ids must fit int32) or no host memory, the plan then empty. */
int km_p2p_plan_make(km_p2p_plan *p, size_t nblocks, size_t block_bytes, int scattered, uint64_t seed);
void km_p2p_plan_free(km_p2p_plan *p);
size_t km_p2p_pool_bytes(const km_p2p_plan *p);  /* each side's pool */
size_t km_p2p_moved_bytes(const km_p2p_plan *p); /* nblocks x block_bytes */

/* Per-block lists for copies from src_pool to dst_pool: srcs[i] = source block src_ids[i],
 * dsts[i] = receiving block dst_ids[i], sizes[i] = block_bytes. Pure pointer arithmetic. */
void km_p2p_plan_lists(const km_p2p_plan *p, void *dst_pool, const void *src_pool, void **dsts, const void **srcs,
                       size_t *sizes);

/* The source pool holds the pattern (seed, words from first_word on) over its whole length. Count the words
 * of the whole received pool that differ from what the plan puts there: block dst_ids[i] the source's block
 * src_ids[i], every other block all-ones poison. Mismatches are reported through b when it is not NULL. */
size_t km_p2p_check_received(km_bench *b, const unsigned char *recv_pool, const km_p2p_plan *p, uint64_t seed,
                             uint64_t first_word);

/* Tokens of `bytes_per_token` that `bytes` hold (0 when bytes_per_token <= 0), and the time per token of
 * a transfer that moved `bytes` in `seconds`, in microseconds (0 when any input is not positive). */
double km_p2p_tokens(double bytes, double bytes_per_token);
double km_p2p_us_per_token(double bytes, double seconds, double bytes_per_token);

#endif
