/* sparse/: query-aware top-k read (Quest). Each stage (summary build and append, scoring, top-k, sparse
 * read), the whole decode-step pipeline against the dense read of every page, the CUB-sort top-k baseline,
 * and the recall of the selection on data with planted high-attention tokens. Qwen3-8B shape by default.
 * The instances are in micro/sparse_run.c; their whole outputs are checked in micro/sparse_verify.c. */
#include <stdint.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "fill.h"
#include "micro_tables.h"
#include "sparse_ceiling.h"
#include "sparse_cub_sort.h"
#include "sparse_ref.h"
#include "sparse_run.h"
#include "sparse_topk.h"

#define PAGE KM_SP_PAGE
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
  SP_SELECT,   /* score + top-k fused in one launch */
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
  km_sparse_select_variant variant; /* select rows only (V1 when left out) */
} sparse_params;

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

/* The case's sizes from its parameters and the --model shape, and the launchers' device plan.
 * 0 ok; -1 when the case was skipped or failed. */
static int prepare(km_bench *b, const sparse_params *p, km_sp_run *r) {
  const km_model *m = km_bench_model(b);
  memset(r, 0, sizeof *r);
  r->s = (km_sparse_shape){p->batch, p->context, m->num_kv_heads, m->num_attention_heads, m->head_dim};
  r->pages = (p->context + PAGE - 1) / PAGE;
  r->k = p->budget / PAGE;
  r->topk_rows = p->batch * m->num_kv_heads;
  r->copies = r->sel_copies = 1;
  r->kv_elems = (size_t)p->batch * p->context * r->s.kv_heads * r->s.head_dim;
  r->sum_elems = (size_t)r->topk_rows * r->pages * 2 * r->s.head_dim;
  r->q_elems = (size_t)p->batch * r->s.q_heads * r->s.head_dim;
  r->score_elems = (size_t)r->topk_rows * r->pages;
  r->sel_elems = (size_t)r->topk_rows * r->k;
  r->out_elems = r->sel_elems * PAGE * r->s.head_dim;
  if (!shape_supported(b, r->s)) return -1;
  KM_CUDA_OR_FAIL(b, km_sparse_plan_make(&r->plan));
  return 0;
}

static void *dev_alloc(km_bench *b, size_t bytes) { return km_bench_device_alloc(b, bytes ? bytes : 16); }

/* Host bytes to the device on the bench stream (never the legacy stream, which the non-blocking bench
 * stream does not wait for), finished before the host buffer can change. */
static int upload(km_bench *b, void *dev, const void *host, size_t bytes) {
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, km_bench_stream(b)));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(km_bench_stream(b)));
  return 0;
}

/* Keys N(0, 1) (scores need finite values), values random bits (only copied), summaries built per copy. */
static int alloc_kv(km_bench *b, km_sp_run *r, int with_values) {
  const size_t n = r->kv_elems * r->copies;
  r->keys = dev_alloc(b, n * sizeof(uint16_t));
  r->values = with_values ? dev_alloc(b, n * sizeof(uint16_t)) : NULL;
  r->summary = dev_alloc(b, r->sum_elems * r->copies * sizeof(uint16_t));
  if (!r->keys || (with_values && !r->values) || !r->summary) return -1;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->keys, n, km_bench_seed(b), 1.0f, r->s.head_dim, 0, 0, 1.0f, st));
  if (with_values) KM_CUDA_OR_FAIL(b, km_fill_random_bits(r->values, n * sizeof(uint16_t), km_bench_seed(b), st));
  for (int c = 0; c < r->copies; ++c) KM_CUDA_OR_FAIL(b, km_sp_build(r, c, st));
  return 0;
}

static int alloc_query(km_bench *b, km_sp_run *r) {
  const size_t n = r->q_elems * r->copies;
  r->query = dev_alloc(b, n * sizeof(uint16_t));
  if (!r->query) return -1;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->query, n, km_bench_seed(b), 1.0f, r->s.head_dim, 0, 0, 1.0f,
                                         km_bench_stream(b)));
  return 0;
}

/* Intermediates and outputs of one decode step (scores, selection, gathered K and V). */
static int alloc_step(km_bench *b, km_sp_run *r) {
  r->scores = dev_alloc(b, r->score_elems * sizeof(float));
  r->sel = dev_alloc(b, r->sel_elems * r->sel_copies * sizeof(int32_t));
  r->k_out = dev_alloc(b, r->out_elems * r->sel_copies * sizeof(uint16_t));
  r->v_out = dev_alloc(b, r->out_elems * r->sel_copies * sizeof(uint16_t));
  r->partials = dev_alloc(b, KM_SP_MAX_PARTIALS * sizeof(uint32_t));
  r->max_partials = KM_SP_MAX_PARTIALS;
  return r->scores && r->sel && r->k_out && r->v_out && r->partials ? 0 : -1;
}

/* ------------------------------------------------------------------ byte counts */
static double step_bytes_read(const km_sp_run *r) {
  const double gathered = 2.0 * r->out_elems * 2;
  return r->sum_elems * 2.0 + r->q_elems * 2.0 + r->score_elems * 4.0 + r->sel_elems * 4.0 + gathered;
}

static double step_bytes_written(const km_sp_run *r) {
  return r->score_elems * 4.0 + r->sel_elems * 4.0 + 2.0 * r->out_elems * 2;
}

/* Copies so that what one instance touches (summaries + gathered pages, or all K and V) is rotated
 * through >= 4x L2. */
static int pipeline_copies(km_bench *b, const km_sp_run *r, sparse_kind kind) {
  const double touched = kind == SP_DENSE ? 4.0 * r->kv_elems : step_bytes_read(r) + step_bytes_written(r);
  return km_bench_rotation(b, (size_t)touched);
}

/* ------------------------------------------------------------------ cases */
static void run_build(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare(b, p, &r) != 0) return;
  r.copies = km_bench_rotation(b, r.kv_elems * 2 + r.sum_elems * 2);
  if (alloc_kv(b, &r, 0)) return;
  if (km_bench_verify_enabled(b) && km_sp_verify_build(b, &r) != 0) return;
  const km_work w = {r.kv_elems * 2.0, r.sum_elems * 2.0, (double)p->batch * p->context, 1, 0};
  km_bench_measure(b, km_sp_build, &r, &w);
}

static void run_append(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare(b, p, &r) != 0 || alloc_kv(b, &r, 0)) return;
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
  if (upload(b, r.pos, pos, (size_t)r.s.batch * sizeof *pos) != 0) return;
  if (km_bench_verify_enabled(b) && km_sp_verify_append(b, &r, pos) != 0) return;
  /* Per sequence: the new key read, its page's max and min read and written (positions: 4 bytes). */
  const double key_bytes = r.s.kv_heads * r.s.head_dim * 2.0;
  const km_work w = {r.s.batch * (3 * key_bytes + 4), r.s.batch * 2 * key_bytes, r.s.batch, 1, 0};
  km_bench_measure(b, km_sp_append, &r, &w);
}

/* Scoring reads only summaries: random N(0, 1) bf16 stands in for them (the score does not need max >= min). */
static void run_score(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare(b, p, &r) != 0) return;
  r.copies = km_bench_rotation(b, r.sum_elems * 2);
  r.summary = dev_alloc(b, r.sum_elems * r.copies * 2);
  r.scores = dev_alloc(b, r.score_elems * sizeof(float));
  if (!r.summary || !r.scores || alloc_query(b, &r)) return;
  KM_CUDA(b, km_fill_normal_bf16(r.summary, r.sum_elems * r.copies, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f,
                                 km_bench_stream(b)));
  if (km_bench_verify_enabled(b) && km_sp_verify_score(b, &r) != 0) return;
  const km_work w = {r.sum_elems * 2.0 + r.q_elems * 2.0, r.score_elems * 4.0, (double)p->batch * p->context, 1, 0};
  km_bench_measure(b, km_sp_score, &r, &w);
}

/* The rows x pages cases (top-k, fused select): the rows as whole sequences of the model's KV heads, then
 * the common setup, and the page limit of the kernel measured (select: km_sparse_select's, else the
 * top-k's). 0, or -1 with the case skipped. */
static int prepare_rows(km_bench *b, const sparse_params *p, km_sp_run *r, int select) {
  const int heads = km_bench_model(b)->num_kv_heads;
  if (heads <= 0 || p->rows % heads) {
    km_bench_skip(b, "%d rows is not a whole number of sequences of %d KV heads", p->rows, heads);
    return -1;
  }
  const sparse_params derived = {p->kind, p->pages * PAGE, p->k * PAGE, p->rows / heads, p->rows, p->pages, p->k,
                                 p->variant};
  if (prepare(b, &derived, r) != 0) return -1;
  const int max_pages = select ? r->plan.select_max_pages : r->plan.topk_max_pages;
  if (p->pages > max_pages) {
    km_bench_skip(b, "%d pages exceed the %d a CTA's shared memory holds", p->pages, max_pages);
    return -1;
  }
  return 0;
}

/* Top-k rows: real score distributions, made by the scoring kernel from random summaries, one query per
 * rotated copy of the scores. */
static void run_topk(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare_rows(b, p, &r, 0) != 0) return;
  r.copies = km_bench_rotation(b, r.score_elems * sizeof(float));
  r.summary = dev_alloc(b, r.sum_elems * 2);
  r.scores = dev_alloc(b, r.score_elems * r.copies * sizeof(float));
  r.sel = dev_alloc(b, r.sel_elems * sizeof(int32_t));
  if (!r.summary || !r.scores || !r.sel || alloc_query(b, &r)) return;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA(b, km_fill_normal_bf16(r.summary, r.sum_elems, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f, st));
  for (int c = 0; c < r.copies; ++c)
    KM_CUDA(b, km_sparse_score(r.query + c * r.q_elems, r.summary, r.scores + c * r.score_elems, r.s, st));
  km_enqueue_fn fn = km_sp_topk;
  if (p->kind == SP_CUB_TOPK) {
    KM_CUDA(b, km_cub_topk_scratch_bytes(r.topk_rows, r.pages, &r.scratch_bytes));
    r.scratch = dev_alloc(b, r.scratch_bytes);
    if (!r.scratch) return;
    KM_CUDA(b, km_cub_topk_prepare(r.scratch, r.scratch_bytes, r.topk_rows, r.pages, st));
    fn = km_sp_cub_topk;
  }
  if (km_bench_verify_enabled(b) && km_sp_verify_topk(b, &r, fn, p->kind != SP_CUB_TOPK) != 0) return;
  const km_work w = {r.score_elems * 4.0, r.sel_elems * 4.0, 0, 1, 0};
  km_bench_measure(b, fn, &r, &w);
}

/* Fused score + top-k rows: query and summaries rotated together (as the score rows), counters zeroed
 * once here, outside timing (each launch leaves them zero). The two launches it replaces are timed as a
 * stage on the same copies, for the speedup. */
static void run_select(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare_rows(b, p, &r, 1) != 0) return;
  r.select_variant = p->variant;
  r.copies = km_bench_rotation(b, r.sum_elems * 2 + r.q_elems * 2);
  r.summary = dev_alloc(b, r.sum_elems * r.copies * 2);
  r.scores = dev_alloc(b, r.score_elems * sizeof(float));
  r.sel = dev_alloc(b, r.sel_elems * sizeof(int32_t));
  r.counters = dev_alloc(b, (size_t)r.topk_rows * sizeof(uint32_t));
  if (!r.summary || !r.scores || !r.sel || !r.counters || alloc_query(b, &r)) return;
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA(b, km_fill_normal_bf16(r.summary, r.sum_elems * r.copies, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f, st));
  KM_CUDA(b, cudaMemsetAsync(r.counters, 0, (size_t)r.topk_rows * sizeof(uint32_t), st));
  if (km_bench_verify_enabled(b) && km_sp_verify_select(b, &r) != 0) return;
  km_stage two;
  if (km_bench_measure_stage(b, "two_launches", km_sp_score_topk, &r, NULL, KM_STAGE_BATCHED, &two) != 0) return;
  KM_RETURN_IF_STOPPED(b);
  /* summaries and query read from HBM, the scores written and read back (from L2) by the row's last CTA */
  const km_work w = {r.sum_elems * 2.0 + r.q_elems * 2.0 + r.score_elems * 4.0, r.score_elems * 4.0 + r.sel_elems * 4.0,
                     (double)r.s.batch * r.s.tokens, 1, 0};
  const double sec = km_bench_measure(b, km_sp_select, &r, &w);
  if (sec > 0) km_bench_counter(b, "speedup_vs_two_launches", two.median_s / sec);
}

/* Random selections: the last page plus k-1 distinct others per row, ascending (a partial shuffle). */
static int random_selection(km_bench *b, const km_sp_run *r, int32_t *sel) {
  int32_t *perm = km_bench_host_alloc(b, (size_t)r->pages * sizeof *perm);
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
  return 0;
}

static void run_read(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare(b, p, &r) != 0) return;
  const double moved = 4.0 * r.out_elems;  /* gathered K + V, bytes */
  r.sel_copies = km_bench_rotation(b, (size_t)(2 * moved));
  if (alloc_kv(b, &r, 1) || alloc_step(b, &r)) return;
  int32_t *sel = km_bench_host_alloc(b, r.sel_elems * r.sel_copies * sizeof *sel);
  if (!sel) return;
  for (int j = 0; j < r.sel_copies; ++j)
    if (random_selection(b, &r, sel + j * r.sel_elems) != 0) return;
  if (upload(b, r.sel, sel, r.sel_elems * r.sel_copies * sizeof *sel) != 0) return;
  if (km_bench_verify_enabled(b) && km_sp_verify_read(b, &r, sel) != 0) return;
  const km_work w = {moved + r.sel_elems * 4.0, moved, (double)p->batch * p->budget * r.s.kv_heads, 1, 0};
  km_bench_measure(b, km_sp_read, &r, &w);
}

/* The recall sweep's dataset in copy 0: keys and query drawn from the run's seed and the context length
 * (the same in every recall case of one run, so the points differ by the budget alone), planted tokens
 * added on the host, the keys uploaded and re-summarised. *hkeys, *hq: the host copies recall reads. */
static int recall_dataset(km_bench *b, km_sp_run *r, uint16_t **hkeys, uint16_t **hq) {
  cudaStream_t st = km_bench_stream(b);
  const uint64_t seed = km_bench_run_seed(b) ^ ((uint64_t)r->s.tokens * 0x9E3779B97F4A7C15ull);
  const int d = r->s.head_dim;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->keys, r->kv_elems, seed ^ 0x6b657973ull, 1.0f, d, 0, 0, 1.0f, st));
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->query, r->q_elems, seed ^ 0x71756572ull, 1.0f, d, 0, 0, 1.0f, st));
  *hkeys = km_sp_to_host(b, r->keys, r->kv_elems * 2);
  *hq = km_sp_to_host(b, r->query, r->q_elems * 2);
  if (!*hkeys || !*hq) return -1;
  km_sparse_ref_plant(*hkeys, *hq, r->s, PLANT_PER_HEAD, PLANT_LOGIT_LO, PLANT_LOGIT_HI, seed ^ 0x706c616eull);
  if (upload(b, r->keys, *hkeys, r->kv_elems * 2) != 0) return -1;
  KM_CUDA_OR_FAIL(b, km_sp_build(r, 0, st));
  return 0;
}

/* Recall of copy 0's selection on the planted data (sequence 0). */
static int measure_recall(km_bench *b, km_sp_run *r, const uint16_t *hkeys, const uint16_t *hq) {
  double recall = 0.0, oracle = 0.0;
  KM_CUDA_OR_FAIL(b, km_sp_pipeline(r, 0, km_bench_stream(b)));
  int32_t *sel = km_sp_to_host(b, r->sel, r->sel_elems * 4);
  if (!sel) return -1;
  if (km_sparse_ref_recall(hkeys, hq, sel, r->k, r->s, &recall, &oracle) != 0) {
    km_bench_fail(b, "out of host memory computing recall");
    return -1;
  }
  km_bench_counter(b, "recall", recall);
  km_bench_counter(b, "oracle_recall", oracle);
  return 0;
}

static void run_pipeline(km_bench *b, const sparse_params *p) {
  km_sp_run r;
  if (prepare(b, p, &r) != 0) return;
  r.copies = pipeline_copies(b, &r, p->kind);
  if (alloc_kv(b, &r, 1) || alloc_query(b, &r) || alloc_step(b, &r)) return;
  uint16_t *hkeys = NULL, *hq = NULL;
  if (p->kind == SP_RECALL && recall_dataset(b, &r, &hkeys, &hq) != 0) return;
  if (p->kind == SP_DENSE) {
    const km_work w = {4.0 * r.kv_elems, 0, (double)p->batch * p->context, 1, 0};
    if (km_bench_verify_enabled(b) && km_sp_verify_dense(b, &r) != 0) return;
    km_bench_measure(b, km_sp_dense, &r, &w);
    return;
  }
  if (km_bench_verify_enabled(b) && km_sp_verify_pipeline(b, &r) != 0) return;
  if (p->kind == SP_RECALL && measure_recall(b, &r, hkeys, hq) != 0) return;
  /* each stage of the step on its own, as the pipeline runs it, and the dense read it replaces */
  km_stage dense;
  if (km_bench_measure_stage(b, "score", km_sp_score, &r, NULL, KM_STAGE_BATCHED, NULL) != 0 ||
      km_bench_measure_stage(b, "topk", km_sp_pipeline_topk, &r, NULL, KM_STAGE_BATCHED, NULL) != 0 ||
      km_bench_measure_stage(b, "read", km_sp_read, &r, NULL, KM_STAGE_BATCHED, NULL) != 0 ||
      km_bench_measure_stage(b, "dense", km_sp_dense, &r, NULL, KM_STAGE_BATCHED, &dense) != 0)
    return;
  KM_RETURN_IF_STOPPED(b);
  const km_work w = {step_bytes_read(&r), step_bytes_written(&r), (double)p->batch * p->context, 1, 0};
  const double sec = km_bench_measure(b, km_sp_pipeline, &r, &w);
  if (sec > 0) km_bench_counter(b, "speedup_vs_dense", dense.median_s / sec);
  km_bench_counter(b, "selected_fraction", (double)r.k / r.pages);
}

static void run_sparse(km_bench *b, const void *params) {
  const sparse_params *p = params;
  switch (p->kind) {
    case SP_BUILD: run_build(b, p); break;
    case SP_APPEND: run_append(b, p); break;
    case SP_SCORE: run_score(b, p); break;
    case SP_TOPK:
    case SP_CUB_TOPK: run_topk(b, p); break;
    case SP_SELECT: run_select(b, p); break;
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
/* the series a row is a point of, for --params: the model's terms over the row's coordinates */
#define SWEEP(series, model, ...) (&(const km_sweep){series, __VA_ARGS__, model}) /* ...: {axes}, {coordinates} */
#define PIPE(ctx, bud, bat, fl)                                                                            \
  {"sparse/pipeline/ctx" #ctx "/budget" #bud "/b" #bat, "sparse_read",                                     \
   "score + top-k + gather of the selected pages for one decode step", run_sparse,                          \
   PARAMS(SP_PIPELINE, ctx, bud, bat, 0, 0, 0), fl, "sparse/dense/ctx" #ctx "/b" #bat,                        \
   SWEEP("sparse/pipeline", "batch*context + batch*budget", {"batch", "context", "budget"}, {bat, ctx, bud})}
#define DENSE(ctx, bat, fl)                                                                                 \
  {"sparse/dense/ctx" #ctx "/b" #bat, "sparse_read", "dense read of every page of K and V (what the sparse " \
   "path avoids)", run_sparse, PARAMS(SP_DENSE, ctx, 0, bat, 0, 0, 0), fl, NULL,                              \
   SWEEP("sparse/dense", "batch*context", {"batch", "context"}, {bat, ctx})}
#define TOPK(r, p, k, fl)                                                                                   \
  {"sparse/topk/r" #r "/p" #p "/k" #k, "sparse_read", "radix-select top-k pages per (sequence, KV head)",    \
   run_sparse, PARAMS(SP_TOPK, 0, 0, 0, r, p, k), fl, "baseline/sparse/cub_sort_topk/r" #r "/p" #p "/k" #k,   \
   SWEEP("sparse/topk", "rows*pages", {"rows", "pages"}, {r, p})}
#define SELECT(r, p, k, fl)                                                                                 \
  {"sparse/select/r" #r "/p" #p "/k" #k, "sparse_read",                                                     \
   "page scores + radix-select top-k in one launch (the last CTA of a row selects)", run_sparse,             \
   PARAMS(SP_SELECT, 0, 0, 0, r, p, k), fl, NULL, NULL} /* no sweep series: two points fit nothing */
#define SELECT_V2(r, p, k, fl)                                                                              \
  {"sparse/select/r" #r "/p" #p "/k" #k "/v2", "sparse_read",                                               \
   "score + top-k in one launch, v2: 256-thread scoring CTAs, the last one's top-k on keys in registers",    \
   run_sparse, (&(const sparse_params){SP_SELECT, 0, 0, 0, r, p, k, KM_SPARSE_SELECT_V2}), fl, NULL, NULL}
#define CUB(r, p, k, fl)                                                                                    \
  {"baseline/sparse/cub_sort_topk/r" #r "/p" #p "/k" #k, "sparse_read",                                     \
   "cub::DeviceSegmentedRadixSort descending, then the first k", run_sparse,                                \
   PARAMS(SP_CUB_TOPK, 0, 0, 0, r, p, k), KM_CASE_BASELINE | (fl), NULL,                                      \
   SWEEP("baseline/sparse/cub_sort_topk", "rows*pages", {"rows", "pages"}, {r, p})}
#define READ(ctx, bud, bat, fl)                                                                             \
  {"sparse/read/ctx" #ctx "/budget" #bud "/b" #bat, "sparse_read", "gather of the selected pages' K and V",  \
   run_sparse, PARAMS(SP_READ, ctx, bud, bat, 0, 0, 0), fl, NULL,                                             \
   SWEEP("sparse/read", "batch*budget", {"batch", "budget"}, {bat, bud})}
#define SCORE(ctx, bat, fl)                                                                                 \
  {"sparse/score/ctx" #ctx "/b" #bat, "sparse_read", "page scores from min/max summaries, GQA group summed",  \
   run_sparse, PARAMS(SP_SCORE, ctx, 0, bat, 0, 0, 0), fl, NULL,                                             \
   SWEEP("sparse/score", "batch*context", {"batch", "context"}, {bat, ctx})}
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
    TOPK(512, 4096, 128, 0),
    TOPK(512, 16384, 128, 0),
    TOPK(128, 2048, 128, 0),
    TOPK(128, 8192, 128, 0),
    TOPK(128, 16384, 128, 0),
    /* score + top-k fused: batch 1 (8 rows) and batch 16 at 32K, the Quest decode step's selection */
    SELECT(8, 2048, 128, 0),
    SELECT(128, 2048, 128, 0),
    /* the same two with km_sparse_select_v's V2 (256-thread CTAs, register top-k tail): not yet run on a GPU */
    SELECT_V2(8, 2048, 128, 0),
    SELECT_V2(128, 2048, 128, 0),
    /* the sort baseline at every page count of the k = 128 sweeps, so each is a line beside the top-k's */
    CUB(32, 256, 16, KM_CASE_QUICK),
    CUB(512, 2048, 128, 0),
    CUB(512, 4096, 128, 0),
    CUB(512, 8192, 128, 0),
    CUB(512, 16384, 128, 0),
    CUB(128, 2048, 128, 0),
    CUB(128, 8192, 128, 0),
    CUB(128, 16384, 128, 0),
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

const km_case_table km_sparse_table = {sparse_cases, sizeof sparse_cases / sizeof sparse_cases[0], &km_sparse_ceilings};
