/* CPU references for the prefix family, written apart from what they check: the block-key chain one
 * block at a time with one-shot digests (no reused context or buffer, no threads), and a GEMM in
 * double over bf16 inputs for the prefill cases' small-shape check. */
#ifndef KM_PREFIX_REF_H
#define KM_PREFIX_REF_H

#include <stddef.h>
#include <stdint.h>

#include "prefix_hash.h"

/* The hashes of the n / block_size full blocks of tokens, block 0's parent being none_hash.
 * 0 ok, -1 on an input beyond the serializer's limits or out of memory. */
int km_prefix_ref_chain(km_hash_algo a, size_t block_size, const km_block_hash *none_hash, const uint32_t *tokens,
                        size_t n, const km_extra_keys *x, km_block_hash *out);

/* y[i][j] = sum_l x[i][l] * w[j][l] (x: m x k, w: n x k, both bf16 row-major; y: m x n), in double;
 * abs_sum[i][j] = sum_l |x[i][l] * w[j][l]| (to state a tolerance) when abs_sum is not NULL. */
void km_prefix_ref_gemm(const uint16_t *x, const uint16_t *w, double *y, double *abs_sum, int m, int n, int k);

#endif
