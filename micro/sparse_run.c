/* The sparse family's timed instances (micro/sparse_run.h): each stage enqueued on its rotated copy;
 * and the host copies that setup and the checks take. */
#include "sparse_run.h"

#include "sparse_cub_sort.h"

cudaError_t km_sp_build(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  const int c = rep % r->copies;
  return km_sparse_summarize(&r->plan, r->keys + c * r->kv_elems, r->summary + c * r->sum_elems, r->s, st);
}

cudaError_t km_sp_append(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  return km_sparse_summary_append(&r->plan, r->keys, r->summary, r->pos, r->s, st);
}

cudaError_t km_sp_score(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  const int c = rep % r->copies;
  return km_sparse_score(r->query + c * r->q_elems, r->summary + c * r->sum_elems, r->scores, r->s, st);
}

cudaError_t km_sp_topk(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  const float *sc = r->scores + (size_t)(rep % r->copies) * r->score_elems;
  return km_sparse_topk(&r->plan, sc, r->sel, r->topk_rows, r->pages, r->k, st);
}

cudaError_t km_sp_select(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  const int c = rep % r->copies;
  return km_sparse_select_v(&r->plan, r->query + c * r->q_elems, r->summary + c * r->sum_elems, r->scores, r->counters,
                            r->sel, r->s, r->k, r->select_variant, st);
}

cudaError_t km_sp_cub_topk(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  float *sc = r->scores + (size_t)(rep % r->copies) * r->score_elems;
  return km_cub_topk(sc, r->sel, r->topk_rows, r->pages, r->k, r->scratch, r->scratch_bytes, st);
}

cudaError_t km_sp_read(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  const int c = rep % r->copies, j = rep % r->sel_copies;
  return km_sparse_read(r->keys + c * r->kv_elems, r->values + c * r->kv_elems, r->sel + j * r->sel_elems, r->k,
                        r->k_out + j * r->out_elems, r->v_out + j * r->out_elems, r->s, st);
}

cudaError_t km_sp_pipeline_topk(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  return km_sparse_topk(&r->plan, r->scores, r->sel, r->topk_rows, r->pages, r->k, st);
}

cudaError_t km_sp_score_topk(void *arg, int rep, cudaStream_t st) {
  cudaError_t e = km_sp_score(arg, rep, st);
  return e == cudaSuccess ? km_sp_pipeline_topk(arg, rep, st) : e;
}

cudaError_t km_sp_pipeline(void *arg, int rep, cudaStream_t st) {
  cudaError_t e = km_sp_score_topk(arg, rep, st);
  return e == cudaSuccess ? km_sp_read(arg, rep, st) : e;
}

cudaError_t km_sp_dense(void *arg, int rep, cudaStream_t st) {
  km_sp_run *r = arg;
  const int c = rep % r->copies;
  return km_sparse_dense_read(&r->plan, r->keys + c * r->kv_elems, r->values + c * r->kv_elems,
                              r->kv_elems * sizeof(uint16_t), r->partials, r->max_partials, &r->used_partials, st);
}

void *km_sp_to_host(km_bench *b, const void *dev, size_t bytes) {
  void *h = km_bench_host_alloc(b, bytes ? bytes : 16);
  if (!h) return NULL;
  cudaError_t e = cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, km_bench_stream(b));
  if (e == cudaSuccess) e = cudaStreamSynchronize(km_bench_stream(b));
  if (e != cudaSuccess) {
    km_bench_fail(b, "copy to the host failed: %s", cudaGetErrorString(e));
    return NULL;
  }
  return h;
}
