/* The simple kernel every MLA decode step is cross-checked against on the device, and what a C/CUDA
 * user would write first: one CTA per (sequence, query head), so the latent is re-read for every head;
 * fp32 dot products and online softmax on CUDA cores, token by token, no split. Same layouts and
 * semantics as km_mla_decode (kernels/attn_mla.h); the plan is not used, only the shape. */
#ifndef KM_BASELINES_ATTN_MLA_NAIVE_H
#define KM_BASELINES_ATTN_MLA_NAIVE_H

#include <cuda_runtime_api.h>

#include "attn_mla.h"

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t km_mla_naive_decode(const km_mla_shape *s, int batch, int max_blocks_per_seq, const km_mla_args *a,
                                cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
