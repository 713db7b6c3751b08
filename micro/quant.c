/* quant/: fp8 (e4m3, e5m2) and 3-bit (uniform group 32, TurboQuant) KV quantize / dequantize, and the
 * fused fp8 dequantize + paged gather, each verified against micro/quant_ref.c on rows sampled across
 * the whole timed instance, then timed on >= 8x L2 of bf16, with accuracy figures as counters. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "fill.h"
#include "micro_tables.h"
#include "quant_3bit.h"
#include "quant_fp8.h"
#include "quant_ref.h"
#include "quant_scalar.h"

typedef enum q_fmt { Q_E4M3 = 0, Q_E5M2, Q_U3, Q_TQ3, Q_FMT_COUNT } q_fmt;
typedef enum q_op { Q_QUANTIZE = 0, Q_DEQUANTIZE, Q_DEQUANT_GATHER, Q_OP_COUNT } q_op;

typedef struct quant_params {
  q_fmt fmt;
  q_op op;
  km_quant_granularity gran; /* fp8 only */
  int head_dim;
  int is_v;       /* TurboQuant V layout and Gaussian V data; otherwise K data with outlier channels */
  int block_size; /* dequant + gather */
  int scalar;     /* the baseline kernels */
} quant_params;

enum {
  SAMPLE_ROWS = 4096,      /* rows checked and used for accuracy, strided over the whole instance (+ the last) */
  GATHER_SAMPLE_TOKENS = 256,
  TOKENS_PER_SEQ = 2048,   /* gather: sequences of this many tokens, blocks randomly permuted */
  OUTLIER_EVERY = 32,      /* K: every 32nd channel (4 of 128) ... */
  OUTLIER_OFFSET = 7,
};
static const float OUTLIER_SCALE = 10.0f; /* ... is 10x larger, as real keys have */

typedef struct quant_ctx {
  const quant_params *p;
  int heads, d;
  size_t tokens, rows;
  int num_seqs;
  uint16_t *src, *out;
  uint8_t *packed;
  void *side;
  int32_t *table;
  size_t stride, nsample; /* sample rows: i * stride for i < nsample, then rows - 1 */
} quant_ctx;

static int is_fp8(q_fmt f) { return f == Q_E4M3 || f == Q_E5M2; }
static int ref_fmt(q_fmt f) { return f == Q_E4M3 ? KM_REF_E4M3 : KM_REF_E5M2; }
static km_fp8_format kernel_fmt(q_fmt f) { return f == Q_E4M3 ? KM_FP8_E4M3 : KM_FP8_E5M2; }

static size_t packed_row_bytes(const quant_params *p) {
  return is_fp8(p->fmt) ? (size_t)p->head_dim : p->fmt == Q_U3 ? (size_t)p->head_dim / 2 : (size_t)p->head_dim * 3 / 8;
}

/* Per-row side data written beside the codes (0 when the side is a static input or inside the record). */
static size_t side_row_bytes(const quant_params *p) {
  if (is_fp8(p->fmt)) return p->gran == KM_QUANT_PER_TOKEN_HEAD ? 4 : 0;
  return p->fmt == Q_TQ3 ? (p->is_v ? 4 : 2) : 0;
}

static size_t side_bytes(const quant_ctx *c) {
  const quant_params *p = c->p;
  if (is_fp8(p->fmt) && p->gran == KM_QUANT_PER_TENSOR) return 4;
  if (is_fp8(p->fmt) && p->gran == KM_QUANT_PER_HEAD) return 4 * (size_t)c->heads;
  return side_row_bytes(p) * c->rows;
}

static size_t sample_row(const quant_ctx *c, size_t k) { return k < c->nsample ? k * c->stride : c->rows - 1; }

/* ---- launches */

static cudaError_t enqueue_quantize(const quant_ctx *c, cudaStream_t s) {
  const quant_params *p = c->p;
  if (is_fp8(p->fmt))
    return p->scalar ? km_scalar_fp8_quantize(c->src, c->packed, c->side, c->tokens, c->heads, c->d, kernel_fmt(p->fmt), s)
                     : km_quant_fp8_quantize(c->src, c->packed, c->side, c->tokens, c->heads, c->d, kernel_fmt(p->fmt),
                                             p->gran, s);
  if (p->fmt == Q_U3)
    return p->scalar ? km_scalar_u3_quantize(c->src, c->packed, c->tokens, c->heads, c->d, s)
                     : km_quant_u3_quantize(c->src, c->packed, c->tokens, c->heads, c->d, s);
  return p->scalar ? km_scalar_tq3_quantize(c->src, c->packed, c->side, c->tokens, c->heads, c->d, p->is_v, s)
                   : km_quant_tq3_quantize(c->src, c->packed, c->side, c->tokens, c->heads, c->d, p->is_v, s);
}

static cudaError_t enqueue_dequantize(const quant_ctx *c, cudaStream_t s) {
  const quant_params *p = c->p;
  if (p->op == Q_DEQUANT_GATHER)
    return km_quant_fp8_dequant_gather(c->packed, c->side, c->table, c->out, c->num_seqs, TOKENS_PER_SEQ, p->block_size,
                                       c->heads, c->d, kernel_fmt(p->fmt), s);
  if (is_fp8(p->fmt))
    return p->scalar ? km_scalar_fp8_dequantize(c->packed, c->side, c->out, c->tokens, c->heads, c->d, kernel_fmt(p->fmt), s)
                     : km_quant_fp8_dequantize(c->packed, c->side, c->out, c->tokens, c->heads, c->d, kernel_fmt(p->fmt),
                                               p->gran, s);
  if (p->fmt == Q_U3)
    return p->scalar ? km_scalar_u3_dequantize(c->packed, c->out, c->tokens, c->heads, c->d, s)
                     : km_quant_u3_dequantize(c->packed, c->out, c->tokens, c->heads, c->d, s);
  return p->scalar ? km_scalar_tq3_dequantize(c->packed, c->side, c->out, c->tokens, c->heads, c->d, p->is_v, s)
                   : km_quant_tq3_dequantize(c->packed, c->side, c->out, c->tokens, c->heads, c->d, p->is_v, s);
}

static cudaError_t enqueue_case(void *arg, int rep, cudaStream_t s) {
  const quant_ctx *c = arg;
  return c->p->op == Q_QUANTIZE ? enqueue_quantize(c, s) : enqueue_dequantize(c, s);
}

/* ---- CPU side */

/* The CPU reference's encoding of sample row k of x (bf16 [n, d]); static fp8 scales from `scales`. */
static void ref_quantize_row(const quant_params *p, const uint16_t *x, int d, float static_scale, uint8_t *q, void *side) {
  if (is_fp8(p->fmt)) {
    float sc;
    km_ref_fp8_quantize_row(x, d, p->gran == KM_QUANT_PER_TOKEN_HEAD ? -1.0f : static_scale, ref_fmt(p->fmt), q, &sc);
    if (side) memcpy(side, &sc, 4);
  } else if (p->fmt == Q_U3) {
    km_ref_u3_quantize_row(x, d, q);
  } else {
    uint16_t sd[2];
    km_ref_tq3_quantize_row(x, d, p->is_v, q, sd);
    memcpy(side, sd, p->is_v ? 4 : 2);
  }
}

static void ref_dequantize_row(const quant_params *p, const uint8_t *q, const void *side, float static_scale, int d,
                               uint16_t *out) {
  if (is_fp8(p->fmt)) {
    float sc = static_scale;
    if (p->gran == KM_QUANT_PER_TOKEN_HEAD) memcpy(&sc, side, 4);
    km_ref_fp8_dequantize_row(q, d, sc, ref_fmt(p->fmt), out);
  } else if (p->fmt == Q_U3) {
    km_ref_u3_dequantize_row(q, d, out);
  } else {
    uint16_t nh;
    memcpy(&nh, side, 2);
    km_ref_tq3_dequantize_row(q, nh, d, out);
  }
}

/* Static fp8 scales calibrated on sample rows (amax / fp8 max, per tensor or per head); rows whose
 * head is `row_head(k)`. Elements beyond the sampled amax saturate, as with any calibrated scale. */
static void calibrate(const quant_params *p, const uint16_t *x, size_t n, int d, int heads, const size_t *row_of,
                      float *scales) {
  const int ns = p->gran == KM_QUANT_PER_HEAD ? heads : 1;
  for (int h = 0; h < ns; ++h) scales[h] = 0.0f;
  for (size_t k = 0; k < n; ++k) {
    const int h = p->gran == KM_QUANT_PER_HEAD ? (int)(row_of[k] % (size_t)heads) : 0;
    for (int i = 0; i < d; ++i) {
      const float a = km_ref_bf16_to_f32(x[k * d + i]);
      if (a > scales[h]) scales[h] = a;
      if (-a > scales[h]) scales[h] = -a;
    }
  }
  for (int h = 0; h < ns; ++h) scales[h] = scales[h] > 0 ? scales[h] / km_ref_fp8_max(ref_fmt(p->fmt)) : 1.0f;
}

static float static_scale_of(const quant_params *p, const float *scales, size_t row, int heads) {
  if (!is_fp8(p->fmt) || p->gran == KM_QUANT_PER_TOKEN_HEAD) return 0.0f;
  return p->gran == KM_QUANT_PER_HEAD ? scales[row % (size_t)heads] : scales[0];
}

/* bf16 results within one unit in the last place (sign-magnitude bit patterns). */
static int bf16_close(uint16_t a, uint16_t b) {
  const int ia = (a & 0x8000) ? -(int)(a & 0x7fff) : (int)a, ib = (b & 0x8000) ? -(int)(b & 0x7fff) : (int)b;
  return ia - ib <= 1 && ib - ia <= 1;
}

static int copy_sample_rows(km_bench *b, const quant_ctx *c, void *dst, const void *src, size_t row_bytes, cudaStream_t s) {
  KM_CUDA_OR_FAIL(b, cudaMemcpy2DAsync(dst, row_bytes, src, c->stride * row_bytes, row_bytes, c->nsample,
                                       cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync((char *)dst + c->nsample * row_bytes, (const char *)src + (c->rows - 1) * row_bytes,
                                     row_bytes, cudaMemcpyDeviceToHost, s));
  return 0;
}

/* ---- per-case steps */

static int setup(km_bench *b, quant_ctx *c, const quant_params *p) {
  const km_model *m = km_bench_model(b);
  c->p = p;
  c->heads = m && m->num_kv_heads > 0 ? m->num_kv_heads : 8;
  c->d = p->head_dim;
  const size_t row_bytes = (size_t)c->heads * c->d * 2;
  c->tokens = (km_bench_big_bytes(b) + row_bytes - 1) / row_bytes;
  if (p->op == Q_DEQUANT_GATHER) {
    c->num_seqs = (int)((c->tokens + TOKENS_PER_SEQ - 1) / TOKENS_PER_SEQ);
    c->tokens = (size_t)c->num_seqs * TOKENS_PER_SEQ;
  }
  c->rows = c->tokens * c->heads;
  c->nsample = c->rows - 1 < SAMPLE_ROWS ? c->rows - 1 : SAMPLE_ROWS;
  c->stride = c->nsample > 1 ? (c->rows - 1) / c->nsample : 1;
  if (c->stride > 1 && c->stride % 2 == 0) c->stride--; /* odd: the samples visit every head */
  c->src = km_bench_device_alloc(b, c->rows * c->d * 2);
  c->packed = km_bench_device_alloc(b, c->rows * packed_row_bytes(p));
  const size_t sb = side_bytes(c);
  c->side = sb ? km_bench_device_alloc(b, sb) : NULL;
  c->out = p->op != Q_QUANTIZE ? km_bench_device_alloc(b, c->rows * c->d * 2) : NULL;
  if (!c->src || !c->packed || (sb && !c->side) || (p->op != Q_QUANTIZE && !c->out)) return -1;
  cudaStream_t s = km_bench_stream(b);
  const int outliers = !p->is_v;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(c->src, c->rows * c->d, km_bench_seed(b), 1.0f, c->d, outliers ? OUTLIER_EVERY : 0,
                                         OUTLIER_OFFSET, OUTLIER_SCALE, s));
  return 0;
}

/* Random permutation of the pool's blocks over the sequences (Fisher-Yates on a seeded splitmix). */
static int upload_block_table(km_bench *b, quant_ctx *c) {
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

/* Accuracy of the format on a fresh Gaussian V sample through the CPU reference alone (the codes it
 * makes are the kernel's, checked bit for bit above). */
static int v_accuracy(km_bench *b, const quant_ctx *c, km_ref_accuracy *acc) {
  const quant_params *p = c->p;
  const size_t n = SAMPLE_ROWS, d = c->d;
  uint16_t *dv = km_bench_device_alloc(b, n * d * 2);
  uint16_t *x = km_bench_host_alloc(b, n * d * 2), *y = km_bench_host_alloc(b, n * d * 2);
  uint8_t *q = km_bench_host_alloc(b, d);
  size_t *row_of = km_bench_host_alloc(b, n * sizeof *row_of);
  float scales[256];
  if (!dv || !x || !y || !q || !row_of || c->heads > 256) return -1;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(dv, n * d, km_bench_seed(b), 1.0f, (int)d, 0, 0, 1.0f, km_bench_stream(b)));
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(x, dv, n * d * 2, cudaMemcpyDeviceToHost, km_bench_stream(b)));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(km_bench_stream(b)));
  for (size_t k = 0; k < n; ++k) row_of[k] = k;
  if (is_fp8(p->fmt) && p->gran != KM_QUANT_PER_TOKEN_HEAD) calibrate(p, x, n, (int)d, c->heads, row_of, scales);
  for (size_t k = 0; k < n; ++k) {
    uint32_t side[1];
    const float ss = static_scale_of(p, scales, k, c->heads);
    ref_quantize_row(p, x + k * d, (int)d, ss, q, side);
    ref_dequantize_row(p, q, side, ss, (int)d, y + k * d);
  }
  km_ref_measure_accuracy(x, y, n, (int)d, km_bench_seed(b), acc);
  return 0;
}

typedef struct sample_bufs {
  uint16_t *x, *got_out, *ref_out;
  uint8_t *got_q, *ref_q;
  unsigned char *got_side, *ref_side;
  size_t *row_of;
} sample_bufs;

static int alloc_samples(km_bench *b, const quant_ctx *c, sample_bufs *sb) {
  const size_t n = c->nsample + 1, d = c->d, pq = packed_row_bytes(c->p);
  sb->x = km_bench_host_alloc(b, n * d * 2);
  sb->got_out = km_bench_host_alloc(b, n * d * 2);
  sb->ref_out = km_bench_host_alloc(b, n * d * 2);
  sb->got_q = km_bench_host_alloc(b, n * pq);
  sb->ref_q = km_bench_host_alloc(b, n * pq);
  sb->got_side = km_bench_host_alloc(b, n * 4 + 4);
  sb->ref_side = km_bench_host_alloc(b, n * 4 + 4);
  sb->row_of = km_bench_host_alloc(b, n * sizeof *sb->row_of);
  if (!sb->x || !sb->got_out || !sb->ref_out || !sb->got_q || !sb->ref_q || !sb->got_side || !sb->ref_side || !sb->row_of)
    return -1;
  for (size_t k = 0; k < n; ++k) sb->row_of[k] = sample_row(c, k);
  return 0;
}

/* Codes and side data of the sampled rows against the CPU reference, bit for bit (the V residual norm,
 * a second fp32 reduction, within one fp16 unit). */
static size_t check_codes(km_bench *b, const quant_ctx *c, sample_bufs *sb, const float *scales) {
  const quant_params *p = c->p;
  const size_t n = c->nsample + 1, d = c->d, pq = packed_row_bytes(p), sr = side_row_bytes(p);
  size_t bad = 0;
  for (size_t k = 0; k < n; ++k) {
    const float ss = static_scale_of(p, scales, sb->row_of[k], c->heads);
    ref_quantize_row(p, sb->x + k * d, (int)d, ss, sb->ref_q + k * pq, sb->ref_side + k * sr);
    for (size_t i = 0; i < pq; ++i)
      if (sb->got_q[k * pq + i] != sb->ref_q[k * pq + i] && bad++ < 10)
        km_bench_mismatch(b, "row %zu code byte %zu: got 0x%02X want 0x%02X", sb->row_of[k], i, sb->got_q[k * pq + i],
                          sb->ref_q[k * pq + i]);
    for (size_t i = 0; i < sr; i += 2) {
      uint16_t g, w;
      memcpy(&g, sb->got_side + k * sr + i, 2);
      memcpy(&w, sb->ref_side + k * sr + i, 2);
      const int residual = p->fmt == Q_TQ3 && i == 2;
      if (g != w && !(residual && (g - w == 1 || w - g == 1)) && bad++ < 10)
        km_bench_mismatch(b, "row %zu side half-word %zu: got 0x%04X want 0x%04X", sb->row_of[k], i / 2, g, w);
    }
  }
  return bad;
}

static size_t check_out(km_bench *b, const uint16_t *got, const uint16_t *want, const size_t *row_of, size_t n, int d) {
  size_t bad = 0;
  for (size_t k = 0; k < n; ++k)
    for (int i = 0; i < d; ++i)
      if (!bf16_close(got[k * d + i], want[k * d + i]) && bad++ < 10)
        km_bench_mismatch(b, "row %zu element %d: got 0x%04X want 0x%04X", row_of[k], i, got[k * d + i], want[k * d + i]);
  return bad;
}

static void set_accuracy(km_bench *b, const km_ref_accuracy *a, const char *suffix) {
  char name[32];
  snprintf(name, sizeof name, "rel_mse%s", suffix);
  km_bench_counter(b, name, a->rel_mse);
  snprintf(name, sizeof name, "cosine%s", suffix);
  km_bench_counter(b, name, a->cosine);
  snprintf(name, sizeof name, "qk_rel_err%s", suffix);
  km_bench_counter(b, name, a->qk_rel_err);
}

/* Quantize / dequantize: verify sampled rows, record accuracy. Returns 0 when timing may follow. */
static int verify_rows(km_bench *b, quant_ctx *c) {
  const quant_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  sample_bufs sb;
  float scales[256];
  const size_t n = c->nsample + 1, d = c->d, pq = packed_row_bytes(p), sr = side_row_bytes(p);
  if (alloc_samples(b, c, &sb) || c->heads > 256) return -1;
  if (copy_sample_rows(b, c, sb.x, c->src, d * 2, s)) return -1;
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  if (is_fp8(p->fmt) && p->gran != KM_QUANT_PER_TOKEN_HEAD) {
    calibrate(p, sb.x, n, (int)d, c->heads, sb.row_of, scales);
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->side, scales, side_bytes(c), cudaMemcpyHostToDevice, s));
  }
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->packed, 0xFF, c->rows * pq, s));
  if (sr) KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->side, 0xFF, c->rows * sr, s));
  if (p->op == Q_QUANTIZE) {
    KM_CUDA_OR_FAIL(b, enqueue_quantize(c, s));
  } else { /* the input codes come from the fast quantizer; the dequantizer under test is checked alone */
    const quant_params fast = {p->fmt, Q_QUANTIZE, p->gran, p->head_dim, p->is_v, p->block_size, 0};
    quant_ctx qc = *c;
    qc.p = &fast;
    KM_CUDA_OR_FAIL(b, enqueue_quantize(&qc, s));
    KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->out, 0xFF, c->rows * d * 2, s));
    KM_CUDA_OR_FAIL(b, enqueue_dequantize(c, s));
    if (copy_sample_rows(b, c, sb.got_out, c->out, d * 2, s)) return -1;
  }
  if (copy_sample_rows(b, c, sb.got_q, c->packed, pq, s)) return -1;
  if (sr && copy_sample_rows(b, c, sb.got_side, c->side, sr, s)) return -1;
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  size_t bad = 0;
  for (size_t k = 0; k < n; ++k) /* the CPU decode of the GPU's codes: the reference output and, for quantize, the reconstruction */
    ref_dequantize_row(p, sb.got_q + k * pq, sb.got_side + k * sr, static_scale_of(p, scales, sb.row_of[k], c->heads),
                       (int)d, sb.ref_out + k * d);
  if (p->op == Q_QUANTIZE) {
    bad = check_codes(b, c, &sb, scales);
    if (!km_bench_verified(b, bad, n * (pq + sr), "codes and side data bitwise (V residual norm +-1 fp16 ulp)")) return -1;
  } else {
    bad = check_out(b, sb.got_out, sb.ref_out, sb.row_of, n, (int)d);
    if (!km_bench_verified(b, bad, n * d, "<= 1 bf16 ulp of the CPU decode of the same codes (expected bitwise)")) return -1;
  }
  km_ref_accuracy acc;
  km_ref_measure_accuracy(sb.x, p->op == Q_QUANTIZE ? sb.ref_out : sb.got_out, n, (int)d, km_bench_seed(b), &acc);
  set_accuracy(b, &acc, "");
  if (!p->is_v && !v_accuracy(b, c, &acc)) set_accuracy(b, &acc, "_v");
  return 0;
}

/* Dequant + gather: all heads of sampled output tokens against the CPU decode of their pool slots. */
static int verify_gather(km_bench *b, quant_ctx *c) {
  const quant_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  const size_t d = c->d, hb = (size_t)c->heads * d, nt = GATHER_SAMPLE_TOKENS, bps = TOKENS_PER_SEQ / p->block_size;
  const size_t tstride = c->tokens / nt;
  uint8_t *q = km_bench_host_alloc(b, nt * hb);
  float *sc = km_bench_host_alloc(b, nt * c->heads * 4);
  uint16_t *got = km_bench_host_alloc(b, nt * hb * 2), *want = km_bench_host_alloc(b, nt * hb * 2);
  int32_t *table = km_bench_host_alloc(b, (c->tokens / p->block_size) * 4);
  size_t *row_of = km_bench_host_alloc(b, nt * c->heads * sizeof *row_of);
  if (!q || !sc || !got || !want || !table || !row_of) return -1;
  KM_CUDA_OR_FAIL(b, km_quant_fp8_quantize(c->src, c->packed, c->side, c->tokens, c->heads, c->d, kernel_fmt(p->fmt),
                                           KM_QUANT_PER_TOKEN_HEAD, s));
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->out, 0xFF, c->rows * d * 2, s));
  KM_CUDA_OR_FAIL(b, enqueue_dequantize(c, s));
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(table, c->table, (c->tokens / p->block_size) * 4, cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaMemcpy2DAsync(got, hb * 2, c->out, tstride * hb * 2, hb * 2, nt, cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  for (size_t k = 0; k < nt; ++k) { /* the pool slot each sampled token must come from, by the host's table */
    const size_t t = k * tstride, seq = t / TOKENS_PER_SEQ, i = t % TOKENS_PER_SEQ;
    const size_t slot = (size_t)table[seq * bps + i / p->block_size] * p->block_size + i % p->block_size;
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(q + k * hb, c->packed + slot * hb, hb, cudaMemcpyDeviceToHost, s));
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(sc + k * c->heads, (float *)c->side + slot * c->heads, c->heads * 4,
                                       cudaMemcpyDeviceToHost, s));
    for (int h = 0; h < c->heads; ++h) row_of[k * c->heads + h] = t * c->heads + h;
  }
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  for (size_t r = 0; r < nt * c->heads; ++r) km_ref_fp8_dequantize_row(q + r * d, (int)d, sc[r], ref_fmt(p->fmt), want + r * d);
  const size_t bad = check_out(b, got, want, row_of, nt * c->heads, (int)d);
  return km_bench_verified(b, bad, nt * hb, "<= 1 bf16 ulp of the CPU decode of the table's pool slot") ? 0 : -1;
}

static void fill_work(const quant_ctx *c, km_work *w) {
  const quant_params *p = c->p;
  const double bf16 = (double)c->rows * c->d * 2, packed = (double)c->rows * packed_row_bytes(p);
  const double side = (double)side_bytes(c);
  memset(w, 0, sizeof *w);
  if (p->op == Q_QUANTIZE) {
    w->bytes_read = bf16 + (side_row_bytes(p) ? 0 : side);
    w->bytes_written = packed + (side_row_bytes(p) ? side : 0);
  } else {
    w->bytes_read = packed + side + (p->op == Q_DEQUANT_GATHER ? (double)(c->tokens / p->block_size) * 4 : 0);
    w->bytes_written = bf16;
  }
  w->tokens = (double)c->tokens;
  w->layers = 1;
}

static void run_quant(km_bench *b, const void *params) {
  const quant_params *p = params;
  quant_ctx c;
  memset(&c, 0, sizeof c);
  if (setup(b, &c, p)) return;
  KM_RETURN_IF_STOPPED(b);
  if (p->op == Q_DEQUANT_GATHER) {
    if (upload_block_table(b, &c)) return;
    if (km_bench_verify_enabled(b) && verify_gather(b, &c)) return;
  } else if (km_bench_verify_enabled(b)) {
    if (verify_rows(b, &c)) return;
  } else if (p->op == Q_DEQUANTIZE || (is_fp8(p->fmt) && p->gran != KM_QUANT_PER_TOKEN_HEAD)) {
    float ones[256]; /* unverified run: still needs input codes and sane static scales */
    for (int i = 0; i < 256; ++i) ones[i] = 1.0f / 32.0f;
    if (is_fp8(p->fmt) && p->gran != KM_QUANT_PER_TOKEN_HEAD && c.heads <= 256)
      KM_CUDA(b, cudaMemcpyAsync(c.side, ones, side_bytes(&c), cudaMemcpyHostToDevice, km_bench_stream(b)));
    if (p->op == Q_DEQUANTIZE) {
      const quant_params fast = {p->fmt, Q_QUANTIZE, p->gran, p->head_dim, p->is_v, p->block_size, 0};
      quant_ctx qc = c;
      qc.p = &fast;
      KM_CUDA(b, enqueue_quantize(&qc, km_bench_stream(b)));
    }
  }
  KM_RETURN_IF_STOPPED(b);
  if (p->op == Q_DEQUANT_GATHER && !km_bench_verify_enabled(b))
    KM_CUDA(b, km_quant_fp8_quantize(c.src, c.packed, c.side, c.tokens, c.heads, c.d, kernel_fmt(p->fmt),
                                     KM_QUANT_PER_TOKEN_HEAD, km_bench_stream(b)));
  km_work w;
  fill_work(&c, &w);
  km_bench_measure(b, enqueue_case, &c, &w);
}

/* ---- the sweep: full granularity sweep at d128 (Qwen3-8B), per-token-head at d64 / d256 */

#define QP(name, ...) static const quant_params name = {__VA_ARGS__}
#define PTH KM_QUANT_PER_TOKEN_HEAD
#define PT KM_QUANT_PER_TENSOR
#define PH KM_QUANT_PER_HEAD

QP(e4q_pth64, Q_E4M3, Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(e4q_pth128, Q_E4M3, Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(e4q_pth256, Q_E4M3, Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(e4q_pt128, Q_E4M3, Q_QUANTIZE, PT, 128, 0, 0, 0);
QP(e4q_ph128, Q_E4M3, Q_QUANTIZE, PH, 128, 0, 0, 0);
QP(e4d_pth64, Q_E4M3, Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(e4d_pth128, Q_E4M3, Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(e4d_pth256, Q_E4M3, Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(e4d_pt128, Q_E4M3, Q_DEQUANTIZE, PT, 128, 0, 0, 0);
QP(e4d_ph128, Q_E4M3, Q_DEQUANTIZE, PH, 128, 0, 0, 0);
QP(e5q_pth64, Q_E5M2, Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(e5q_pth128, Q_E5M2, Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(e5q_pth256, Q_E5M2, Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(e5q_pt128, Q_E5M2, Q_QUANTIZE, PT, 128, 0, 0, 0);
QP(e5q_ph128, Q_E5M2, Q_QUANTIZE, PH, 128, 0, 0, 0);
QP(e5d_pth64, Q_E5M2, Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(e5d_pth128, Q_E5M2, Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(e5d_pth256, Q_E5M2, Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(e5d_pt128, Q_E5M2, Q_DEQUANTIZE, PT, 128, 0, 0, 0);
QP(e5d_ph128, Q_E5M2, Q_DEQUANTIZE, PH, 128, 0, 0, 0);
QP(e4g_bs16, Q_E4M3, Q_DEQUANT_GATHER, PTH, 128, 0, 16, 0);
QP(e5g_bs16, Q_E5M2, Q_DEQUANT_GATHER, PTH, 128, 0, 16, 0);
QP(u3q64, Q_U3, Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(u3q128, Q_U3, Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(u3q256, Q_U3, Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(u3d64, Q_U3, Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(u3d128, Q_U3, Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(u3d256, Q_U3, Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(tqq64, Q_TQ3, Q_QUANTIZE, PTH, 64, 0, 0, 0);
QP(tqq128, Q_TQ3, Q_QUANTIZE, PTH, 128, 0, 0, 0);
QP(tqq256, Q_TQ3, Q_QUANTIZE, PTH, 256, 0, 0, 0);
QP(tqq128v, Q_TQ3, Q_QUANTIZE, PTH, 128, 1, 0, 0);
QP(tqd64, Q_TQ3, Q_DEQUANTIZE, PTH, 64, 0, 0, 0);
QP(tqd128, Q_TQ3, Q_DEQUANTIZE, PTH, 128, 0, 0, 0);
QP(tqd256, Q_TQ3, Q_DEQUANTIZE, PTH, 256, 0, 0, 0);
QP(tqd128v, Q_TQ3, Q_DEQUANTIZE, PTH, 128, 1, 0, 0);
QP(s_e4q, Q_E4M3, Q_QUANTIZE, PTH, 128, 0, 0, 1);
QP(s_e4d, Q_E4M3, Q_DEQUANTIZE, PTH, 128, 0, 0, 1);
QP(s_u3q, Q_U3, Q_QUANTIZE, PTH, 128, 0, 0, 1);
QP(s_u3d, Q_U3, Q_DEQUANTIZE, PTH, 128, 0, 0, 1);
QP(s_tqq, Q_TQ3, Q_QUANTIZE, PTH, 128, 0, 0, 1);
QP(s_tqd, Q_TQ3, Q_DEQUANTIZE, PTH, 128, 0, 0, 1);

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
