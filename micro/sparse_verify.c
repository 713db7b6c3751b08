/* The sparse family's checks (micro/sparse_run.h). Each rotated copy's timed instance runs once on
 * poisoned outputs; its whole output is compared on the device with the trusted kernels of kernels/
 * verify_sparse.h, and sequence 0 of copy 0 on the CPU with micro/sparse_ref.c. A stage that consumes
 * another's output (the top-k of the scores, the gather of the selection) is judged against the trusted
 * kernel run on the GPU's own input, so every stage is checked alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sparse_ref.h"
#include "sparse_run.h"
#include "verify.h"
#include "verify_sparse.h"

#define POISON 0xff
/* Score tolerance: fp32 sums of d * group terms in another order; 1e-4 of the sum of |terms| is ~100x
 * the worst rounding seen for 512 terms, and far below any real score gap. */
#define SCORE_REL_TOL 1e-4f

#define TOL_SCORES "scores |gpu - trusted| <= 1e-4 x sum|terms|"
#define TOL_TOPK "top-k set equal to the trusted rank rule (last page forced, ties to the lower page)"
#define TOL_WHERE "every rotated copy on the device, sequence 0 of copy 0 on the CPU"

static void *dev_scratch(km_bench *b, size_t bytes) { return km_bench_device_alloc(b, bytes ? bytes : 16); }

static int poison(km_bench *b, void *dev, size_t bytes) {
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(dev, POISON, bytes, km_bench_stream(b)));
  return 0;
}

static km_sparse_shape first_sequence(const km_sp_run *r) {
  km_sparse_shape one = r->s;
  one.batch = 1;
  return one;
}

/* ------------------------------------------------------------------ on the device, whole outputs */

/* Copy `copy`'s summaries (what the build writes and the pipeline reads) against the trusted kernel. */
static void dev_summaries(km_check *c, km_sp_run *r, int copy, uint16_t *trusted) {
  KM_CUDA(c->b, km_verify_sparse_summarize(r->keys + copy * r->kv_elems, trusted, r->s, km_bench_stream(c->b)));
  km_check_device(c, "summary", r->summary + copy * r->sum_elems, trusted, r->sum_elems, 2, 1, 0);
}

/* Scores `got` of copy `copy`'s query and summaries against the trusted sums. */
static void dev_scores(km_check *c, km_sp_run *r, int copy, const float *got, float *t_scores, float *t_mag) {
  KM_CUDA(c->b, km_verify_sparse_score(r->query + copy * r->q_elems, r->summary + copy * r->sum_elems, t_scores, t_mag,
                                       r->s, km_bench_stream(c->b)));
  km_check_device_close(c, "score", got, t_scores, t_mag, r->score_elems, SCORE_REL_TOL);
}

/* The selection in r->sel against the trusted choice from `scores`. */
static void dev_selection(km_check *c, km_sp_run *r, const float *scores, int ascending, uint8_t *chosen) {
  cudaStream_t st = km_bench_stream(c->b);
  KM_CUDA(c->b, km_verify_sparse_topk_chosen(scores, chosen, r->topk_rows, r->pages, r->k, st));
  if (km_check_begin(c, "selection") != 0) return;
  km_check_end(c, "selection slot", r->sel_elems,
               km_verify_sparse_selection(r->sel, chosen, r->topk_rows, r->pages, r->k, ascending, c->diff, st));
}

/* Gathered K and V of selection copy j (K/V copy `copy`) against the trusted gather of that selection. */
static void dev_gather(km_check *c, km_sp_run *r, int copy, int j, uint16_t *tk, uint16_t *tv) {
  KM_CUDA(c->b, km_verify_sparse_gather(r->keys + copy * r->kv_elems, r->values + copy * r->kv_elems,
                                        r->sel + j * r->sel_elems, r->k, tk, tv, r->s, km_bench_stream(c->b)));
  km_check_device(c, "gathered K word", r->k_out + j * r->out_elems, tk, r->out_elems / 2, 4, 1, 0);
  km_check_device(c, "gathered V word", r->v_out + j * r->out_elems, tv, r->out_elems / 2, 4, 1, 0);
}

/* The dense read of copy `copy`, run here: the XOR of its partials against the trusted XOR of every word. */
static void dev_dense(km_check *c, km_sp_run *r, int copy, uint32_t *t_xor) {
  km_bench *b = c->b;
  cudaStream_t st = km_bench_stream(b);
  if (poison(b, r->partials, (size_t)r->max_partials * sizeof(uint32_t)) != 0) return;
  KM_CUDA(b, km_sp_dense(r, copy, st));
  KM_CUDA(b, km_verify_xor(r->keys + copy * r->kv_elems, r->values + copy * r->kv_elems, r->kv_elems * 2, t_xor, st));
  uint32_t *parts = km_sp_to_host(b, r->partials, (size_t)r->used_partials * sizeof(uint32_t)), *want = km_sp_to_host(b, t_xor, 4);
  if (!parts || !want) return;
  uint32_t got = 0;
  for (int i = 0; i < r->used_partials; ++i) got ^= parts[i];
  if (got != *want) km_bench_mismatch(b, "copy %d: dense read XOR 0x%08x, trusted 0x%08x", copy, got, *want);
  km_check_add(c, got != *want, 1);
}

/* ------------------------------------------------------------------ on the CPU, sequence 0 of copy 0 */

static void cpu_summaries(km_check *c, const km_sp_run *r, const uint16_t *keys, const uint16_t *got) {
  const size_t n = r->sum_elems / r->s.batch;
  uint16_t *want = km_bench_host_alloc(c->b, n * 2);
  if (!want) return;
  km_sparse_ref_summarize(keys, want, first_sequence(r));
  km_check_host(c, "CPU summary", got, want, n, 2, 1, 0);
}

static void cpu_scores(km_check *c, const km_sp_run *r, const uint16_t *q, const uint16_t *summary, const float *got) {
  const size_t n = (size_t)r->s.kv_heads * r->pages;
  float *want = km_bench_host_alloc(c->b, n * sizeof *want), *mag = km_bench_host_alloc(c->b, n * sizeof *mag);
  if (!want || !mag) return;
  km_sparse_ref_score(q, summary, want, mag, first_sequence(r));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!(fabs((double)got[i] - want[i]) <= SCORE_REL_TOL * mag[i]) && bad++ < 10)
      km_bench_mismatch(c->b, "CPU score[%zu] = %.9g, CPU %.9g (sum |terms| %.6g)", i, got[i], want[i], mag[i]);
  km_check_add(c, bad, n);
}

/* Each row's selection against the CPU's exact top-k of the GPU's own scores (so float summation order
 * cannot make the set comparison flaky); sort_got for selections in score order. */
static void cpu_topk(km_check *c, const float *scores, const int32_t *sel, int rows, int pages, int k, int sort_got) {
  int32_t *want = km_bench_host_alloc(c->b, (size_t)k * 2 * sizeof *want);
  if (!want) return;
  int32_t *got = want + k;
  size_t bad = 0;
  for (int row = 0; row < rows; ++row) {
    if (km_sparse_ref_topk_row(scores + (size_t)row * pages, pages, k, want) != 0) {
      km_bench_fail(c->b, "out of host memory");
      return;
    }
    memcpy(got, sel + (size_t)row * k, (size_t)k * sizeof *got);
    if (sort_got)
      for (int i = 1; i < k; ++i)  /* insertion sort: k is small and mostly ordered */
        for (int j = i; j > 0 && got[j - 1] > got[j]; --j) {
          const int32_t t = got[j];
          got[j] = got[j - 1];
          got[j - 1] = t;
        }
    for (int j = 0; j < k; ++j)
      if (got[j] != want[j] && bad++ < 10) km_bench_mismatch(c->b, "CPU top-k row %d slot %d: page %d, want %d", row, j, got[j], want[j]);
  }
  km_check_add(c, bad, (size_t)rows * k);
}

/* Sequence 0 of selection copy j (K/V copy 0) gathered on the CPU from the host's selection. */
static void cpu_gather(km_check *c, km_sp_run *r, int j, const int32_t *sel) {
  km_bench *b = c->b;
  const size_t seq_kv = r->kv_elems / r->s.batch, seq_out = r->out_elems / r->s.batch, per_row = (size_t)r->k * KM_SP_PAGE * r->s.head_dim;
  uint16_t *keys = km_sp_to_host(b, r->keys, seq_kv * 2), *values = km_sp_to_host(b, r->values, seq_kv * 2);
  uint16_t *ko = km_sp_to_host(b, r->k_out + j * r->out_elems, seq_out * 2), *vo = km_sp_to_host(b, r->v_out + j * r->out_elems, seq_out * 2);
  uint16_t *wk = km_bench_host_alloc(b, seq_out * 2), *wv = km_bench_host_alloc(b, seq_out * 2);
  if (!keys || !values || !ko || !vo || !wk || !wv) return;
  for (int h = 0; h < r->s.kv_heads; ++h)
    km_sparse_ref_gather_row(keys, values, sel + (size_t)h * r->k, r->k, h, first_sequence(r), wk + h * per_row,
                             wv + h * per_row);
  km_check_host(c, "CPU gathered K", ko, wk, seq_out, 2, 1, 0);
  km_check_host(c, "CPU gathered V", vo, wv, seq_out, 2, 1, 0);
}

/* The trusted XOR (what the dense read is held to) over sequence 0 of copy 0 against the CPU's. */
static void cpu_xor(km_check *c, km_sp_run *r, uint32_t *t_xor) {
  km_bench *b = c->b;
  const size_t seq_bytes = r->kv_elems / r->s.batch * 2;
  KM_CUDA(b, km_verify_xor(r->keys, r->values, seq_bytes, t_xor, km_bench_stream(b)));
  uint16_t *keys = km_sp_to_host(b, r->keys, seq_bytes), *values = km_sp_to_host(b, r->values, seq_bytes);
  uint32_t *got = km_sp_to_host(b, t_xor, 4);
  if (!keys || !values || !got) return;
  const uint32_t want = km_sparse_ref_xor(keys, values, seq_bytes);
  if (*got != want) km_bench_mismatch(b, "trusted XOR of sequence 0: 0x%08x, CPU 0x%08x", *got, want);
  km_check_add(c, *got != want, 1);
}

/* ------------------------------------------------------------------ the cases' checks */

int km_sp_verify_build(km_bench *b, km_sp_run *r) {
  cudaStream_t st = km_bench_stream(b);
  uint16_t *trusted = dev_scratch(b, r->sum_elems * 2);
  km_check c;
  if (!trusted || km_check_init(&c, b) != 0) return -1;
  for (int copy = 0; copy < r->copies && km_bench_ok(b); ++copy) {
    if (poison(b, r->summary + copy * r->sum_elems, r->sum_elems * 2) != 0) return -1;
    KM_CUDA_OR_FAIL(b, km_sp_build(r, copy, st));
    dev_summaries(&c, r, copy, trusted);
  }
  const size_t seq_kv = r->kv_elems / r->s.batch, seq_sum = r->sum_elems / r->s.batch;
  uint16_t *keys = km_sp_to_host(b, r->keys, seq_kv * 2), *sum = km_sp_to_host(b, r->summary, seq_sum * 2);
  if (!keys || !sum) return -1;
  cpu_summaries(&c, r, keys, sum);
  return km_check_done(&c, "summaries bitwise, " TOL_WHERE) ? 0 : -1;
}

/* CPU summary of the page holding token `upto - 1` of sequence `seq`, over that page's tokens < upto,
 * into out[heads][2][d]. Returns -1 when out of memory. */
static int ref_page_upto(const km_sp_run *r, const uint16_t *keys, int seq, int upto, uint16_t *out) {
  km_sparse_shape view = first_sequence(r); /* sequence `seq` alone: its token stride does not depend on view.tokens */
  view.tokens = upto;
  const int pp = (upto + KM_SP_PAGE - 1) / KM_SP_PAGE, d = r->s.head_dim;
  uint16_t *tmp = malloc((size_t)r->s.kv_heads * pp * 2 * d * sizeof *tmp);
  if (!tmp) return -1;
  km_sparse_ref_summarize(keys + (size_t)seq * (r->kv_elems / r->s.batch), tmp, view);
  for (int h = 0; h < r->s.kv_heads; ++h)
    memcpy(out + (size_t)h * 2 * d, tmp + ((size_t)h * pp + pp - 1) * 2 * d, 2 * (size_t)d * sizeof *out);
  free(tmp);
  return 0;
}

/* Where page `pos / 16` of head h of sequence i sits in the summary buffer. */
static size_t page_offset(const km_sp_run *r, int i, int h, int pos) {
  return (((size_t)i * r->s.kv_heads + h) * r->pages + pos / KM_SP_PAGE) * 2 * r->s.head_dim;
}

/* Put each touched page in its pre-append state (the CPU summary of its earlier tokens, or poison for a
 * page start), run the timed append, and compare the whole summary buffer with the CPU's: the touched
 * pages rebuilt with the new token, every other page unchanged. */
int km_sp_verify_append(km_bench *b, km_sp_run *r, const int32_t *pos) {
  const int d = r->s.head_dim, H = r->s.kv_heads;
  cudaStream_t st = km_bench_stream(b);
  uint16_t *keys = km_sp_to_host(b, r->keys, r->kv_elems * 2), *sum = km_sp_to_host(b, r->summary, r->sum_elems * 2);
  uint16_t *page = km_bench_host_alloc(b, (size_t)H * 2 * d * 2);
  km_check c;
  if (!keys || !sum || !page || km_check_init(&c, b) != 0) return -1;
  for (int i = 0; i < r->s.batch; ++i) {
    if (pos[i] % KM_SP_PAGE == 0)
      memset(page, POISON, (size_t)H * 2 * d * 2);
    else if (ref_page_upto(r, keys, i, pos[i], page) != 0)
      return -1;
    for (int h = 0; h < H; ++h) memcpy(sum + page_offset(r, i, h, pos[i]), page + (size_t)h * 2 * d, 2 * (size_t)d * 2);
  }
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(r->summary, sum, r->sum_elems * 2, cudaMemcpyHostToDevice, st));
  KM_CUDA_OR_FAIL(b, km_sp_append(r, 0, st));
  uint16_t *got = km_sp_to_host(b, r->summary, r->sum_elems * 2); /* synchronises: sum may be rewritten below */
  if (!got) return -1;
  for (int i = 0; i < r->s.batch; ++i) {
    if (ref_page_upto(r, keys, i, pos[i] + 1, page) != 0) return -1;
    for (int h = 0; h < H; ++h) memcpy(sum + page_offset(r, i, h, pos[i]), page + (size_t)h * 2 * d, 2 * (size_t)d * 2);
  }
  km_check_host(&c, "summary", got, sum, r->sum_elems, 2, 1, 0);
  return km_check_done(&c, "the whole summary buffer bitwise: appended pages equal to a CPU rebuild, others unchanged")
             ? 0
             : -1;
}

int km_sp_verify_score(km_bench *b, km_sp_run *r) {
  float *t_scores = dev_scratch(b, r->score_elems * 4), *t_mag = dev_scratch(b, r->score_elems * 4);
  km_check c;
  if (!t_scores || !t_mag || km_check_init(&c, b) != 0) return -1;
  for (int copy = 0; copy < r->copies && km_bench_ok(b); ++copy) {
    if (poison(b, r->scores, r->score_elems * 4) != 0) return -1;
    KM_CUDA_OR_FAIL(b, km_sp_score(r, copy, km_bench_stream(b)));
    dev_scores(&c, r, copy, r->scores, t_scores, t_mag);
    if (copy != 0) continue;
    const size_t n = (size_t)r->s.kv_heads * r->pages;
    uint16_t *sum = km_sp_to_host(b, r->summary, r->sum_elems / r->s.batch * 2), *q = km_sp_to_host(b, r->query, r->q_elems / r->s.batch * 2);
    float *got = km_sp_to_host(b, r->scores, n * sizeof(float));
    if (!sum || !q || !got) return -1;
    cpu_scores(&c, r, q, sum, got);
  }
  return km_check_done(&c, TOL_SCORES ", " TOL_WHERE) ? 0 : -1;
}

int km_sp_verify_topk(km_bench *b, km_sp_run *r, km_enqueue_fn fn, int ascending) {
  uint8_t *chosen = dev_scratch(b, r->score_elems);
  km_check c;
  if (!chosen || km_check_init(&c, b) != 0) return -1;
  for (int copy = 0; copy < r->copies && km_bench_ok(b); ++copy) {
    if (poison(b, r->sel, r->sel_elems * 4) != 0) return -1;
    KM_CUDA_OR_FAIL(b, fn(r, copy, km_bench_stream(b)));
    const float *scores = r->scores + (size_t)copy * r->score_elems; /* as the run left them (CUB forces the last page) */
    dev_selection(&c, r, scores, ascending, chosen);
    if (copy != 0) continue;
    float *hs = km_sp_to_host(b, scores, r->score_elems * sizeof(float));
    int32_t *sel = km_sp_to_host(b, r->sel, r->sel_elems * sizeof(int32_t));
    if (!hs || !sel) return -1;
    cpu_topk(&c, hs, sel, r->topk_rows, r->pages, r->k, !ascending); /* copy 0 in full */
  }
  return km_check_done(&c, TOL_TOPK ", every rotated copy on the device, copy 0 on the CPU") ? 0 : -1;
}

/* The fused select against the two launches it replaces, on the same copy: scores and selection bitwise
 * (the same fp32 sums, so the same choice, ties and all); then the trusted checks of both, as the score
 * and top-k rows have them. The last check: the counters came back to zero after every launch. */
int km_sp_verify_select(km_bench *b, km_sp_run *r) {
  cudaStream_t st = km_bench_stream(b);
  float *two_scores = dev_scratch(b, r->score_elems * 4), *t_scores = dev_scratch(b, r->score_elems * 4);
  float *t_mag = dev_scratch(b, r->score_elems * 4);
  int32_t *two_sel = dev_scratch(b, r->sel_elems * 4);
  uint8_t *chosen = dev_scratch(b, r->score_elems);
  km_check c;
  if (!two_scores || !t_scores || !t_mag || !two_sel || !chosen || km_check_init(&c, b) != 0) return -1;
  for (int copy = 0; copy < r->copies && km_bench_ok(b); ++copy) {
    if (poison(b, r->scores, r->score_elems * 4) != 0 || poison(b, r->sel, r->sel_elems * 4) != 0 ||
        poison(b, two_sel, r->sel_elems * 4) != 0)
      return -1;
    KM_CUDA_OR_FAIL(b, km_sp_select(r, copy, st));
    KM_CUDA_OR_FAIL(b, km_sparse_score(r->query + copy * r->q_elems, r->summary + copy * r->sum_elems, two_scores,
                                       r->s, st));
    KM_CUDA_OR_FAIL(b, km_sparse_topk(&r->plan, two_scores, two_sel, r->topk_rows, r->pages, r->k, st));
    km_check_device(&c, "score (against km_sparse_score)", r->scores, two_scores, r->score_elems, 4, 1, 0);
    km_check_device(&c, "selection slot (against km_sparse_topk)", r->sel, two_sel, r->sel_elems, 4, 1, 0);
    dev_scores(&c, r, copy, r->scores, t_scores, t_mag);
    dev_selection(&c, r, r->scores, 1, chosen);
    if (copy != 0) continue;
    const size_t n = (size_t)r->s.kv_heads * r->pages;
    uint16_t *sum = km_sp_to_host(b, r->summary, r->sum_elems / r->s.batch * 2);
    uint16_t *q = km_sp_to_host(b, r->query, r->q_elems / r->s.batch * 2);
    float *got = km_sp_to_host(b, r->scores, n * sizeof(float));
    int32_t *sel = km_sp_to_host(b, r->sel, (size_t)r->s.kv_heads * r->k * sizeof(int32_t));
    if (!sum || !q || !got || !sel) return -1;
    cpu_scores(&c, r, q, sum, got);
    cpu_topk(&c, got, sel, r->s.kv_heads, r->pages, r->k, 0);
  }
  uint32_t *counters = km_sp_to_host(b, r->counters, (size_t)r->topk_rows * sizeof(uint32_t));
  if (!counters) return -1;
  size_t left = 0;
  for (int i = 0; i < r->topk_rows; ++i)
    if (counters[i] != 0 && left++ < 10) km_bench_mismatch(b, "select counter of row %d left at %u, want 0", i, counters[i]);
  km_check_add(&c, left, (size_t)r->topk_rows);
  return km_check_done(&c, "scores and selection bitwise equal to km_sparse_score + km_sparse_topk; " TOL_SCORES "; " TOL_TOPK
                           "; counters back at 0; " TOL_WHERE)
             ? 0
             : -1;
}

int km_sp_verify_read(km_bench *b, km_sp_run *r, const int32_t *host_sel) {
  uint16_t *tk = dev_scratch(b, r->out_elems * 2), *tv = dev_scratch(b, r->out_elems * 2);
  km_check c;
  if (!tk || !tv || km_check_init(&c, b) != 0) return -1;
  for (int j = 0; j < r->sel_copies && km_bench_ok(b); ++j) {
    if (poison(b, r->k_out + j * r->out_elems, r->out_elems * 2) != 0 ||
        poison(b, r->v_out + j * r->out_elems, r->out_elems * 2) != 0)
      return -1;
    KM_CUDA_OR_FAIL(b, km_sp_read(r, j, km_bench_stream(b)));
    dev_gather(&c, r, j % r->copies, j, tk, tv);
  }
  cpu_gather(&c, r, 0, host_sel);
  return km_check_done(&c, "gathered K and V bitwise, every selection copy on the device, sequence 0 of copy 0 on the CPU")
             ? 0
             : -1;
}

/* The dense read of every copy on the device, and the trusted XOR itself against the CPU. */
static void check_dense(km_check *c, km_sp_run *r) {
  uint32_t *t_xor = dev_scratch(c->b, sizeof(uint32_t));
  if (!t_xor) return;
  for (int copy = 0; copy < r->copies && km_bench_ok(c->b); ++copy) dev_dense(c, r, copy, t_xor);
  cpu_xor(c, r, t_xor);
}

/* Sequence 0 of copy 0 of the pipeline's outputs (left by the run of copy 0) on the CPU. */
static int cpu_pipeline_slice(km_check *c, km_sp_run *r) {
  km_bench *b = c->b;
  const size_t seq_kv = r->kv_elems / r->s.batch, seq_sum = r->sum_elems / r->s.batch;
  const size_t seq_scores = (size_t)r->s.kv_heads * r->pages;
  uint16_t *keys = km_sp_to_host(b, r->keys, seq_kv * 2), *sum = km_sp_to_host(b, r->summary, seq_sum * 2);
  uint16_t *q = km_sp_to_host(b, r->query, r->q_elems / r->s.batch * 2);
  float *scores = km_sp_to_host(b, r->scores, seq_scores * sizeof(float));
  int32_t *sel = km_sp_to_host(b, r->sel, (size_t)r->s.kv_heads * r->k * sizeof(int32_t));
  if (!keys || !sum || !q || !scores || !sel) return -1;
  cpu_summaries(c, r, keys, sum);
  cpu_scores(c, r, q, sum, scores);
  cpu_topk(c, scores, sel, r->s.kv_heads, r->pages, r->k, 0);
  cpu_gather(c, r, 0, sel);
  return km_bench_ok(b) ? 0 : -1;
}

int km_sp_verify_pipeline(km_bench *b, km_sp_run *r) {
  cudaStream_t st = km_bench_stream(b);
  uint16_t *t_sum = dev_scratch(b, r->sum_elems * 2), *tk = dev_scratch(b, r->out_elems * 2), *tv = dev_scratch(b, r->out_elems * 2);
  float *t_scores = dev_scratch(b, r->score_elems * 4), *t_mag = dev_scratch(b, r->score_elems * 4);
  uint8_t *chosen = dev_scratch(b, r->score_elems);
  km_check c;
  if (!t_sum || !tk || !tv || !t_scores || !t_mag || !chosen || km_check_init(&c, b) != 0) return -1;
  for (int copy = 0; copy < r->copies && km_bench_ok(b); ++copy) {
    if (poison(b, r->scores, r->score_elems * 4) != 0 || poison(b, r->sel, r->sel_elems * 4) != 0 ||
        poison(b, r->k_out, r->out_elems * 2) != 0 || poison(b, r->v_out, r->out_elems * 2) != 0)
      return -1;
    KM_CUDA_OR_FAIL(b, km_sp_pipeline(r, copy, st));
    dev_summaries(&c, r, copy, t_sum); /* the pipeline's input, built at setup */
    dev_scores(&c, r, copy, r->scores, t_scores, t_mag);
    dev_selection(&c, r, r->scores, 1, chosen);
    dev_gather(&c, r, copy, 0, tk, tv);
    if (copy == 0 && cpu_pipeline_slice(&c, r) != 0) return -1;
  }
  check_dense(&c, r);
  return km_check_done(&c, "summaries, gather and dense XOR bitwise; " TOL_SCORES "; " TOL_TOPK "; " TOL_WHERE) ? 0
                                                                                                                 : -1;
}

int km_sp_verify_dense(km_bench *b, km_sp_run *r) {
  km_check c;
  if (km_check_init(&c, b) != 0) return -1;
  check_dense(&c, r);
  return km_check_done(&c, "XOR of every word read, bitwise, every rotated copy against a trusted XOR; the trusted XOR "
                           "of sequence 0 against the CPU")
             ? 0
             : -1;
}
