/* CPU reference for the compress family (kernels/compress.h): mean pooling of every `ratio` tokens of K and
 * V into the compressed paged pools, with the kernel's fp32 operations in the kernel's order, so it is
 * compared bit for bit. */
#ifndef KM_COMPRESS_REF_H
#define KM_COMPRESS_REF_H

#include <stddef.h>
#include <stdint.h>

#include "compress.h"

/* The mean of n bf16 values `stride` elements apart: fp32 sum in order, times 1/n (n a power of two), rounded
 * to the nearest bf16 (ties to even). */
uint16_t km_compress_ref_mean_of(const uint16_t *vals, int n, size_t stride);

/* Every entry of every sequence into the pools through the table; other slots untouched. */
void km_compress_ref_mean(const km_compress_shape *s, const uint16_t *k_new, const uint16_t *v_new, uint16_t *k_pool,
                          uint16_t *v_pool, const int32_t *table);

#endif
