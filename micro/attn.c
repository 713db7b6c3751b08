/* attn/: one decode step of attention over the paged KV cache, the row that turns each technique's bytes
 * per token into time per step: GQA / MHA / MQA layouts, head_dim 64..256, bf16 and fp8 caches, block
 * sizes, speculative q_len, skewed batches, a sliding window, a compacted (evicted) cache, and the Quest
 * sparse step (page scores, top-k, attention over the selected pages). Every step is checked before it is
 * timed: its whole output against the simple kernel of baselines/attn_naive.cu on the same buffers, and a
 * slice (first and last sequence) of both against the CPU reference of micro/attn_ref.c; fp8 steps also
 * report their error against bf16 attention on the original values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_baselines.h"
#include "attn_decode.h"
#include "attn_ref.h"
#include "attn_stamps.h"
#include "bench.h"
#include "check.h"
#include "fill.h"
#include "micro_tables.h"
#include "paged_gather.h"
#include "paged_ref.h"
#include "quant_3bit.h"
#include "quant_fp8.h"
#include "quant_ref.h"
#include "sparse_ref.h"
#include "sparse_topk.h"
#include "stats.h"

typedef enum attn_op {
  A_DECODE = 0,     /* kernels/attn_decode.cu */
  A_QUEST,          /* page scores + top-k (kernels/sparse_topk.cu) + attention over the selected pages */
  A_NAIVE,          /* baseline: one CTA per (sequence, query head), no split */
  A_GATHER_DECODE,  /* baseline: gather K and V to contiguous (paged family), then decode over that */
} attn_op;

typedef struct attn_params {
  attn_op op;
  int heads, kv_heads, head_dim; /* 0: the --model's */
  km_attn_kv kv;
  km_attn_scale scale;
  int batch, ctx, block_size, q_len, window;
  int skewed;    /* context lengths long-tailed, ctx the longest */
  int budget;    /* Quest: tokens selected per (sequence, KV head) */
  int evicted_from; /* compacted cache: the context before eviction (the step runs at ctx) */
  km_attn_pipe pipe; /* how tiles reach the tensor cores (0: registers) */
  int prefetch;      /* register pipeline's tiles in flight per warp (0: the format's default) */
  int pair;          /* two tiles per softmax step */
  int otrans;        /* O^T = V^T P^T accumulators (a variant: with an explicit prefetch) */
  int ctas;          /* registers capped for 3 or 4 CTAs per SM (0: the default 2) */
  int unpack;        /* codes two at a time from 16-bit windows (1: uniform 3-bit, TurboQuant with scale_load);
                        uniform 3-bit with V's as 1 + code / 8 (2); TurboQuant with scale_load, two pairs' levels
                        from one selector (3) */
  int combine;       /* 1: the separate combine pass even where the kernel could merge its partials */
  int scale_load;    /* fp8 per token-head: a tile's scales loaded once, one per lane (a variant) */
  int chunk_tiles;   /* > 0: chunks of this many tiles instead of the planner's choice (its floor is 4) */
  int stamps;        /* 1: the stamped kernel (bf16, head_dim 128, <= 8 rows): where the step's time goes */
  int merge_inflight; /* 32: the CTA merge's last CTA loads all of up to 32 CTA partials at once (bf16) */
  int l2_ahead;       /* 2 or 4: the default kernel also prefetches that many tiles ahead into L2 */
  int lazy_rescale;   /* 1: the default kernel rescales O only where a row's maximum moved */
  int tma_slots;      /* the TMA pipeline's ring slots per warp (0: its default) */
  int tma_scales;     /* 1: the TMA pipeline copies each tile's per-token scales into its slot */
  int merge_heads;    /* 1: merged in the kernel by the last CTA of each four KV heads (CTAs of one chunk) */
  int tma_promo;      /* the TMA maps' L2 promotion in bytes (0: the default, 128; -1: none) */
  int steal;          /* 8 or 16: the last tiles of each warp's chunk may be taken by the other warps of its CTA */
  int pdl;            /* 1 or 4: programmatic dependent launches, that many tiles per chunk requested before the wait */
  int merge_poll;     /* 1: the CTA partials merged by flags into each (sequence, KV head)'s last CTA as they appear */
  int q_smem;         /* head_dim 256: KM_ATTN_Q_SMEM / KM_ATTN_Q_REGS, or 0 for the format's default */
} attn_params;

enum {
  ATTN_MAX_COPIES = 64,
  SLICE_TOKEN_HEADS = 1 << 18, /* CPU slice: context tokens x KV heads per checked sequence */
  SMOKE_CTX = 2048,
  SMOKE_BATCH = 4,
  OUTLIER_EVERY = 32, /* keys: every 32nd channel 10x larger (as the quant family's data) */
  OUTLIER_OFFSET = 7,
};
static const float OUTLIER_SCALE = 10.0f;
/* Static per-tensor fp8 scales: keys N(0,1) with 10x outliers reach ~60, values ~6. */
static const float K_TENSOR_AMAX = 64.0f, V_TENSOR_AMAX = 6.0f;
/* A row of the output matches when every element is within this share of the row's largest |value|
 * (P is rounded to 16 bits before P.V; the outputs are bf16). */
static const double ROW_TOLERANCE = 1.0 / 64.0;

typedef struct attn_run {
  const attn_params *p;
  km_attn_shape sh;
  int batch, mbps;
  int32_t *h_ctx, *h_table, *d_ctx, *d_table;
  int64_t num_blocks;
  uint16_t *q, *out, *out_check;
  /* the cache, `copies` times over when one is under 4x L2 (launch i reads copy i % copies); k, v, k_scale,
   * v_scale, summary name the copy the next launch reads (copy 0 outside the timed loop) */
  int copies;
  void *kc[ATTN_MAX_COPIES], *vc[ATTN_MAX_COPIES];
  float *ksc[ATTN_MAX_COPIES], *vsc[ATTN_MAX_COPIES];
  uint16_t *kside[ATTN_MAX_COPIES], *vside[ATTN_MAX_COPIES]; /* TurboQuant: fp16 norms (K), (norm, residual) (V) */
  uint16_t *summ[ATTN_MAX_COPIES];
  void *k, *v;
  uint16_t *k16, *v16; /* quantized formats: the bf16 values of copy 0 before quantization (NULL: not kept) */
  double originals_gib; /* > 0: those values (GiB) did not fit beside the quantized cache and were not kept */
  float *k_scale, *v_scale;
  km_attn_plan plan;
  void *ws;
  km_attn_args args;
  km_attn_naive_shape naive;
  /* Quest */
  km_sparse_shape ss;
  km_sparse_plan splan; /* the top-k and summary launchers' device figures, found in setup_quest */
  uint16_t *summary;
  float *scores;
  int32_t *selected;
  int kpages;
  /* gather then decode */
  km_paged_geom pg;
  void *k_contig, *v_contig;
  int32_t *d_ident;
  km_attn_plan cplan;
  km_attn_args cargs;
  km_quant_plan qplan; /* 3-bit caches: the quant family's quantizer */
  uint64_t *stamps;    /* the stamped kernel's KM_ATTN_STAMPS values per work item (device) */
  int stamp_items;
} attn_run;

static size_t elem_bytes(km_attn_kv kv) { return kv == KM_ATTN_BF16 ? 2 : 1; }
static int is_fp8(km_attn_kv kv) { return kv == KM_ATTN_FP8_E4M3 || kv == KM_ATTN_FP8_E5M2; }
/* TurboQuant's side data per (token, KV head): K's fp16 norm, V's norm and residual norm. */
static size_t side_bytes(km_attn_kv kv, int is_v) { return kv == KM_ATTN_TQ3 ? (is_v ? 4 : 2) : 0; }
static size_t row_bytes(const attn_run *r) {
  return (size_t)r->sh.num_kv_heads * km_attn_head_bytes(r->sh.kv, r->sh.head_dim);
}
static size_t out_elems(const attn_run *r) {
  return (size_t)r->batch * r->sh.q_len * r->sh.num_heads * r->sh.head_dim;
}

/* ---------------------------------------------------------------- the step */

/* Point the step at copy j of the cache. */
static void use_copy(attn_run *r, int j) {
  r->k = r->kc[j];
  r->v = r->vc[j];
  r->k_scale = r->ksc[j];
  r->v_scale = r->vsc[j];
  r->summary = r->summ[j];
  r->args.k_cache = r->k;
  r->args.v_cache = r->v;
  r->args.k_scale = r->k_scale;
  r->args.v_scale = r->v_scale;
  r->args.k_side = r->kside[j];
  r->args.v_side = r->vside[j];
}

static cudaError_t enqueue(void *arg, int rep, cudaStream_t s) {
  attn_run *r = arg;
  cudaError_t e = cudaSuccess;
  if (r->copies > 1) use_copy(r, rep % r->copies);
  switch (r->p->op) {
    case A_DECODE: return km_attn_decode(&r->plan, &r->args, s);
    case A_NAIVE: return km_attn_naive_decode(&r->naive, &r->args, s);
    case A_QUEST:
      e = km_sparse_score(r->q, r->summary, r->scores, r->ss, s);
      if (e == cudaSuccess)
        e = km_sparse_topk(&r->splan, r->scores, r->selected, r->batch * r->sh.num_kv_heads, r->ss.tokens / 16, r->kpages,
                           s);
      return e == cudaSuccess ? km_attn_decode(&r->plan, &r->args, s) : e;
    case A_GATHER_DECODE:
      e = km_paged_gather(&r->pg, r->k, r->d_table, r->k_contig, s);
      if (e == cudaSuccess) e = km_paged_gather(&r->pg, r->v, r->d_table, r->v_contig, s);
      return e == cudaSuccess ? km_attn_decode(&r->cplan, &r->cargs, s) : e;
  }
  return cudaErrorInvalidValue;
}

/* ---------------------------------------------------------------- setup */

static void resolve_shape(km_bench *b, const attn_params *p, attn_run *r) {
  const km_model *m = km_bench_model(b);
  memset(&r->sh, 0, sizeof r->sh);
  r->sh.num_heads = p->heads ? p->heads : m->num_attention_heads;
  r->sh.num_kv_heads = p->kv_heads ? p->kv_heads : m->num_kv_heads;
  r->sh.head_dim = p->head_dim ? p->head_dim : m->head_dim;
  r->sh.block_size = p->block_size;
  r->sh.q_len = p->q_len;
  r->sh.window = p->window;
  r->sh.kv = p->kv;
  r->sh.scale = p->scale;
  r->sh.pipe = p->pipe;
  r->sh.prefetch = p->prefetch;
  r->sh.pair = p->pair;
  r->sh.otrans = p->otrans;
  r->sh.ctas = p->ctas;
  r->sh.unpack = p->unpack;
  r->sh.combine = p->combine;
  r->sh.scale_load = p->scale_load;
  r->sh.merge_inflight = p->merge_inflight;
  r->sh.l2_ahead = p->l2_ahead;
  r->sh.lazy_rescale = p->lazy_rescale;
  r->sh.tma_slots = p->tma_slots;
  r->sh.tma_scales = p->tma_scales;
  r->sh.merge_heads = p->merge_heads;
  r->sh.tma_promo = p->tma_promo;
  r->sh.steal = p->steal;
  r->sh.pdl = p->pdl;
  r->sh.merge_poll = p->merge_poll;
  r->sh.q_smem = p->q_smem;
  r->batch = p->batch;
}

/* Context lengths: all ctx, or long-tailed (Pareto, shape 1.2, from 256 tokens) with the first at ctx. The
 * lengths are the workload, so they come from a fixed seed: the same in every run (the recorded runs of
 * c9c3ff8 and 9621248 drew them from the run's seed and got 145,684 and 85,472 tokens for b64 x 32K). */
enum { SKEW_SEED = 0x5eed1e57 };
static void contexts(const attn_params *p, attn_run *r, int ctx) {
  uint64_t x = SKEW_SEED | 1;
  for (int i = 0; i < r->batch; ++i) {
    int c = ctx;
    if (p->skewed && i > 0) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      double u = ((double)(x >> 11) + 1.0) / 9007199254740993.0;
      double len = 256.0 * pow(u, -1.0 / 1.2);
      c = len > ctx ? ctx : (int)len;
    }
    r->h_ctx[i] = c < p->q_len ? p->q_len : c;
  }
}

/* Each sequence's blocks are a random draw (without replacement) from one pool. */
static void tables(km_bench *b, attn_run *r) {
  int64_t total = 0;
  if (km_paged_tables_random(r->h_table, r->batch, r->mbps, r->h_ctx, r->sh.block_size, km_bench_seed(b), &total) != 0) {
    km_bench_skip(b, "no host memory for the block tables of %d sequences", r->batch);
    return;
  }
  r->num_blocks = total;
}

/* Fresh bf16 values of n elements into x16: keys (v 0, with outlier channels) or values (v 1), on the case's
 * stream, each fill with its own seed. */
static cudaError_t fill_values(km_bench *b, const attn_run *r, uint16_t *x16, size_t n, int v) {
  const int d = r->sh.head_dim;
  return v ? km_fill_normal_bf16(x16, n, km_bench_seed(b), 1.0f, d, 0, 0, 1.0f, km_bench_stream(b))
           : km_fill_normal_bf16(x16, n, km_bench_seed(b), 1.0f, d, OUTLIER_EVERY, OUTLIER_OFFSET, OUTLIER_SCALE,
                                 km_bench_stream(b));
}

/* bf16 values (keys with outlier channels), quantized by the quant family's kernels when the format asks; copy j
 * of the cache gets its own fresh values. K is filled and quantized before V is filled, so that k16 and v16 may be
 * one buffer (the values are the same either way: each fill draws its own seed, K's first). */
static void fill_copy(km_bench *b, attn_run *r, int j, uint16_t *k16, uint16_t *v16) {
  cudaStream_t s = km_bench_stream(b);
  const size_t rows = (size_t)r->num_blocks * r->sh.block_size, n = rows * r->sh.num_kv_heads * r->sh.head_dim;
  const int d = r->sh.head_dim;
  if (r->sh.kv == KM_ATTN_BF16) {
    KM_CUDA(b, fill_values(b, r, k16, n, 0));
    KM_CUDA(b, fill_values(b, r, v16, n, 1));
    r->kc[j] = k16;
    r->vc[j] = v16;
    return;
  }
  const km_fp8_format fmt = r->sh.kv == KM_ATTN_FP8_E5M2 ? KM_FP8_E5M2 : KM_FP8_E4M3;
  const int per_token = r->sh.scale == KM_ATTN_SCALE_TOKEN_HEAD;
  const size_t heads = rows * r->sh.num_kv_heads, nscale = per_token ? heads : 1;
  if (r->sh.kv == KM_ATTN_TQ3 || r->sh.kv == KM_ATTN_U3) {
    const size_t bytes = rows * row_bytes(r);
    r->kc[j] = km_bench_device_alloc(b, bytes);
    r->vc[j] = km_bench_device_alloc(b, bytes);
    if (r->sh.kv == KM_ATTN_TQ3) {
      r->kside[j] = km_bench_device_alloc(b, heads * side_bytes(KM_ATTN_TQ3, 0));
      r->vside[j] = km_bench_device_alloc(b, heads * side_bytes(KM_ATTN_TQ3, 1));
    }
    KM_RETURN_IF_STOPPED(b);
    if (!r->qplan.sms) KM_CUDA(b, km_quant_plan_make(&r->qplan));
  } else {
    r->kc[j] = km_bench_device_alloc(b, n);
    r->vc[j] = km_bench_device_alloc(b, n);
    r->ksc[j] = km_bench_device_alloc(b, nscale * sizeof(float));
    r->vsc[j] = km_bench_device_alloc(b, nscale * sizeof(float));
    KM_RETURN_IF_STOPPED(b);
    if (!per_token) {
      const float fmax = fmt == KM_FP8_E4M3 ? KM_FP8_E4M3_MAX : KM_FP8_E5M2_MAX;
      const float ks = K_TENSOR_AMAX / fmax, vs = V_TENSOR_AMAX / fmax;
      KM_CUDA(b, cudaMemcpyAsync(r->ksc[j], &ks, sizeof ks, cudaMemcpyHostToDevice, s));
      KM_CUDA(b, cudaMemcpyAsync(r->vsc[j], &vs, sizeof vs, cudaMemcpyHostToDevice, s));
    }
  }
  const km_quant_granularity gran = per_token ? KM_QUANT_PER_TOKEN_HEAD : KM_QUANT_PER_TENSOR;
  for (int v = 0; v < 2; ++v) {
    uint16_t *x16 = v ? v16 : k16;
    KM_CUDA(b, fill_values(b, r, x16, n, v));
    void *dst = v ? r->vc[j] : r->kc[j];
    if (r->sh.kv == KM_ATTN_TQ3) /* the quant family's TurboQuant quantizer (the best measured kernel) */
      KM_CUDA(b, km_quant_tq3_quantize(&r->qplan, x16, dst, v ? r->vside[j] : r->kside[j], rows, r->sh.num_kv_heads, d,
                                       v, s));
    else if (r->sh.kv == KM_ATTN_U3) /* the quant family's uniform 3-bit quantizer, group 32 */
      KM_CUDA(b, km_quant_u3_quantize(&r->qplan, x16, dst, rows, r->sh.num_kv_heads, d, s));
    else
      KM_CUDA(b, km_quant_fp8_quantize(x16, dst, v ? r->vsc[j] : r->ksc[j], rows, r->sh.num_kv_heads, d, fmt, gran, s));
  }
  KM_CUDA(b, cudaStreamSynchronize(s));
}

/* The cache copies: as many as keep the rotation >= 4x L2 (one for a cache that big). Quantized copies past the
 * first are quantized from one scratch pair of bf16 buffers; copy 0's originals stay for the accuracy check where
 * they fit beside the quantized cache, and otherwise copy 0 is quantized from one bf16 buffer (K, then V) freed
 * before the step, and the row has no accuracy against bf16 (r->k16 NULL, said in its label). */
static void fill_cache(km_bench *b, attn_run *r) {
  const size_t rows = (size_t)r->num_blocks * r->sh.block_size, n = rows * r->sh.num_kv_heads * r->sh.head_dim;
  const size_t pool = 2 * rows * row_bytes(r) +
                      rows * r->sh.num_kv_heads * (side_bytes(r->sh.kv, 0) + side_bytes(r->sh.kv, 1));
  int copies = km_bench_rotation(b, pool);
  r->copies = copies > ATTN_MAX_COPIES ? ATTN_MAX_COPIES : copies;
  uint16_t *s16 = NULL, *t16 = NULL;
  if (r->sh.kv != KM_ATTN_BF16 && r->copies == 1 && !km_bench_device_fits(b, pool + 2 * n * 2) &&
      km_bench_device_fits(b, pool + n * 2)) {
    uint16_t *x16 = km_bench_device_alloc(b, n * 2);
    KM_RETURN_IF_STOPPED(b);
    fill_copy(b, r, 0, x16, x16);
    KM_RETURN_IF_STOPPED(b);
    km_bench_device_free(b, x16);
    r->originals_gib = 2.0 * n * 2 / 1073741824.0;
    return;
  }
  for (int j = 0; j < r->copies; ++j) {
    uint16_t *k16, *v16;
    if (j == 0 || r->sh.kv == KM_ATTN_BF16) {
      k16 = km_bench_device_alloc(b, n * 2);
      v16 = km_bench_device_alloc(b, n * 2);
    } else {
      if (!s16) {
        s16 = km_bench_device_alloc(b, n * 2);
        t16 = km_bench_device_alloc(b, n * 2);
      }
      k16 = s16;
      v16 = t16;
    }
    KM_RETURN_IF_STOPPED(b);
    if (j == 0) {
      r->k16 = k16;
      r->v16 = v16;
    }
    fill_copy(b, r, j, k16, v16);
    KM_RETURN_IF_STOPPED(b);
  }
}

static int make_plan(km_bench *b, attn_run *r, km_attn_plan *pl, const int32_t *ctx, int sparse_pages) {
  char err[256];
  int warps = km_attn_target_warps(&r->sh, km_bench_device_id(b));
  if (warps == 0) {
    km_bench_skip(b, "no decode kernel for this shape runs on this device%s",
                  r->sh.pipe == KM_ATTN_PIPE_TMA ? " (the TMA pipeline needs sm_90 code on an sm_90 device)" : "");
    return -1;
  }
  if (km_attn_plan_make(pl, &r->sh, r->batch, ctx, r->mbps, sparse_pages, r->p->chunk_tiles, warps, err,
                        sizeof err) != 0) {
    km_bench_skip(b, "%s", err);
    return -1;
  }
  cudaError_t e = km_attn_plan_upload(pl, km_bench_stream(b)); /* freed by run_attn */
  if (e != cudaSuccess) {
    km_bench_fail(b, "plan upload failed: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

/* Quest: page summaries of the keys (from a contiguous copy made by the paged gather), scores, selection. */
static void setup_quest(km_bench *b, attn_run *r) {
  cudaStream_t s = km_bench_stream(b);
  const int ctx = r->h_ctx[0];
  if (r->sh.kv != KM_ATTN_BF16 || r->sh.q_len != 1 || r->p->skewed || ctx % r->sh.block_size) {
    km_bench_skip(b, "the Quest step takes a bf16 cache, q_len 1 and uniform contexts of whole blocks");
    return;
  }
  r->ss.batch = r->batch;
  r->ss.tokens = ctx;
  r->ss.kv_heads = r->sh.num_kv_heads;
  r->ss.q_heads = r->sh.num_heads;
  r->ss.head_dim = r->sh.head_dim;
  const int pages = ctx / 16;
  r->kpages = r->p->budget / 16;
  if (r->kpages < 1 || r->kpages > pages) r->kpages = pages;
  KM_CUDA(b, km_sparse_plan_make(&r->splan));
  if (pages > r->splan.topk_max_pages || r->sh.num_heads / r->sh.num_kv_heads > KM_SPARSE_MAX_GROUP) {
    km_bench_skip(b, "the top-k kernel takes at most %d pages and groups up to %d", r->splan.topk_max_pages,
                  KM_SPARSE_MAX_GROUP);
    return;
  }
  km_paged_geom g;
  memset(&g, 0, sizeof g);
  g.layout = KM_PAGED_NHD;
  g.block_size = r->sh.block_size;
  g.kv_heads = r->sh.num_kv_heads;
  g.head_dim = r->sh.head_dim;
  g.elem_bytes = 2;
  g.num_blocks = r->num_blocks;
  g.num_seqs = r->batch;
  g.blocks_per_seq = r->mbps;
  uint16_t *keys = km_bench_device_alloc(b, (size_t)km_paged_output_bytes(&g));
  for (int j = 0; j < r->copies; ++j)
    r->summ[j] = km_bench_device_alloc(b, (size_t)r->batch * r->sh.num_kv_heads * pages * 2 * r->sh.head_dim * 2);
  r->scores = km_bench_device_alloc(b, (size_t)r->batch * r->sh.num_kv_heads * pages * sizeof(float));
  r->selected = km_bench_device_alloc(b, (size_t)r->batch * r->sh.num_kv_heads * r->kpages * sizeof(int32_t));
  KM_RETURN_IF_STOPPED(b);
  for (int j = 0; j < r->copies; ++j) {
    KM_CUDA(b, km_paged_gather(&g, r->kc[j], r->d_table, keys, s));
    KM_CUDA(b, km_sparse_summarize(&r->splan, keys, r->summ[j], r->ss, s));
  }
  use_copy(r, 0);
  KM_CUDA(b, cudaStreamSynchronize(s));
  r->args.selected = r->selected;
}

/* Gather then decode: contiguous K and V with an identity table (whole blocks, uniform contexts). */
static void setup_gather(km_bench *b, attn_run *r) {
  cudaStream_t s = km_bench_stream(b);
  if (r->p->skewed || r->h_ctx[0] % r->sh.block_size) {
    km_bench_skip(b, "gather-then-decode takes uniform contexts of whole blocks");
    return;
  }
  memset(&r->pg, 0, sizeof r->pg);
  r->pg.layout = KM_PAGED_NHD;
  r->pg.block_size = r->sh.block_size;
  r->pg.kv_heads = r->sh.num_kv_heads;
  r->pg.head_dim = r->sh.head_dim;
  r->pg.elem_bytes = (int)elem_bytes(r->sh.kv);
  r->pg.num_blocks = r->num_blocks;
  r->pg.num_seqs = r->batch;
  r->pg.blocks_per_seq = r->mbps;
  size_t bytes = (size_t)km_paged_output_bytes(&r->pg), entries = (size_t)r->batch * r->mbps;
  r->k_contig = km_bench_device_alloc(b, bytes);
  r->v_contig = km_bench_device_alloc(b, bytes);
  r->d_ident = km_bench_device_alloc(b, entries * sizeof(int32_t));
  int32_t *ident = km_bench_host_alloc(b, entries * sizeof(int32_t));
  KM_RETURN_IF_STOPPED(b);
  km_paged_table_sequential(ident, entries);
  KM_CUDA(b, cudaMemcpyAsync(r->d_ident, ident, entries * sizeof(int32_t), cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaStreamSynchronize(s));
  if (make_plan(b, r, &r->cplan, r->h_ctx, 0) != 0) return;
  if (km_attn_workspace_bytes(&r->cplan) != km_attn_workspace_bytes(&r->plan)) {
    km_bench_fail(b, "gather-then-decode: the contiguous plan's workspace differs from the paged plan's");
    return;
  }
  r->cargs = r->args;
  r->cargs.k_cache = r->k_contig;
  r->cargs.v_cache = r->v_contig;
  r->cargs.block_table = r->d_ident;
}

static void setup(km_bench *b, const attn_params *p, attn_run *r) {
  cudaStream_t s = km_bench_stream(b);
  r->p = p;
  resolve_shape(b, p, r);
  const char *why = km_attn_shape_error(&r->sh);
  if (why) {
    km_bench_skip(b, "%s", why);
    return;
  }
  int ctx = p->ctx;
  if (km_bench_smoke(b)) {
    ctx = ctx < SMOKE_CTX ? ctx : SMOKE_CTX;
    r->batch = r->batch < SMOKE_BATCH ? r->batch : SMOKE_BATCH;
  }
  r->mbps = (ctx + r->sh.block_size - 1) / r->sh.block_size;
  r->h_ctx = km_bench_host_alloc(b, (size_t)r->batch * sizeof(int32_t));
  r->h_table = km_bench_host_alloc(b, (size_t)r->batch * r->mbps * sizeof(int32_t));
  KM_RETURN_IF_STOPPED(b);
  contexts(p, r, ctx);
  tables(b, r);
  KM_RETURN_IF_STOPPED(b);
  const size_t qn = out_elems(r);
  r->d_ctx = km_bench_device_alloc(b, (size_t)r->batch * sizeof(int32_t));
  r->d_table = km_bench_device_alloc(b, (size_t)r->batch * r->mbps * sizeof(int32_t));
  r->q = km_bench_device_alloc(b, qn * 2);
  r->out = km_bench_device_alloc(b, qn * 2);
  r->out_check = km_bench_device_alloc(b, qn * 2);
  KM_RETURN_IF_STOPPED(b);
  KM_CUDA(b, cudaMemcpyAsync(r->d_ctx, r->h_ctx, (size_t)r->batch * sizeof(int32_t), cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaMemcpyAsync(r->d_table, r->h_table, (size_t)r->batch * r->mbps * sizeof(int32_t),
                             cudaMemcpyHostToDevice, s));
  KM_CUDA(b, km_fill_normal_bf16(r->q, qn, km_bench_seed(b), 1.0f, r->sh.head_dim, 0, 0, 1.0f, s));
  fill_cache(b, r);
  KM_RETURN_IF_STOPPED(b);
  memset(&r->args, 0, sizeof r->args);
  r->args.q = r->q;
  use_copy(r, 0);
  r->args.block_table = r->d_table;
  r->args.context_lens = r->d_ctx;
  r->args.cache_blocks = r->num_blocks;
  r->args.sm_scale = 1.0f / sqrtf((float)r->sh.head_dim);
  r->args.out = r->out;
  if (p->op == A_QUEST) setup_quest(b, r);
  KM_RETURN_IF_STOPPED(b);
  if (make_plan(b, r, &r->plan, r->h_ctx, p->op == A_QUEST ? r->kpages : 0) != 0) return;
  size_t ws = km_attn_workspace_bytes(&r->plan);
  if (ws) {
    r->ws = km_bench_device_alloc(b, ws);
    KM_RETURN_IF_STOPPED(b);
    r->args.workspace = r->ws;
    KM_CUDA(b, km_attn_workspace_init(&r->plan, r->ws, s));
  }
  if (p->stamps) {
    r->stamp_items = r->plan.num_chunks * r->sh.num_kv_heads;
    r->stamps = km_bench_device_alloc(b, (size_t)r->stamp_items * KM_ATTN_STAMPS * sizeof(uint64_t));
    KM_RETURN_IF_STOPPED(b);
    r->args.stamps = (unsigned long long *)r->stamps;
  }
  r->naive.shape = r->sh;
  r->naive.batch = r->batch;
  r->naive.max_blocks_per_seq = r->mbps;
  r->naive.sparse_pages = p->op == A_QUEST ? r->kpages : 0;
  if (p->op == A_GATHER_DECODE) setup_gather(b, r);
}

/* ---------------------------------------------------------------- verification */

/* Rows of `d` outputs: each element within ROW_TOLERANCE x the row's largest |ref|; NaN (the poison) never
 * passes. Returns the number of bad elements. */
static size_t compare_rows(km_bench *b, const char *what, const uint16_t *got, const float *ref, size_t rows, int d,
                           const size_t *row_ids) {
  size_t bad = 0;
  for (size_t i = 0; i < rows; ++i) {
    const float *rr = ref + i * d;
    const uint16_t *gr = got + (row_ids ? row_ids[i] : i) * d;
    double mx = 0;
    for (int j = 0; j < d; ++j) mx = fmax(mx, fabs(rr[j]));
    for (int j = 0; j < d; ++j) {
      double g = km_bf16_to_float(gr[j]), e = fabs(g - rr[j]);
      if (!(e <= ROW_TOLERANCE * mx + 1e-6)) {
        if (bad < 4)
          km_bench_mismatch(b, "%s: row %zu dim %d: got %.6g, want %.6g", what, row_ids ? row_ids[i] : i, j, g, rr[j]);
        ++bad;
      }
    }
  }
  return bad;
}

/* The sequence's cached rows (K, V or their scales: `rb` bytes per token) in token order, one copy per block. */
static int stage_rows(km_bench *b, const attn_run *r, const void *pool, size_t rb, int seq, unsigned char *dst) {
  cudaStream_t s = km_bench_stream(b);
  const size_t bb = rb * r->sh.block_size;
  const int n = (r->h_ctx[seq] + r->sh.block_size - 1) / r->sh.block_size;
  for (int j = 0; j < n; ++j)
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(dst + (size_t)j * bb, (const unsigned char *)pool +
                                                               (size_t)r->h_table[(size_t)seq * r->mbps + j] * bb,
                                       bb, cudaMemcpyDeviceToHost, s));
  return 0;
}

enum { ACC_ROWS = 2 * 4 * 256 }; /* the slice's output rows: 2 sequences x q_len <= 4 x <= 256 query heads */
typedef struct slice_acc {
  double err2, ref2, dot, got2; /* over every element of the slice's rows */
  double row_cos[ACC_ROWS];     /* each row's own cosine (rows of a zero reference left out) */
  int rows;
} slice_acc;

/* CPU reference for one sequence (KV heads < nh), compared with both device outputs; fp8: also the kernel's
 * output against bf16 attention over the original values, accumulated into acc. */
static size_t check_sequence(km_bench *b, const attn_run *r, int seq, const uint16_t *got, const uint16_t *naive,
                             const int32_t *sel, slice_acc *acc) {
  cudaStream_t s = km_bench_stream(b);
  const int ctx = r->h_ctx[seq], d = r->sh.head_dim, heads = r->sh.num_heads, ql = r->sh.q_len;
  const int kvh = r->sh.num_kv_heads, group = heads / kvh;
  int nh = SLICE_TOKEN_HEADS / (ctx > 0 ? ctx : 1);
  nh = nh < 1 ? 1 : nh > kvh ? kvh : nh;
  const size_t blocks = (size_t)r->mbps;
  const size_t cap = blocks * r->sh.block_size * (size_t)kvh * d;
  /* bf16-sized: fp8 rows, then the bf16 originals for the accuracy figures */
  unsigned char *kr = km_bench_pinned_alloc(b, cap * 2), *vr = km_bench_pinned_alloc(b, cap * 2);
  float *ks = NULL, *vs = NULL;
  const int per_token = is_fp8(r->sh.kv) && r->sh.scale == KM_ATTN_SCALE_TOKEN_HEAD;
  const int tq = r->sh.kv == KM_ATTN_TQ3;
  if (per_token || tq) {
    ks = km_bench_pinned_alloc(b, blocks * r->sh.block_size * kvh * sizeof(float));
    vs = km_bench_pinned_alloc(b, blocks * r->sh.block_size * kvh * sizeof(float));
  }
  uint16_t *q = km_bench_host_alloc(b, (size_t)ql * heads * d * 2);
  float *ref = km_bench_host_alloc(b, (size_t)ql * heads * d * sizeof(float));
  size_t *ids = km_bench_host_alloc(b, (size_t)ql * heads * sizeof(size_t));
  if (!kr || !vr || !q || !ref || !ids || ((per_token || tq) && (!ks || !vs))) return 1;
  const size_t rb = row_bytes(r), sb = (size_t)kvh * sizeof(float);
  if (stage_rows(b, r, r->k, rb, seq, kr) || stage_rows(b, r, r->v, rb, seq, vr)) return 1;
  if (per_token && (stage_rows(b, r, r->k_scale, sb, seq, (unsigned char *)ks) ||
                    stage_rows(b, r, r->v_scale, sb, seq, (unsigned char *)vs)))
    return 1;
  /* TurboQuant: the fp16 side data in token order (K: norm; V: norm, residual), widened into ks / vs below */
  uint16_t *kh = NULL, *vh = NULL;
  if (tq) {
    kh = km_bench_pinned_alloc(b, blocks * r->sh.block_size * kvh * 2);
    vh = km_bench_pinned_alloc(b, blocks * r->sh.block_size * kvh * 4);
    if (!kh || !vh || stage_rows(b, r, r->args.k_side, (size_t)kvh * 2, seq, (unsigned char *)kh) ||
        stage_rows(b, r, r->args.v_side, (size_t)kvh * 4, seq, (unsigned char *)vh))
      return 1;
  }
  if (cudaMemcpyAsync(q, r->q + (size_t)seq * ql * heads * d, (size_t)ql * heads * d * 2, cudaMemcpyDeviceToHost, s) !=
          cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess) {
    km_bench_fail(b, "staging sequence %d failed", seq);
    return 1;
  }
  for (size_t i = 0; tq && i < (size_t)ctx * kvh; ++i) {
    ks[i] = km_ref_f16_to_f32(kh[i]);
    vs[i] = km_ref_f16_to_f32(vh[2 * i]);
  }
  km_attn_ref_shape rs = {heads, kvh, d, ql, r->sh.window, (km_attn_ref_kv)r->sh.kv, per_token, 1.0f, 1.0f,
                          r->args.sm_scale};
  if (is_fp8(r->sh.kv) && !per_token) {
    const float fmax = r->sh.kv == KM_ATTN_FP8_E4M3 ? KM_FP8_E4M3_MAX : KM_FP8_E5M2_MAX;
    rs.k_scale = K_TENSOR_AMAX / fmax;
    rs.v_scale = V_TENSOR_AMAX / fmax;
  }
  const int npages = r->naive.sparse_pages;
  const int32_t *pages = sel ? sel + (size_t)seq * kvh * npages : NULL;
  km_attn_ref_step(&rs, ctx, q, kr, vr, ks, vs, pages, npages, nh, ref);
  /* the rows of heads served by KV heads < nh, for every query token */
  size_t rows = 0;
  float *packed = km_bench_host_alloc(b, (size_t)ql * heads * d * sizeof(float));
  if (!packed) return 1;
  for (int qi = 0; qi < ql; ++qi)
    for (int h = 0; h < nh * group; ++h) {
      memcpy(packed + rows * d, ref + ((size_t)qi * heads + h) * d, (size_t)d * sizeof(float));
      ids[rows++] = ((size_t)seq * ql + qi) * heads + h;
    }
  size_t bad = compare_rows(b, "kernel vs CPU", got, packed, rows, d, ids) +
               compare_rows(b, "simple kernel vs CPU", naive, packed, rows, d, ids);
  if (r->sh.kv != KM_ATTN_BF16 && acc && r->k16) {
    /* accuracy: the same rows of bf16 attention over the values before quantization */
    if (stage_rows(b, r, r->k16, (size_t)kvh * d * 2, seq, kr) || stage_rows(b, r, r->v16, (size_t)kvh * d * 2, seq, vr))
      return 1;
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
    km_attn_ref_shape r16 = rs;
    r16.kv = KM_REF_KV_BF16;
    r16.per_token = 0;
    km_attn_ref_step(&r16, ctx, q, kr, vr, NULL, NULL, pages, npages, nh, ref);
    for (size_t i = 0; i < rows; ++i) {
      const float *rr = ref + (ids[i] - (size_t)seq * ql * heads) * d;
      double dot = 0, ref2 = 0, got2 = 0;
      for (int j = 0; j < d; ++j) {
        double g = km_bf16_to_float(got[ids[i] * d + j]), w = rr[j];
        acc->err2 += (g - w) * (g - w);
        ref2 += w * w;
        dot += g * w;
        got2 += g * g;
      }
      acc->ref2 += ref2, acc->dot += dot, acc->got2 += got2;
      if (ref2 > 0 && acc->rows < ACC_ROWS) acc->row_cos[acc->rows++] = dot / sqrt(ref2 * (got2 > 0 ? got2 : 1));
    }
  }
  return bad;
}

/* One copy of the cache: the timed step on its own buffers with the output poisoned (0xFFFF is a bf16 NaN),
 * and the simple kernel on the same cache (for Quest, the same selection), both copied to the host. */
static int run_both(km_bench *b, attn_run *r, int copy, uint16_t *got, uint16_t *naive, int32_t *sel) {
  cudaStream_t s = km_bench_stream(b);
  const size_t n = out_elems(r);
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->out, 0xFF, n * 2, s));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->out_check, 0xFF, n * 2, s));
  use_copy(r, copy);
  KM_CUDA_OR_FAIL(b, enqueue(r, copy, s));
  KM_CUDA_OR_FAIL(b, cudaGetLastError());
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(got, r->out, n * 2, cudaMemcpyDeviceToHost, s));
  km_attn_args na = r->args;
  na.out = r->out_check;
  na.stamps = NULL;
  if (r->p->op == A_NAIVE)
    KM_CUDA_OR_FAIL(b, km_attn_decode(&r->plan, &na, s));
  else
    KM_CUDA_OR_FAIL(b, km_attn_naive_decode(&r->naive, &na, s));
  KM_CUDA_OR_FAIL(b, cudaGetLastError());
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(naive, r->out_check, n * 2, cudaMemcpyDeviceToHost, s));
  if (sel)
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(sel, r->selected, (size_t)r->batch * r->sh.num_kv_heads * r->kpages * sizeof *sel,
                                       cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  return 0;
}

/* Every copy's whole output against the simple kernel; copy 0's first and last sequence on the CPU. */
static void verify(km_bench *b, attn_run *r) {
  const size_t n = out_elems(r), d = (size_t)r->sh.head_dim;
  uint16_t *got = km_bench_host_alloc(b, n * 2), *naive = km_bench_host_alloc(b, n * 2);
  float *ref = km_bench_host_alloc(b, n * sizeof(float));
  int32_t *sel = r->p->op == A_QUEST ? km_bench_host_alloc(b, (size_t)r->batch * r->sh.num_kv_heads * r->kpages * 4) : NULL;
  if (!got || !naive || !ref || (r->p->op == A_QUEST && !sel)) return;
  const int fast_is_naive = r->p->op == A_NAIVE;
  size_t bad = 0;
  for (int copy = r->copies - 1; copy >= 0; --copy) { /* copy 0 last: its outputs stay for the CPU slice */
    if (run_both(b, r, copy, got, naive, sel) != 0) return;
    for (size_t i = 0; i < n; ++i) ref[i] = (float)km_bf16_to_float(fast_is_naive ? got[i] : naive[i]);
    bad += compare_rows(b, fast_is_naive ? "simple kernel vs decode kernel" : "decode kernel vs simple kernel",
                        fast_is_naive ? naive : got, ref, n / d, (int)d, NULL);
  }
  slice_acc *acc = km_bench_host_alloc(b, sizeof *acc); /* 16 KiB of row cosines: not on the stack */
  if (!acc) return;
  memset(acc, 0, sizeof *acc);
  bad += check_sequence(b, r, 0, got, naive, sel, acc);
  if (r->batch > 1) bad += check_sequence(b, r, r->batch - 1, got, naive, sel, acc);
  KM_RETURN_IF_STOPPED(b);
  char tol[200];
  snprintf(tol, sizeof tol, "each output within 1/64 of its row's max |value| of the simple kernel (all %zu rows of "
                            "each of %d cache copies) and of the CPU fp64 reference (first and last sequence)",
           n / d, r->copies);
  km_bench_verified(b, bad, n * r->copies, tol);
  if (r->sh.kv != KM_ATTN_BF16 && acc->ref2 > 0) {
    km_bench_counter(b, "rel_err_vs_bf16", sqrt(acc->err2 / acc->ref2));
    km_bench_counter(b, "cosine_vs_bf16", acc->dot / sqrt(acc->ref2 * (acc->got2 > 0 ? acc->got2 : 1)));
    /* each output row's own cosine: the whole slice's is weighted by its largest rows, and with keys whose
     * outlier channels set a 3-bit group's range it moves from run to run with the draw (0.70-0.94) */
    if (acc->rows > 0) {
      const double q[2] = {0.5, 0.1};
      double at[2];
      km_quantiles_of(acc->row_cos, (size_t)acc->rows, q, 2, at);
      km_bench_counter(b, "cosine_rows_vs_bf16", acc->rows);
      km_bench_counter(b, "cosine_rows_median_vs_bf16", at[0]);
      km_bench_counter(b, "cosine_rows_p10_vs_bf16", at[1]);
    }
  }
}

/* ---------------------------------------------------------------- the case */

static km_work work_of(const attn_run *r) {
  km_work w;
  memset(&w, 0, sizeof w);
  const km_attn_plan *pl = r->p->op == A_GATHER_DECODE ? &r->cplan : &r->plan;
  const double kv = km_attn_kv_bytes_read(pl);
  const double tokens_read = kv / 2 / (double)row_bytes(r);
  const double part = km_attn_partial_bytes(pl);
  const double qo = (double)out_elems(r) * 2;
  w.bytes_read = kv + qo + part + tokens_read / KM_ATTN_TILE * 4 * r->sh.num_kv_heads;
  w.bytes_read += tokens_read * r->sh.num_kv_heads * (side_bytes(r->sh.kv, 0) + side_bytes(r->sh.kv, 1));
  if (is_fp8(r->sh.kv) && r->sh.scale == KM_ATTN_SCALE_TOKEN_HEAD)
    w.bytes_read += tokens_read * r->sh.num_kv_heads * 2 * sizeof(float);
  w.bytes_written = qo + part;
  if (r->p->op == A_QUEST) {
    const double rows = (double)r->batch * r->sh.num_kv_heads, pages = r->ss.tokens / 16.0;
    w.bytes_read += rows * pages * 2 * r->sh.head_dim * 2 + rows * pages * 4 + rows * r->kpages * 4;
    w.bytes_written += rows * pages * 4 + rows * r->kpages * 4;
  }
  if (r->p->op == A_GATHER_DECODE) {
    const double g = 2.0 * (double)km_paged_output_bytes(&r->pg);
    w.bytes_read += g;
    w.bytes_written += g;
  }
  double ctx_tokens = 0;
  for (int i = 0; i < r->batch; ++i) ctx_tokens += r->h_ctx[i];
  w.tokens = ctx_tokens; /* ns per context token of one layer's step */
  w.layers = 1;
  return w;
}

static const char *kv_name(const km_attn_shape *s) {
  if (s->kv == KM_ATTN_BF16) return "bf16";
  if (s->kv == KM_ATTN_U3) return "uniform 3-bit g32 (fp16 scale, zero)";
  if (s->kv == KM_ATTN_TQ3) return "TurboQuant 3-bit (rotated domain)";
  if (s->kv == KM_ATTN_FP8_E4M3) return s->scale == KM_ATTN_SCALE_TOKEN_HEAD ? "fp8 e4m3 per token-head" : "fp8 e4m3 per tensor";
  return s->scale == KM_ATTN_SCALE_TOKEN_HEAD ? "fp8 e5m2 per token-head" : "fp8 e5m2 per tensor";
}

/* The stamped kernel's last launch: where its time went (counters, and a line for the label). */
static void stamp_report(km_bench *b, attn_run *r, char *line, size_t len) {
  const size_t n = (size_t)r->stamp_items * KM_ATTN_STAMPS;
  uint64_t *h = km_bench_host_alloc(b, n * sizeof *h);
  if (!h) return;
  KM_CUDA(b, cudaMemcpy(h, r->stamps, n * sizeof *h, cudaMemcpyDeviceToHost));
  km_attn_stamp_summary sm;
  char err[200];
  if (km_attn_stamps_summarize(h, r->stamp_items, &sm, err, sizeof err) != 0) {
    km_bench_fail(b, "stamps: %s", err);
    return;
  }
  km_bench_counter(b, "stamp_span_us", sm.span_us);
  km_bench_counter(b, "stamp_start_spread_us", sm.start_spread_us);
  km_bench_counter(b, "stamp_first_tile_us", sm.median.first_tile);
  km_bench_counter(b, "stamp_per_tile_us", sm.per_tile_us);
  km_bench_counter(b, "stamp_last_count_us", sm.last.count); /* its CTA merge, fence and count */
  km_bench_counter(b, "stamp_last_merge_us", sm.last.merge); /* then the others' partials into the output */
  km_bench_counter(b, "stamp_sm_mhz", sm.cycles_per_us);
  km_bench_counter(b, "stamp_per_tile_p90_us", sm.per_tile_p90_us);
  km_bench_counter(b, "stamp_sm_slowest_per_tile_us", sm.sm_slowest_per_tile_us);
  line[0] = ';', line[1] = ' ';
  km_attn_stamps_format(&sm, line + 2, len - 2);
}

/* The label's words for a variant's window unpacking (attn_params.unpack). */
static const char *unpack_note(int unpack) {
  switch (unpack) {
    case 0: return "";
    case 2: return ", codes from 16-bit windows, V's as 1 + code / 8 (one fma each)";
    case 3: return ", codes from 16-bit windows, two pairs' levels from one selector";
    default: return ", codes from 16-bit windows";
  }
}

static void run_step(km_bench *b, const attn_params *p, attn_run *r) {
  setup(b, p, r);
  KM_RETURN_IF_STOPPED(b);
  if (km_bench_verify_enabled(b)) verify(b, r);
  KM_RETURN_IF_STOPPED(b);
  km_work w = work_of(r);
  km_bench_measure(b, enqueue, r, &w);
  double ctx_tokens = w.tokens;
  km_bench_counter(b, "batch_seqs", r->batch);
  km_bench_counter(b, "context_tokens", ctx_tokens);
  km_bench_counter(b, "chunks", r->plan.num_chunks);
  km_bench_counter(b, "cache_copies", r->copies);
  char variant[192] = "";
  if (p->prefetch || p->otrans || p->ctas)
    snprintf(variant, sizeof variant, ", %s%d tile(s) ahead, registers for %d CTAs/SM%s%s", p->otrans ? "O^T, " : "",
             p->prefetch, p->ctas ? p->ctas : 2, unpack_note(p->unpack),
             p->scale_load ? ", scales loaded once per tile" : "");
  if (p->l2_ahead) snprintf(variant, sizeof variant, ", %d tiles prefetched into L2 ahead", p->l2_ahead);
  if (p->lazy_rescale) snprintf(variant, sizeof variant, ", O rescaled only where a maximum moved");
  if (p->steal)
    snprintf(variant, sizeof variant, ", the last %d tiles of each warp's chunk taken by whichever warp of its CTA "
             "gets there first%s", p->steal, r->plan.cta_merge == 1 ? "" : " (not in this plan: no CTA merge)");
  if (p->pdl)
    snprintf(variant, sizeof variant, ", programmatic dependent launches, %d tile(s) per chunk requested into L2 "
             "before the wait for the step before", p->pdl);
  if (p->q_smem)
    snprintf(variant, sizeof variant, ", Q's fragments in %s",
             p->q_smem == KM_ATTN_Q_SMEM ? "shared memory" : "registers");
  if (km_attn_tile_pipe(&r->sh) == KM_ATTN_PIPE_TMA)
    snprintf(variant, sizeof variant, ", tiles by TMA into %d ring slots per warp%s%s", km_attn_tma_slots(&r->sh),
             p->tma_scales == 1 ? ", scales copied into the slots" : p->tma_scales == 2 ? ", every lane arrives"
             : p->tma_scales == 3 ? ", every lane arrives by cp.async noinc" : "",
             p->tma_promo == -1 ? ", no L2 promotion" : p->tma_promo == 64 ? ", 64-byte L2 promotion"
                                                      : p->tma_promo == 256 ? ", 256-byte L2 promotion" : "");
  const char *merge = !r->plan.split       ? ""
                      : !r->plan.cta_merge  ? ", combine pass"
                      : r->plan.cta_merge == 2 ? ", partials merged in the kernel by the last CTA of each four KV heads"
                      : p->merge_inflight == 32 ? ", partials merged in the kernel (32 CTA partials in flight)"
                      : r->plan.poll ? ", partials merged in the kernel by flags, as they appear"
                      : p->merge_poll ? ", partials merged in the kernel (by the count: the grid is more than one wave)"
                                            : ", partials merged in the kernel";
  char stamps[900] = "";
  if (p->stamps) stamp_report(b, r, stamps, sizeof stamps);
  KM_RETURN_IF_STOPPED(b);
  char no_acc[160] = "";
  if (r->originals_gib > 0)
    snprintf(no_acc, sizeof no_acc, "; no accuracy against bf16: the %.0f GiB of bf16 values do not fit beside the "
             "quantized cache", r->originals_gib);
  km_bench_label(b, "%d:%d heads d%d %s, batch %d, %s%.0f ctx tokens, block %d, q_len %d%s%s, %d chunks of %d tiles%s%s%s%s%s",
                 r->sh.num_heads, r->sh.num_kv_heads, r->sh.head_dim, kv_name(&r->sh), r->batch,
                 p->skewed ? "long-tailed, " : "", ctx_tokens, r->sh.block_size, r->sh.q_len,
                 p->window ? ", window" : "", p->op == A_QUEST ? ", Quest pages" : "", r->plan.num_chunks,
                 r->plan.chunk_tiles, merge, p->evicted_from ? ", compacted cache" : "", variant, no_acc, stamps);
}

/* The plans live in the case's stack frame: freed here, after the step, whatever stopped it. */
static void run_attn(km_bench *b, const void *params) {
  attn_run r;
  memset(&r, 0, sizeof r);
  run_step(b, params, &r);
  km_attn_plan_free(&r.plan);
  km_attn_plan_free(&r.cplan);
}

/* ---------------------------------------------------------------- the sweep */

#define BF KM_ATTN_BF16
#define E4 KM_ATTN_FP8_E4M3
#define E5 KM_ATTN_FP8_E5M2
#define TEN KM_ATTN_SCALE_TENSOR
#define TOK KM_ATTN_SCALE_TOKEN_HEAD
#define P(name, op, h, kvh, d, kv, sc, b, ctx, bs, ql, w, skew, budget, from) \
  static const attn_params name = {op, h, kvh, d, kv, sc, b, ctx, bs, ql, w, skew, budget, from}

/* the batch x context grid, GQA 32:8 d128, bf16 and fp8 e4m3 per token-head */
#define GRID(X)                                                                                         \
  X(1, 1024, 1k) X(1, 4096, 4k) X(1, 16384, 16k) X(1, 32768, 32k) X(1, 131072, 128k)                    \
  X(4, 1024, 1k) X(4, 4096, 4k) X(4, 16384, 16k) X(4, 32768, 32k) X(4, 131072, 128k)                    \
  X(16, 1024, 1k) X(16, 4096, 4k) X(16, 16384, 16k) X(16, 32768, 32k) X(16, 131072, 128k)               \
  X(64, 1024, 1k) X(64, 4096, 4k) X(64, 16384, 16k) X(64, 32768, 32k) X(64, 131072, 128k)               \
  X(256, 1024, 1k) X(256, 4096, 4k) X(256, 16384, 16k) X(256, 32768, 32k) X(256, 131072, 128k)
#define GRID_PARAMS(b, c, cs)                                                  \
  P(bf16_b##b##_##cs, A_DECODE, 32, 8, 128, BF, TEN, b, c, 16, 1, 0, 0, 0, 0); \
  P(fp8_b##b##_##cs, A_DECODE, 32, 8, 128, E4, TOK, b, c, 16, 1, 0, 0, 0, 0);
GRID(GRID_PARAMS)

/* uniform 3-bit (group 32) at the grid's shapes the targets name (batch >= 16, context >= 16K) and around */
#define U3(b, c, cs) P(u3_b##b##_##cs, A_DECODE, 32, 8, 128, KM_ATTN_U3, TEN, b, c, 16, 1, 0, 0, 0, 0);
#define U3_GRID(X) X(1, 32768, 32k) X(16, 4096, 4k) X(16, 16384, 16k) X(16, 32768, 32k) X(64, 4096, 4k) \
  X(64, 16384, 16k) X(64, 32768, 32k) X(64, 131072, 128k)
U3_GRID(U3)

/* TurboQuant 3-bit, attended in the rotated domain */
#define TQ3(b, c, cs) P(tq3_b##b##_##cs, A_DECODE, 32, 8, 128, KM_ATTN_TQ3, TEN, b, c, 16, 1, 0, 0, 0, 0);
#define TQ3_GRID(X) X(1, 32768, 32k) X(16, 4096, 4k) X(16, 32768, 32k) X(64, 32768, 32k)
TQ3_GRID(TQ3)
P(quick_tq3, A_DECODE, 32, 8, 128, KM_ATTN_TQ3, TEN, 4, 4096, 16, 1, 0, 0, 0, 0);

/* the shared-memory ring pipeline beside the register one (same shapes, same checks) */
#define PRING(name, kv, sc, b, ctx) \
  static const attn_params name = {A_DECODE, 32, 8, 128, kv, sc, b, ctx, 16, 1, 0, 0, 0, 0, KM_ATTN_PIPE_SMEM_RING}
PRING(ring_bf16_b16_32k, BF, TEN, 16, 32768);
PRING(ring_fp8_b16_32k, E4, TOK, 16, 32768);

/* the register pipeline's prefetch depth (tiles in flight per warp) beside each format's default */
#define PDEPTH(name, kv, sc, depth) \
  static const attn_params name = {A_DECODE, 32, 8, 128, kv, sc, 16, 32768, 16, 1, 0, 0, 0, 0, 0, depth}
PDEPTH(pf2_bf16_b16_32k, BF, TEN, 2);
PDEPTH(pf2_u3_b16_32k, KM_ATTN_U3, TEN, 2);
/* O^T accumulators (half the P V products and accumulator registers for <= 8 rows), the register cap for 3
 * or 4 CTAs per SM and (uniform 3-bit) the window unpacking, at a given depth: what limits a quantized step's
 * tiles per second */
#define PVAR(name, kv, sc, b, depth, ot, ctas, unpack)                                                         \
  static const attn_params name = {A_DECODE, 32, 8, 128, kv, sc, b, 32768, 16, 1, 0, 0, 0, 0, 0, depth, 0, ot, \
                                   ctas, unpack}
PVAR(ot1_bf16_b16_32k, BF, TEN, 16, 1, 1, 0, 0);
PVAR(ot1c3_bf16_b16_32k, BF, TEN, 16, 1, 1, 3, 0);
PVAR(ot1c3_bf16_b1_32k, BF, TEN, 1, 1, 1, 3, 0);
PVAR(pf1_fp8_b16_32k, E4, TOK, 16, 1, 0, 0, 0);
PVAR(pf2_fp8_b16_32k, E4, TOK, 16, 2, 0, 0, 0); /* the kernel fp8 ran by default before O^T */
PVAR(pf1_u3_b16_32k, KM_ATTN_U3, TEN, 16, 1, 0, 0, 0); /* 3-bit's former default */
PVAR(pf2_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 2, 0, 0, 0); /* TurboQuant's former default */
PVAR(pf1c3_fp8_b16_32k, E4, TOK, 16, 1, 0, 3, 0);
PVAR(ot1_fp8_b16_32k, E4, TOK, 16, 1, 1, 0, 0);
PVAR(ot2_fp8_b16_32k, E4, TOK, 16, 2, 1, 0, 0);
PVAR(ot1c3_fp8_b16_32k, E4, TOK, 16, 1, 1, 3, 0);
PVAR(ot2c3_fp8_b16_32k, E4, TOK, 16, 2, 1, 3, 0);
PVAR(ot1c4_fp8_b16_32k, E4, TOK, 16, 1, 1, 4, 0);
/* fp8 per token-head with a tile's 32 scales loaded once (lane l: one of them) and shuffled to the lanes that
 * use them, instead of 8 loads per thread, each scale loaded by 8 lanes */
#define PSL(name, kv, sc, b, depth, ctas)                                                                          \
  static const attn_params name = {A_DECODE, 32, 8, 128, kv, sc, b, 32768, 16, 1, 0, 0, 0, 0, 0, depth, 0, 1, ctas, 0, \
                                   0, 1}
PSL(ot2s_fp8_b16_32k, E4, TOK, 16, 2, 0);
/* TurboQuant's fp16 norms the same way (converted when the tile is computed on, not at the load; its default
 * at depth 2 capped for 3 CTAs), here at depth 1; its default before, at b1 and b64 */
PSL(ot1s_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 1, 0);
PSL(ot2c3s_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 2, 3); /* the former default's kernel with the plain rescale */
PSL(ot2c3s_tq3_b64_32k, KM_ATTN_TQ3, TEN, 64, 2, 3);
/* the same with TurboQuant's codes from uniform 3-bit's 16-bit windows (unpack 1): against ot2c3s; and with
 * two pairs' levels looked up from one selector (unpack 3): against ot2c3sw */
#define PSLW(name, b, c, u)                                                                                          \
  static const attn_params name = {A_DECODE, 32, 8, 128, KM_ATTN_TQ3, TEN, b, c, 16, 1, 0, 0, 0, 0, 0, 2, 0, 1, 3, u, \
                                   0, 1}
PSLW(ot2c3sw_tq3_b16_32k, 16, 32768, 1);
PSLW(ot2c3sw_tq3_b64_32k, 64, 32768, 1);
PSLW(quick_sw_tq3, 4, 4096, 1);
PSLW(ot2c3sx_tq3_b16_32k, 16, 32768, 3);
PSLW(ot2c3sx_tq3_b64_32k, 64, 32768, 3);
PSLW(quick_sx_tq3, 4, 4096, 3);
PVAR(ot2c3_tq3_b64_32k, KM_ATTN_TQ3, TEN, 64, 2, 1, 3, 0);
PVAR(ot2c3_tq3_b1_32k, KM_ATTN_TQ3, TEN, 1, 2, 1, 3, 0);
/* the default before the scales were loaded once (O^T depth 1, each scale loaded by 8 lanes), at b1 */
PVAR(ot1_fp8_b1_32k, E4, TOK, 1, 1, 1, 0, 0);
PVAR(pf1c3_u3_b16_32k, KM_ATTN_U3, TEN, 16, 1, 0, 3, 0);
PVAR(ot1_u3_b16_32k, KM_ATTN_U3, TEN, 16, 1, 1, 0, 0);
PVAR(ot2c3_u3_b16_32k, KM_ATTN_U3, TEN, 16, 2, 1, 3, 0);
PVAR(ot1c4_u3_b16_32k, KM_ATTN_U3, TEN, 16, 1, 1, 4, 0);
/* 3-bit codes unpacked two at a time from 16-bit windows (kernels/u3_unpack.h) */
PVAR(ot1w_u3_b16_32k, KM_ATTN_U3, TEN, 16, 1, 1, 0, 1);
PVAR(ot2c3w_u3_b16_32k, KM_ATTN_U3, TEN, 16, 2, 1, 3, 1);
PVAR(ot1c4w_u3_b16_32k, KM_ATTN_U3, TEN, 16, 1, 1, 4, 1);
PVAR(ot2c3w_u3_b64_32k, KM_ATTN_U3, TEN, 64, 2, 1, 3, 1);
/* V's pairs as 1 + code / 8, one fma each (unpack 2): against ot2c3w, the plain rescale too */
PVAR(ot2c3w7_u3_b16_32k, KM_ATTN_U3, TEN, 16, 2, 1, 3, 2);
PVAR(ot2c3w7_u3_b64_32k, KM_ATTN_U3, TEN, 64, 2, 1, 3, 2);
PVAR(pf1_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 1, 0, 0, 0);
PVAR(ot1_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 1, 1, 0, 0);
PVAR(ot2c3_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 2, 1, 3, 0);
PVAR(ot1c4_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 1, 1, 4, 0);
/* the separate combine pass where the kernel would merge its partials itself (cta_merge) */
#define PCOMB(name, op, kv, sc, b, budget)                                                                \
  static const attn_params name = {op, 32, 8, 128, kv, sc, b, 32768, 16, 1, 0, 0, budget, 0, 0, 0, 0, 0, 0, 0, \
                                   1}
PCOMB(comb_bf16_b1_32k, A_DECODE, BF, TEN, 1, 0);
PCOMB(comb_bf16_b4_32k, A_DECODE, BF, TEN, 4, 0);
PCOMB(comb_bf16_b16_32k, A_DECODE, BF, TEN, 16, 0);
PCOMB(comb_fp8_b16_32k, A_DECODE, E4, TOK, 16, 0);
PCOMB(comb_quest_b1_32k, A_QUEST, BF, TEN, 1, 2048);
/* chunks of another length than the planner's (its floor: 4 tiles for a dense step, 2 for a sparse one since
 * 328ce5d): Quest b1 x 32K in chunks of 1 and of 4 (the planner's before; 32 chunks of the 128 selected tiles per
 * KV head, 256 warps of 1,056), dense b1 x 4K in chunks of 1 and 2 */
#define PCT(name, op, b, ctx, budget, ct)                                                                     \
  static const attn_params name = {op, 32, 8, 128, BF, TEN, b, ctx, 16, 1, 0, 0, budget, 0, 0, 0, 0, 0, 0, 0, 0, \
                                   0, ct}
PCT(ct1_quest_b1_32k, A_QUEST, 1, 32768, 2048, 1);
PCT(ct4_quest_b1_32k, A_QUEST, 1, 32768, 2048, 4);
PCT(ct1_bf16_b1_4k, A_DECODE, 1, 4096, 0, 1);
PCT(ct2_bf16_b1_4k, A_DECODE, 1, 4096, 0, 2);
/* the stamped kernel: each warp's clock at the step's points (kernels/attn_decode.h, KM_ATTN_STAMP_*) */
#define PST(name, b, ctx, st, mw)                                                                             \
  static const attn_params name = {A_DECODE, 32, 8, 128, BF, TEN, b, ctx, 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
                                   0, st, mw}
PST(st_bf16_b1_4k, 1, 4096, 1, 0);
PST(st_bf16_b1_16k, 1, 16384, 1, 0);
PST(st_bf16_b1_32k, 1, 32768, 1, 0);
PST(st_bf16_b16_32k, 16, 32768, 1, 0);
/* the last CTA's merge with all of its (up to 32) CTA partials in flight: one L2 round at b1 x 32K */
PST(m32_bf16_b1_16k, 1, 16384, 0, 32);
PST(m32_bf16_b1_32k, 1, 32768, 0, 32);
PST(m32_bf16_b4_32k, 4, 32768, 0, 32);
PST(m32st_bf16_b1_32k, 1, 32768, 1, 32);
/* a GQA 32:8 d128 step of each format's default kernel with one option of the shape set (the designator and
 * its value: .l2_ahead = N or .lazy_rescale = 1) */
#define PDEF(name, fmt, sc, b, c, ...)                                                                         \
  static const attn_params name = {.op = A_DECODE, .heads = 32, .kv_heads = 8, .head_dim = 128, .kv = fmt,        \
                                   .scale = sc, .batch = b, .ctx = c, .block_size = 16, .q_len = 1, __VA_ARGS__}
/* each format's default kernel with 2 or 4 tiles past those in flight prefetched into L2 (l2_ahead) */
#define PL2(name, fmt, sc, b, ahead) PDEF(name, fmt, sc, b, 32768, .l2_ahead = ahead)
PL2(l2p2_bf16_b1_32k, BF, TEN, 1, 2);
PL2(l2p2_bf16_b16_32k, BF, TEN, 16, 2);
PL2(l2p2_fp8_b16_32k, E4, TOK, 16, 2);
PL2(l2p4_fp8_b16_32k, E4, TOK, 16, 4);
PL2(l2p4_u3_b16_32k, KM_ATTN_U3, TEN, 16, 4);
PL2(l2p2_tq3_b16_32k, KM_ATTN_TQ3, TEN, 16, 2);
PDEF(quick_l2_fp8, E4, TOK, 4, 4096, .l2_ahead = 4);
/* each format's default kernel rescaling O only in steps where some row's running maximum moved (TurboQuant does so
 * by default: its plain-rescale kernel is the ot2c3sx rows'; uniform 3-bit's default is the ot2c3w7 rows' kernel) */
#define PLZ(name, fmt, sc, b) PDEF(name, fmt, sc, b, 32768, .lazy_rescale = 1)
PLZ(lz_bf16_b16_32k, BF, TEN, 16);
PLZ(lz_u3_b16_32k, KM_ATTN_U3, TEN, 16);
PLZ(lz_u3_b64_32k, KM_ATTN_U3, TEN, 64);
PLZ(lz_fp8_b16_32k, E4, TOK, 16);
PLZ(lz_e4t_b16_32k, E4, TEN, 16);
PDEF(quick_lz_fp8, E4, TOK, 4, 4096, .lazy_rescale = 1);
/* bf16's default kernel with the tails of a CTA's four chunks shared among its warps (steal): the work evened out
 * at run time between the warps of each CTA */
#define PWS(name, b, c, n) PDEF(name, BF, TEN, b, c, .steal = n)
PWS(steal8_bf16_b16_32k, 16, 32768, 8);
PWS(steal16_bf16_b16_32k, 16, 32768, 16);
PWS(steal8_bf16_b1_32k, 1, 32768, 8);
PWS(quick_steal16_bf16, 4, 4096, 16);
/* bf16's default kernel with the CTA partials merged by flags (merge_poll): each (sequence, KV head)'s last CTA merges
 * the others' partials as they appear, while they still compute (plans whose grid is one wave) */
#define PMP(name, b, c, ...) PDEF(name, BF, TEN, b, c, .merge_poll = 1, __VA_ARGS__)
PMP(mp_bf16_b1_32k, 1, 32768);
PMP(mpst_bf16_b1_32k, 1, 32768, .stamps = 1);
PMP(quick_mp_bf16, 4, 4096);
/* bf16's default kernel as programmatic dependent launches (pdl): step n + 1's CTAs start as step n's leave the
 * SMs and request what does not depend on step n (the first 1 or 4 tiles of each chunk, their block-table entries,
 * the chunk metadata) into L2 before they wait for it; the steps of a timed batch of launches overlap as a model's
 * layers with such launches would */
#define PPD(name, b, c, n) PDEF(name, BF, TEN, b, c, .pdl = n)
PPD(pdl_bf16_b1_4k, 1, 4096, 1);
PPD(pdl_bf16_b1_32k, 1, 32768, 1);
PPD(pdl4_bf16_b1_32k, 1, 32768, 4);
PPD(pdl_bf16_b16_32k, 16, 32768, 1);
PPD(quick_pdl_bf16, 4, 4096, 4);
/* fp8's default kernel (head_dim 128, <= 8 rows) is the TMA pipeline's, its tiles copied by the tensor memory
 * accelerator into a shared-memory ring of KM_ATTN_TMA_SLOTS (3; e5m2 4) slots per warp: here with 4 slots (the default
 * until 5206b20) or 6 (registers capped for 3 or 2 CTAs per SM instead of 4), and the register pipeline's kernel that
 * was the default before the TMA pipeline (the listed variant O^T depth 1 with one scale load per lane: ot1s; per
 * tensor ot1) */
#define PTMA(name, fmt, sc, b, c, slots) PDEF(name, fmt, sc, b, c, .pipe = KM_ATTN_PIPE_TMA, .tma_slots = slots)
PTMA(tma4_fp8_b16_32k, E4, TOK, 16, 32768, 4);
PTMA(tma6_fp8_b16_32k, E4, TOK, 16, 32768, 6);
PTMA(tma4_fp8_b64_32k, E4, TOK, 64, 32768, 4);
PTMA(tma6_fp8_b64_32k, E4, TOK, 64, 32768, 6);
PTMA(quick_tma4_fp8, E4, TOK, 4, 4096, 4);
/* the other ring beside each format's default where it was not chosen on its own rows: fp8 e5m2 per token-head with
 * 3 slots (its default is 4: KM_ATTN_TMA_SLOTS_E5M2) and e4m3 per tensor with 4 */
PTMA(tma3_e5_b16_32k, E5, TOK, 16, 32768, 3);
PTMA(tma4_fp8t_b16_32k, E4, TEN, 16, 32768, 4);
/* ... and with the per-token scales copied into each tile's slot (counted on its mbarrier) instead of one register
 * load per lane (tma4s) */
#define PTMS(name, b, c) PDEF(name, E4, TOK, b, c, .pipe = KM_ATTN_PIPE_TMA, .tma_scales = 1)
PTMS(tma4s_fp8_b1_32k, 1, 32768);
PTMS(tma4s_fp8_b16_32k, 16, 32768);
PTMS(tma4s_fp8_b64_32k, 64, 32768);
PTMS(quick_tma4s_fp8, 4, 4096);
/* ... and with every lane arriving on the slot's mbarrier (32 arrivals a phase; the default: lane 0's one, with the
 * copies' bytes) (arr32); both in 4 slots */
#define PTMA32(name, b, c) PDEF(name, E4, TOK, b, c, .pipe = KM_ATTN_PIPE_TMA, .tma_scales = 2)
PTMA32(arr32_fp8_b16_32k, 16, 32768);
PTMA32(arr32_fp8_b64_32k, 64, 32768);
PTMA32(quick_arr32_fp8, 4, 4096);
/* ... and with every lane arriving through cp.async.mbarrier.arrive.noinc with no copy of its own (33 arrivals a
 * phase: lane 0's with the copies' bytes and the 32 noinc ones), in the default's 3 slots (arrnc) */
#define PTMANC(name, b, c) PDEF(name, E4, TOK, b, c, .pipe = KM_ATTN_PIPE_TMA, .tma_scales = 3)
PTMANC(arrnc_fp8_b1_32k, 1, 32768);
PTMANC(arrnc_fp8_b16_32k, 16, 32768);
PTMANC(arrnc_fp8_b64_32k, 64, 32768);
PTMANC(quick_arrnc_fp8, 4, 4096);
/* ... and with the tensor maps' L2 promotion at 256 or 64 bytes or none (prN; the default promotes 128-byte lines, a
 * row each) */
#define PPRO(name, b, promo) PDEF(name, E4, TOK, b, 32768, .pipe = KM_ATTN_PIPE_TMA, .tma_promo = promo)
PPRO(pr256_fp8_b16_32k, 16, 256);
PPRO(pr64_fp8_b16_32k, 16, 64);
PPRO(pr0_fp8_b16_32k, 16, -1);
PPRO(pr256_fp8_b64_32k, 64, 256);
PPRO(pr0_fp8_b64_32k, 64, -1);
#define PREG(name, fmt, sc, b, c, sl) PDEF(name, fmt, sc, b, c, .prefetch = 1, .otrans = 1, .scale_load = sl)
PREG(ot1s_fp8_b1_32k, E4, TOK, 1, 32768, 1);
PREG(ot1s_fp8_b16_32k, E4, TOK, 16, 32768, 1);
PREG(ot1s_fp8_b64_32k, E4, TOK, 64, 32768, 1);
PREG(ot1_e4t_b16_32k, E4, TEN, 16, 32768, 0);
/* the default at b16 x 32K in chunks of 171 tiles: 12 per sequence, merged in the kernel (CTA merge) instead of by
 * the combine pass the planner's 185-tile chunks take */
PDEF(ct171_fp8_b16_32k, E4, TOK, 16, 32768, .chunk_tiles = 171);
/* bf16's default at b16 x 32K in chunks of 256 tiles: the planner's 8 per sequence, merged in the kernel instead of
 * by the combine pass the planner takes there (bf16 merges from 8 chunks only where they are <= 64 tiles) */
PDEF(ct256_bf16_b16_32k, BF, TEN, 16, 32768, .chunk_tiles = 256);
/* the default's chunks and CTAs as for the combine pass (four KV heads of one chunk per CTA, the warps streaming the
 * same tokens' rows), the partials merged by the last CTA of each (sequence, four KV heads) instead (mh) */
#define PMH(name, fmt, sc, b, c) PDEF(name, fmt, sc, b, c, .merge_heads = 1)
PMH(mh_bf16_b4_32k, BF, TEN, 4, 32768);
PMH(mh_bf16_b16_16k, BF, TEN, 16, 16384);
PMH(mh_bf16_b16_32k, BF, TEN, 16, 32768);
PMH(mh_bf16_b64_32k, BF, TEN, 64, 32768);
PMH(mh_fp8_b16_32k, E4, TOK, 16, 32768);
PMH(mh_fp8_b64_32k, E4, TOK, 64, 32768);
PMH(quick_mh_bf16, BF, TEN, 4, 4096);
PMH(quick_mh_fp8, E4, TOK, 4, 4096);
/* two tiles per softmax step, each format at b16 x 32K */
#define PPAIR(name, kv, sc) \
  static const attn_params name = {A_DECODE, 32, 8, 128, kv, sc, 16, 32768, 16, 1, 0, 0, 0, 0, 0, 0, 1}
PPAIR(pair_bf16_b16_32k, BF, TEN);
PPAIR(pair_fp8_b16_32k, E4, TOK);
PPAIR(pair_u3_b16_32k, KM_ATTN_U3, TEN);
PPAIR(pair_tq3_b16_32k, KM_ATTN_TQ3, TEN);

/* layouts, head dims, formats, block sizes, q_len, skew */
P(mha_b1_16k, A_DECODE, 32, 32, 128, BF, TEN, 1, 16384, 16, 1, 0, 0, 0, 0);
P(mha_b16_16k, A_DECODE, 32, 32, 128, BF, TEN, 16, 16384, 16, 1, 0, 0, 0, 0);
P(mha_b16_32k, A_DECODE, 32, 32, 128, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(gqa64_b1_32k, A_DECODE, 64, 8, 128, BF, TEN, 1, 32768, 16, 1, 0, 0, 0, 0);
P(gqa64_b16_32k, A_DECODE, 64, 8, 128, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(mqa_b1_32k, A_DECODE, 32, 1, 128, BF, TEN, 1, 32768, 16, 1, 0, 0, 0, 0);
P(mqa_b16_32k, A_DECODE, 32, 1, 128, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(d64_b16_32k, A_DECODE, 32, 8, 64, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(d256_b16_32k, A_DECODE, 16, 8, 256, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(d256_e4k_b16_32k, A_DECODE, 16, 8, 256, E4, TOK, 16, 32768, 16, 1, 0, 0, 0, 0);
/* bf16 with Q's fragments in registers (q_smem KM_ATTN_Q_REGS: 148 bytes of spill), against its default with them in
 * shared memory */
#define PQR(name, fmt, sc, b, c)                                                                                      \
  static const attn_params name = {.op = A_DECODE, .heads = 16, .kv_heads = 8, .head_dim = 256, .kv = fmt,          \
                                   .scale = sc, .batch = b, .ctx = c, .block_size = 16, .q_len = 1,                 \
                                   .q_smem = KM_ATTN_Q_REGS}
PQR(qr_d256_b16_32k, BF, TEN, 16, 32768);
PQR(quick_qr_d256_bf16, BF, TEN, 4, 4096);
P(e4t_b16_32k, A_DECODE, 32, 8, 128, E4, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(e5k_b16_32k, A_DECODE, 32, 8, 128, E5, TOK, 16, 32768, 16, 1, 0, 0, 0, 0);
P(bs32_b16_32k, A_DECODE, 32, 8, 128, BF, TEN, 16, 32768, 32, 1, 0, 0, 0, 0);
P(bs64_b16_32k, A_DECODE, 32, 8, 128, BF, TEN, 16, 32768, 64, 1, 0, 0, 0, 0);
P(bs128_b16_32k, A_DECODE, 32, 8, 128, BF, TEN, 16, 32768, 128, 1, 0, 0, 0, 0);
P(q2_b16_32k, A_DECODE, 32, 8, 128, BF, TEN, 16, 32768, 16, 2, 0, 0, 0, 0);
P(q4_b16_32k, A_DECODE, 32, 8, 128, BF, TEN, 16, 32768, 16, 4, 0, 0, 0, 0);
P(skew_b64_32k, A_DECODE, 32, 8, 128, BF, TEN, 64, 32768, 16, 1, 0, 1, 0, 0);
P(skew_fp8_b64_32k, A_DECODE, 32, 8, 128, E4, TOK, 64, 32768, 16, 1, 0, 1, 0, 0);
/* techniques: sliding window, compacted cache, Quest */
P(win_b1_128k, A_DECODE, 32, 8, 128, BF, TEN, 1, 131072, 16, 1, 4096, 0, 0, 0);
P(win_b16_128k, A_DECODE, 32, 8, 128, BF, TEN, 16, 131072, 16, 1, 4096, 0, 0, 0);
P(evict_b16_2k, A_DECODE, 32, 8, 128, BF, TEN, 16, 2048, 16, 1, 0, 0, 0, 32768);
P(quest_b1_32k, A_QUEST, 32, 8, 128, BF, TEN, 1, 32768, 16, 1, 0, 0, 2048, 0);
P(quest_b16_32k, A_QUEST, 32, 8, 128, BF, TEN, 16, 32768, 16, 1, 0, 0, 2048, 0);
/* the --model's shape */
P(model_bf16, A_DECODE, 0, 0, 0, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(model_fp8, A_DECODE, 0, 0, 0, E4, TOK, 16, 32768, 16, 1, 0, 0, 0, 0);
/* baselines */
P(naive_b1_32k, A_NAIVE, 32, 8, 128, BF, TEN, 1, 32768, 16, 1, 0, 0, 0, 0);
P(naive_b16_32k, A_NAIVE, 32, 8, 128, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
P(naive_b64_4k, A_NAIVE, 32, 8, 128, BF, TEN, 64, 4096, 16, 1, 0, 0, 0, 0);
P(gather_b1_32k, A_GATHER_DECODE, 32, 8, 128, BF, TEN, 1, 32768, 16, 1, 0, 0, 0, 0);
P(gather_b16_32k, A_GATHER_DECODE, 32, 8, 128, BF, TEN, 16, 32768, 16, 1, 0, 0, 0, 0);
/* quick (and --smoke-sized) points */
P(quick_bf16, A_DECODE, 32, 8, 128, BF, TEN, 4, 4096, 16, 1, 0, 0, 0, 0);
P(quick_fp8, A_DECODE, 32, 8, 128, E4, TOK, 4, 4096, 16, 1, 0, 0, 0, 0);
P(quick_u3, A_DECODE, 32, 8, 128, KM_ATTN_U3, TEN, 4, 4096, 16, 1, 0, 0, 0, 0);
P(quick_d256_bf16, A_DECODE, 16, 8, 256, BF, TEN, 4, 4096, 16, 1, 0, 0, 0, 0);
P(quick_d256_fp8, A_DECODE, 16, 8, 256, E4, TOK, 4, 4096, 16, 1, 0, 0, 0, 0);
static const attn_params quick_ring = {A_DECODE, 32, 8, 128, BF, TEN, 4, 4096, 16, 1, 0, 0, 0, 0, KM_ATTN_PIPE_SMEM_RING};
static const attn_params quick_ot_fp8 = {A_DECODE, 32, 8, 128, E4, TOK, 4, 4096, 16, 1, 0, 0, 0, 0, 0, 1, 0, 1, 3};
static const attn_params quick_ot_tq3 = {A_DECODE, 32, 8, 128, KM_ATTN_TQ3, TEN, 4, 4096, 16, 1, 0, 0, 0, 0, 0, 2, 0, 1, 0};
static const attn_params quick_w_u3 = {A_DECODE, 32, 8, 128, KM_ATTN_U3, TEN, 4, 4096, 16, 1, 0, 0, 0, 0, 0, 2, 0, 1, 3, 1};
static const attn_params quick_w7_u3 = {A_DECODE, 32, 8, 128, KM_ATTN_U3, TEN, 4, 4096, 16, 1, 0, 0, 0, 0, 0, 2, 0, 1, 3, 2};

#define T_GQA "gqa"
#define SUM_DEC "one decode step of attention over the paged cache (split-KV, GQA-aware, tensor cores)"
#define SUM_FP8 "the same step over an fp8 e4m3 cache with per-token-head scales, its tiles through the TMA " \
                "pipeline's shared-memory ring (sm_90), dequantized in registers"
#define NAIVE_B1 "baseline/attn/naive/gqa32x8/d128/bf16/b1/ctx32k"
#define NAIVE_B16 "baseline/attn/naive/gqa32x8/d128/bf16/b16/ctx32k"
#define NAIVE_B64 "baseline/attn/naive/gqa32x8/d128/bf16/b64/ctx4k"
/* each format's grid is one series: decode time = c0 + c1 batch + c2 batch x context (fit where it holds) */
#define SWEEP(series, model, ...) (&(const km_sweep){series, __VA_ARGS__, model}) /* ...: {axes}, {coordinates} */
#define GRID_SWEEP(fmt, b, c) \
  SWEEP("attn/decode/gqa32x8/d128/" fmt, "batch + batch*context", {"batch", "context"}, {b, c})
#define GRID_ROWS(b, c, cs)                                                                                   \
  {"attn/decode/gqa32x8/d128/bf16/b" #b "/ctx" #cs, T_GQA, SUM_DEC, run_attn, &bf16_b##b##_##cs, 0, NULL,     \
   GRID_SWEEP("bf16", b, c)},                                                                                 \
      {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b" #b "/ctx" #cs, "kv_quant", SUM_FP8, run_attn,            \
       &fp8_b##b##_##cs, 0, "attn/decode/gqa32x8/d128/bf16/b" #b "/ctx" #cs, GRID_SWEEP("fp8_e4m3_tokhead", b, c)},

static const km_case attn_cases[] = {
    GRID(GRID_ROWS)
    {"attn/decode/mha32x32/d128/bf16/b1/ctx16k", T_GQA, "MHA (32 KV heads): 4x the bytes of GQA 32:8", run_attn,
     &mha_b1_16k, 0, "attn/decode/gqa32x8/d128/bf16/b1/ctx16k"},
    {"attn/decode/mha32x32/d128/bf16/b16/ctx16k", T_GQA, "MHA (32 KV heads): 4x the bytes of GQA 32:8", run_attn,
     &mha_b16_16k, 0, "attn/decode/gqa32x8/d128/bf16/b16/ctx16k"},
    {"attn/decode/mha32x32/d128/bf16/b16/ctx32k", T_GQA, "MHA (32 KV heads): 4x the bytes of GQA 32:8", run_attn,
     &mha_b16_32k, 0, "attn/decode/gqa32x8/d128/bf16/b16/ctx32k"},
    {"attn/decode/gqa64x8/d128/bf16/b1/ctx32k", T_GQA, "GQA 64:8 (Llama-3-70B): 8 query heads per KV head",
     run_attn, &gqa64_b1_32k, 0, NULL},
    {"attn/decode/gqa64x8/d128/bf16/b16/ctx32k", T_GQA, "GQA 64:8 (Llama-3-70B): 8 query heads per KV head",
     run_attn, &gqa64_b16_32k, 0, NULL},
    {"attn/decode/mqa32x1/d128/bf16/b1/ctx32k", T_GQA, "MQA (one KV head for 32 query heads)", run_attn, &mqa_b1_32k,
     0, NULL},
    {"attn/decode/mqa32x1/d128/bf16/b16/ctx32k", T_GQA, "MQA (one KV head for 32 query heads)", run_attn,
     &mqa_b16_32k, 0, NULL},
    {"attn/decode/gqa32x8/d64/bf16/b16/ctx32k", T_GQA, SUM_DEC, run_attn, &d64_b16_32k, 0, NULL},
    {"attn/decode/gqa16x8/d256/bf16/b16/ctx32k", T_GQA, SUM_DEC, run_attn, &d256_b16_32k, 0, NULL},
    {"attn/decode/gqa16x8/d256/fp8_e4m3_tokhead/b16/ctx32k", "kv_quant", "fp8 e4m3 cache with per-token-head scales",
     run_attn, &d256_e4k_b16_32k, 0, "attn/decode/gqa16x8/d256/bf16/b16/ctx32k"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tensor/b16/ctx32k", "kv_quant",
     "fp8 e4m3 cache with one static scale each for K and V", run_attn, &e4t_b16_32k, 0,
     "attn/decode/gqa32x8/d128/bf16/b16/ctx32k"},
    {"attn/decode/gqa32x8/d128/fp8_e5m2_tokhead/b16/ctx32k", "kv_quant",
     "fp8 e5m2 cache with per-token-head scales", run_attn, &e5k_b16_32k, 0, "attn/decode/gqa32x8/d128/bf16/b16/ctx32k"},
#define SUM_U3 "the same step over a uniform 3-bit cache (group 32, fp16 scale and zero), unpacked in registers"
#define U3_ROWS(b, c, cs)                                                                                        \
  {"attn/decode/gqa32x8/d128/int3_g32/b" #b "/ctx" #cs, "kv_quant", SUM_U3, run_attn, &u3_b##b##_##cs,         \
   (b == 16 && c == 32768) ? KM_CASE_REPRESENTATIVE : 0,                                                      \
   "attn/decode/gqa32x8/d128/bf16/b" #b "/ctx" #cs, GRID_SWEEP("int3_g32", b, c)},
    U3_GRID(U3_ROWS)
#define SUM_TQ3 "the same step over a TurboQuant 3-bit cache (sign flip + Hadamard rotation, Lloyd-Max codes, fp16 " \
                "norms): q rotated once per row, P V summed in the rotated domain, the output rotated back once"
#define TQ3_ROWS(b, c, cs)                                                                                       \
  {"attn/decode/gqa32x8/d128/turboquant3/b" #b "/ctx" #cs, "kv_quant", SUM_TQ3, run_attn, &tq3_b##b##_##cs, 0,   \
   "attn/decode/gqa32x8/d128/bf16/b" #b "/ctx" #cs},
    TQ3_GRID(TQ3_ROWS)
/* a row of a step with a suffix, against the same step without it (base: that step's case name) */
#define SUFFIX_ROW(base, suffix, tech, summary, params) {base "/" suffix, tech, summary, run_attn, &params, 0, base}
/* ... of the b x 32K step (GQA 32:8 d128) */
#define CTX32K_ROW(fmt, b, suffix, summary, params, tech) \
  SUFFIX_ROW("attn/decode/gqa32x8/d128/" fmt "/b" #b "/ctx32k", suffix, tech, summary, params)
#define SUM_RING "the same step with K/V tiles through a shared-memory ring (cp.async, 2-5 tiles ahead per warp)"
    CTX32K_ROW("bf16", 16, "ring", SUM_RING, ring_bf16_b16_32k, T_GQA),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "ring", SUM_RING, ring_fp8_b16_32k, "kv_quant"),
#define SUM_PF "the same step with another prefetch depth (tiles in flight per warp, register pipeline)"
#define SUM_PAIR "the same step with two tiles per softmax step (one max and sum reduction per 32 tokens)"
    CTX32K_ROW("bf16", 16, "pair", SUM_PAIR, pair_bf16_b16_32k, T_GQA),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "pair", SUM_PAIR, pair_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("int3_g32", 16, "pair", SUM_PAIR, pair_u3_b16_32k, "kv_quant"),
    CTX32K_ROW("turboquant3", 16, "pair", SUM_PAIR, pair_tq3_b16_32k, "kv_quant"),
    CTX32K_ROW("bf16", 16, "pf2", SUM_PF, pf2_bf16_b16_32k, T_GQA),
    CTX32K_ROW("int3_g32", 16, "pf2", SUM_PF, pf2_u3_b16_32k, "kv_quant"),
#define SUM_VAR "the same step with a prefetch depth N (pfN; otN: with O^T = V^T P^T accumulators), the " \
                "register cap for M CTAs per SM (cM), 3-bit codes from 16-bit windows (w) and fp8 per-token " \
                "scales loaded once per tile (s)"
/* a row of the b x 32K step (GQA 32:8 d128) with a suffix, against the same step without it */
#define VAR_ROW(fmt, b, suffix, params, tech) CTX32K_ROW(fmt, b, suffix, SUM_VAR, params, tech)
    VAR_ROW("bf16", 16, "ot1", ot1_bf16_b16_32k, T_GQA),
    VAR_ROW("bf16", 16, "ot1c3", ot1c3_bf16_b16_32k, T_GQA),
    VAR_ROW("bf16", 1, "ot1c3", ot1c3_bf16_b1_32k, T_GQA),
    VAR_ROW("fp8_e4m3_tokhead", 16, "pf1", pf1_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "pf2", pf2_fp8_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "pf1", pf1_u3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "pf2", pf2_tq3_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "pf1c3", pf1c3_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "ot1", ot1_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "ot2", ot2_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "ot1c3", ot1c3_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "ot2c3", ot2c3_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "ot1c4", ot1c4_fp8_b16_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 1, "ot1", ot1_fp8_b1_32k, "kv_quant"),
    VAR_ROW("fp8_e4m3_tokhead", 16, "ot2s", ot2s_fp8_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "pf1c3", pf1c3_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot1", ot1_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot2c3", ot2c3_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot1c4", ot1c4_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot1w", ot1w_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot2c3w", ot2c3w_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot1c4w", ot1c4w_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 64, "ot2c3w", ot2c3w_u3_b64_32k, "kv_quant"),
    VAR_ROW("int3_g32", 16, "ot2c3w7", ot2c3w7_u3_b16_32k, "kv_quant"),
    VAR_ROW("int3_g32", 64, "ot2c3w7", ot2c3w7_u3_b64_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "pf1", pf1_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot1", ot1_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot2c3", ot2c3_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot1c4", ot1c4_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 64, "ot2c3", ot2c3_tq3_b64_32k, "kv_quant"),
    VAR_ROW("turboquant3", 1, "ot2c3", ot2c3_tq3_b1_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot1s", ot1s_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot2c3s", ot2c3s_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 64, "ot2c3s", ot2c3s_tq3_b64_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot2c3sw", ot2c3sw_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 64, "ot2c3sw", ot2c3sw_tq3_b64_32k, "kv_quant"),
    VAR_ROW("turboquant3", 16, "ot2c3sx", ot2c3sx_tq3_b16_32k, "kv_quant"),
    VAR_ROW("turboquant3", 64, "ot2c3sx", ot2c3sx_tq3_b64_32k, "kv_quant"),
#define SUM_COMB "the same step with one partial per chunk and the separate combine pass (no merge in the kernel)"
#define COMB_ROW(fmt, b, params, tech) CTX32K_ROW(fmt, b, "combine", SUM_COMB, params, tech)
    COMB_ROW("bf16", 1, comb_bf16_b1_32k, T_GQA),
    COMB_ROW("bf16", 4, comb_bf16_b4_32k, T_GQA),
    COMB_ROW("bf16", 16, comb_bf16_b16_32k, T_GQA),
    COMB_ROW("fp8_e4m3_tokhead", 16, comb_fp8_b16_32k, "kv_quant"),
#define SUM_CT "the same step in chunks of N tiles (ctN) instead of the planner's choice (chunks >= 4 tiles, >= 2 " \
               "for a sparse step)"
    SUFFIX_ROW("attn/quest/budget2048/gqa32x8/d128/bf16/b1/ctx32k", "ct1", "sparse_read", SUM_CT, ct1_quest_b1_32k),
    SUFFIX_ROW("attn/quest/budget2048/gqa32x8/d128/bf16/b1/ctx32k", "ct4", "sparse_read", SUM_CT, ct4_quest_b1_32k),
    SUFFIX_ROW("attn/decode/gqa32x8/d128/bf16/b1/ctx4k", "ct1", T_GQA, SUM_CT, ct1_bf16_b1_4k),
    SUFFIX_ROW("attn/decode/gqa32x8/d128/bf16/b1/ctx4k", "ct2", T_GQA, SUM_CT, ct2_bf16_b1_4k),
#define SUM_ST "the same step in the stamped kernel (each warp's SM clock at its chunk's metadata, Q, first tile, " \
               "last tile, partial and end): the label says where the time goes"
/* a bf16 GQA 32:8 d128 row beside the default step of its batch and context */
#define BF16_ROW(b, cs, suffix, summary, params) \
  SUFFIX_ROW("attn/decode/gqa32x8/d128/bf16/b" #b "/ctx" #cs, suffix, T_GQA, summary, params)
    BF16_ROW(1, 4k, "stamps", SUM_ST, st_bf16_b1_4k),
    BF16_ROW(1, 16k, "stamps", SUM_ST, st_bf16_b1_16k),
    BF16_ROW(1, 32k, "stamps", SUM_ST, st_bf16_b1_32k),
    BF16_ROW(16, 32k, "stamps", SUM_ST, st_bf16_b16_32k),
#define SUM_M32 "the same step with the CTA merge's last CTA loading all of up to 32 CTA partials at once (one L2 " \
                "round instead of two at b1 x 32K)"
    BF16_ROW(1, 16k, "m32", SUM_M32, m32_bf16_b1_16k),
    BF16_ROW(1, 32k, "m32", SUM_M32, m32_bf16_b1_32k),
    BF16_ROW(4, 32k, "m32", SUM_M32, m32_bf16_b4_32k),
    SUFFIX_ROW("attn/decode/gqa32x8/d128/bf16/b1/ctx32k/m32", "stamps", T_GQA, SUM_ST, m32st_bf16_b1_32k),
#define SUM_L2 "the same step with N more tiles per warp prefetched into L2 ahead of its loads (l2pN): K and V " \
               "rows, per-token scales and norms, no registers held"
    CTX32K_ROW("bf16", 1, "l2p2", SUM_L2, l2p2_bf16_b1_32k, T_GQA),
    CTX32K_ROW("bf16", 16, "l2p2", SUM_L2, l2p2_bf16_b16_32k, T_GQA),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "l2p2", SUM_L2, l2p2_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "l2p4", SUM_L2, l2p4_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("int3_g32", 16, "l2p4", SUM_L2, l2p4_u3_b16_32k, "kv_quant"),
    CTX32K_ROW("turboquant3", 16, "l2p2", SUM_L2, l2p2_tq3_b16_32k, "kv_quant"),
#define SUM_LZ "the same step rescaling O only where some row's running maximum moved (lz; the same values)"
    CTX32K_ROW("bf16", 16, "lz", SUM_LZ, lz_bf16_b16_32k, T_GQA),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "lz", SUM_LZ, lz_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tensor", 16, "lz", SUM_LZ, lz_e4t_b16_32k, "kv_quant"),
    CTX32K_ROW("int3_g32", 16, "lz", SUM_LZ, lz_u3_b16_32k, "kv_quant"),
    CTX32K_ROW("int3_g32", 64, "lz", SUM_LZ, lz_u3_b64_32k, "kv_quant"),
#define SUM_WS "the same step with the last N tiles of each warp's chunk (stealN) free for any warp of its CTA, " \
               "claimed tile by tile, so that a CTA's faster warps take its slower warps' last tiles"
    BF16_ROW(16, 32k, "steal8", SUM_WS, steal8_bf16_b16_32k),
    BF16_ROW(16, 32k, "steal16", SUM_WS, steal16_bf16_b16_32k),
    BF16_ROW(1, 32k, "steal8", SUM_WS, steal8_bf16_b1_32k),
#define SUM_MP "the same step with each (sequence, KV head)'s last CTA merging the other CTAs' partials as their flags " \
               "appear (mp), instead of the last CTA to count itself in merging all of them after the count"
    BF16_ROW(1, 32k, "mp", SUM_MP, mp_bf16_b1_32k),
    SUFFIX_ROW("attn/decode/gqa32x8/d128/bf16/b1/ctx32k/mp", "stamps", T_GQA, SUM_ST, mpst_bf16_b1_32k),
#define SUM_PDL "the same step as programmatic dependent launches (pdl, pdl4: 1 or 4 tiles): each step's first " \
                "tiles of every chunk requested into L2 before it waits for the step before, whose tail (the CTA " \
                "merge, the slowest warps) it overlaps; Q and every write after the wait"
    BF16_ROW(1, 4k, "pdl", SUM_PDL, pdl_bf16_b1_4k),
    BF16_ROW(1, 32k, "pdl", SUM_PDL, pdl_bf16_b1_32k),
    BF16_ROW(1, 32k, "pdl4", SUM_PDL, pdl4_bf16_b1_32k),
    BF16_ROW(16, 32k, "pdl", SUM_PDL, pdl_bf16_b16_32k),
#define SUM_TMA "the same step with another ring of the TMA pipeline (tmaN: N slots per warp, N - 1 tiles ahead, " \
                "registers capped for 3 CTAs per SM at 4 slots, 2 at 6; the default has 3, 4 CTAs; e5m2's 4)"
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "tma4", SUM_TMA, tma4_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "tma6", SUM_TMA, tma6_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "tma4", SUM_TMA, tma4_fp8_b64_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "tma6", SUM_TMA, tma6_fp8_b64_32k, "kv_quant"),
    CTX32K_ROW("fp8_e5m2_tokhead", 16, "tma3", SUM_TMA, tma3_e5_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tensor", 16, "tma4", SUM_TMA, tma4_fp8t_b16_32k, "kv_quant"),
#define SUM_TMS "the same step with each tile's per-token scales copied into its TMA slot (tma4s: one 4-byte cp.async " \
                "per lane, counted on the slot's mbarrier) instead of one register load per lane, in 4 slots (as tma4)"
    CTX32K_ROW("fp8_e4m3_tokhead", 1, "tma4s", SUM_TMS, tma4s_fp8_b1_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "tma4s", SUM_TMS, tma4s_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "tma4s", SUM_TMS, tma4s_fp8_b64_32k, "kv_quant"),
#define SUM_T32 "the same step with every lane arriving on its TMA slot's mbarrier (arr32: 32 arrivals a phase) " \
                "instead of lane 0 alone (with the copies' byte count), in 4 slots (as tma4)"
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "arr32", SUM_T32, arr32_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "arr32", SUM_T32, arr32_fp8_b64_32k, "kv_quant"),
#define SUM_TNC "the same step with every lane arriving on its TMA slot's mbarrier through cp.async.mbarrier.arrive" \
                ".noinc, no copy of its own (arrnc: 33 arrivals a phase), in the default's 3 slots"
    CTX32K_ROW("fp8_e4m3_tokhead", 1, "arrnc", SUM_TNC, arrnc_fp8_b1_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "arrnc", SUM_TNC, arrnc_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "arrnc", SUM_TNC, arrnc_fp8_b64_32k, "kv_quant"),
#define SUM_PRO "the same step with the TMA maps' L2 promotion at N bytes (prN; pr0: none) instead of 128"
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "pr256", SUM_PRO, pr256_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "pr64", SUM_PRO, pr64_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "pr0", SUM_PRO, pr0_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "pr256", SUM_PRO, pr256_fp8_b64_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "pr0", SUM_PRO, pr0_fp8_b64_32k, "kv_quant"),
#define SUM_REG "the same step through the register pipeline (the fp8 default before the TMA pipeline: O^T depth 1, " \
                "per-token scales loaded once per tile)"
    CTX32K_ROW("fp8_e4m3_tokhead", 1, "ot1s", SUM_REG, ot1s_fp8_b1_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "ot1s", SUM_REG, ot1s_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "ot1s", SUM_REG, ot1s_fp8_b64_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tensor", 16, "ot1", SUM_REG, ot1_e4t_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "ct171", "the same step in chunks of 171 tiles, merged in the kernel",
               ct171_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("bf16", 16, "ct256", "the same step in chunks of 256 tiles, merged in the kernel", ct256_bf16_b16_32k,
               T_GQA),
#define SUM_QR "the same step with Q's fragments in registers instead of shared memory (qreg: 148 bytes of spill)"
    SUFFIX_ROW("attn/decode/gqa16x8/d256/bf16/b16/ctx32k", "qreg", T_GQA, SUM_QR, qr_d256_b16_32k),
#define SUM_MH "the same step in the combine pass's chunks and CTAs (four KV heads of one chunk each), its partials merged " \
               "by the last CTA of each (sequence, four KV heads) instead of a second launch (mh)"
    CTX32K_ROW("bf16", 4, "mh", SUM_MH, mh_bf16_b4_32k, T_GQA),
    BF16_ROW(16, 16k, "mh", SUM_MH, mh_bf16_b16_16k),
    CTX32K_ROW("bf16", 16, "mh", SUM_MH, mh_bf16_b16_32k, T_GQA),
    CTX32K_ROW("bf16", 64, "mh", SUM_MH, mh_bf16_b64_32k, T_GQA),
    CTX32K_ROW("fp8_e4m3_tokhead", 16, "mh", SUM_MH, mh_fp8_b16_32k, "kv_quant"),
    CTX32K_ROW("fp8_e4m3_tokhead", 64, "mh", SUM_MH, mh_fp8_b64_32k, "kv_quant"),
    SUFFIX_ROW("attn/quest/budget2048/gqa32x8/d128/bf16/b1/ctx32k", "combine", "sparse_read", SUM_COMB,
               comb_quest_b1_32k),
    {"attn/decode/gqa32x8/d128/bf16/b16/ctx32k/bs32", "paged", SUM_DEC, run_attn, &bs32_b16_32k, 0, NULL},
    {"attn/decode/gqa32x8/d128/bf16/b16/ctx32k/bs64", "paged", SUM_DEC, run_attn, &bs64_b16_32k, 0, NULL},
    {"attn/decode/gqa32x8/d128/bf16/b16/ctx32k/bs128", "paged", SUM_DEC, run_attn, &bs128_b16_32k, 0, NULL},
    {"attn/decode/gqa32x8/d128/bf16/b16/ctx32k/q2", T_GQA, "speculative decoding: 2 query tokens per sequence",
     run_attn, &q2_b16_32k, 0, NULL},
    {"attn/decode/gqa32x8/d128/bf16/b16/ctx32k/q4", T_GQA, "speculative decoding: 4 query tokens per sequence",
     run_attn, &q4_b16_32k, 0, NULL},
    {"attn/decode/gqa32x8/d128/bf16/b64/ctx32k/skewed", T_GQA,
     "64 sequences, long-tailed lengths (Pareto from 256 tokens), the first at 32K", run_attn, &skew_b64_32k, 0, NULL},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b64/ctx32k/skewed", "kv_quant",
     "64 sequences, long-tailed lengths, fp8 e4m3 per token-head", run_attn, &skew_fp8_b64_32k, 0, NULL},
    {"attn/window/w4096/gqa32x8/d128/bf16/b1/ctx128k", "sliding_window",
     "sliding window of 4096 tokens at context 128K: only the last 4096 are read", run_attn, &win_b1_128k, 0,
     "attn/decode/gqa32x8/d128/bf16/b1/ctx4k"},
    {"attn/window/w4096/gqa32x8/d128/bf16/b16/ctx128k", "sliding_window",
     "sliding window of 4096 tokens at context 128K: only the last 4096 are read", run_attn, &win_b16_128k,
     KM_CASE_REPRESENTATIVE, "attn/decode/gqa32x8/d128/bf16/b16/ctx4k"},
    {"attn/evicted/kept2048_of_32k/gqa32x8/d128/bf16/b16", "eviction",
     "a cache compacted by eviction to 2048 of 32K tokens is the dense step at the kept length", run_attn,
     &evict_b16_2k, KM_CASE_REPRESENTATIVE, "attn/decode/gqa32x8/d128/bf16/b16/ctx32k"},
    {"attn/quest/budget2048/gqa32x8/d128/bf16/b1/ctx32k", "sparse_read",
     "Quest step: page scores, top-k pages per KV head, attention over the 2048 selected tokens", run_attn,
     &quest_b1_32k, 0, "attn/decode/gqa32x8/d128/bf16/b1/ctx32k"},
    {"attn/quest/budget2048/gqa32x8/d128/bf16/b16/ctx32k", "sparse_read",
     "Quest step: page scores, top-k pages per KV head, attention over the 2048 selected tokens", run_attn,
     &quest_b16_32k, KM_CASE_REPRESENTATIVE, "attn/decode/gqa32x8/d128/bf16/b16/ctx32k"},
    {"attn/decode/model/bf16/b16/ctx32k", T_GQA, "the --model's heads and head_dim, bf16, batch 16 x 32K", run_attn,
     &model_bf16, KM_CASE_REPRESENTATIVE, NULL},
    {"attn/decode/model/fp8_e4m3_tokhead/b16/ctx32k", "kv_quant",
     "the --model's heads and head_dim, fp8 e4m3 per token-head, batch 16 x 32K", run_attn, &model_fp8,
     KM_CASE_REPRESENTATIVE, "attn/decode/model/bf16/b16/ctx32k"},
    {"attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick", T_GQA, SUM_DEC, run_attn, &quick_bf16, KM_CASE_QUICK, NULL},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick", "kv_quant", SUM_FP8, run_attn, &quick_fp8,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/int3_g32/b4/ctx4k/quick", "kv_quant", SUM_U3, run_attn, &quick_u3, KM_CASE_QUICK,
     "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/quick", "kv_quant", SUM_TQ3, run_attn, &quick_tq3, KM_CASE_QUICK,
     "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa16x8/d256/bf16/b4/ctx4k/quick", T_GQA, SUM_DEC, run_attn, &quick_d256_bf16, KM_CASE_QUICK, NULL},
    {"attn/decode/gqa16x8/d256/fp8_e4m3_tokhead/b4/ctx4k/quick", "kv_quant", SUM_FP8, run_attn, &quick_d256_fp8,
     KM_CASE_QUICK, "attn/decode/gqa16x8/d256/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa16x8/d256/bf16/b4/ctx4k/qreg/quick", T_GQA, SUM_QR, run_attn, &quick_qr_d256_bf16, KM_CASE_QUICK,
     "attn/decode/gqa16x8/d256/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/bf16/b4/ctx4k/ring/quick", T_GQA, SUM_RING, run_attn, &quick_ring, KM_CASE_QUICK,
     "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/ot1c3/quick", "kv_quant", SUM_VAR, run_attn,
     &quick_ot_fp8, KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/ot2/quick", "kv_quant", SUM_VAR, run_attn, &quick_ot_tq3,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/int3_g32/b4/ctx4k/ot2c3w/quick", "kv_quant", SUM_VAR, run_attn, &quick_w_u3,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/int3_g32/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/int3_g32/b4/ctx4k/ot2c3w7/quick", "kv_quant", SUM_VAR, run_attn, &quick_w7_u3,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/int3_g32/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/ot2c3sw/quick", "kv_quant", SUM_VAR, run_attn, &quick_sw_tq3,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/ot2c3sx/quick", "kv_quant", SUM_VAR, run_attn, &quick_sx_tq3,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/turboquant3/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/l2p4/quick", "kv_quant", SUM_L2, run_attn, &quick_l2_fp8,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/lz/quick", "kv_quant", SUM_LZ, run_attn, &quick_lz_fp8,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/tma4/quick", "kv_quant", SUM_TMA, run_attn,
     &quick_tma4_fp8, KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/tma4s/quick", "kv_quant", SUM_TMS, run_attn,
     &quick_tma4s_fp8, KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/arr32/quick", "kv_quant", SUM_T32, run_attn,
     &quick_arr32_fp8, KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/arrnc/quick", "kv_quant", SUM_TNC, run_attn,
     &quick_arrnc_fp8, KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/bf16/b4/ctx4k/mh/quick", T_GQA, SUM_MH, run_attn, &quick_mh_bf16, KM_CASE_QUICK,
     "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/bf16/b4/ctx4k/steal16/quick", T_GQA, SUM_WS, run_attn, &quick_steal16_bf16,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/bf16/b4/ctx4k/mp/quick", T_GQA, SUM_MP, run_attn, &quick_mp_bf16, KM_CASE_QUICK,
     "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/bf16/b4/ctx4k/pdl4/quick", T_GQA, SUM_PDL, run_attn, &quick_pdl_bf16, KM_CASE_QUICK,
     "attn/decode/gqa32x8/d128/bf16/b4/ctx4k/quick"},
    {"attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/mh/quick", "kv_quant", SUM_MH, run_attn, &quick_mh_fp8,
     KM_CASE_QUICK, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b4/ctx4k/quick"},
    {NAIVE_B1, T_GQA, "one CTA per (sequence, query head), no split: K/V re-read per query head", run_attn,
     &naive_b1_32k, KM_CASE_BASELINE, NULL},
    {NAIVE_B16, T_GQA, "one CTA per (sequence, query head), no split: K/V re-read per query head", run_attn,
     &naive_b16_32k, KM_CASE_BASELINE, NULL},
    {NAIVE_B64, T_GQA, "one CTA per (sequence, query head), no split: K/V re-read per query head", run_attn,
     &naive_b64_4k, KM_CASE_BASELINE | KM_CASE_QUICK, NULL},
    {"baseline/attn/gather_then_decode/gqa32x8/d128/bf16/b1/ctx32k", T_GQA,
     "gather K and V to contiguous memory (paged family), then the decode kernel over it", run_attn, &gather_b1_32k,
     KM_CASE_BASELINE, NULL},
    {"baseline/attn/gather_then_decode/gqa32x8/d128/bf16/b16/ctx32k", T_GQA,
     "gather K and V to contiguous memory (paged family), then the decode kernel over it", run_attn, &gather_b16_32k,
     KM_CASE_BASELINE, NULL},
};

/* What the techniques cost in decode-step time, from this family's rows (the technique table). */
#define GQA_B16_32K "attn/decode/gqa32x8/d128/bf16/b16/ctx32k"
static const km_derived attn_cases_derived[] = {
    {"gqa", "MHA 32:32 step / GQA 32:8 step, b16 x 32K (x; the byte table's ratio is 4)", KM_DERIVED_RATIO,
     "attn/decode/mha32x32/d128/bf16/b16/ctx32k", GQA_B16_32K, NULL, {NULL}, 0, 0, 0},
    {"kv_quant", "fp8 e4m3 per-token-head step / bf16 step, the --model at b16 x 32K (x)", KM_DERIVED_RATIO,
     "attn/decode/model/fp8_e4m3_tokhead/b16/ctx32k", "attn/decode/model/bf16/b16/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"sliding_window", "window 4,096 at context 128K / dense step at 4K, b16 (x)", KM_DERIVED_RATIO,
     "attn/window/w4096/gqa32x8/d128/bf16/b16/ctx128k", "attn/decode/gqa32x8/d128/bf16/b16/ctx4k", NULL, {NULL}, 0, 0,
     0},
    {"sparse_read", "dense step / Quest step (budget 2,048), b1 x 32K (speed-up x)", KM_DERIVED_RATIO,
     "attn/decode/gqa32x8/d128/bf16/b1/ctx32k", "attn/quest/budget2048/gqa32x8/d128/bf16/b1/ctx32k", NULL, {NULL}, 0,
     0, 0},
    {"kv_quant", "bf16 step / uniform 3-bit step, b16 x 32K (speed-up x; the byte ratio is 4)", KM_DERIVED_RATIO,
     GQA_B16_32K, "attn/decode/gqa32x8/d128/int3_g32/b16/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"kv_quant", "bf16 step / TurboQuant 3-bit step, b16 x 32K (speed-up x; the byte ratio is 5.0 with the norms)",
     KM_DERIVED_RATIO, GQA_B16_32K, "attn/decode/gqa32x8/d128/turboquant3/b16/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"kv_quant", "fp8 e4m3 per-token-head step / uniform 3-bit step, b64 x 32K (speed-up x; the byte ratio is 2)",
     KM_DERIVED_RATIO, "attn/decode/gqa32x8/d128/fp8_e4m3_tokhead/b64/ctx32k",
     "attn/decode/gqa32x8/d128/int3_g32/b64/ctx32k", NULL, {NULL}, 0, 0, 0},
    {"eviction", "dense step at 32K / step over the 2,048 kept tokens, b16 (speed-up x)", KM_DERIVED_RATIO, GQA_B16_32K,
     "attn/evicted/kept2048_of_32k/gqa32x8/d128/bf16/b16", NULL, {NULL}, 0, 0, 0},
};

const km_case_table km_attn_table = {attn_cases, sizeof attn_cases / sizeof attn_cases[0], NULL, attn_cases_derived,
                                   sizeof attn_cases_derived / sizeof attn_cases_derived[0]};
