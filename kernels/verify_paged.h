/* Trusted kernels for checking a whole paged gather on the device: one thread per 32-bit output word,
 * its source found from the layout's definition (the rule micro/paged_ref.c follows: a (token, head) row
 * located in its block and in the gathered sequence), not from the gather's piece plan. Slow and
 * obviously right. Rows must be a multiple of 4 bytes (what km_paged_plan_make accepts). */
#ifndef KM_KERNELS_VERIFY_PAGED_H
#define KM_KERNELS_VERIFY_PAGED_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "paged_gather.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out gets km_paged_output_bytes(g) bytes: NHD [seqs, tokens, heads, d], HND [seqs, heads, tokens, d]. */
cudaError_t km_verify_paged_gather(const km_paged_geom *g, const void *pool, const int32_t *table, void *out,
                                   cudaStream_t stream);

/* sums[s] = wrapping sum of the 32-bit words of every block of sequence s (zeroed here first): one
 * atomicAdd per word. */
cudaError_t km_verify_paged_sums(const km_paged_geom *g, const void *pool, const int32_t *table, uint32_t *sums,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
