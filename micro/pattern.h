/* Test data for copies that must arrive bitwise: 8-byte words that are a bijective hash of their
 * position, checks that name the first bad words, and a random permutation of block indices. Shared by
 * the families that move blocks (offload, p2p). */
#ifndef KM_MICRO_PATTERN_H
#define KM_MICRO_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

/* Word i of the pattern `seed`: a block copied to the wrong place, a stale word or a poison byte (0xFF)
 * all show as a mismatch. */
uint64_t km_pattern_word(uint64_t seed, uint64_t i);
/* p[w] = word (first_word + w) for every whole 8-byte word of `bytes` (callers use multiples of 8). */
void km_pattern_fill(void *p, size_t bytes, uint64_t seed, uint64_t first_word);
/* Words of p that differ from the pattern; each is reported through b (when b is not NULL), named by
 * `what` and its byte offset. */
size_t km_pattern_check(km_bench *b, const void *p, size_t bytes, uint64_t seed, uint64_t first_word,
                        const char *what);
/* Words of p that are not all-ones (poison left untouched); reported as above. */
size_t km_poison_check(km_bench *b, const void *p, size_t bytes, const char *what);
/* perm = a permutation of 0..n-1 (Fisher-Yates over the pattern hash of `seed`). */
void km_pattern_permutation(int32_t *perm, size_t n, uint64_t seed);

#endif
