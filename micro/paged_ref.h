/* CPU side of the paged gather: a reference written row by row from the layout definitions (not from
 * the kernel's index math), the read variant's per-sequence sums, and the block-table makers that
 * micro/paged.c and the tests share. */
#ifndef KM_MICRO_PAGED_REF_H
#define KM_MICRO_PAGED_REF_H

#include <stddef.h>
#include <stdint.h>

#include "paged_gather.h"

/* out gets km_paged_output_bytes(g): NHD [seqs, tokens, heads, d], HND [seqs, heads, tokens, d]. */
void km_paged_ref_gather(const km_paged_geom *g, const unsigned char *pool, const int32_t *table,
                         unsigned char *out);

/* sums[s] = wrapping sum of the little-endian 32-bit words of every block of sequence s. */
void km_paged_ref_sums(const km_paged_geom *g, const unsigned char *pool, const int32_t *table, uint32_t *sums);

/* table[i] = i for i < n (n <= num_blocks). */
void km_paged_table_sequential(int32_t *table, size_t n);

/* n distinct block ids drawn from [0, num_blocks) in random order (a permutation when n == num_blocks).
 * Returns 0, or -1 when n > num_blocks, num_blocks > 2^31 or memory is short. */
int km_paged_table_random(int32_t *table, size_t n, int64_t num_blocks, uint64_t seed);

/* Block tables [batch][mbps] for sequences of ctx[i] tokens in blocks of block_size: each sequence's
 * ceil(ctx / block_size) blocks are a random draw without replacement from one pool of exactly that many
 * blocks (the rest of a row is 0). *num_blocks: the pool's size. Returns 0, or -1 as km_paged_table_random
 * (or when a sequence needs more than mbps blocks). */
int km_paged_tables_random(int32_t *tables, int batch, int mbps, const int32_t *ctx, int block_size, uint64_t seed,
                           int64_t *num_blocks);

/* The next value of a splitmix64 stream (shared by the table maker and the tests' random shapes). */
uint64_t km_paged_rand(uint64_t *state);

#endif
