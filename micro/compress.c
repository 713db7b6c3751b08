/* compress/: pooled KV on the write path. Every c tokens (c = 2, 4, 8) of the K and V a step writes become
 * one mean-pooled entry per head in a compressed paged cache (vLLM layout, block 16): for a prefill chunk
 * of 8,192 tokens per sequence and for the decode path (c new tokens per sequence, one entry each). The
 * --model's KV heads and head_dim. GB/s against the copy ceiling; verified bit for bit on the CPU over the
 * whole compressed pool (poisoned first: unwritten slots must stay poisoned) and its guard. */
#include <string.h>

#include "bench.h"
#include "check.h"
#include "compress.h"
#include "compress_ref.h"
#include "fill.h"
#include "micro_tables.h"
#include "paged_ref.h"
#include "verify.h"

#define CP_BLOCK 16 /* vLLM's default block size */

typedef struct compress_params {
  int ratio, tokens, batch;
} compress_params;

typedef struct cp_run {
  km_compress_shape s;
  int copies;
  size_t in_elems, pool_elems; /* per copy, K (V the same) */
  uint16_t *k, *v, *kp, *vp;
  int32_t *table;
} cp_run;

static cudaError_t enq(void *arg, int rep, cudaStream_t st) {
  const cp_run *r = arg;
  const size_t c = (size_t)(rep % r->copies);
  return km_compress_mean(&r->s, r->k + c * r->in_elems, r->v + c * r->in_elems, r->kp + c * r->pool_elems,
                          r->vp + c * r->pool_elems, r->table, st);
}

static int verify(km_bench *b, cp_run *r) {
  const size_t v = (size_t)r->copies - 1, pool_bytes = r->pool_elems * 2;
  cudaStream_t st = km_bench_stream(b);
  uint16_t *kp = r->kp + v * r->pool_elems, *vp = r->vp + v * r->pool_elems;
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(kp, 0xff, pool_bytes, st));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(vp, 0xff, pool_bytes, st));
  if (km_verify_guard_set(b, kp + r->pool_elems) || km_verify_guard_set(b, vp + r->pool_elems)) return -1;
  KM_CUDA_OR_FAIL(b, enq(r, (int)v, st));
  uint16_t *k = km_verify_to_host(b, r->k + v * r->in_elems, r->in_elems * 2);
  uint16_t *vv = km_verify_to_host(b, r->v + v * r->in_elems, r->in_elems * 2);
  int32_t *table = km_verify_to_host(b, r->table, (size_t)r->s.batch * r->s.blocks_per_seq * 4);
  uint16_t *gk = km_verify_to_host(b, kp, pool_bytes), *gv = km_verify_to_host(b, vp, pool_bytes);
  uint16_t *wk = km_bench_host_alloc(b, pool_bytes), *wv = km_bench_host_alloc(b, pool_bytes);
  if (!k || !vv || !table || !gk || !gv || !wk || !wv) return -1;
  memset(wk, 0xff, pool_bytes);
  memset(wv, 0xff, pool_bytes);
  km_compress_ref_mean(&r->s, k, vv, wk, wv, table);
  size_t bad = km_verify_equal(b, gk, wk, pool_bytes) + km_verify_equal(b, gv, wv, pool_bytes);
  bad += km_verify_guard_check(b, kp + r->pool_elems) + km_verify_guard_check(b, vp + r->pool_elems);
  if (!km_bench_ok(b)) return -1;
  return km_bench_verified(b, bad, r->pool_elems + 2 * KM_VERIFY_GUARD_BYTES,
                           "whole compressed K and V pools bitwise (fp32 sums in token order), unwritten slots and "
                           "guards untouched")
             ? 0
             : -1;
}

static void run_compress(km_bench *b, const void *params) {
  const compress_params *p = params;
  const km_model *m = km_bench_model(b);
  cp_run r;
  memset(&r, 0, sizeof r);
  const int entries = p->tokens / p->ratio, bps = (entries + CP_BLOCK - 1) / CP_BLOCK;
  r.s = (km_compress_shape){p->batch, p->tokens, m->num_kv_heads, m->head_dim, p->ratio, CP_BLOCK, bps};
  const char *why = km_compress_shape_error(&r.s);
  if (why) {
    km_bench_skip(b, "model %s, %d tokens per %d: %s", m->name, p->tokens, p->ratio, why);
    return;
  }
  const size_t row = (size_t)r.s.kv_heads * r.s.head_dim;
  r.in_elems = (size_t)p->batch * p->tokens * row;
  r.pool_elems = (size_t)p->batch * bps * CP_BLOCK * row;
  const size_t pooled = (size_t)p->batch * entries * row; /* elements written per tensor */
  const double rd = 2.0 * 2 * pooled * p->ratio, wr = 2.0 * 2 * pooled;
  r.copies = km_bench_rotation(b, (size_t)(rd + wr));
  const int n = r.copies;
  r.k = km_bench_device_alloc(b, r.in_elems * 2 * n);
  r.v = km_bench_device_alloc(b, r.in_elems * 2 * n);
  r.kp = km_bench_device_alloc(b, r.pool_elems * 2 * n + KM_VERIFY_GUARD_BYTES);
  r.vp = km_bench_device_alloc(b, r.pool_elems * 2 * n + KM_VERIFY_GUARD_BYTES);
  r.table = km_bench_device_alloc(b, (size_t)p->batch * bps * 4);
  int32_t *table = km_bench_host_alloc(b, (size_t)p->batch * bps * 4);
  if (!r.k || !r.v || !r.kp || !r.vp || !r.table || !table) return;
  if (km_paged_table_random(table, (size_t)p->batch * bps, (int64_t)p->batch * bps, km_bench_seed(b)) != 0) {
    km_bench_fail(b, "cannot make a block table of %d blocks", p->batch * bps);
    return;
  }
  cudaStream_t st = km_bench_stream(b);
  KM_CUDA(b, cudaMemcpy(r.table, table, (size_t)p->batch * bps * 4, cudaMemcpyHostToDevice));
  KM_CUDA(b, km_fill_normal_bf16(r.k, r.in_elems * n, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f, st));
  KM_CUDA(b, km_fill_normal_bf16(r.v, r.in_elems * n, km_bench_seed(b), 1.0f, r.s.head_dim, 0, 0, 1.0f, st));
  if (km_bench_verify_enabled(b) && verify(b, &r) != 0) return;
  /* the tokens pooled (a tail shorter than c is not read), the entries written; the table read once */
  const km_work w = {rd + 4.0 * p->batch * bps, wr, (double)p->batch * entries * p->ratio, 1, 0};
  if (km_bench_measure(b, enq, &r, &w) > 0) km_bench_counter(b, "entries_per_seq", entries);
}

/* Prefill chunks of 8,192 tokens at batch 16 (and 1), the decode path (c new tokens, one entry per sequence)
 * at batch 64; quick rows 512 tokens at batch 1. */
#define CPP(c, tok, bat) (&(const compress_params){c, tok, bat})
#define MEAN(c, tok, bat, fl)                                                                                  \
  {"compress/mean/c" #c "/tok" #tok "/b" #bat, "compressed",                                                \
   "mean-pool every c tokens of K and V into one entry per head of a compressed paged cache", run_compress, \
   CPP(c, tok, bat), fl, NULL}

static const km_case compress_cases[] = {
    MEAN(2, 512, 1, KM_CASE_QUICK),
    MEAN(4, 512, 1, KM_CASE_QUICK),
    MEAN(8, 512, 1, KM_CASE_QUICK),
    MEAN(2, 8192, 16, 0),
    MEAN(4, 8192, 16, KM_CASE_REPRESENTATIVE),
    MEAN(8, 8192, 16, 0),
    MEAN(4, 8192, 1, 0),
    MEAN(2, 2, 64, 0),
    MEAN(4, 4, 64, 0),
    MEAN(8, 8, 64, 0),
};

/* The decode step over a pooled cache is the attention step at context / c (the attention family's rows). */
static const km_derived compress_cases_derived[] = {
    {"compressed", "decode step over a cache pooled 8x / over the full cache, b16 x 32K (x)", KM_DERIVED_RATIO,
     "attn/decode/gqa32x8/d128/bf16/b16/ctx4k", "attn/decode/gqa32x8/d128/bf16/b16/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"compressed", "decode step over a cache pooled 2x / over the full cache, b16 x 32K (x)", KM_DERIVED_RATIO,
     "attn/decode/gqa32x8/d128/bf16/b16/ctx16k", "attn/decode/gqa32x8/d128/bf16/b16/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"compressed", "pooling on the write path per generated token (c 4, b64) / the decode step at b64 x 4K",
     KM_DERIVED_RATIO, "compress/mean/c4/tok4/b64", "attn/decode/gqa32x8/d128/bf16/b64/ctx4k", NULL, {NULL}, 0.25, 0,
     0},
};

const km_case_table km_compress_table = {compress_cases, sizeof compress_cases / sizeof compress_cases[0], NULL, compress_cases_derived,
                                   sizeof compress_cases_derived / sizeof compress_cases_derived[0]};
