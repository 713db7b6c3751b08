/* sparse/: query-aware top-k read (Quest). Each stage (summary build and append, scoring, top-k, sparse
 * read), the whole decode-step pipeline against the dense read of every page, the CUB-sort top-k baseline,
 * and the recall of the selection on data with planted high-attention tokens. Qwen3-8B shape by default. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "fill.h"
#include "micro_tables.h"
#include "sparse_cub_sort.h"
#include "sparse_ref.h"
#include "sparse_topk.h"

#define PAGE KM_SPARSE_PAGE_TOKENS
/* Score tolerance against the CPU: fp32 sums of d * group terms in another order; 1e-4 of the sum of
 * |terms| is ~100x the worst rounding seen for 512 terms, and far below any real score gap. */
#define SCORE_REL_TOL 1e-4
/* Stage times on pipeline rows: median of this many samples of >= 200 us each. */
#define AUX_SAMPLES 5
/* Dense-read partial XORs: one per warp of a persistent grid (132 SMs x 2,048 threads = 8,448 warps). */
#define MAX_PARTIALS 65536
/* Planted tokens per KV head for recall, and their logit range (random keys give logits ~ N(0, 1)). */
#define PLANT_PER_HEAD 48
#define PLANT_LOGIT_LO 5.0f
#define PLANT_LOGIT_HI 10.0f

typedef enum sparse_kind {
  SP_BUILD,    /* summaries of all pages (prefill) */
  SP_APPEND,   /* one appended token per sequence folded into its page summary */
  SP_SCORE,
  SP_TOPK,
  SP_CUB_TOPK, /* baseline */
  SP_READ,
  SP_PIPELINE, /* score + top-k + read */
  SP_DENSE,    /* read every page of K and V */
  SP_RECALL,   /* the pipeline on planted data: recall per budget */
  SP_KIND_COUNT
} sparse_kind;

typedef struct sparse_params {
  sparse_kind kind;
  int context; /* tokens per sequence */
  int budget;  /* tokens selected per (sequence, KV head): k = budget / 16 pages */
  int batch;
  int rows, pages, k; /* top-k rows only */
} sparse_params;

/* Device state of one case; buffers with copies > 1 are rotated by rep. */
typedef struct sp_run {
  km_sparse_shape s;
  int pages, k, copies, sel_copies, max_partials, topk_rows;
  size_t kv_elems, sum_elems, q_elems, score_elems, sel_elems, out_elems, scratch_bytes;
  uint16_t *keys, *values, *summary, *query, *k_out, *v_out;
  float *scores;
  int32_t *sel, *pos;
  uint32_t *partials;
  void *scratch;
} sp_run;

/* ------------------------------------------------------------------ enqueue functions */
static cudaError_t enq_build(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  const int c = rep % r->copies;
  return km_sparse_summarize(r->keys + c * r->kv_elems, r->summary + c * r->sum_elems, r->s, st);
}

static cudaError_t enq_append(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  return km_sparse_summary_append(r->keys, r->summary, r->pos, r->s, st);
}

static cudaError_t enq_score(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  const int c = rep % r->copies;
  return km_sparse_score(r->query + c * r->q_elems, r->summary + c * r->sum_elems, r->scores, r->s, st);
}

static cudaError_t enq_topk(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  const float *sc = r->scores + (size_t)(rep % r->copies) * r->score_elems;
  return km_sparse_topk(sc, r->sel, r->topk_rows, r->pages, r->k, st);
}

static cudaError_t enq_cub(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  float *sc = r->scores + (size_t)(rep % r->copies) * r->score_elems;
  return km_cub_topk(sc, r->sel, r->topk_rows, r->pages, r->k, r->scratch, r->scratch_bytes, st);
}

static cudaError_t enq_read(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  const int c = rep % r->copies, j = rep % r->sel_copies;
  return km_sparse_read(r->keys + c * r->kv_elems, r->values + c * r->kv_elems, r->sel + j * r->sel_elems, r->k,
                        r->k_out + j * r->out_elems, r->v_out + j * r->out_elems, r->s, st);
}

static cudaError_t enq_pipeline(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  cudaError_t e = enq_score(arg, rep, st);
  if (e == cudaSuccess) e = km_sparse_topk(r->scores, r->sel, r->topk_rows, r->pages, r->k, st);
  if (e == cudaSuccess) e = enq_read(arg, rep, st);
  return e;
}

static cudaError_t enq_topk_of_pipeline(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  return km_sparse_topk(r->scores, r->sel, r->topk_rows, r->pages, r->k, st);
}

static cudaError_t enq_dense(void *arg, int rep, cudaStream_t st) {
  sp_run *r = arg;
  const int c = rep % r->copies;
  int used = 0;
  return km_sparse_dense_read(r->keys + c * r->kv_elems, r->values + c * r->kv_elems,
                              r->kv_elems * sizeof(uint16_t), r->partials, r->max_partials, &used, st);
}

/* ------------------------------------------------------------------ setup */
static int shape_supported(km_bench *b, km_sparse_shape s) {
  const int group = s.kv_heads > 0 ? s.q_heads / s.kv_heads : 0;
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads || group > KM_SPARSE_MAX_GROUP || (group & (group - 1)) ||
      (s.head_dim != 64 && s.head_dim != 128 && s.head_dim != 256)) {
    km_bench_skip(b, "model shape %d query / %d KV heads, head_dim %d: the kernels take head_dim 64/128/256 and a "
                  "group of 1, 2, 4 or 8", s.q_heads, s.kv_heads, s.head_dim);
    return 0;
  }
  return 1;
}

static sp_run make_run(km_bench *b, const sparse_params *p) {
  const km_model *m = km_bench_model(b);
  sp_run r;
  memset(&r, 0, sizeof r);
  r.s = (km_sparse_shape){p->batch, p->context, m->num_kv_heads, m->num_attention_heads, m->head_dim};
  r.pages = (p->context + PAGE - 1) / PAGE;
  r.k = p->budget / PAGE;
  r.topk_rows = p->batch * m->num_kv_heads;
  r.copies = r.sel_copies = 1;
  r.kv_elems = (size_t)p->batch * p->context * r.s.kv_heads * r.s.head_dim;
  r.sum_elems = (size_t)r.topk_rows * r.pages * 2 * r.s.head_dim;
  r.q_elems = (size_t)p->batch * r.s.q_heads * r.s.head_dim;
  r.score_elems = (size_t)r.topk_rows * r.pages;
  r.sel_elems = (size_t)r.topk_rows * r.k;
  r.out_elems = r.sel_elems * PAGE * r.s.head_dim;
  return r;
}

static void *dev_alloc(km_bench *b, size_t bytes) { return km_bench_device_alloc(b, bytes ? bytes : 16); }

/* Keys N(0, 1) (scores need finite values), values random bits (only copied), summaries built per copy. */
static int alloc_kv(km_bench *b, sp_run *r, int with_values) {
  const size_t n = r->kv_elems * r->copies;
  r->keys = dev_alloc(b, n * sizeof(uint16_t));
  r->values = with_values ? dev_alloc(b, n * sizeof(uint16_t)) : NULL;
  r->summary = dev_alloc(b, r->sum_elems * r->copies * sizeof(uint16_t));
  if (!r->keys || (with_values && !r->values) || !r->summary) return -1;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->keys, n, km_bench_seed(b), 1.0f, r->s.head_dim, 0, 0, 1.0f, st));
  if (with_values) KM_CUDA_OR_FAIL(b, km_fill_random_bits(r->values, n * sizeof(uint16_t), km_bench_seed(b), st));
  for (int c = 0; c < r->copies; ++c)
    KM_CUDA_OR_FAIL(b, km_sparse_summarize(r->keys + c * r->kv_elems, r->summary + c * r->sum_elems, r->s, st));
  return 0;
}

static int alloc_query(km_bench *b, sp_run *r) {
  const size_t n = r->q_elems * r->copies;
  r->query = dev_alloc(b, n * sizeof(uint16_t));
  if (!r->query) return -1;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->query, n, km_bench_seed(b), 1.0f, r->s.head_dim, 0, 0, 1.0f,
                                         km_bench_stream(b)));
  return 0;
}

/* Intermediates and outputs of one decode step (scores, selection, gathered K and V), poisoned. */
static int alloc_step(km_bench *b, sp_run *r) {
  r->scores = dev_alloc(b, r->score_elems * sizeof(float));
  r->sel = dev_alloc(b, r->sel_elems * r->sel_copies * sizeof(int32_t));
  r->k_out = dev_alloc(b, r->out_elems * r->sel_copies * sizeof(uint16_t));
  r->v_out = dev_alloc(b, r->out_elems * r->sel_copies * sizeof(uint16_t));
  r->partials = dev_alloc(b, MAX_PARTIALS * sizeof(uint32_t));
  r->max_partials = MAX_PARTIALS;
  if (!r->scores || !r->sel || !r->k_out || !r->v_out || !r->partials) return -1;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->scores, 0xff, r->score_elems * sizeof(float), st));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->sel, 0xff, r->sel_elems * sizeof(int32_t), st));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->k_out, 0xff, r->out_elems * sizeof(uint16_t), st));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->v_out, 0xff, r->out_elems * sizeof(uint16_t), st));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->partials, 0xff, MAX_PARTIALS * sizeof(uint32_t), st));
  return 0;
}

static void *to_host(km_bench *b, const void *dev, size_t bytes) {
  void *h = km_bench_host_alloc(b, bytes ? bytes : 16);
  if (!h) {
    km_bench_fail(b, "out of host memory for %zu bytes of verification data", bytes);
    return NULL;
  }
  cudaError_t e = cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, km_bench_stream(b));
  if (e == cudaSuccess) e = cudaStreamSynchronize(km_bench_stream(b));
  if (e != cudaSuccess) {
    km_bench_fail(b, "copy of verification data failed: %s", cudaGetErrorString(e));
    return NULL;
  }
  return h;
}

/* ------------------------------------------------------------------ checks (each adds to bad / n) */
typedef struct sp_check {
  km_bench *b;
  size_t bad, n;
} sp_check;

static void check_bits(sp_check *c, const char *what, const uint16_t *got, const uint16_t *want, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && c->bad++ < 10) km_bench_mismatch(c->b, "%s[%zu] = 0x%04x, want 0x%04x", what, i, got[i], want[i]);
  c->n += n;
}

static void check_scores(sp_check *c, const float *got, const float *want, const float *mag, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!(fabs((double)got[i] - want[i]) <= SCORE_REL_TOL * mag[i] + 1e-30) && c->bad++ < 10)
      km_bench_mismatch(c->b, "score[%zu] = %.9g, CPU %.9g (sum |terms| %.6g)", i, got[i], want[i], mag[i]);
  }
  c->n += n;
}

/* The GPU's selection of each row against the CPU's exact top-k of the GPU's own scores, so float
 * summation order cannot make the set comparison flaky (check_scores bounds the scores themselves). */
static void check_topk(sp_check *c, const float *scores, const int32_t *sel, int rows, int pages, int k,
                       int sort_got) {
  int32_t *want = malloc((size_t)k * 2 * sizeof *want);
  if (!want) {
    km_bench_fail(c->b, "out of host memory");
    return;
  }
  int32_t *got = want + k;
  for (int r = 0; r < rows; ++r) {
    if (km_sparse_ref_topk_row(scores + (size_t)r * pages, pages, k, want) != 0) {
      km_bench_fail(c->b, "out of host memory");
      break;
    }
    memcpy(got, sel + (size_t)r * k, (size_t)k * sizeof *got);
    if (sort_got)
      for (int i = 1; i < k; ++i)  /* insertion sort: k is small and mostly ordered */
        for (int j = i; j > 0 && got[j - 1] > got[j]; --j) {
          const int32_t t = got[j];
          got[j] = got[j - 1];
          got[j - 1] = t;
        }
    for (int j = 0; j < k; ++j)
      if (got[j] != want[j] && c->bad++ < 10) km_bench_mismatch(c->b, "row %d slot %d: page %d, want %d", r, j, got[j], want[j]);
    c->n += (size_t)k;
  }
  free(want);
}

/* The dense read run over sequence 0 only (a reduced instance): the XOR of its partials against the CPU's. */
static int check_dense_xor(sp_check *c, sp_run *r, const uint16_t *keys, const uint16_t *values) {
  km_bench *b = c->b;
  const size_t seq_bytes = r->kv_elems / r->s.batch * 2;
  int used = 0;
  KM_CUDA_OR_FAIL(b, km_sparse_dense_read(r->keys, r->values, seq_bytes, r->partials, r->max_partials, &used,
                                          km_bench_stream(b)));
  uint32_t *parts = to_host(b, r->partials, (size_t)used * sizeof(uint32_t));
  if (!parts) return -1;
  uint32_t got = 0;
  for (int i = 0; i < used; ++i) got ^= parts[i];
  const uint32_t want = km_sparse_ref_xor(keys, values, seq_bytes);
  if (got != want && c->bad++ < 10) km_bench_mismatch(b, "dense read XOR 0x%08x, want 0x%08x", got, want);
  c->n += 1;
  return 0;
}

static int verify_dense(km_bench *b, sp_run *r) {
  const size_t seq_kv = r->kv_elems / r->s.batch;
  uint16_t *keys = to_host(b, r->keys, seq_kv * 2), *values = to_host(b, r->values, seq_kv * 2);
  sp_check c = {b, 0, 0};
  if (!keys || !values || check_dense_xor(&c, r, keys, values) != 0) return -1;
  return km_bench_verified(b, c.bad, c.n, "sequence 0: XOR of all words read, bitwise") ? 0 : -1;
}

/* Sequence 0 of copy 0 (a reduced instance of the timed one): summaries bitwise, scores within
 * SCORE_REL_TOL, every row's top-k set exactly, the gather bitwise, and the dense read's XOR. */
static int verify_step(km_bench *b, sp_run *r, int check_read, int check_dense) {
  km_sparse_shape one = r->s;
  one.batch = 1;
  const int d = r->s.head_dim;
  const size_t seq_kv = r->kv_elems / r->s.batch, seq_sum = r->sum_elems / r->s.batch;
  const size_t seq_scores = (size_t)r->s.kv_heads * r->pages, seq_out = r->out_elems / r->s.batch;
  uint16_t *keys = to_host(b, r->keys, seq_kv * 2), *sum = to_host(b, r->summary, seq_sum * 2);
  uint16_t *q = to_host(b, r->query, r->q_elems / r->s.batch * 2);
  float *scores = to_host(b, r->scores, r->score_elems * sizeof(float));
  int32_t *sel = to_host(b, r->sel, r->sel_elems * sizeof(int32_t));
  uint16_t *want_sum = km_bench_host_alloc(b, seq_sum * 2);
  float *want_sc = km_bench_host_alloc(b, seq_scores * sizeof(float)), *mag = km_bench_host_alloc(b, seq_scores * 4);
  if (!keys || !sum || !q || !scores || !sel || !want_sum || !want_sc || !mag) return -1;
  sp_check c = {b, 0, 0};
  km_sparse_ref_summarize(keys, want_sum, one);
  check_bits(&c, "summary", sum, want_sum, seq_sum);
  km_sparse_ref_score(q, sum, want_sc, mag, one);
  check_scores(&c, scores, want_sc, mag, seq_scores);
  check_topk(&c, scores, sel, r->topk_rows, r->pages, r->k, 0);
  uint16_t *values = check_read || check_dense ? to_host(b, r->values, seq_kv * 2) : NULL;
  if (check_read) {
    uint16_t *ko = to_host(b, r->k_out, seq_out * 2), *vo = to_host(b, r->v_out, seq_out * 2);
    uint16_t *wk = km_bench_host_alloc(b, seq_out * 2), *wv = km_bench_host_alloc(b, seq_out * 2);
    if (!values || !ko || !vo || !wk || !wv) return -1;
    const size_t per_row = (size_t)r->k * PAGE * d;
    for (int h = 0; h < r->s.kv_heads; ++h)
      km_sparse_ref_gather_row(keys, values, sel + (size_t)h * r->k, r->k, h, one, wk + h * per_row, wv + h * per_row);
    check_bits(&c, "gathered K", ko, wk, seq_out);
    check_bits(&c, "gathered V", vo, wv, seq_out);
  }
  if (check_dense && (!values || check_dense_xor(&c, r, keys, values) != 0)) return -1;
  return km_bench_verified(b, c.bad, c.n,
                           "sequence 0: summaries, gather and dense XOR bitwise; scores |gpu-cpu| <= 1e-4 x "
                           "sum|terms|; top-k set equal to the CPU top-k of the GPU scores (ties: lower page)")
             ? 0
             : -1;
}

/* ------------------------------------------------------------------ timing helpers */
static double aux_time_us(km_bench *b, km_enqueue_fn fn, void *arg) {
  return km_bench_time_extra(b, fn, arg, AUX_SAMPLES) * 1e6;
}

static double step_bytes_read(const sp_run *r) {
  const double gathered = 2.0 * r->out_elems * 2;
  return r->sum_elems * 2.0 + r->q_elems * 2.0 + r->score_elems * 4.0 + r->sel_elems * 4.0 + gathered;
}

static double step_bytes_written(const sp_run *r) {
  return r->score_elems * 4.0 + r->sel_elems * 4.0 + 2.0 * r->out_elems * 2;
}

/* ------------------------------------------------------------------ cases */
/* Copies so that what one instance touches (summaries + gathered pages, or all K and V) is rotated
 * through >= 4x L2. */
static int pipeline_copies(km_bench *b, const sp_run *r, sparse_kind kind) {
  const double touched = kind == SP_DENSE ? 4.0 * r->kv_elems : step_bytes_read(r) + step_bytes_written(r);
  return km_bench_rotation(b, (size_t)touched);
}

static void run_pipeline(km_bench *b, const sparse_params *p) {
  sp_run r = make_run(b, p);
  if (!shape_supported(b, r.s)) return;
  r.copies = pipeline_copies(b, &r, p->kind);
  if (alloc_kv(b, &r, 1) || alloc_query(b, &r) || alloc_step(b, &r)) return;
  uint16_t *hkeys = NULL, *hq = NULL;
  if (p->kind == SP_RECALL) {
    /* Planted data is made on the host for sequence 0 of copy 0, then re-summarised on the device. */
    hkeys = to_host(b, r.keys, r.kv_elems * 2);
    hq = to_host(b, r.query, r.q_elems * 2);
    if (!hkeys || !hq) return;
    km_sparse_ref_plant(hkeys, hq, r.s, PLANT_PER_HEAD, PLANT_LOGIT_LO, PLANT_LOGIT_HI, km_bench_seed(b));
    KM_CUDA(b, cudaMemcpyAsync(r.keys, hkeys, r.kv_elems * 2, cudaMemcpyHostToDevice, km_bench_stream(b)));
    KM_CUDA(b, km_sparse_summarize(r.keys, r.summary, r.s, km_bench_stream(b)));
  }
  if (p->kind == SP_DENSE) {
    const km_work w = {4.0 * r.kv_elems, 0, (double)p->batch * p->context, 1, 0};
    if (km_bench_verify_enabled(b) && verify_dense(b, &r) != 0) return;
    km_bench_measure(b, enq_dense, &r, &w);
    return;
  }
  const km_work w = {step_bytes_read(&r), step_bytes_written(&r), (double)p->batch * p->context, 1, 0};
  if (km_bench_verify_enabled(b)) {
    KM_CUDA(b, enq_pipeline(&r, 0, km_bench_stream(b)));
    if (verify_step(b, &r, 1, 1) != 0) return;
  }
  double recall = -1.0, oracle = -1.0;
  if (p->kind == SP_RECALL) {
    KM_CUDA(b, enq_pipeline(&r, 0, km_bench_stream(b)));
    int32_t *sel = to_host(b, r.sel, r.sel_elems * 4);
    if (!sel) return;
    if (km_sparse_ref_recall(hkeys, hq, sel, r.k, r.s, &recall, &oracle) != 0) {
      km_bench_fail(b, "out of host memory computing recall");
      return;
    }
  }
  const double score_us = aux_time_us(b, enq_score, &r), topk_us = aux_time_us(b, enq_topk_of_pipeline, &r);
  const double read_us = aux_time_us(b, enq_read, &r), dense_us = aux_time_us(b, enq_dense, &r);
  KM_RETURN_IF_STOPPED(b);
  const double sec = km_bench_measure(b, enq_pipeline, &r, &w);
  km_bench_counter(b, "score_us", score_us);
  km_bench_counter(b, "topk_us", topk_us);
  km_bench_counter(b, "read_us", read_us);
  km_bench_counter(b, "dense_us", dense_us);
  if (sec > 0) km_bench_counter(b, "speedup_vs_dense", dense_us * 1e-6 / sec);
  km_bench_counter(b, "selected_fraction", (double)r.k / r.pages);
  if (recall >= 0) {
    km_bench_counter(b, "recall", recall);
    km_bench_counter(b, "oracle_recall", oracle);
  }
}

/* Random selections: the last page plus k-1 distinct others per row, ascending (a partial shuffle). */
static int random_selection(km_bench *b, const sp_run *r, int32_t *sel) {
  int32_t *perm = malloc((size_t)r->pages * sizeof *perm);
  if (!perm) return -1;
  uint64_t state = km_bench_seed(b);
  for (int row = 0; row < r->topk_rows; ++row) {
    for (int i = 0; i < r->pages - 1; ++i) perm[i] = i;
    int32_t *out = sel + (size_t)row * r->k;
    for (int j = 0; j < r->k - 1; ++j) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const int pick = j + (int)((state >> 33) % (uint64_t)(r->pages - 1 - j));
      const int32_t t = perm[j];
      perm[j] = perm[pick];
      perm[pick] = t;
    }
    memcpy(out, perm, (size_t)(r->k - 1) * sizeof *out);
    out[r->k - 1] = r->pages - 1;
  }
  free(perm);
  return 0;
}

static void run_read(km_bench *b, const sparse_params *p) {
  sp_run r = make_run(b, p);
  if (!shape_supported(b, r.s)) return;
  const double moved = 4.0 * r.out_elems;  /* gathered K + V, bytes */
  r.sel_copies = km_bench_rotation(b, (size_t)(2 * moved));
  if (alloc_kv(b, &r, 1) || alloc_query(b, &r) || alloc_step(b, &r)) return;
  int32_t *sel = km_bench_host_alloc(b, r.sel_elems * r.sel_copies * sizeof *sel);
  if (!sel || random_selection(b, &r, sel) != 0) {
    km_bench_fail(b, "out of host memory for selections");
    return;
  }
  for (int j = 1; j < r.sel_copies; ++j)
    if (random_selection(b, &r, sel + j * r.sel_elems) != 0) return;
  KM_CUDA(b, cudaMemcpy(r.sel, sel, r.sel_elems * r.sel_copies * sizeof *sel, cudaMemcpyHostToDevice));
  if (km_bench_verify_enabled(b)) {
    /* Verified as one whole step (scores, top-k, then the gather of that selection); the timed
     * instances then gather the random selections, restored below. */
    KM_CUDA(b, enq_score(&r, 0, km_bench_stream(b)));
    KM_CUDA(b, km_sparse_topk(r.scores, r.sel, r.topk_rows, r.pages, r.k, km_bench_stream(b)));
    KM_CUDA(b, enq_read(&r, 0, km_bench_stream(b)));
    if (verify_step(b, &r, 1, 0) != 0) return;
    KM_CUDA(b, cudaMemcpy(r.sel, sel, r.sel_elems * sizeof *sel, cudaMemcpyHostToDevice));
  }
  const km_work w = {moved + r.sel_elems * 4.0, moved, (double)p->batch * p->budget * r.s.kv_heads, 1, 0};
  km_bench_measure(b, enq_read, &r, &w);
}

static void run_build(km_bench *b, const sparse_params *p) {
  sp_run r = make_run(b, p);
  if (!shape_supported(b, r.s)) return;
  r.copies = km_bench_rotation(b, r.kv_elems * 2 + r.sum_elems * 2);
  if (alloc_kv(b, &r, 0)) return;
  if (km_bench_verify_enabled(b)) {
    const size_t seq_sum = r.sum_elems / r.s.batch;
    km_sparse_shape one = r.s;
    one.batch = 1;
    sp_check c = {b, 0, 0};
    KM_CUDA(b, cudaMemsetAsync(r.summary, 0xff, r.sum_elems * 2, km_bench_stream(b)));
    KM_CUDA(b, km_sparse_summarize(r.keys, r.summary, r.s, km_bench_stream(b)));
    uint16_t *keys = to_host(b, r.keys, r.kv_elems / r.s.batch * 2), *sum = to_host(b, r.summary, seq_sum * 2);
    uint16_t *want = km_bench_host_alloc(b, seq_sum * 2);
    if (!keys || !sum || !want) return;
    km_sparse_ref_summarize(keys, want, one);
    check_bits(&c, "summary", sum, want, seq_sum);
    if (!km_bench_verified(b, c.bad, c.n, "sequence 0 summaries bitwise")) return;
  }
  const km_work w = {r.kv_elems * 2.0, r.sum_elems * 2.0, (double)p->batch * p->context, 1, 0};
  km_bench_measure(b, enq_build, &r, &w);
}

/* CPU summary of the page holding token `upto - 1` of sequence `seq`, over that page's tokens < upto,
 * into out[2][d]. Returns -1 when out of memory. */
static int ref_page_upto(km_bench *b, const sp_run *r, const uint16_t *keys, int seq, int upto, uint16_t *out) {
  km_sparse_shape view = r->s;
  view.batch = 1;  /* sequence `seq` alone: its token stride does not depend on view.tokens */
  view.tokens = upto;
  const int pp = (upto + PAGE - 1) / PAGE, d = r->s.head_dim;
  uint16_t *tmp = malloc((size_t)r->s.kv_heads * pp * 2 * d * sizeof *tmp);
  if (!tmp) return -1;
  km_sparse_ref_summarize(keys + (size_t)seq * (r->kv_elems / r->s.batch), tmp, view);
  for (int h = 0; h < r->s.kv_heads; ++h)
    memcpy(out + (size_t)h * 2 * d, tmp + ((size_t)h * pp + pp - 1) * 2 * d, 2 * (size_t)d * sizeof *out);
  free(tmp);
  return 0;
}

/* Put each touched page in its pre-append state (the CPU summary of its earlier tokens, or poison for a
 * page start), append on the GPU, and compare the pages with a CPU rebuild that includes the new token. */
static int verify_append(km_bench *b, sp_run *r, const int32_t *pos) {
  const int d = r->s.head_dim, H = r->s.kv_heads;
  uint16_t *keys = to_host(b, r->keys, r->kv_elems * 2), *sum = to_host(b, r->summary, r->sum_elems * 2);
  uint16_t *page = km_bench_host_alloc(b, (size_t)H * 2 * d * 2);
  if (!keys || !sum || !page) return -1;
  for (int i = 0; i < r->s.batch; ++i) {
    if (pos[i] % PAGE == 0)
      memset(page, 0xff, (size_t)H * 2 * d * 2);
    else if (ref_page_upto(b, r, keys, i, pos[i], page) != 0)
      return -1;
    for (int h = 0; h < H; ++h)
      memcpy(sum + (((size_t)i * H + h) * r->pages + pos[i] / PAGE) * 2 * d, page + (size_t)h * 2 * d,
             2 * (size_t)d * 2);
  }
  KM_CUDA_OR_FAIL(b, cudaMemcpy(r->summary, sum, r->sum_elems * 2, cudaMemcpyHostToDevice));
  KM_CUDA_OR_FAIL(b, enq_append(r, 0, km_bench_stream(b)));
  uint16_t *got = to_host(b, r->summary, r->sum_elems * 2);
  if (!got) return -1;
  sp_check c = {b, 0, 0};
  for (int i = 0; i < r->s.batch; ++i) {
    if (ref_page_upto(b, r, keys, i, pos[i] + 1, page) != 0) return -1;
    for (int h = 0; h < H; ++h)
      check_bits(&c, "appended summary", got + (((size_t)i * H + h) * r->pages + pos[i] / PAGE) * 2 * d,
                 page + (size_t)h * 2 * d, 2 * (size_t)d);
  }
  return km_bench_verified(b, c.bad, c.n, "appended pages bitwise equal to a CPU rebuild") ? 0 : -1;
}

static void run_append(km_bench *b, const sparse_params *p) {
  sp_run r = make_run(b, p);
  if (!shape_supported(b, r.s)) return;
  if (alloc_kv(b, &r, 0)) return;
  /* One new token per sequence at a random position: page starts and mid-page folds both occur. */
  int32_t *pos = km_bench_host_alloc(b, (size_t)r.s.batch * sizeof *pos);
  r.pos = dev_alloc(b, (size_t)r.s.batch * sizeof *pos);
  if (!pos || !r.pos) return;
  uint64_t state = km_bench_seed(b);
  for (int i = 0; i < r.s.batch; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    pos[i] = (int32_t)((state >> 33) % (uint64_t)r.s.tokens);
  }
  if (r.s.batch > 1) pos[1] = pos[1] / PAGE * PAGE;  /* make sure the page-start path is checked */
  KM_CUDA(b, cudaMemcpy(r.pos, pos, (size_t)r.s.batch * sizeof *pos, cudaMemcpyHostToDevice));
  if (km_bench_verify_enabled(b) && verify_append(b, &r, pos) != 0) return;
  /* Per sequence: the new key read, its page's max and min read and written (positions: 4 bytes). */
  const double key_bytes = r.s.kv_heads * r.s.head_dim * 2.0;
  const km_work w = {r.s.batch * (3 * key_bytes + 4), r.s.batch * 2 * key_bytes, r.s.batch, 1, 0};
  km_bench_measure(b, enq_append, &r, &w);
}

/* Scoring reads only summaries: random N(0, 1) bf16 stands in for them (the score does not need max >= min). */
static void run_score(km_bench *b, const sparse_params *p) {
  sp_run r = make_run(b, p);
  if (!shape_supported(b, r.s)) return;
  r.copies = km_bench_rotation(b, r.sum_elems * 2);
  r.summary = dev_alloc(b, r.sum_elems * r.copies * 2);
  r.scores = dev_alloc(b, r.score_elems * sizeof(float));
  if (!r.summary || !r.scores || alloc_query(b, &r)) return;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA(b, km_fill_normal_bf16(r.summary, r.sum_elems * r.copies, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f, st));
  if (km_bench_verify_enabled(b)) {
    km_sparse_shape one = r.s;
    one.batch = 1;
    const size_t n = (size_t)r.s.kv_heads * r.pages;
    KM_CUDA(b, cudaMemsetAsync(r.scores, 0xff, r.score_elems * sizeof(float), st));
    KM_CUDA(b, enq_score(&r, 0, st));
    uint16_t *sum = to_host(b, r.summary, r.sum_elems / r.s.batch * 2), *q = to_host(b, r.query, r.q_elems / r.s.batch * 2);
    float *got = to_host(b, r.scores, n * sizeof(float));
    float *want = km_bench_host_alloc(b, n * sizeof(float)), *mag = km_bench_host_alloc(b, n * sizeof(float));
    if (!sum || !q || !got || !want || !mag) return;
    km_sparse_ref_score(q, sum, want, mag, one);
    sp_check c = {b, 0, 0};
    check_scores(&c, got, want, mag, n);
    if (!km_bench_verified(b, c.bad, c.n, "sequence 0: |gpu-cpu| <= 1e-4 x sum|terms| (fp32, other order)")) return;
  }
  const km_work w = {r.sum_elems * 2.0 + r.q_elems * 2.0, r.score_elems * 4.0, (double)p->batch * p->context, 1, 0};
  km_bench_measure(b, enq_score, &r, &w);
}

/* Top-k rows: real score distributions, made by the scoring kernel from random summaries, one query per
 * rotated copy of the scores. */
static void run_topk(km_bench *b, const sparse_params *p) {
  const int heads = km_bench_model(b)->num_kv_heads;
  if (heads <= 0 || p->rows % heads) {
    km_bench_skip(b, "%d rows is not a whole number of sequences of %d KV heads", p->rows, heads);
    return;
  }
  const sparse_params derived = {p->kind, p->pages * PAGE, p->k * PAGE, p->rows / heads, p->rows, p->pages, p->k};
  sp_run r = make_run(b, &derived);
  if (!shape_supported(b, r.s)) return;
  if (p->pages > km_sparse_topk_max_pages(km_bench_device_id(b))) {
    km_bench_skip(b, "%d pages exceed the %d a CTA's shared memory holds", p->pages,
                  km_sparse_topk_max_pages(km_bench_device_id(b)));
    return;
  }
  r.copies = km_bench_rotation(b, r.score_elems * sizeof(float));
  r.summary = dev_alloc(b, r.sum_elems * 2);
  r.scores = dev_alloc(b, r.score_elems * r.copies * sizeof(float));
  r.sel = dev_alloc(b, r.sel_elems * sizeof(int32_t));
  if (!r.summary || !r.scores || !r.sel || alloc_query(b, &r)) return;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA(b, km_fill_normal_bf16(r.summary, r.sum_elems, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f, st));
  for (int c = 0; c < r.copies; ++c)
    KM_CUDA(b, km_sparse_score(r.query + c * r.q_elems, r.summary, r.scores + c * r.score_elems, r.s, st));
  km_enqueue_fn fn = enq_topk;
  if (p->kind == SP_CUB_TOPK) {
    KM_CUDA(b, km_cub_topk_scratch_bytes(r.topk_rows, r.pages, &r.scratch_bytes));
    r.scratch = dev_alloc(b, r.scratch_bytes);
    if (!r.scratch) return;
    KM_CUDA(b, km_cub_topk_prepare(r.scratch, r.scratch_bytes, r.topk_rows, r.pages, st));
    fn = enq_cub;
  }
  if (km_bench_verify_enabled(b)) {
    KM_CUDA(b, cudaMemsetAsync(r.sel, 0xff, r.sel_elems * sizeof(int32_t), st));
    KM_CUDA(b, fn(&r, 0, st));
    float *scores = to_host(b, r.scores, r.score_elems * sizeof(float));
    int32_t *sel = to_host(b, r.sel, r.sel_elems * sizeof(int32_t));
    if (!scores || !sel) return;
    sp_check c = {b, 0, 0};
    check_topk(&c, scores, sel, r.topk_rows, r.pages, r.k, p->kind == SP_CUB_TOPK);
    if (!km_bench_verified(b, c.bad, c.n, "set equal to the CPU top-k (last page forced; ties: lower page)")) return;
  }
  const km_work w = {r.score_elems * 4.0, r.sel_elems * 4.0, 0, 1, 0};
  km_bench_measure(b, fn, &r, &w);
}

static void run_sparse(km_bench *b, const void *params) {
  const sparse_params *p = params;
  switch (p->kind) {
    case SP_BUILD: run_build(b, p); break;
    case SP_APPEND: run_append(b, p); break;
    case SP_SCORE: run_score(b, p); break;
    case SP_TOPK:
    case SP_CUB_TOPK: run_topk(b, p); break;
    case SP_READ: run_read(b, p); break;
    case SP_PIPELINE:
    case SP_DENSE:
    case SP_RECALL: run_pipeline(b, p); break;
    default: km_bench_fail(b, "unknown sparse case kind %d", (int)p->kind); break;
  }
}

/* ------------------------------------------------------------------ the sweep
 * Pipeline: context 4K..128K at budget 2,048 (b16 and b1, for the break-even), budgets 256..8,192 at
 * 128K b16, batch 1/4/16/64 at 128K; each with its dense row. Stages at the target points. */
#define PARAMS(kind, ctx, bud, bat, rows, pages, k) (&(const sparse_params){kind, ctx, bud, bat, rows, pages, k})
#define PIPE(ctx, bud, bat, fl)                                                                            \
  {"sparse/pipeline/ctx" #ctx "/budget" #bud "/b" #bat, "sparse_read",                                     \
   "score + top-k + gather of the selected pages for one decode step", run_sparse,                          \
   PARAMS(SP_PIPELINE, ctx, bud, bat, 0, 0, 0), fl, "sparse/dense/ctx" #ctx "/b" #bat}
#define DENSE(ctx, bat, fl)                                                                                 \
  {"sparse/dense/ctx" #ctx "/b" #bat, "sparse_read", "dense read of every page of K and V (what the sparse " \
   "path avoids)", run_sparse, PARAMS(SP_DENSE, ctx, 0, bat, 0, 0, 0), fl, NULL}
#define TOPK(r, p, k, fl)                                                                                   \
  {"sparse/topk/r" #r "/p" #p "/k" #k, "sparse_read", "radix-select top-k pages per (sequence, KV head)",    \
   run_sparse, PARAMS(SP_TOPK, 0, 0, 0, r, p, k), fl, "baseline/sparse/cub_sort_topk/r" #r "/p" #p "/k" #k}
#define CUB(r, p, k, fl)                                                                                    \
  {"baseline/sparse/cub_sort_topk/r" #r "/p" #p "/k" #k, "sparse_read",                                     \
   "cub::DeviceSegmentedRadixSort descending, then the first k", run_sparse,                                \
   PARAMS(SP_CUB_TOPK, 0, 0, 0, r, p, k), KM_CASE_BASELINE | (fl), NULL}
#define READ(ctx, bud, bat, fl)                                                                             \
  {"sparse/read/ctx" #ctx "/budget" #bud "/b" #bat, "sparse_read", "gather of the selected pages' K and V",  \
   run_sparse, PARAMS(SP_READ, ctx, bud, bat, 0, 0, 0), fl, NULL}
#define SCORE(ctx, bat, fl)                                                                                 \
  {"sparse/score/ctx" #ctx "/b" #bat, "sparse_read", "page scores from min/max summaries, GQA group summed",  \
   run_sparse, PARAMS(SP_SCORE, ctx, 0, bat, 0, 0, 0), fl, NULL}
#define RECALL(ctx, bud, fl)                                                                                \
  {"sparse/recall/ctx" #ctx "/budget" #bud "/b1", "sparse_read",                                           \
   "pipeline on planted high-attention tokens: share of softmax mass selected", run_sparse,                 \
   PARAMS(SP_RECALL, ctx, bud, 1, 0, 0, 0), fl, NULL}

static const km_case sparse_cases[] = {
    {"sparse/summary/build/ctx131072/b16", "sparse_read", "min/max key summaries of every page (prefill)",
     run_sparse, PARAMS(SP_BUILD, 131072, 0, 16, 0, 0, 0), 0, NULL},
    {"sparse/summary/append/b16", "sparse_read", "fold one appended token per sequence into its page summary",
     run_sparse, PARAMS(SP_APPEND, 4096, 0, 16, 0, 0, 0), KM_CASE_QUICK, NULL},
    SCORE(4096, 1, KM_CASE_QUICK),
    SCORE(131072, 16, KM_CASE_REPRESENTATIVE),
    TOPK(32, 256, 16, KM_CASE_QUICK),
    TOPK(512, 8192, 128, KM_CASE_REPRESENTATIVE),
    TOPK(512, 8192, 16, 0),
    TOPK(512, 8192, 512, 0),
    TOPK(512, 2048, 128, 0),
    TOPK(128, 8192, 128, 0),
    TOPK(128, 16384, 128, 0),
    CUB(32, 256, 16, KM_CASE_QUICK),
    CUB(512, 8192, 128, 0),
    CUB(512, 2048, 128, 0),
    CUB(128, 8192, 128, 0),
    READ(4096, 256, 1, KM_CASE_QUICK),
    READ(131072, 256, 16, 0),
    READ(131072, 2048, 16, KM_CASE_REPRESENTATIVE),
    READ(131072, 8192, 16, 0),
    PIPE(4096, 256, 1, KM_CASE_QUICK),
    DENSE(4096, 1, KM_CASE_QUICK),
    PIPE(4096, 2048, 16, 0),
    PIPE(16384, 2048, 16, 0),
    PIPE(32768, 2048, 16, 0),
    PIPE(65536, 2048, 16, 0),
    PIPE(131072, 2048, 16, KM_CASE_REPRESENTATIVE),
    PIPE(131072, 256, 16, 0),
    PIPE(131072, 1024, 16, 0),
    PIPE(131072, 4096, 16, 0),
    PIPE(131072, 8192, 16, 0),
    PIPE(4096, 2048, 1, 0),
    PIPE(16384, 2048, 1, 0),
    PIPE(32768, 2048, 1, 0),
    PIPE(131072, 2048, 1, 0),
    PIPE(131072, 2048, 4, 0),
    PIPE(131072, 2048, 64, 0),
    DENSE(4096, 16, 0),
    DENSE(16384, 16, 0),
    DENSE(32768, 16, 0),
    DENSE(65536, 16, 0),
    DENSE(131072, 16, KM_CASE_REPRESENTATIVE),
    DENSE(16384, 1, 0),
    DENSE(32768, 1, 0),
    DENSE(131072, 1, 0),
    DENSE(131072, 4, 0),
    DENSE(131072, 64, 0),
    RECALL(32768, 256, 0),
    RECALL(32768, 1024, 0),
    RECALL(32768, 2048, KM_CASE_QUICK),
    RECALL(32768, 4096, 0),
    RECALL(32768, 8192, 0),
};

const km_case_table km_sparse_table = {sparse_cases, sizeof sparse_cases / sizeof sparse_cases[0]};
