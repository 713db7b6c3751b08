/* Trusted kernels for checking the sparse (Quest) family's whole timed outputs on the device: one thread
 * per output element, written from the definitions in kernels/sparse_topk.h (the rules micro/
 * sparse_ref.c follows), not from the fast kernels' mappings. Slow and obviously right. */
#ifndef KM_KERNELS_VERIFY_SPARSE_H
#define KM_KERNELS_VERIFY_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "sparse_topk.h"
#include "verify_compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Page summaries, one thread per (sequence, head, page, dim): max then min over the page's tokens, a
 * later token replacing the current value only when strictly larger (smaller). */
cudaError_t km_verify_sparse_summarize(const uint16_t *keys, uint16_t *summary, km_sparse_shape s,
                                       cudaStream_t stream);

/* Scores, one thread per (row, page), summed in index order (group, then dim) in fp32, and each
 * score's sum of |terms| in mag (the scale of its rounding error). */
cudaError_t km_verify_sparse_score(const uint16_t *query, const uint16_t *summary, float *scores, float *mag,
                                   km_sparse_shape s, cudaStream_t stream);

/* chosen[row][page] = 1 for the k pages km_sparse_topk must select from these scores, else 0: the last
 * page, and a page p whose rank among the other pages (those with a larger key, or an equal key and a
 * lower index; keys in IEEE total order, NaN lowest) is below k - 1. One thread per (row, page). */
cudaError_t km_verify_sparse_topk_chosen(const float *scores, uint8_t *chosen, int rows, int pages, int k,
                                         cudaStream_t stream);

/* Check a selection against `chosen` (consumed: entries found are marked 2), one thread per row: every
 * slot must name a chosen page not named before (so the k slots are the chosen set) and, when
 * `ascending`, a page above the previous slot's. Bad slots (index row * k + slot) are added to *diff. */
cudaError_t km_verify_sparse_selection(const int32_t *selected, uint8_t *chosen, int rows, int pages, int k,
                                       int ascending, km_diff *diff, cudaStream_t stream);

/* The gather of the selected pages of each row, K and V, one thread per 32-bit output word. */
cudaError_t km_verify_sparse_gather(const uint16_t *keys, const uint16_t *values, const int32_t *selected, int k,
                                    uint16_t *k_out, uint16_t *v_out, km_sparse_shape s, cudaStream_t stream);

/* *out = XOR of every 32-bit word of a and of b (each `bytes` long, a multiple of 4), zeroed first. */
cudaError_t km_verify_xor(const void *a, const void *b, size_t bytes, uint32_t *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
