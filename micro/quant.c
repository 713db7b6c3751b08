/* quant/: fp8 (e4m3, e5m2) and 3-bit (uniform group 32, TurboQuant) KV quantize / dequantize, and the
 * fused fp8 dequantize + paged gather, each timed on >= 8x L2 of bf16 after its whole timed output was
 * checked (micro/quant_verify.c), with the format's accuracy on the run's shared dataset as counters. */
#include <string.h>

#include "bench.h"
#include "check.h"
#include "fill.h"
#include "micro_tables.h"
#include "quant_run.h"
#include "quant_scalar.h"

/* ---- formats and layouts */

int km_q_is_fp8(km_q_fmt f) { return f == KM_Q_E4M3 || f == KM_Q_E5M2; }
km_fp8_format km_q_kernel_fmt(km_q_fmt f) { return f == KM_Q_E4M3 ? KM_FP8_E4M3 : KM_FP8_E5M2; }
int km_q_static_scales(const km_q_params *p) { return km_q_is_fp8(p->fmt) && p->gran != KM_QUANT_PER_TOKEN_HEAD; }

size_t km_q_packed_row_bytes(const km_q_params *p) {
  if (km_q_is_fp8(p->fmt)) return (size_t)p->head_dim;
  return p->fmt == KM_Q_U3 ? (size_t)p->head_dim / 2 : (size_t)p->head_dim * 3 / 8;
}

size_t km_q_side_row_bytes(const km_q_params *p) {
  if (km_q_is_fp8(p->fmt)) return p->gran == KM_QUANT_PER_TOKEN_HEAD ? 4 : 0;
  return p->fmt == KM_Q_TQ3 ? (p->is_v ? 4 : 2) : 0;
}

size_t km_q_side_bytes(const km_q_ctx *c) {
  const km_q_params *p = c->p;
  if (km_q_is_fp8(p->fmt) && p->gran == KM_QUANT_PER_TENSOR) return 4;
  if (km_q_is_fp8(p->fmt) && p->gran == KM_QUANT_PER_HEAD) return 4 * (size_t)c->heads;
  return km_q_side_row_bytes(p) * c->rows;
}

/* ---- launches */

cudaError_t km_q_quantize(const km_q_ctx *c, int scalar, uint8_t *packed, void *side, cudaStream_t s) {
  const km_q_params *p = c->p;
  if (km_q_is_fp8(p->fmt))
    return scalar ? km_scalar_fp8_quantize(c->src, packed, side, c->tokens, c->heads, c->d, km_q_kernel_fmt(p->fmt),
                                           p->gran, s)
                  : km_quant_fp8_quantize(c->src, packed, side, c->tokens, c->heads, c->d, km_q_kernel_fmt(p->fmt),
                                          p->gran, s);
  if (p->fmt == KM_Q_U3)
    return scalar ? km_scalar_u3_quantize(c->src, packed, c->tokens, c->heads, c->d, s)
                  : km_quant_u3_quantize(&c->plan, c->src, packed, c->tokens, c->heads, c->d, s);
  return scalar ? km_scalar_tq3_quantize(c->src, packed, side, c->tokens, c->heads, c->d, p->is_v, s)
                : km_quant_tq3_quantize_variant(&c->plan, p->variant, c->src, packed, side, c->tokens, c->heads, c->d,
                                                p->is_v, s);
}

cudaError_t km_q_dequantize(const km_q_ctx *c, int scalar, uint16_t *out, cudaStream_t s) {
  const km_q_params *p = c->p;
  if (p->op == KM_Q_DEQUANT_GATHER)
    return km_quant_fp8_dequant_gather(c->packed, c->side, c->table, out, c->num_seqs, KM_Q_TOKENS_PER_SEQ,
                                       p->block_size, c->heads, c->d, km_q_kernel_fmt(p->fmt), s);
  if (km_q_is_fp8(p->fmt))
    return scalar ? km_scalar_fp8_dequantize(c->packed, c->side, out, c->tokens, c->heads, c->d,
                                             km_q_kernel_fmt(p->fmt), p->gran, s)
                  : km_quant_fp8_dequantize(c->packed, c->side, out, c->tokens, c->heads, c->d, km_q_kernel_fmt(p->fmt),
                                            p->gran, s);
  if (p->fmt == KM_Q_U3)
    return scalar ? km_scalar_u3_dequantize(c->packed, out, c->tokens, c->heads, c->d, s)
                  : km_quant_u3_dequantize(&c->plan, c->packed, out, c->tokens, c->heads, c->d, s);
  return scalar ? km_scalar_tq3_dequantize(c->packed, c->side, out, c->tokens, c->heads, c->d, p->is_v, s)
                : km_quant_tq3_dequantize(&c->plan, c->packed, c->side, out, c->tokens, c->heads, c->d, p->is_v, s);
}

cudaError_t km_q_enqueue(void *arg, int rep, cudaStream_t s) {
  const km_q_ctx *c = arg;
  if (c->p->op == KM_Q_QUANTIZE) return km_q_quantize(c, c->p->scalar, c->packed, c->side, s);
  return km_q_dequantize(c, c->p->scalar, c->out, s);
}

/* ---- setup */

static int setup(km_bench *b, km_q_ctx *c, const km_q_params *p) {
  const km_model *m = km_bench_model(b);
  c->p = p;
  c->heads = m && m->num_kv_heads > 0 ? m->num_kv_heads : 8;
  c->d = p->head_dim;
  const size_t row_bytes = (size_t)c->heads * c->d * 2;
  c->tokens = (km_bench_big_bytes(b) + row_bytes - 1) / row_bytes;
  if (p->op == KM_Q_DEQUANT_GATHER) {
    c->num_seqs = (int)((c->tokens + KM_Q_TOKENS_PER_SEQ - 1) / KM_Q_TOKENS_PER_SEQ);
    c->tokens = (size_t)c->num_seqs * KM_Q_TOKENS_PER_SEQ;
  }
  c->rows = c->tokens * c->heads;
  KM_CUDA_OR_FAIL(b, km_quant_plan_make(&c->plan));
  c->src = km_bench_device_alloc(b, c->rows * c->d * 2);
  c->packed = km_bench_device_alloc(b, c->rows * km_q_packed_row_bytes(p));
  const size_t sb = km_q_side_bytes(c);
  c->side = sb ? km_bench_device_alloc(b, sb) : NULL;
  c->out = p->op != KM_Q_QUANTIZE ? km_bench_device_alloc(b, c->rows * c->d * 2) : NULL;
  if (!c->src || !c->packed || (sb && !c->side) || (p->op != KM_Q_QUANTIZE && !c->out)) return -1;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(c->src, c->rows * c->d, km_bench_seed(b), 1.0f, c->d,
                                         p->is_v ? 0 : KM_Q_OUTLIER_EVERY, KM_Q_OUTLIER_OFFSET, KM_Q_OUTLIER_SCALE,
                                         km_bench_stream(b)));
  return 0;
}

/* Random permutation of the pool's blocks over the sequences (Fisher-Yates on a seeded splitmix). */
static int upload_block_table(km_bench *b, km_q_ctx *c) {
  const size_t nblocks = c->tokens / c->p->block_size;
  int32_t *h = km_bench_host_alloc(b, nblocks * 4);
  c->table = km_bench_device_alloc(b, nblocks * 4);
  if (!h || !c->table) return -1;
  uint64_t st = km_bench_seed(b);
  for (size_t i = 0; i < nblocks; ++i) h[i] = (int32_t)i;
  for (size_t i = nblocks - 1; i > 0; --i) {
    uint64_t z = (st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    const size_t j = (size_t)((z ^ (z >> 31)) % (i + 1));
    const int32_t t = h[i];
    h[i] = h[j];
    h[j] = t;
  }
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->table, h, nblocks * 4, cudaMemcpyHostToDevice, km_bench_stream(b)));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(km_bench_stream(b)));
  return 0;
}

/* What an unverified run (--no-verify) still needs before timing: sane static scales and input codes. */
static int unverified_inputs(km_bench *b, km_q_ctx *c) {
  const km_q_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  if (km_q_static_scales(p)) {
    float ones[256];
    if (c->heads > 256) return -1;
    for (int i = 0; i < 256; ++i) ones[i] = 1.0f / 32.0f;
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->side, ones, km_q_side_bytes(c), cudaMemcpyHostToDevice, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  }
  if (p->op != KM_Q_QUANTIZE) KM_CUDA_OR_FAIL(b, km_q_quantize(c, 0, c->packed, c->side, s));
  return 0;
}

static void fill_work(const km_q_ctx *c, km_work *w) {
  const km_q_params *p = c->p;
  const double bf16 = (double)c->rows * c->d * 2, packed = (double)c->rows * km_q_packed_row_bytes(p);
  const double side = (double)km_q_side_bytes(c);
  memset(w, 0, sizeof *w);
  if (p->op == KM_Q_QUANTIZE) {
    w->bytes_read = bf16 + (km_q_side_row_bytes(p) ? 0 : side);
    w->bytes_written = packed + (km_q_side_row_bytes(p) ? side : 0);
  } else {
    w->bytes_read = packed + side + (p->op == KM_Q_DEQUANT_GATHER ? (double)(c->tokens / p->block_size) * 4 : 0);
    w->bytes_written = bf16;
  }
  w->tokens = (double)c->tokens;
  w->layers = 1;
}

static void run_quant(km_bench *b, const void *params) {
  const km_q_params *p = params;
  km_q_ctx c;
  memset(&c, 0, sizeof c);
  if (setup(b, &c, p)) return;
  if (p->op == KM_Q_DEQUANT_GATHER && upload_block_table(b, &c)) return;
  if (km_bench_verify_enabled(b)) {
    const int bad = p->op == KM_Q_DEQUANT_GATHER ? km_q_verify_gather(b, &c) : km_q_verify_rows(b, &c);
    if (bad || (p->op != KM_Q_DEQUANT_GATHER && km_q_accuracy(b, &c))) return;
  } else if (unverified_inputs(b, &c)) {
    return;
  }
  KM_RETURN_IF_STOPPED(b);
  km_work w;
  fill_work(&c, &w);
  km_bench_measure(b, km_q_enqueue, &c, &w);
}

/* ---- the sweep: full granularity sweep at d128 (Qwen3-8B), per-token-head at d64 / d256 */

#define QP(name, ...) static const km_q_params name = {__VA_ARGS__}
#define PTH KM_QUANT_PER_TOKEN_HEAD
#define PT KM_QUANT_PER_TENSOR
#define PH KM_QUANT_PER_HEAD

QP(e4q_pth64, KM_Q_E4M3, KM_Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(e4q_pth128, KM_Q_E4M3, KM_Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(e4q_pth256, KM_Q_E4M3, KM_Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(e4q_pt128, KM_Q_E4M3, KM_Q_QUANTIZE, PT, 128, 0, 0, 0);
QP(e4q_ph128, KM_Q_E4M3, KM_Q_QUANTIZE, PH, 128, 0, 0, 0);
QP(e4d_pth64, KM_Q_E4M3, KM_Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(e4d_pth128, KM_Q_E4M3, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(e4d_pth256, KM_Q_E4M3, KM_Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(e4d_pt128, KM_Q_E4M3, KM_Q_DEQUANTIZE, PT, 128, 0, 0, 0);
QP(e4d_ph128, KM_Q_E4M3, KM_Q_DEQUANTIZE, PH, 128, 0, 0, 0);
QP(e5q_pth64, KM_Q_E5M2, KM_Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(e5q_pth128, KM_Q_E5M2, KM_Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(e5q_pth256, KM_Q_E5M2, KM_Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(e5q_pt128, KM_Q_E5M2, KM_Q_QUANTIZE, PT, 128, 0, 0, 0);
QP(e5q_ph128, KM_Q_E5M2, KM_Q_QUANTIZE, PH, 128, 0, 0, 0);
QP(e5d_pth64, KM_Q_E5M2, KM_Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(e5d_pth128, KM_Q_E5M2, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(e5d_pth256, KM_Q_E5M2, KM_Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(e5d_pt128, KM_Q_E5M2, KM_Q_DEQUANTIZE, PT, 128, 0, 0, 0);
QP(e5d_ph128, KM_Q_E5M2, KM_Q_DEQUANTIZE, PH, 128, 0, 0, 0);
QP(e4g_bs16, KM_Q_E4M3, KM_Q_DEQUANT_GATHER, PTH, 128, 0, 16, 0);
QP(e5g_bs16, KM_Q_E5M2, KM_Q_DEQUANT_GATHER, PTH, 128, 0, 16, 0);
QP(u3q64, KM_Q_U3, KM_Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(u3q128, KM_Q_U3, KM_Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(u3q256, KM_Q_U3, KM_Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(u3d64, KM_Q_U3, KM_Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(u3d128, KM_Q_U3, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(u3d256, KM_Q_U3, KM_Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(tqq64, KM_Q_TQ3, KM_Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(tqq128, KM_Q_TQ3, KM_Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(tqq256, KM_Q_TQ3, KM_Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(tqq128v, KM_Q_TQ3, KM_Q_QUANTIZE, PTH, 128, 1, 0, 0);
/* the TurboQuant quantize kernels side by side (quant_3bit.h: v1 lanes, v2 64 per thread, v3 a thread per
 * row, v4 v3 with K's scale in the thresholds; V has no v4; v5 v3 with the lean norm and per-row steps, K's
 * scale folded; v6 (d128) a warp per 16 rows on tensor cores, not bit for bit; v8 v6 with the Gram operands by
 * ldmatrix and two Gram chains; v7, 16 warps per SM, was measured and reverted: reports/quant-notes.md) */
#define TQV(name, d, v, k) QP(name, KM_Q_TQ3, KM_Q_QUANTIZE, PTH, d, v, 0, 0, k)
TQV(tqq64_1, 64, 0, KM_TQ3_LANES);
TQV(tqq64_2, 64, 0, KM_TQ3_ROWS64);
TQV(tqq64_4, 64, 0, KM_TQ3_ROWS_FOLD);
TQV(tqq64_5, 64, 0, KM_TQ3_ROWS_LEAN);
TQV(tqq128_2, 128, 0, KM_TQ3_ROWS64);
TQV(tqq128_3, 128, 0, KM_TQ3_ROWS);
TQV(tqq128_4, 128, 0, KM_TQ3_ROWS_FOLD);
TQV(tqq128_5, 128, 0, KM_TQ3_ROWS_LEAN);
TQV(tqq128_6, 128, 0, KM_TQ3_MMA);
TQV(tqq128_8, 128, 0, KM_TQ3_MMA_LEAN);
TQV(tqq256_1, 256, 0, KM_TQ3_LANES);
TQV(tqq256_2, 256, 0, KM_TQ3_ROWS64);
TQV(tqq256_3, 256, 0, KM_TQ3_ROWS);
TQV(tqq256_4, 256, 0, KM_TQ3_ROWS_FOLD);
TQV(tqq256_5, 256, 0, KM_TQ3_ROWS_LEAN);
TQV(tqq128v_2, 128, 1, KM_TQ3_ROWS64);
TQV(tqq128v_3, 128, 1, KM_TQ3_ROWS);
TQV(tqq128v_5, 128, 1, KM_TQ3_ROWS_LEAN);
TQV(tqq128v_6, 128, 1, KM_TQ3_MMA);
TQV(tqq128v_8, 128, 1, KM_TQ3_MMA_LEAN);
TQV(tqq64v, 64, 1, KM_TQ3_BEST);
TQV(tqq256v, 256, 1, KM_TQ3_BEST);
QP(tqd64, KM_Q_TQ3, KM_Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(tqd128, KM_Q_TQ3, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(tqd256, KM_Q_TQ3, KM_Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(tqd128v, KM_Q_TQ3, KM_Q_DEQUANTIZE, PTH, 128, 1, 0, 0);
QP(s_e4q, KM_Q_E4M3, KM_Q_QUANTIZE, PTH, 128, 0, 0, 1);
QP(s_e4d, KM_Q_E4M3, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 1);
QP(s_u3q, KM_Q_U3, KM_Q_QUANTIZE, PTH, 128, 0, 0, 1);
QP(s_u3d, KM_Q_U3, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 1);
QP(s_tqq, KM_Q_TQ3, KM_Q_QUANTIZE, PTH, 128, 0, 0, 1);
QP(s_tqd, KM_Q_TQ3, KM_Q_DEQUANTIZE, PTH, 128, 0, 0, 1);

#define B_E4Q "baseline/quant/scalar/fp8_e4m3/quantize/per_token_head/d128"
#define B_E4D "baseline/quant/scalar/fp8_e4m3/dequantize/per_token_head/d128"
#define B_U3Q "baseline/quant/scalar/uniform_3bit/quantize/g32/d128"
#define B_U3D "baseline/quant/scalar/uniform_3bit/dequantize/g32/d128"
#define B_TQQ "baseline/quant/scalar/turboquant_3bit/quantize/k/d128"
#define B_TQD "baseline/quant/scalar/turboquant_3bit/dequantize/k/d128"
#define Q KM_CASE_QUICK
#define R KM_CASE_REPRESENTATIVE
#define ROW(name, summary, params, flags, base) {name, "kv_quant", summary, run_quant, &params, flags, base}

static const km_case quant_cases[] = {
    ROW("quant/fp8_e4m3/quantize/per_token_head/d64", "bf16 -> fp8 e4m3, dynamic per-(token, head) amax scale", e4q_pth64, Q, NULL),
    ROW("quant/fp8_e4m3/quantize/per_token_head/d128", "bf16 -> fp8 e4m3, dynamic per-(token, head) amax scale", e4q_pth128, R, B_E4Q),
    ROW("quant/fp8_e4m3/quantize/per_token_head/d256", "bf16 -> fp8 e4m3, dynamic per-(token, head) amax scale", e4q_pth256, 0, NULL),
    ROW("quant/fp8_e4m3/quantize/per_tensor/d128", "bf16 -> fp8 e4m3, one static scale (calibrated on a sample)", e4q_pt128, 0, NULL),
    ROW("quant/fp8_e4m3/quantize/per_head/d128", "bf16 -> fp8 e4m3, static per-head scales", e4q_ph128, 0, NULL),
    ROW("quant/fp8_e4m3/dequantize/per_token_head/d64", "fp8 e4m3 -> bf16 with per-(token, head) scales", e4d_pth64, Q, NULL),
    ROW("quant/fp8_e4m3/dequantize/per_token_head/d128", "fp8 e4m3 -> bf16 with per-(token, head) scales", e4d_pth128, R, B_E4D),
    ROW("quant/fp8_e4m3/dequantize/per_token_head/d256", "fp8 e4m3 -> bf16 with per-(token, head) scales", e4d_pth256, 0, NULL),
    ROW("quant/fp8_e4m3/dequantize/per_tensor/d128", "fp8 e4m3 -> bf16, one static scale", e4d_pt128, 0, NULL),
    ROW("quant/fp8_e4m3/dequantize/per_head/d128", "fp8 e4m3 -> bf16, static per-head scales", e4d_ph128, 0, NULL),
    ROW("quant/fp8_e5m2/quantize/per_token_head/d64", "bf16 -> fp8 e5m2, dynamic per-(token, head) amax scale", e5q_pth64, 0, NULL),
    ROW("quant/fp8_e5m2/quantize/per_token_head/d128", "bf16 -> fp8 e5m2, dynamic per-(token, head) amax scale", e5q_pth128, R, NULL),
    ROW("quant/fp8_e5m2/quantize/per_token_head/d256", "bf16 -> fp8 e5m2, dynamic per-(token, head) amax scale", e5q_pth256, 0, NULL),
    ROW("quant/fp8_e5m2/quantize/per_tensor/d128", "bf16 -> fp8 e5m2, one static scale", e5q_pt128, 0, NULL),
    ROW("quant/fp8_e5m2/quantize/per_head/d128", "bf16 -> fp8 e5m2, static per-head scales", e5q_ph128, 0, NULL),
    ROW("quant/fp8_e5m2/dequantize/per_token_head/d64", "fp8 e5m2 -> bf16 with per-(token, head) scales", e5d_pth64, 0, NULL),
    ROW("quant/fp8_e5m2/dequantize/per_token_head/d128", "fp8 e5m2 -> bf16 with per-(token, head) scales", e5d_pth128, R, NULL),
    ROW("quant/fp8_e5m2/dequantize/per_token_head/d256", "fp8 e5m2 -> bf16 with per-(token, head) scales", e5d_pth256, 0, NULL),
    ROW("quant/fp8_e5m2/dequantize/per_tensor/d128", "fp8 e5m2 -> bf16, one static scale", e5d_pt128, 0, NULL),
    ROW("quant/fp8_e5m2/dequantize/per_head/d128", "fp8 e5m2 -> bf16, static per-head scales", e5d_ph128, 0, NULL),
    ROW("quant/fp8_e4m3/dequant_gather/nhd/bs16/d128", "fp8 e4m3 block pool -> contiguous bf16 through a random block table", e4g_bs16, R, NULL),
    ROW("quant/fp8_e5m2/dequant_gather/nhd/bs16/d128", "fp8 e5m2 block pool -> contiguous bf16 through a random block table", e5g_bs16, 0, NULL),
    ROW("quant/uniform_3bit/quantize/g32/d64", "bf16 -> 3-bit asymmetric, group 32, fp16 scale + zero", u3q64, Q, NULL),
    ROW("quant/uniform_3bit/quantize/g32/d128", "bf16 -> 3-bit asymmetric, group 32, fp16 scale + zero", u3q128, R, B_U3Q),
    ROW("quant/uniform_3bit/quantize/g32/d256", "bf16 -> 3-bit asymmetric, group 32, fp16 scale + zero", u3q256, 0, NULL),
    ROW("quant/uniform_3bit/dequantize/g32/d64", "3-bit asymmetric group 32 -> bf16", u3d64, Q, NULL),
    ROW("quant/uniform_3bit/dequantize/g32/d128", "3-bit asymmetric group 32 -> bf16", u3d128, R, B_U3D),
    ROW("quant/uniform_3bit/dequantize/g32/d256", "3-bit asymmetric group 32 -> bf16", u3d256, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d64", "K: norm, sign flip, FWHT, 3-bit Lloyd-Max codes", tqq64, Q, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128", "K: norm, sign flip, FWHT, 3-bit Lloyd-Max codes", tqq128, R, B_TQQ),
    ROW("quant/turboquant_3bit/quantize/k/d256", "K: norm, sign flip, FWHT, 3-bit Lloyd-Max codes", tqq256, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d128", "V: as K plus the residual norm (52-byte slot)", tqq128v, R, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d64/v1", "K, kernel v1: a row over d/16 lanes, middle stages by shuffles", tqq64_1, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d64/v2", "K, kernel v2 = v3 at d64: a thread per row, rotation in registers", tqq64_2, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d64/v4", "K, kernel v4: v3 with the scale folded into per-row thresholds", tqq64_4, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d64/v5", "K, kernel v5: v4 with the norm tree's first level as FFMA and branch-free per-row steps", tqq64_5, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128/v2", "K, kernel v2: 64 elements per thread, the top stage by shuffles", tqq128_2, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128/v3", "K, kernel v3: a thread per row, rotation in registers", tqq128_3, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128/v4", "K, kernel v4: v3 with the scale folded into per-row thresholds", tqq128_4, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128/v5", "K, kernel v5: v4 with the norm tree's first level as FFMA and branch-free per-row steps", tqq128_5, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128/v6", "K, kernel v6: tensor-core rotation (H16 by mma) and Gram-diagonal norm; codes within the boundary rule", tqq128_6, Q, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d128/v8", "K, kernel v8: v6 with the Gram operands by ldmatrix (no register copies) and two Gram mma chains; codes within the boundary rule", tqq128_8, Q, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d256/v1", "K, kernel v1: a row over d/16 lanes, middle stages by shuffles", tqq256_1, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d256/v2", "K, kernel v2: 64 elements per thread, the top 2 stages by shuffles", tqq256_2, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d256/v3", "K, kernel v3: 128 elements per thread, the top stage by shuffles", tqq256_3, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d256/v4", "K, kernel v4: v3 with the scale folded into per-row thresholds", tqq256_4, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/k/d256/v5", "K, kernel v5: v4 with the norm tree's first level as FFMA and branch-free per-row steps", tqq256_5, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d128/v2", "V, kernel v2: 64 elements per thread, the top stage by shuffles", tqq128v_2, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d128/v3", "V, kernel v3: a thread per row", tqq128v_3, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d128/v5", "V, kernel v5: v3 with the norm tree's first level as FFMA and branch-free per-row steps", tqq128v_5, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d128/v6", "V, kernel v6: tensor-core rotation (H16 by mma) and Gram-diagonal norm; codes within the boundary rule", tqq128v_6, Q, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d128/v8", "V, kernel v8: v6 with the Gram operands by ldmatrix (no register copies) and two Gram mma chains; codes within the boundary rule", tqq128v_8, Q, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d64", "V: as K plus the residual norm", tqq64v, 0, NULL),
    ROW("quant/turboquant_3bit/quantize/v/d256", "V: as K plus the residual norm", tqq256v, 0, NULL),
    ROW("quant/turboquant_3bit/dequantize/k/d64", "K: codebook, inverse FWHT, signs, norm", tqd64, Q, NULL),
    ROW("quant/turboquant_3bit/dequantize/k/d128", "K: codebook, inverse FWHT, signs, norm", tqd128, R, B_TQD),
    ROW("quant/turboquant_3bit/dequantize/k/d256", "K: codebook, inverse FWHT, signs, norm", tqd256, 0, NULL),
    ROW("quant/turboquant_3bit/dequantize/v/d128", "V: codebook, inverse FWHT, signs, norm", tqd128v, R, NULL),
    ROW(B_E4Q, "scalar: a thread per row for amax, then a thread per element", s_e4q, KM_CASE_BASELINE, NULL),
    ROW(B_E4D, "scalar: a thread per element", s_e4d, KM_CASE_BASELINE, NULL),
    ROW(B_U3Q, "scalar: a thread per group for scale/zero, then a thread per code byte", s_u3q, KM_CASE_BASELINE, NULL),
    ROW(B_U3D, "scalar: a thread per element", s_u3d, KM_CASE_BASELINE, NULL),
    ROW(B_TQQ, "scalar: a thread per vector (the rotation needs the whole vector)", s_tqq, KM_CASE_BASELINE, NULL),
    ROW(B_TQD, "scalar: a thread per vector", s_tqd, KM_CASE_BASELINE, NULL),
};

const km_case_table km_quant_table = {quant_cases, sizeof quant_cases / sizeof quant_cases[0]};
