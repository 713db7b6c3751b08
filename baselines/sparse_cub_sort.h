/* The top-k a user would write with CUB today: a segmented radix sort of each row's page scores
 * (descending, page indices as values) and the first k of each row. CUB has no top-k of its own. */
#ifndef KM_BASELINES_SPARSE_CUB_SORT_H
#define KM_BASELINES_SPARSE_CUB_SORT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch bytes for rows x pages: offsets, the index values, sorted keys and values, CUB's temp. */
cudaError_t km_cub_topk_scratch_bytes(int rows, int pages, size_t *bytes);

/* Once per shape, untimed: fill the segment offsets and the page-index values in `scratch`. */
cudaError_t km_cub_topk_prepare(void *scratch, size_t bytes, int rows, int pages, cudaStream_t stream);

/* Top-k per row with the same rule as km_sparse_topk: the last page's score is first set to +inf in
 * `scores` (so it is always taken), then a stable descending sort keeps ties in index order, so the
 * set matches for scores without +inf, NaN or signed zeros. selected[row][0..k) is in score order. */
cudaError_t km_cub_topk(float *scores, int32_t *selected, int rows, int pages, int k, void *scratch, size_t bytes,
                        cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
