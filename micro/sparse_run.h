/* One sparse (Quest) case's device state and the instances it times, shared by micro/sparse.c (setup,
 * sweep, timing), micro/sparse_run.c (the enqueue functions) and micro/sparse_verify.c (the checks of
 * every timed instance's whole output). Buffers with copies > 1 are rotated by the launch count. */
#ifndef KM_MICRO_SPARSE_RUN_H
#define KM_MICRO_SPARSE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "sparse_topk.h"

#define KM_SP_PAGE KM_SPARSE_PAGE_TOKENS
/* Dense-read partial XORs: one per warp of a persistent grid (132 SMs x 2,048 threads = 8,448 warps). */
#define KM_SP_MAX_PARTIALS 65536

typedef struct km_sp_run {
  km_sparse_shape s;
  km_sparse_plan plan; /* device facts for the launchers, looked up once */
  int pages, k, copies, sel_copies, max_partials, topk_rows;
  int used_partials;   /* what the last dense read wrote */
  size_t kv_elems, sum_elems, q_elems, score_elems, sel_elems, out_elems, scratch_bytes;
  uint16_t *keys, *values, *summary, *query, *k_out, *v_out;
  float *scores;
  int32_t *sel, *pos;
  uint32_t *partials;
  uint32_t *counters;  /* km_sparse_select's per-row arrival counters: zeroed once at setup, left zero by each launch */
  km_sparse_select_variant select_variant; /* which fused select km_sp_select runs (V1 unless a row asks) */
  void *scratch;
} km_sp_run;

/* Instance `rep` of each timed thing (arg: a km_sp_run). Input copy rep % copies, selection and output
 * copy rep % sel_copies. */
cudaError_t km_sp_build(void *arg, int rep, cudaStream_t st);    /* summaries of every page */
cudaError_t km_sp_append(void *arg, int rep, cudaStream_t st);   /* one token per sequence folded in */
cudaError_t km_sp_score(void *arg, int rep, cudaStream_t st);    /* query and summaries -> scores */
cudaError_t km_sp_topk(void *arg, int rep, cudaStream_t st);     /* score copy -> selection */
cudaError_t km_sp_select(void *arg, int rep, cudaStream_t st);   /* query and summaries -> scores + selection, one launch */
cudaError_t km_sp_score_topk(void *arg, int rep, cudaStream_t st); /* the same by km_sparse_score + km_sparse_topk */
cudaError_t km_sp_cub_topk(void *arg, int rep, cudaStream_t st); /* the same by CUB's segmented sort */
cudaError_t km_sp_read(void *arg, int rep, cudaStream_t st);     /* selection -> gathered K and V */
cudaError_t km_sp_pipeline(void *arg, int rep, cudaStream_t st); /* score + top-k + read of one step */
cudaError_t km_sp_pipeline_topk(void *arg, int rep, cudaStream_t st); /* the pipeline's top-k stage alone */
cudaError_t km_sp_dense(void *arg, int rep, cudaStream_t st);    /* every byte of K and V read */

/* A host copy of device memory (freed with the case), synchronised on the bench stream; NULL after
 * failing the case. */
void *km_sp_to_host(km_bench *b, const void *dev, size_t bytes);

/* Checks of the timed instances, each over every rotated copy, the whole output on the device against
 * trusted kernels (kernels/verify_sparse.h) and sequence 0 of copy 0 on the CPU against micro/
 * sparse_ref.c. 0 when verified; otherwise the case has failed. */
int km_sp_verify_build(km_bench *b, km_sp_run *r);
int km_sp_verify_append(km_bench *b, km_sp_run *r, const int32_t *pos); /* the whole summary buffer, on the CPU */
int km_sp_verify_score(km_bench *b, km_sp_run *r);
int km_sp_verify_topk(km_bench *b, km_sp_run *r, km_enqueue_fn fn, int ascending);
/* The fused select of every copy: scores and selection bitwise equal to km_sparse_score + km_sparse_topk
 * on the same copy, the selection against the trusted rank rule, sequence 0 of copy 0 on the CPU, and
 * the counters back at zero. */
int km_sp_verify_select(km_bench *b, km_sp_run *r);
int km_sp_verify_read(km_bench *b, km_sp_run *r, const int32_t *host_sel);
int km_sp_verify_pipeline(km_bench *b, km_sp_run *r); /* the pipeline, its stages and the dense read */
int km_sp_verify_dense(km_bench *b, km_sp_run *r);

#endif
