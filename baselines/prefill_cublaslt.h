/* The prefill GEMMs as an engine runs them: cuBLASLt in bf16 with fp32 accumulation, the algorithm its
 * heuristic ranks first for the shape. PyTorch's linear layout: out[t][n] = sum_k in[t][k] * weight[n][k]
 * (row-major, weight as [out_features][in_features]), optionally batched over contiguous matrices (the
 * experts of an MoE layer). No timing, no I/O. */
#ifndef KM_BASELINES_PREFILL_CUBLASLT_H
#define KM_BASELINES_PREFILL_CUBLASLT_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Workspace the heuristic may use: what cuBLAS recommends for Hopper. */
#define KM_LT_WORKSPACE_BYTES ((size_t)32 << 20)

typedef struct km_lt km_lt;           /* a cuBLASLt handle and its workspace */
typedef struct km_lt_gemm km_lt_gemm; /* one shape's descriptors and chosen algorithm */

/* Opens cuBLASLt (loaded at run time, see the .c file) and makes a handle. 0 ok; -1 with one line in err.
 * The workspace (device, KM_LT_WORKSPACE_BYTES) stays the caller's. */
int km_lt_create(void *workspace, km_lt **out, char *err, size_t errlen);
void km_lt_destroy(km_lt *lt);

/* out[b] = in[b] x weight[b]^T for b < batch: in[b] is tokens x k, weight[b] n x k, out[b] tokens x n, each
 * batch element right after the one before. 0 ok; -1 with one line in err (no algorithm for the shape). */
int km_lt_gemm_plan(km_lt *lt, int tokens, int n, int k, int batch, km_lt_gemm **out, char *err, size_t errlen);
void km_lt_gemm_free(km_lt_gemm *g);

/* Enqueue one GEMM on stream. Returns cuBLAS's status (0: success). */
int km_lt_gemm_run(const km_lt_gemm *g, const void *in, const void *weight, void *out, cudaStream_t stream);
const char *km_lt_status_string(const km_lt *lt, int status);

#ifdef __cplusplus
}
#endif

#endif
