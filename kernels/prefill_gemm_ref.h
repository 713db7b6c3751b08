/* The trusted side of the prefill GEMM check: a plain tiled GEMM in fp32 (no tensor cores, nothing
 * clever: it is itself checked against a CPU GEMM in double on a small shape), and an elementwise
 * comparison of the bf16 output under test with it over the whole output. Layouts as
 * baselines/prefill_cublaslt.h: out[b][t][n] = sum_k in[b][t][k] * weight[b][n][k], bf16 as raw bits. */
#ifndef KM_KERNELS_PREFILL_GEMM_REF_H
#define KM_KERNELS_PREFILL_GEMM_REF_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ref[b][t][n] = the sum in fp32, abs_sum[b][t][n] = the sum of |in * weight| (to scale a tolerance). */
cudaError_t km_gemm_ref_bf16(const uint16_t *in, const uint16_t *weight, float *ref, float *abs_sum, int tokens, int n,
                             int k, int batch, cudaStream_t stream);

/* Over count elements: got[i] (bf16) is wrong when |got - ref| > rel * |ref| + share * abs_sum (NaN is
 * wrong). *bad gets the number wrong, *first_bad the lowest wrong index (count when none); both are
 * device memory the call initializes. */
cudaError_t km_gemm_compare_bf16(const uint16_t *got, const float *ref, const float *abs_sum, size_t count, float rel,
                                 float share, unsigned long long *bad, unsigned long long *first_bad,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
