/* attn/mla/: one MLA decode step (DeepSeek-V2/V3 absorbed form) over the paged latent cache: one 576-wide
 * latent per token shared by 16..128 query heads, block size 64, bf16 and fp8 e4m3 latents. At 128 heads the
 * step is compute-bound (~240 FLOP per cache byte), so beside GB/s each row reports TFLOP/s and its share of
 * a tensor-core ceiling measured in the same case (the prefix family's cuBLASLt 8192^3 bf16 GEMM). Every step
 * is checked before it is timed: its whole output against the simple kernel of baselines/attn_mla_naive.cu
 * on the same buffers (every rotated copy of the cache), and a slice (first and last sequence) of both
 * against the fp64 CPU reference of micro/attn_mla_ref.c; fp8 rows also report their error against the
 * same step on the bf16 values before quantization. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_mla.h"
#include "attn_mla_naive.h"
#include "attn_mla_ref.h"
#include "bench.h"
#include "check.h"
#include "fill.h"
#include "micro_tables.h"
#include "paged_ref.h"
#include "prefix_cases.h"
#include "quant_fp8.h"
#include "sparse_ref.h"

typedef enum mla_op {
  MLA_DECODE = 0, /* kernels/attn_mla.cu */
  MLA_NAIVE,      /* baseline: one CTA per (sequence, head), CUDA cores */
} mla_op;

typedef struct mla_params {
  mla_op op;
  int heads;
  km_mla_kv kv;
  int batch, ctx;
  km_mla_kernel kernel; /* AUTO: wgmma where the device and build allow it */
  int stages;           /* 0: the planner's latent stages; else fewer (a comparison row) */
  int merge;            /* 1: the split sequences' partials merged inside the kernel instead of by the combine pass */
} mla_params;

enum {
  MLA_MAX_COPIES = 64,
  MLA_BLOCK = 64,               /* block size of the cache (FlashMLA's and the issue's) */
  SLICE_TOKEN_HEADS = 1 << 19,  /* CPU slice: context tokens x heads checked per sequence (~1 GFLOP in double) */
  SLICE_MIN_HEADS = 16,
  SMOKE_CTX = 2048,
  SMOKE_BATCH = 4,
  SMOKE_KEEP_TOKENS = 32768,    /* --smoke keeps a case of at most this many cached tokens (36 MiB of bf16 latents)
                                 * at its own size, so that its plan, and so the kernel path under test, is its own */
  QUANT_GROUP = 64,             /* the fp8 quantizer takes rows of 64: a latent row is 9 of them, one scale */
};
/* DeepSeek-V3's softmax scale: 1 / sqrt(qk_nope_head_dim 128 + qk_rope_head_dim 64). */
static const float MLA_SM_SCALE = 0.07216878364870323f;
/* Latent values N(0, 1); the static fp8 tensor scale maps |x| = 8 (beyond any drawn value but ~1e-15 of
 * them) to e4m3's largest finite value. */
static const float LATENT_AMAX = 8.0f;
/* A row of the output matches when every element is within this share of the row's largest |value|
 * (P is rounded to bf16 before P.V; outputs are bf16). */
static const double ROW_TOLERANCE = 1.0 / 64.0;

typedef struct mla_run {
  const mla_params *p;
  km_mla_shape sh;
  km_mla_config cfg;
  int batch, mbps;
  int32_t *h_ctx, *h_table, *d_ctx, *d_table;
  int64_t num_blocks;
  uint16_t *q, *out, *out_check;
  /* the cache, `copies` times over when one is under 4x L2 (launch i reads copy i % copies) */
  int copies;
  void *cache[MLA_MAX_COPIES];
  uint16_t *c16; /* fp8: copy 0's bf16 values before quantization */
  float *scale;  /* fp8: the tensor scale (device), shared by every copy */
  km_mla_plan plan;
  km_mla_args args;
} mla_run;

static size_t elem_bytes(const mla_run *r) { return r->sh.kv == KM_MLA_BF16 ? 2 : 1; }
static size_t q_elems(const mla_run *r) { return (size_t)r->batch * r->sh.num_heads * KM_MLA_DIM; }
static size_t out_elems(const mla_run *r) { return (size_t)r->batch * r->sh.num_heads * KM_MLA_VDIM; }

static cudaError_t enqueue(void *arg, int rep, cudaStream_t s) {
  mla_run *r = arg;
  r->args.cache = r->cache[r->copies > 1 ? rep % r->copies : 0];
  if (r->p->op == MLA_NAIVE) return km_mla_naive_decode(&r->sh, r->batch, r->mbps, &r->args, s);
  return km_mla_decode(&r->plan, &r->args, s);
}

/* ---------------------------------------------------------------- setup */

/* Each sequence's blocks are a random draw (without replacement) from one pool. */
static void tables(km_bench *b, mla_run *r) {
  int64_t total = 0;
  if (km_paged_tables_random(r->h_table, r->batch, r->mbps, r->h_ctx, MLA_BLOCK, km_bench_seed(b), &total) != 0) {
    km_bench_skip(b, "no host memory for the block tables of %d sequences", r->batch);
    return;
  }
  r->num_blocks = total;
}

/* Fresh N(0, 1) latents for every copy; fp8 copies quantized with the static tensor scale by the quant
 * family's kernel from one scratch bf16 buffer (copy 0's originals are kept for the accuracy figures). */
static void fill_cache(km_bench *b, mla_run *r) {
  cudaStream_t s = km_bench_stream(b);
  const size_t rows = (size_t)r->num_blocks * MLA_BLOCK, n = rows * KM_MLA_DIM;
  int copies = km_bench_rotation(b, n * elem_bytes(r));
  r->copies = copies > MLA_MAX_COPIES ? MLA_MAX_COPIES : copies;
  if (r->sh.kv == KM_MLA_FP8_E4M3) {
    r->c16 = km_bench_device_alloc(b, n * 2);
    r->scale = km_bench_device_alloc(b, sizeof(float));
    KM_RETURN_IF_STOPPED(b);
    const float sc = LATENT_AMAX / KM_FP8_E4M3_MAX;
    KM_CUDA(b, cudaMemcpyAsync(r->scale, &sc, sizeof sc, cudaMemcpyHostToDevice, s));
  }
  for (int j = r->copies - 1; j >= 0; --j) { /* copy 0 last: the scratch keeps its originals */
    r->cache[j] = km_bench_device_alloc(b, n * elem_bytes(r));
    KM_RETURN_IF_STOPPED(b);
    uint16_t *src = r->sh.kv == KM_MLA_BF16 ? r->cache[j] : r->c16; /* refilled in stream order */
    KM_CUDA(b, km_fill_normal_bf16(src, n, km_bench_seed(b), 1.0f, KM_MLA_DIM, 0, 0, 1.0f, s));
    if (r->sh.kv == KM_MLA_FP8_E4M3)
      KM_CUDA(b, km_quant_fp8_quantize(src, r->cache[j], r->scale, rows, KM_MLA_DIM / QUANT_GROUP, QUANT_GROUP,
                                       KM_FP8_E4M3, KM_QUANT_PER_TENSOR, s));
  }
  KM_CUDA(b, cudaStreamSynchronize(s));
}

static void setup(km_bench *b, const mla_params *p, mla_run *r) {
  cudaStream_t s = km_bench_stream(b);
  r->p = p;
  r->sh.num_heads = p->heads;
  r->sh.block_size = MLA_BLOCK;
  r->sh.kv = p->kv;
  r->batch = p->batch;
  const char *why = km_mla_shape_error(&r->sh);
  if (why) {
    km_bench_skip(b, "%s", why);
    return;
  }
  cudaError_t e = km_mla_pick_config_kernel(&r->sh, km_bench_device_id(b), p->kernel, &r->cfg);
  if (e == cudaErrorNotSupported) {
    km_bench_skip(b, "the wgmma kernel needs an SM 9.0 device and sm_90a code in this build (90 in "
                     "CMAKE_CUDA_ARCHITECTURES)");
    return;
  }
  if (e == cudaErrorInvalidValue) {
    km_bench_skip(b, "no MLA CTA layout fits this device's shared memory per block");
    return;
  }
  KM_CUDA(b, e);
  if (p->stages) {
    if (p->stages > r->cfg.stages) {
      km_bench_skip(b, "this device's shared memory holds %d latent stage%s, not %d", r->cfg.stages,
                    r->cfg.stages > 1 ? "s" : "", p->stages);
      return;
    }
    r->cfg.stages = p->stages;
    r->cfg.smem_bytes = km_mla_smem_bytes(r->sh.kv, r->cfg.rows, r->cfg.stages);
    KM_CUDA(b, km_mla_config_prepare(&r->cfg, r->sh.kv));
  }
  int ctx = p->ctx;
  if (km_bench_smoke(b) && (long long)r->batch * ctx > SMOKE_KEEP_TOKENS) {
    ctx = ctx < SMOKE_CTX ? ctx : SMOKE_CTX;
    r->batch = r->batch < SMOKE_BATCH ? r->batch : SMOKE_BATCH;
  }
  r->mbps = (ctx + MLA_BLOCK - 1) / MLA_BLOCK;
  r->h_ctx = km_bench_host_alloc(b, (size_t)r->batch * sizeof(int32_t));
  r->h_table = km_bench_host_alloc(b, (size_t)r->batch * r->mbps * sizeof(int32_t));
  KM_RETURN_IF_STOPPED(b);
  for (int i = 0; i < r->batch; ++i) r->h_ctx[i] = ctx;
  tables(b, r);
  KM_RETURN_IF_STOPPED(b);
  r->d_ctx = km_bench_device_alloc(b, (size_t)r->batch * sizeof(int32_t));
  r->d_table = km_bench_device_alloc(b, (size_t)r->batch * r->mbps * sizeof(int32_t));
  r->q = km_bench_device_alloc(b, q_elems(r) * 2);
  r->out = km_bench_device_alloc(b, out_elems(r) * 2);
  r->out_check = km_bench_device_alloc(b, out_elems(r) * 2);
  KM_RETURN_IF_STOPPED(b);
  KM_CUDA(b, cudaMemcpyAsync(r->d_ctx, r->h_ctx, (size_t)r->batch * sizeof(int32_t), cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaMemcpyAsync(r->d_table, r->h_table, (size_t)r->batch * r->mbps * sizeof(int32_t),
                             cudaMemcpyHostToDevice, s));
  KM_CUDA(b, km_fill_normal_bf16(r->q, q_elems(r), km_bench_seed(b), 1.0f, KM_MLA_DIM, 0, 0, 1.0f, s));
  fill_cache(b, r);
  KM_RETURN_IF_STOPPED(b);
  char err[256];
  if (km_mla_plan_make(&r->plan, &r->sh, &r->cfg, r->batch, r->h_ctx, r->mbps, 0, err, sizeof err) != 0) {
    km_bench_skip(b, "%s", err);
    return;
  }
  if (p->merge && !km_mla_plan_can_merge(&r->plan)) {
    km_bench_skip(b, "the plan cannot merge in the kernel here (%s)",
                  r->plan.split ? "more chunks a sequence than the merge takes, or the wgmma kernel" : "no split");
    km_mla_plan_free(&r->plan);
    return;
  }
  r->plan.merge = p->merge;
  KM_CUDA(b, km_mla_plan_upload(&r->plan, s)); /* freed by run_mla */
  memset(&r->args, 0, sizeof r->args);
  r->args.q = r->q;
  r->args.cache = r->cache[0];
  r->args.scale = r->scale;
  r->args.block_table = r->d_table;
  r->args.context_lens = r->d_ctx;
  r->args.sm_scale = MLA_SM_SCALE;
  r->args.out = r->out;
  const size_t ws = km_mla_workspace_bytes(&r->plan);
  if (ws) {
    r->args.workspace = km_bench_device_alloc(b, ws);
    KM_RETURN_IF_STOPPED(b);
  }
}

/* ---------------------------------------------------------------- verification */

/* Rows of `d` outputs: each element within ROW_TOLERANCE x the row's largest |ref|; NaN (the poison) never
 * passes. row_ids: the output row of each reference row (NULL: the same). Returns the bad elements. */
static size_t compare_rows(km_bench *b, const char *what, const uint16_t *got, const float *ref, size_t rows, int d,
                           const size_t *row_ids) {
  size_t bad = 0;
  for (size_t i = 0; i < rows; ++i) {
    const float *rr = ref + i * d;
    const size_t id = row_ids ? row_ids[i] : i;
    const uint16_t *gr = got + id * d;
    double mx = 0;
    for (int j = 0; j < d; ++j) mx = fmax(mx, fabs(rr[j]));
    for (int j = 0; j < d; ++j) {
      const double g = km_bf16_to_float(gr[j]), e = fabs(g - rr[j]);
      if (!(e <= ROW_TOLERANCE * mx + 1e-6)) {
        if (bad < 4) km_bench_mismatch(b, "%s: row %zu dim %d: got %.6g, want %.6g", what, id, j, g, rr[j]);
        ++bad;
      }
    }
  }
  return bad;
}

/* The sequence's latent rows (`rb` bytes per token) in token order, one copy per block. */
static int stage_rows(km_bench *b, const mla_run *r, const void *pool, size_t rb, int seq, unsigned char *dst) {
  cudaStream_t s = km_bench_stream(b);
  const size_t bb = rb * MLA_BLOCK;
  const int n = (r->h_ctx[seq] + MLA_BLOCK - 1) / MLA_BLOCK;
  for (int j = 0; j < n; ++j)
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(dst + (size_t)j * bb,
                                       (const unsigned char *)pool + (size_t)r->h_table[(size_t)seq * r->mbps + j] * bb,
                                       bb, cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  return 0;
}

typedef struct slice_acc {
  double err2, ref2;
} slice_acc;

/* The heads checked on the CPU: all when the slice allows, else an even spread that varies the row inside
 * each 8-row group (head k x stride + k % stride), so every lane position of the fragments is covered. */
static int slice_heads(const mla_run *r, int ctx, int *list) {
  const int heads = r->sh.num_heads;
  int nh = SLICE_TOKEN_HEADS / (ctx > 0 ? ctx : 1);
  nh = nh < SLICE_MIN_HEADS ? SLICE_MIN_HEADS : nh;
  if (nh >= heads) {
    for (int h = 0; h < heads; ++h) list[h] = h;
    return heads;
  }
  const int stride = heads / nh;
  for (int k = 0; k < nh; ++k) list[k] = k * stride + k % stride;
  return nh;
}

/* CPU reference for one sequence (copy 0), compared with both device outputs; fp8: the kernel's output
 * against the step on the bf16 values before quantization, accumulated into acc. */
static size_t check_sequence(km_bench *b, const mla_run *r, int seq, const uint16_t *got, const uint16_t *naive,
                             slice_acc *acc) {
  cudaStream_t s = km_bench_stream(b);
  const int ctx = r->h_ctx[seq], heads = r->sh.num_heads, D = KM_MLA_DIM, DV = KM_MLA_VDIM;
  const size_t cap = (size_t)r->mbps * MLA_BLOCK * D;
  unsigned char *rows = km_bench_pinned_alloc(b, cap * 2); /* bf16-sized: fp8 codes, then the originals */
  uint16_t *q = km_bench_host_alloc(b, (size_t)heads * D * 2);
  float *ref = km_bench_host_alloc(b, (size_t)heads * DV * sizeof(float));
  float *packed = km_bench_host_alloc(b, (size_t)heads * DV * sizeof(float));
  int *list = km_bench_host_alloc(b, (size_t)heads * sizeof(int));
  size_t *ids = km_bench_host_alloc(b, (size_t)heads * sizeof(size_t));
  if (!rows || !q || !ref || !packed || !list || !ids) return 1;
  if (stage_rows(b, r, r->cache[0], (size_t)D * elem_bytes(r), seq, rows)) return 1;
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(q, r->q + (size_t)seq * heads * D, (size_t)heads * D * 2, cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  const int fp8 = r->sh.kv == KM_MLA_FP8_E4M3;
  const km_mla_ref_shape rs = {heads, fp8, LATENT_AMAX / KM_FP8_E4M3_MAX, MLA_SM_SCALE};
  const int nl = slice_heads(r, ctx, list);
  km_mla_ref_step(&rs, ctx, q, rows, list, nl, ref);
  for (int k = 0; k < nl; ++k) {
    memcpy(packed + (size_t)k * DV, ref + (size_t)list[k] * DV, (size_t)DV * sizeof(float));
    ids[k] = (size_t)seq * heads + list[k];
  }
  size_t bad = compare_rows(b, "kernel vs CPU", got, packed, (size_t)nl, DV, ids) +
               compare_rows(b, "simple kernel vs CPU", naive, packed, (size_t)nl, DV, ids);
  if (fp8 && acc) {
    if (stage_rows(b, r, r->c16, (size_t)D * 2, seq, rows)) return 1;
    const km_mla_ref_shape r16 = {heads, 0, 1.0f, MLA_SM_SCALE};
    km_mla_ref_step(&r16, ctx, q, rows, list, nl, ref);
    for (int k = 0; k < nl; ++k)
      for (int j = 0; j < DV; ++j) {
        const double g = km_bf16_to_float(got[ids[k] * DV + j]), w = ref[(size_t)list[k] * DV + j];
        acc->err2 += (g - w) * (g - w);
        acc->ref2 += w * w;
      }
  }
  return bad;
}

/* One copy of the cache: the timed step with its output poisoned (0xFFFF is a bf16 NaN), and the other
 * kernel on the same cache, both copied to the host. */
static int run_both(km_bench *b, mla_run *r, int copy, uint16_t *got, uint16_t *other) {
  cudaStream_t s = km_bench_stream(b);
  const size_t n = out_elems(r);
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->out, 0xFF, n * 2, s));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->out_check, 0xFF, n * 2, s));
  KM_CUDA_OR_FAIL(b, enqueue(r, copy, s));
  KM_CUDA_OR_FAIL(b, cudaGetLastError());
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(got, r->out, n * 2, cudaMemcpyDeviceToHost, s));
  km_mla_args a = r->args;
  a.out = r->out_check;
  if (r->p->op == MLA_NAIVE)
    KM_CUDA_OR_FAIL(b, km_mla_decode(&r->plan, &a, s));
  else
    KM_CUDA_OR_FAIL(b, km_mla_naive_decode(&r->sh, r->batch, r->mbps, &a, s));
  KM_CUDA_OR_FAIL(b, cudaGetLastError());
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(other, r->out_check, n * 2, cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  return 0;
}

/* Every copy's whole output against the other kernel; copy 0's first and last sequence on the CPU. */
static void verify(km_bench *b, mla_run *r) {
  const size_t n = out_elems(r), d = KM_MLA_VDIM;
  uint16_t *got = km_bench_host_alloc(b, n * 2), *other = km_bench_host_alloc(b, n * 2);
  float *ref = km_bench_host_alloc(b, n * sizeof(float));
  if (!got || !other || !ref) return;
  const int naive_timed = r->p->op == MLA_NAIVE;
  /* got: the timed kernel's output; naive: the simple kernel's, whichever is timed */
  const uint16_t *fast = naive_timed ? other : got, *simple = naive_timed ? got : other;
  size_t bad = 0;
  for (int copy = r->copies - 1; copy >= 0; --copy) { /* copy 0 last: its outputs stay for the CPU slice */
    if (run_both(b, r, copy, got, other) != 0) return;
    for (size_t i = 0; i < n; ++i) ref[i] = km_bf16_to_float(simple[i]);
    bad += compare_rows(b, "decode kernel vs simple kernel", fast, ref, n / d, (int)d, NULL);
  }
  r->args.cache = r->cache[0];
  slice_acc acc = {0, 0};
  bad += check_sequence(b, r, 0, fast, simple, &acc);
  if (r->batch > 1) bad += check_sequence(b, r, r->batch - 1, fast, simple, &acc);
  KM_RETURN_IF_STOPPED(b);
  char tol[240];
  snprintf(tol, sizeof tol,
           "each output within 1/64 of its row's max |value| of the simple kernel (all %zu rows of each of %d cache "
           "copies) and of the CPU fp64 reference (first and last sequence)",
           n / d, r->copies);
  km_bench_verified(b, bad, n * r->copies, tol);
  if (r->sh.kv == KM_MLA_FP8_E4M3 && acc.ref2 > 0) km_bench_counter(b, "rel_err_vs_bf16", sqrt(acc.err2 / acc.ref2));
}

/* ---------------------------------------------------------------- the case */

/* Each context token's latent row once, the queries, the block table entries of the tiles, and the
 * partials (written by the chunks, read by the combine pass); the output written once. */
static km_work work_of(const mla_run *r) {
  km_work w;
  memset(&w, 0, sizeof w);
  const double part = km_mla_partial_bytes(&r->plan);
  double ctx_tokens = 0, tiles = 0;
  for (int i = 0; i < r->batch; ++i) {
    ctx_tokens += r->h_ctx[i];
    tiles += (r->h_ctx[i] + KM_MLA_TILE - 1) / KM_MLA_TILE;
  }
  w.bytes_read = km_mla_cache_bytes_read(&r->plan, r->h_ctx) + (double)q_elems(r) * 2 + part + tiles * 4 +
                 (r->sh.kv == KM_MLA_FP8_E4M3 ? 4 : 0);
  w.bytes_written = (double)out_elems(r) * 2 + part;
  w.tokens = ctx_tokens; /* ns per context token of one layer's step */
  w.layers = 1;
  return w;
}

/* The kernel a configuration runs, for the row's label. */
static const char *kernel_text(const km_mla_config *cfg) {
  static const char *const wgmma[] = {
      [KM_MLA_WG_SPLIT_S] = "wgmma (sm_90a), S split over both warpgroups",
      [KM_MLA_WG_ONE_S] = "wgmma (sm_90a), S by one warpgroup",
      [KM_MLA_WG_ONE_S_N256] = "wgmma (sm_90a), S by one warpgroup, P V n256",
      [KM_MLA_WG_SPLIT_K] = "wgmma (sm_90a), S split over the dims, P V n256",
      [KM_MLA_WG_SEESAW] = "wgmma (sm_90a), two tiles per step, the warpgroups alternating",
      [KM_MLA_WG_L2_AHEAD1] = "wgmma (sm_90a), S by one warpgroup, P V n256, the next tile but one requested into L2",
      [KM_MLA_WG_L2_AHEAD2] = "wgmma (sm_90a), S by one warpgroup, P V n256, tiles 2 past the copies requested into L2",
      [KM_MLA_WG_LEAN_LOAD] = "wgmma (sm_90a), S by one warpgroup, P V n256, copies at fixed offsets, table read ahead",
      [KM_MLA_WG_LEAN_L2] = "wgmma (sm_90a), S by one warpgroup, P V n256, copies at fixed offsets, table read ahead, "
                            "the next tile but one requested into L2",
      [KM_MLA_WG_LEAN_DESC] = "wgmma (sm_90a), S by one warpgroup, P V n256, copies at fixed offsets, table read ahead, "
                              "descriptors by one add",
      [KM_MLA_WG_SEESAW_LEAN] = "wgmma (sm_90a), two tiles per step, the warpgroups alternating, copies at fixed "
                                "offsets, table read a pair ahead, descriptors by one add",
      [KM_MLA_WG_QREG] = "wgmma (sm_90a), three warpgroups: Q in the scorer's registers, three tile stages",
  };
  if (cfg->wgmma > 0 && cfg->wgmma < (int)(sizeof wgmma / sizeof wgmma[0]) && wgmma[cfg->wgmma])
    return wgmma[cfg->wgmma];
  return km_mla_q_in_registers(cfg->rows) ? "mma.sync, Q in registers" : "mma.sync";
}

static void run_step(km_bench *b, const mla_params *p, mla_run *r) {
  setup(b, p, r);
  KM_RETURN_IF_STOPPED(b);
  if (km_bench_verify_enabled(b)) verify(b, r);
  KM_RETURN_IF_STOPPED(b);
  const km_work w = work_of(r);
  const double sec = km_bench_measure(b, enqueue, r, &w);
  if (!(sec > 0)) return;
  const double tflops = km_mla_flops(&r->sh, r->batch, r->h_ctx) / sec / 1e12;
  km_bench_counter(b, "tflops", tflops);
  km_bench_counter(b, "batch_seqs", r->batch);
  km_bench_counter(b, "context_tokens", w.tokens);
  km_bench_counter(b, "chunks", r->plan.num_chunks);
  km_bench_counter(b, "merged_in_kernel", r->plan.merge);
  km_bench_counter(b, "heads_per_cta", r->cfg.rows);
  km_bench_counter(b, "latent_stages", r->cfg.stages);
  km_bench_counter(b, "wgmma_variant", r->cfg.wgmma);
  km_bench_counter(b, "cache_copies", r->copies);
  char peak_text[160] = "tensor ceiling not timed under --quick / --smoke";
  if (!km_bench_quick(b) && !km_bench_smoke(b)) {
    /* the ceiling: cuBLASLt's bf16 GEMM, verified and timed in the first full-size MLA row of the run (its
     * stage gemm_ceiling) and reused by the others: ~1 s per row otherwise */
    static double measured_peak = 0;
    if (!(measured_peak > 0)) measured_peak = km_prefix_gemm_ceiling_tflops(b);
    const double peak = measured_peak;
    if (!(peak > 0)) return;
    km_bench_counter(b, "tensor_peak_tflops", peak);
    km_bench_counter(b, "pct_of_tensor_peak", 100.0 * tflops / peak);
    snprintf(peak_text, sizeof peak_text, "%.0f%% of the measured cuBLASLt bf16 GEMM's %.0f TFLOP/s",
             100.0 * tflops / peak, peak);
  }
  km_bench_label(b, "MLA %d heads, %s latent 512+64, batch %d x %d ctx, block %d: %.0f TFLOP/s (%s); %s%d chunks "
                 "of <= %d tiles%s, %d heads per CTA, %d stage%s, %s",
                 r->sh.num_heads, r->sh.kv == KM_MLA_BF16 ? "bf16" : "fp8 e4m3 (tensor scale)", r->batch, r->h_ctx[0],
                 MLA_BLOCK, tflops, peak_text, p->op == MLA_NAIVE ? "simple kernel (the plan unused): " : "",
                 r->plan.num_chunks, r->plan.chunk_tiles,
                 !r->plan.split ? "" : r->plan.merge ? " merged in the kernel" : " merged by the combine pass", r->cfg.rows,
                 r->cfg.stages, r->cfg.stages > 1 ? "s" : "",
                 kernel_text(&r->cfg));
}

/* The plan lives in the case's stack frame: freed here, after the step, whatever stopped it. */
static void run_mla(km_bench *b, const void *params) {
  mla_run r;
  memset(&r, 0, sizeof r);
  run_step(b, params, &r);
  km_mla_plan_free(&r.plan);
}

/* ---------------------------------------------------------------- the sweep */

#define BF KM_MLA_BF16
#define E4 KM_MLA_FP8_E4M3
#define P(name, op, h, kv, b, ctx) static const mla_params name = {op, h, kv, b, ctx, KM_MLA_KERNEL_AUTO}
#define P_K(name, k, h, kv, b, ctx) static const mla_params name = {MLA_DECODE, h, kv, b, ctx, k}
#define P_MMA(name, h, kv, b, ctx) P_K(name, KM_MLA_KERNEL_MMA, h, kv, b, ctx)
#define P_ST(name, h, kv, b, ctx, st) static const mla_params name = {MLA_DECODE, h, kv, b, ctx, KM_MLA_KERNEL_AUTO, st}

/* batch x context at the memory-bound (16) and compute-bound (128) head counts, for each latent format, and
 * the two head counts between at the target shape (b64 x 8K) */
#define GRID(X, h) X(h, 1, 8192, 8k) X(h, 1, 32768, 32k) X(h, 64, 8192, 8k) X(h, 64, 32768, 32k)
#define GRID_HEADS(X) GRID(X, 16) X(32, 64, 8192, 8k) X(64, 64, 8192, 8k) GRID(X, 128)
#define GRID_PARAMS(h, b, c, cs)                            \
  P(bf16_h##h##_b##b##_##cs, MLA_DECODE, h, BF, b, c);     \
  P(fp8_h##h##_b##b##_##cs, MLA_DECODE, h, E4, b, c);
GRID_HEADS(GRID_PARAMS)

P(quick_bf16, MLA_DECODE, 128, BF, 4, 2048);
P(quick_bf16_h16, MLA_DECODE, 16, BF, 4, 2048); /* the 16-row mma.sync kernel in the --quick pass */
P(quick_fp8_h16, MLA_DECODE, 16, E4, 4, 2048);
P_K(quick_seesaw, KM_MLA_KERNEL_WGMMA_SEESAW, 128, BF, 4, 2048); /* the seesaw variant in the --quick pass */
P_MMA(mma_bf16_h128_b64_8k, 128, BF, 64, 8192);
P_MMA(mma_fp8_h128_b64_8k, 128, E4, 64, 8192);
P_MMA(mma_bf16_h128_b1_32k, 128, BF, 1, 32768);
/* the wgmma kernel's other variants (attn_mla.h, KM_MLA_WG_*; the default is the grid's own rows) at the
 * compute-bound point: one row each, the full run is near one call's limit (fp8 and batch 1 moved with bf16 at
 * b64 x 8K in the calls that compared them, reports/attn-notes.md) */
#define QREG_WHAT                                                                                                   \
  "three warpgroups: S with Q's dims 0-511 in the scorer's registers and the softmax, O's halves and the copies in " \
  "the other two, three tile stages, so S of the next tile runs beside P V of this one"
#define WG_VARIANTS(X)                                                                  \
  X(split, KM_MLA_KERNEL_WGMMA_SPLIT_S, "both warpgroups compute S for 32 tokens each") \
  X(one, KM_MLA_KERNEL_WGMMA_ONE_S, "warpgroup 0 computes S for all 64 tokens and the softmax, warpgroup 1 loads, P V as m64n128k16") \
  X(one_n256, KM_MLA_KERNEL_WGMMA_ONE_S_N256, "as wg_one, with P V as m64n256k16 (the default before the lean copies and descriptors)") \
  X(split_k, KM_MLA_KERNEL_WGMMA_SPLIT_K, "as wg_one_n256, with S over half of the dims on each warpgroup") \
  X(seesaw, KM_MLA_KERNEL_WGMMA_SEESAW, "two tiles per step, each warpgroup the S and softmax of one and half of O") \
  X(l2a1, KM_MLA_KERNEL_WGMMA_L2_AHEAD1, "as wg_one_n256, with the tile after the one being copied requested into L2") \
  X(l2a2, KM_MLA_KERNEL_WGMMA_L2_AHEAD2, "as wg_one_n256, with the tile two after the one being copied requested into L2") \
  X(lean, KM_MLA_KERNEL_WGMMA_LEAN_LOAD, "as wg_one_n256, with the copies at fixed offsets and the block table read a tile ahead (the default without its descriptors by one add)") \
  X(lean_l2, KM_MLA_KERNEL_WGMMA_LEAN_L2, "as wg_lean, with the tile after the one being copied requested into L2") \
  X(seesaw_lean, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN, "as wg_seesaw, with the copies at fixed offsets, the block table read a pair ahead and the default's descriptors") \
  X(qreg, KM_MLA_KERNEL_WGMMA_QREG, QREG_WHAT)
#define WG_PARAMS(v, k, what) P_K(wg_##v##_bf16_b64, k, 128, BF, 64, 8192);
WG_VARIANTS(WG_PARAMS)
P_K(quick_l2a2, KM_MLA_KERNEL_WGMMA_L2_AHEAD2, 128, BF, 4, 2048);
P_K(quick_lean_l2, KM_MLA_KERNEL_WGMMA_LEAN_L2, 128, BF, 4, 2048);
P_K(quick_seesaw_lean, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN, 128, BF, 4, 2048);
P_K(quick_qreg, KM_MLA_KERNEL_WGMMA_QREG, 128, BF, 4, 2048);
/* QREG at b64 x 32K and b1 x 32K ran once (reports/runs/h200-mla-qreg.json: 1.37x and 1.27x the default's time);
 * only its b64 x 8K row stays in the full run, which is near its time guard */
/* the seesaw with the lean copies at the long context, where it matched the default in the call that compared them */
P_K(wg_seesaw_lean_bf16_b64_32k, KM_MLA_KERNEL_WGMMA_SEESAW_LEAN, 128, BF, 64, 32768);
/* 16 heads (memory-bound), the split sequences' partials merged inside the kernel instead of by the combine pass */
static const mla_params merge_bf16_h16_b64 = {MLA_DECODE, 16, BF, 64, 8192, KM_MLA_KERNEL_AUTO, 0, 1};
/* 4 chunks a sequence: the in-kernel merge under --quick */
static const mla_params quick_bf16_h16_merge = {MLA_DECODE, 16, BF, 32, 1024, KM_MLA_KERNEL_AUTO, 0, 1};
P(quick_fp8, MLA_DECODE, 128, E4, 4, 2048);
P(naive_h128_b16_4k, MLA_NAIVE, 128, BF, 16, 4096);
P(naive_h16_b16_4k, MLA_NAIVE, 16, BF, 16, 4096);

#define T_MLA "mla"
#define SUM_BF16                                                                                                     \
  "MLA decode step over a bf16 latent cache (576 per token, shared by every head; wgmma on SM 9.0 at 64 heads per " \
  "CTA, else mma.sync)"
#define SUM_MMA "the same step on the mma.sync kernel (every SM 8.0+ GPU), where the device would take wgmma"
#define SUM_FP8 "the same step over an fp8 e4m3 latent with one tensor scale, converted to bf16 in shared memory"
/* each (heads, format) grid is one series: step time = c0 + c1 batch + c2 batch x context */
#define SWEEP(series, b, c) (&(const km_sweep){series, {"batch", "context"}, {b, c}, "batch + batch*context"})
#define GRID_ROWS(h, b, c, cs)                                                                                        \
  {"attn/mla/h" #h "/bf16/b" #b "/ctx" #cs, T_MLA, SUM_BF16, run_mla, &bf16_h##h##_b##b##_##cs,                      \
   (h == 128 && b == 64 && c == 8192) ? KM_CASE_REPRESENTATIVE : 0, NULL, SWEEP("attn/mla/h" #h "/bf16", b, c)},     \
      {"attn/mla/h" #h "/fp8_e4m3/b" #b "/ctx" #cs, T_MLA, SUM_FP8, run_mla, &fp8_h##h##_b##b##_##cs, 0,             \
       "attn/mla/h" #h "/bf16/b" #b "/ctx" #cs, SWEEP("attn/mla/h" #h "/fp8_e4m3", b, c)},

static const km_case attn_mla_cases[] = {
    GRID_HEADS(GRID_ROWS)
    {"attn/mla/h128/bf16/b64/ctx8k/mma", T_MLA, SUM_MMA, run_mla, &mma_bf16_h128_b64_8k, 0,
     "attn/mla/h128/bf16/b64/ctx8k"},
    {"attn/mla/h128/fp8_e4m3/b64/ctx8k/mma", T_MLA, SUM_MMA, run_mla, &mma_fp8_h128_b64_8k, 0,
     "attn/mla/h128/fp8_e4m3/b64/ctx8k"},
    {"attn/mla/h128/bf16/b1/ctx32k/mma", T_MLA, SUM_MMA, run_mla, &mma_bf16_h128_b1_32k, 0,
     "attn/mla/h128/bf16/b1/ctx32k"},
#define WG_ROWS(v, k, what)                                                                                       \
  {"attn/mla/h128/bf16/b64/ctx8k/wg_" #v, T_MLA, "wgmma variant: " what, run_mla, &wg_##v##_bf16_b64, 0,          \
   "attn/mla/h128/bf16/b64/ctx8k"},
    WG_VARIANTS(WG_ROWS)
    {"attn/mla/h128/bf16/b64/ctx32k/wg_seesaw_lean", T_MLA,
     "wgmma variant: as wg_seesaw, with the copies at fixed offsets, the block table read a pair ahead and the default's "
     "descriptors",
     run_mla, &wg_seesaw_lean_bf16_b64_32k, 0, "attn/mla/h128/bf16/b64/ctx32k"},
    {"attn/mla/h16/bf16/b64/ctx8k/merge", T_MLA,
     "the 16-head step with its two chunks a sequence merged inside the kernel by the last of them instead of by the "
     "combine pass",
     run_mla, &merge_bf16_h16_b64, 0, "attn/mla/h16/bf16/b64/ctx8k"},
    {"attn/mla/h16/bf16/b32/ctx1k/merge/quick", T_MLA, "the in-kernel merge of the split sequences' partials", run_mla,
     &quick_bf16_h16_merge, KM_CASE_QUICK, NULL},
    {"attn/mla/h128/bf16/b4/ctx2k/quick", T_MLA, SUM_BF16, run_mla, &quick_bf16, KM_CASE_QUICK, NULL},
    {"attn/mla/h128/fp8_e4m3/b4/ctx2k/quick", T_MLA, SUM_FP8, run_mla, &quick_fp8, KM_CASE_QUICK,
     "attn/mla/h128/bf16/b4/ctx2k/quick"},
    {"attn/mla/h16/bf16/b4/ctx2k/quick", T_MLA, SUM_BF16, run_mla, &quick_bf16_h16, KM_CASE_QUICK, NULL},
    {"attn/mla/h128/bf16/b4/ctx2k/wg_seesaw/quick", T_MLA, "wgmma variant: two tiles per step, the warpgroups alternating",
     run_mla, &quick_seesaw, KM_CASE_QUICK, "attn/mla/h128/bf16/b4/ctx2k/quick"},
    {"attn/mla/h128/bf16/b4/ctx2k/wg_l2a2/quick", T_MLA,
     "wgmma variant: as wg_one_n256, with the tile two after the one being copied requested into L2", run_mla,
     &quick_l2a2, KM_CASE_QUICK, "attn/mla/h128/bf16/b4/ctx2k/quick"},
    {"attn/mla/h128/bf16/b4/ctx2k/wg_lean_l2/quick", T_MLA,
     "wgmma variant: as wg_lean, with the tile after the one being copied requested into L2", run_mla, &quick_lean_l2,
     KM_CASE_QUICK, "attn/mla/h128/bf16/b4/ctx2k/quick"},
    {"attn/mla/h128/bf16/b4/ctx2k/wg_seesaw_lean/quick", T_MLA,
     "wgmma variant: as wg_seesaw, with the copies at fixed offsets, the block table read a pair ahead and the "
     "default's descriptors",
     run_mla, &quick_seesaw_lean, KM_CASE_QUICK, "attn/mla/h128/bf16/b4/ctx2k/quick"},
    {"attn/mla/h128/bf16/b4/ctx2k/wg_qreg/quick", T_MLA, "wgmma variant: " QREG_WHAT, run_mla, &quick_qreg,
     KM_CASE_QUICK, "attn/mla/h128/bf16/b4/ctx2k/quick"},
    {"attn/mla/h16/fp8_e4m3/b4/ctx2k/quick", T_MLA, SUM_FP8, run_mla, &quick_fp8_h16, KM_CASE_QUICK,
     "attn/mla/h16/bf16/b4/ctx2k/quick"},
    {"baseline/attn/mla/naive/h128/bf16/b16/ctx4k", T_MLA,
     "one CTA per (sequence, head) on CUDA cores, no split: the latent re-read for every head", run_mla,
     &naive_h128_b16_4k, KM_CASE_BASELINE, NULL},
    {"baseline/attn/mla/naive/h16/bf16/b16/ctx4k", T_MLA,
     "one CTA per (sequence, head) on CUDA cores, no split: the latent re-read for every head", run_mla,
     &naive_h16_b16_4k, KM_CASE_BASELINE, NULL},
};

/* What fp8 saves at the compute-bound point (the byte table halves the bytes). */
static const km_derived attn_mla_derived[] = {
    {"mla", "MLA bf16 step / fp8 e4m3 step, 128 heads, b64 x 8K (speed-up x; the bytes halve)", KM_DERIVED_RATIO,
     "attn/mla/h128/bf16/b64/ctx8k", "attn/mla/h128/fp8_e4m3/b64/ctx8k", NULL, {NULL}, 0, 0, 0},
};

const km_case_table km_attn_mla_table = {attn_mla_cases, sizeof attn_mla_cases / sizeof attn_mla_cases[0], NULL,
                                         attn_mla_derived, sizeof attn_mla_derived / sizeof attn_mla_derived[0]};
