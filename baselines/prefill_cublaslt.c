/* cuBLASLt plans for the prefill GEMMs. Column-major, as cuBLAS sees memory: the row-major out (t x n) is
 * an n x t matrix, the row-major weight (n x k) a k x n one and the input (t x k) a k x t one, so
 * out = op_T(weight) x input: A = weight transposed, B = input as is.
 * The library is opened when a plan is first wanted, not linked: mapping its half a gigabyte costs every
 * start of ./micro about 60 ms, which --help, --list, the byte table and the CPU tests would all pay. */
#include "prefill_cublaslt.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublasLt.h>

/* The functions used, by the names cublasLt.h declares them with. */
#define LT_FUNCTIONS(X)                                                                                       \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate)                 \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)                \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)        \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) \
  X(cublasLtMatmul)

typedef struct lt_api {
#define LT_POINTER(name) __typeof__(&name) name;
  LT_FUNCTIONS(LT_POINTER)
#undef LT_POINTER
} lt_api;

struct km_lt {
  void *library;
  lt_api f;
  cublasLtHandle_t handle;
  void *workspace;
};

/* KM_CUBLASLT_LIBRARY: the path CMake found (CUDA::cublasLt); else the toolkit's soname. */
#ifndef KM_CUBLASLT_LIBRARY
#define KM_CUBLASLT_LIBRARY "libcublasLt.so"
#endif

static int lt_open(km_lt *lt, char *err, size_t errlen) {
  lt->library = dlopen(KM_CUBLASLT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!lt->library) {
    snprintf(err, errlen, "cannot open cuBLASLt (%s): %s", KM_CUBLASLT_LIBRARY, dlerror());
    return -1;
  }
#define LT_LOOKUP(name)                                                             \
  if (!(*(void **)&lt->f.name = dlsym(lt->library, #name))) {                      \
    snprintf(err, errlen, "cuBLASLt (%s) lacks %s", KM_CUBLASLT_LIBRARY, #name);    \
    return -1;                                                                      \
  }
  LT_FUNCTIONS(LT_LOOKUP)
#undef LT_LOOKUP
  return 0;
}

struct km_lt_gemm {
  const km_lt *lt;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
};

const char *km_lt_status_string(const km_lt *lt, int status) {
  return lt->f.cublasLtGetStatusString((cublasStatus_t)status);
}

static int lt_fail(const km_lt *lt, char *err, size_t errlen, const char *what, cublasStatus_t st) {
  snprintf(err, errlen, "cuBLASLt %s: %s", what, lt->f.cublasLtGetStatusString(st));
  return -1;
}

int km_lt_create(void *workspace, km_lt **out, char *err, size_t errlen) {
  *out = NULL;
  km_lt *lt = calloc(1, sizeof *lt);
  if (!lt) {
    snprintf(err, errlen, "out of host memory");
    return -1;
  }
  if (lt_open(lt, err, errlen)) {
    km_lt_destroy(lt);
    return -1;
  }
  cublasStatus_t st = lt->f.cublasLtCreate(&lt->handle);
  if (st != CUBLAS_STATUS_SUCCESS) {
    lt_fail(lt, err, errlen, "cublasLtCreate", st);
    km_lt_destroy(lt);
    return -1;
  }
  lt->workspace = workspace;
  *out = lt;
  return 0;
}

void km_lt_destroy(km_lt *lt) {
  if (!lt) return;
  if (lt->handle) lt->f.cublasLtDestroy(lt->handle);
  if (lt->library) dlclose(lt->library);
  free(lt);
}

void km_lt_gemm_free(km_lt_gemm *g) {
  if (!g) return;
  const lt_api *F = &g->lt->f;
  if (g->a) F->cublasLtMatrixLayoutDestroy(g->a);
  if (g->b) F->cublasLtMatrixLayoutDestroy(g->b);
  if (g->c) F->cublasLtMatrixLayoutDestroy(g->c);
  if (g->desc) F->cublasLtMatmulDescDestroy(g->desc);
  free(g);
}

/* A bf16 column-major rows x cols layout (leading dimension rows), `batch` of them `stride` elements apart. */
static cublasStatus_t layout(const lt_api *F, cublasLtMatrixLayout_t *l, uint64_t rows, uint64_t cols, int batch,
                             int64_t stride) {
  cublasStatus_t st = F->cublasLtMatrixLayoutCreate(l, CUDA_R_16BF, rows, cols, (int64_t)rows);
  if (st == CUBLAS_STATUS_SUCCESS && batch > 1) {
    int32_t count = batch;
    st = F->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = F->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  }
  return st;
}

int km_lt_gemm_plan(km_lt *lt, int tokens, int n, int k, int batch, km_lt_gemm **out, char *err, size_t errlen) {
  *out = NULL;
  km_lt_gemm *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, errlen, "out of host memory");
    return -1;
  }
  g->lt = lt;
  const lt_api *F = &lt->f;
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  cublasStatus_t st = F->cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = F->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = F->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n);
  if (st == CUBLAS_STATUS_SUCCESS) st = layout(F, &g->a, (uint64_t)k, (uint64_t)n, batch, (int64_t)n * k);
  if (st == CUBLAS_STATUS_SUCCESS) st = layout(F, &g->b, (uint64_t)k, (uint64_t)tokens, batch, (int64_t)tokens * k);
  if (st == CUBLAS_STATUS_SUCCESS) st = layout(F, &g->c, (uint64_t)n, (uint64_t)tokens, batch, (int64_t)tokens * n);
  if (st != CUBLAS_STATUS_SUCCESS) {
    km_lt_gemm_free(g);
    return lt_fail(lt, err, errlen, "descriptors", st);
  }
  cublasLtMatmulPreference_t pref = NULL;
  const uint64_t ws = KM_LT_WORKSPACE_BYTES;
  cublasLtMatmulHeuristicResult_t best;
  int found = 0;
  st = F->cublasLtMatmulPreferenceCreate(&pref);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = F->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = F->cublasLtMatmulAlgoGetHeuristic(lt->handle, g->desc, g->a, g->b, g->c, g->c, pref, 1, &best, &found);
  if (pref) F->cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found < 1) {
    km_lt_gemm_free(g);
    if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(lt, err, errlen, "heuristic", st);
    snprintf(err, errlen, "cuBLASLt has no algorithm for %d x %d x %d (batch %d) in bf16", tokens, n, k, batch);
    return -1;
  }
  g->algo = best.algo;
  *out = g;
  return 0;
}

int km_lt_gemm_run(const km_lt_gemm *g, const void *in, const void *weight, void *out, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  return (int)g->lt->f.cublasLtMatmul(g->lt->handle, g->desc, &alpha, weight, g->a, in, g->b, &beta, out, g->c, out,
                                      g->c, &g->algo, g->lt->workspace, KM_LT_WORKSPACE_BYTES, stream);
}
