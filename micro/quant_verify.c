/* The quant/ family's checks (micro/quant_run.h) and its accuracy figures. The timed instance runs once on
 * poisoned outputs; its whole output is compared on the device with the other implementation of the same
 * format (the scalar baselines for the fast kernels and the reverse: two independent implementations,
 * each checked against the CPU reference in tests/gpu_quant.c), and a slice of SLICE_ROWS rows at the
 * head and at the tail of the output on the CPU against micro/quant_ref.c. A TurboQuant variant that is
 * not bit for bit (km_tq3_variant_bitwise) is held to the adjacent code at a boundary instead. Accuracy is
 * measured through the CPU reference (whose codes are the kernels', as checked, or differ only there) on
 * one dataset per run and head_dim, so a sweep over granularities, formats or variants differs by the
 * format alone. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fill.h"
#include "quant_ref.h"
#include "quant_run.h"
#include "quant_scalar.h"
#include "verify.h"
#include "verify_paged.h"

enum {
  SLICE_ROWS = 2048,         /* rows checked on the CPU at each end of the output */
  GATHER_SLICE_TOKENS = 128, /* gather: tokens (all heads) checked on the CPU at each end */
  ACC_ROWS = 4096,           /* rows of the accuracy dataset */
  MAX_STATIC_HEADS = 256,    /* per-head scales kept on the stack */
};

int km_q_ref_fmt(km_q_fmt f) { return f == KM_Q_E4M3 ? KM_REF_E4M3 : KM_REF_E5M2; }

/* ---- CPU reference rows */

/* The CPU reference's encoding of one row of x (bf16 [d]); static fp8 scale `static_scale`. */
static void ref_quantize_row(const km_q_params *p, const uint16_t *x, int d, float static_scale, uint8_t *q, void *side) {
  if (km_q_is_fp8(p->fmt)) {
    float sc;
    km_ref_fp8_quantize_row(x, d, p->gran == KM_QUANT_PER_TOKEN_HEAD ? -1.0f : static_scale, km_q_ref_fmt(p->fmt), q, &sc);
    if (side) memcpy(side, &sc, 4);
  } else if (p->fmt == KM_Q_U3) {
    km_ref_u3_quantize_row(x, d, q);
  } else {
    uint16_t sd[2];
    km_ref_tq3_quantize_row(x, d, p->is_v, q, sd);
    memcpy(side, sd, p->is_v ? 4 : 2);
  }
}

static void ref_dequantize_row(const km_q_params *p, const uint8_t *q, const void *side, float static_scale, int d,
                               uint16_t *out) {
  if (km_q_is_fp8(p->fmt)) {
    float sc = static_scale;
    if (p->gran == KM_QUANT_PER_TOKEN_HEAD) memcpy(&sc, side, 4);
    km_ref_fp8_dequantize_row(q, d, sc, km_q_ref_fmt(p->fmt), out);
  } else if (p->fmt == KM_Q_U3) {
    km_ref_u3_dequantize_row(q, d, out);
  } else {
    uint16_t nh;
    memcpy(&nh, side, 2);
    km_ref_tq3_dequantize_row(q, nh, d, out);
  }
}

/* Static fp8 scales calibrated on n rows of x (amax / fp8 max, per tensor or per head); row k of x is
 * row row_of[k] of the tensor. Elements beyond the calibrated amax saturate, as with any calibrated scale. */
static void calibrate(const km_q_params *p, const uint16_t *x, size_t n, int d, int heads, const size_t *row_of,
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
  for (int h = 0; h < ns; ++h) scales[h] = scales[h] > 0 ? scales[h] / km_ref_fp8_max(km_q_ref_fmt(p->fmt)) : 1.0f;
}

static float static_scale_of(const km_q_params *p, const float *scales, size_t row, int heads) {
  if (!km_q_static_scales(p)) return 0.0f;
  return p->gran == KM_QUANT_PER_HEAD ? scales[row % (size_t)heads] : scales[0];
}

/* ---- the CPU slice: rows [0, head) and [total - tail, total) */

typedef struct q_slice {
  size_t head, tail, total;
  size_t *row_of; /* tensor row of slice row k */
} q_slice;

static int make_slice(km_bench *b, size_t total, size_t each, q_slice *sl) {
  sl->total = total;
  sl->head = total < each ? total : each;
  sl->tail = total - sl->head < each ? total - sl->head : each;
  sl->row_of = km_bench_host_alloc(b, (sl->head + sl->tail) * sizeof *sl->row_of);
  if (!sl->row_of) return -1;
  for (size_t k = 0; k < sl->head + sl->tail; ++k) sl->row_of[k] = k < sl->head ? k : total - sl->tail + (k - sl->head);
  return 0;
}

/* The slice's rows of a device array of row_bytes-long rows into dst (enqueued on the bench stream). */
static int copy_slice(km_bench *b, const q_slice *sl, void *dst, const void *src, size_t row_bytes) {
  cudaStream_t s = km_bench_stream(b);
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(dst, src, sl->head * row_bytes, cudaMemcpyDeviceToHost, s));
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync((char *)dst + sl->head * row_bytes,
                                     (const char *)src + (sl->total - sl->tail) * row_bytes, sl->tail * row_bytes,
                                     cudaMemcpyDeviceToHost, s));
  return 0;
}

/* ---- comparisons */

typedef void (*q_compare)(km_check *, const char *, const void *, const void *, size_t, int, size_t, int);

/* Per-row side data of `rows` rows: fp8 scales and TurboQuant norms bitwise, the V residual norm (a second
 * fp32 reduction) within one fp16 unit; `ulp` more fp16 units for the norms of a TurboQuant variant that is
 * not bit for bit. */
static void check_side(km_check *k, q_compare cmp, const km_q_params *p, const void *got, const void *want,
                       size_t rows, int ulp) {
  if (km_q_is_fp8(p->fmt)) {
    cmp(k, "scale", got, want, rows, 4, 1, 0);
  } else if (!p->is_v) {
    cmp(k, "norm", got, want, rows, 2, 1, ulp);
  } else {
    cmp(k, "norm", got, want, rows, 2, 2, ulp);
    cmp(k, "residual norm", (const uint16_t *)got + 1, (const uint16_t *)want + 1, rows, 2, 2, 1 + ulp);
  }
}

/* A TurboQuant quantizer whose sums round differently from the reference's (kernels/quant_3bit.h): its
 * codes may be the adjacent ones at a boundary and its norms one fp16 unit off. */
static int tq3_tolerant(const km_q_params *p) {
  return p->fmt == KM_Q_TQ3 && !km_tq3_variant_bitwise(km_tq3_resolve(p->variant, p->head_dim, p->is_v));
}

/* Such a variant's codes on the device: the adjacent code for at most this many (of rows * d), none further. */
static size_t tq3_max_near(size_t codes) { return codes / 100000 > 8 ? codes / 100000 : 8; }

/* ... and on the CPU: a code that differs must be the adjacent one, with the exact rotated value within
 * TQ3_NEAR_REL (relative) of the boundary between the two (km_ref_tq3_codes_outside). Returns the codes that
 * are not, naming them by their element of the tensor. */
#define TQ3_NEAR_REL (1.0 / 65536.0)
typedef struct tq3_slice_ctx {
  km_bench *b;
  const q_slice *sl;
  int d;
} tq3_slice_ctx;

static void tq3_slice_mismatch(void *arg, size_t row, int i, int got, int want, double u) {
  const tq3_slice_ctx *t = arg;
  km_bench_mismatch(t->b, "CPU slice code[%zu]: got %d, want %d (exact rotated value %.9g)",
                    t->sl->row_of[row] * (size_t)t->d + (size_t)i, got, want, u);
}

static size_t check_tq3_slice_codes(km_bench *b, const q_slice *sl, const uint16_t *x, const uint8_t *got_q,
                                    const uint8_t *ref_q, int d) {
  tq3_slice_ctx t = {b, sl, d};
  return km_ref_tq3_codes_outside(x, got_q, ref_q, sl->head + sl->tail, d, TQ3_NEAR_REL, NULL, tq3_slice_mismatch,
                                  &t);
}

#define TOL_CODES "codes and side data bitwise (V residual norm +-1 fp16 ulp)"
#define TOL_CODES_NEAR                                                                                       \
  "codes bitwise, or the adjacent code where the exact rotated value is within 2^-16 (relative) of their " \
  "boundary (on the device: at most max(8, 1e-5 of the codes) adjacent, none further); norm +-1 fp16 ulp, " \
  "V residual norm +-2"
#define TOL_OUT "<= 1 bf16 ulp (expected bitwise)"
#define TOL_WHERE "the whole output against the other implementation on the device, 2 x 2048 rows against the CPU"

/* Quantize: the timed instance's codes and side data, then the slice on the CPU. */
static void check_quantize(km_bench *b, km_check *k, km_q_ctx *c, const q_slice *sl, const uint16_t *x,
                           const float *scales) {
  const km_q_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  const size_t d = c->d, pq = km_q_packed_row_bytes(p), sr = km_q_side_row_bytes(p), n = sl->head + sl->tail;
  uint8_t *t_packed = km_bench_device_alloc(b, c->rows * pq);
  void *t_side = sr ? km_bench_device_alloc(b, c->rows * sr) : c->side;
  uint8_t *got_q = km_bench_host_alloc(b, n * pq), *ref_q = km_bench_host_alloc(b, n * pq);
  unsigned char *got_side = km_bench_host_alloc(b, n * 4 + 4), *ref_side = km_bench_host_alloc(b, n * 4 + 4);
  if (!t_packed || (sr && !t_side) || !got_q || !ref_q || !got_side || !ref_side) return;
  KM_CUDA(b, cudaMemsetAsync(c->packed, 0xFF, c->rows * pq, s));
  if (sr) KM_CUDA(b, cudaMemsetAsync(c->side, 0xFF, c->rows * sr, s));
  KM_CUDA(b, km_q_enqueue(c, 0, s));
  KM_CUDA(b, km_q_quantize(c, !p->scalar, t_packed, t_side, s));
  const int tolerant = tq3_tolerant(p);
  if (tolerant)
    km_check_device_codes3(k, "code", c->packed, t_packed, c->rows, (int)d, tq3_max_near(c->rows * d));
  else
    km_check_device(k, "code word", c->packed, t_packed, c->rows * pq / 4, 4, 1, 0);
  if (sr) check_side(k, km_check_device, p, c->side, t_side, c->rows, tolerant);
  if (copy_slice(b, sl, got_q, c->packed, pq) || (sr && copy_slice(b, sl, got_side, c->side, sr))) return;
  KM_CUDA(b, cudaStreamSynchronize(s));
  for (size_t r = 0; r < n; ++r)
    ref_quantize_row(p, x + r * d, (int)d, static_scale_of(p, scales, sl->row_of[r], c->heads), ref_q + r * pq,
                     ref_side + r * sr);
  if (tolerant)
    km_check_add(k, check_tq3_slice_codes(b, sl, x, got_q, ref_q, (int)d), n * d);
  else
    km_check_host(k, "CPU slice code word", got_q, ref_q, n * pq / 4, 4, 1, 0);
  if (sr) check_side(k, km_check_host, p, got_side, ref_side, n, tolerant);
}

/* Dequantize (its input codes from the fast quantizer): the timed instance's output, then the slice
 * against the CPU decode of the same codes. */
static void check_dequantize(km_bench *b, km_check *k, km_q_ctx *c, const q_slice *sl, const float *scales) {
  const km_q_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  const size_t d = c->d, pq = km_q_packed_row_bytes(p), sr = km_q_side_row_bytes(p), n = sl->head + sl->tail;
  uint16_t *t_out = km_bench_device_alloc(b, c->rows * d * 2);
  uint8_t *q = km_bench_host_alloc(b, n * pq);
  unsigned char *side = km_bench_host_alloc(b, n * 4 + 4);
  uint16_t *got = km_bench_host_alloc(b, n * d * 2), *want = km_bench_host_alloc(b, n * d * 2);
  if (!t_out || !q || !side || !got || !want) return;
  KM_CUDA(b, km_q_quantize(c, 0, c->packed, c->side, s));
  KM_CUDA(b, cudaMemsetAsync(c->out, 0xFF, c->rows * d * 2, s));
  KM_CUDA(b, km_q_enqueue(c, 0, s));
  KM_CUDA(b, km_q_dequantize(c, !p->scalar, t_out, s));
  km_check_device(k, "output", c->out, t_out, c->rows * d, 2, 1, 1);
  if (copy_slice(b, sl, q, c->packed, pq) || (sr && copy_slice(b, sl, side, c->side, sr)) ||
      copy_slice(b, sl, got, c->out, d * 2))
    return;
  KM_CUDA(b, cudaStreamSynchronize(s));
  for (size_t r = 0; r < n; ++r)
    ref_dequantize_row(p, q + r * pq, side + r * sr, static_scale_of(p, scales, sl->row_of[r], c->heads), (int)d,
                       want + r * d);
  km_check_host(k, "CPU slice output", got, want, n * d, 2, 1, 1);
}

int km_q_verify_rows(km_bench *b, km_q_ctx *c) {
  const km_q_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  q_slice sl;
  km_check k;
  float scales[MAX_STATIC_HEADS];
  if (c->heads > MAX_STATIC_HEADS || make_slice(b, c->rows, SLICE_ROWS, &sl) || km_check_init(&k, b)) return -1;
  const size_t n = sl.head + sl.tail;
  uint16_t *x = km_bench_host_alloc(b, n * c->d * 2);
  if (!x || copy_slice(b, &sl, x, c->src, (size_t)c->d * 2)) return -1;
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  if (km_q_static_scales(p)) {
    calibrate(p, x, n, c->d, c->heads, sl.row_of, scales);
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(c->side, scales, km_q_side_bytes(c), cudaMemcpyHostToDevice, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
  }
  if (p->op == KM_Q_QUANTIZE) {
    check_quantize(b, &k, c, &sl, x, scales);
    return km_check_done(&k, tq3_tolerant(p) ? TOL_CODES_NEAR "; " TOL_WHERE : TOL_CODES "; " TOL_WHERE) ? 0 : -1;
  }
  check_dequantize(b, &k, c, &sl, scales);
  return km_check_done(&k, TOL_OUT "; " TOL_WHERE) ? 0 : -1;
}

/* ---- dequantize + gather */

/* The pool seen as a paged KV cache of `elem` -byte elements, `width` of them per (token, head). */
static km_paged_geom pool_geom(const km_q_ctx *c, int width, int elem) {
  km_paged_geom g;
  memset(&g, 0, sizeof g);
  g.layout = KM_PAGED_NHD;
  g.block_size = c->p->block_size;
  g.kv_heads = c->heads;
  g.head_dim = width;
  g.elem_bytes = elem;
  g.num_blocks = (int64_t)(c->tokens / (size_t)c->p->block_size);
  g.num_seqs = c->num_seqs;
  g.blocks_per_seq = KM_Q_TOKENS_PER_SEQ / c->p->block_size;
  return g;
}

/* The gather's slice on the CPU: all heads of the slice's tokens against the CPU decode of the pool slot
 * the host's table names, each slot staged by its own copy. */
static void check_gather_slice(km_bench *b, km_check *k, km_q_ctx *c) {
  const km_q_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  const size_t d = c->d, hb = (size_t)c->heads * d, bps = KM_Q_TOKENS_PER_SEQ / p->block_size;
  q_slice sl;
  if (make_slice(b, c->tokens, GATHER_SLICE_TOKENS, &sl)) return;
  const size_t nt = sl.head + sl.tail;
  uint8_t *q = km_bench_host_alloc(b, nt * hb);
  float *sc = km_bench_host_alloc(b, nt * c->heads * 4);
  uint16_t *got = km_bench_host_alloc(b, nt * hb * 2), *want = km_bench_host_alloc(b, nt * hb * 2);
  int32_t *table = km_bench_host_alloc(b, (c->tokens / p->block_size) * 4);
  if (!q || !sc || !got || !want || !table) return;
  KM_CUDA(b, cudaMemcpyAsync(table, c->table, (c->tokens / p->block_size) * 4, cudaMemcpyDeviceToHost, s));
  if (copy_slice(b, &sl, got, c->out, hb * 2)) return;
  KM_CUDA(b, cudaStreamSynchronize(s));
  for (size_t j = 0; j < nt; ++j) {
    const size_t t = sl.row_of[j], seq = t / KM_Q_TOKENS_PER_SEQ, i = t % KM_Q_TOKENS_PER_SEQ;
    const size_t slot = (size_t)table[seq * bps + i / p->block_size] * p->block_size + i % p->block_size;
    KM_CUDA(b, cudaMemcpyAsync(q + j * hb, c->packed + slot * hb, hb, cudaMemcpyDeviceToHost, s));
    KM_CUDA(b, cudaMemcpyAsync(sc + j * c->heads, (float *)c->side + slot * c->heads, c->heads * 4,
                               cudaMemcpyDeviceToHost, s));
  }
  KM_CUDA(b, cudaStreamSynchronize(s));
  for (size_t r = 0; r < nt * c->heads; ++r)
    km_ref_fp8_dequantize_row(q + r * d, (int)d, sc[r], km_q_ref_fmt(p->fmt), want + r * d);
  km_check_host(k, "CPU slice output", got, want, nt * hb, 2, 1, 1);
}

int km_q_verify_gather(km_bench *b, km_q_ctx *c) {
  const km_q_params *p = c->p;
  cudaStream_t s = km_bench_stream(b);
  const size_t d = c->d;
  uint8_t *t_codes = km_bench_device_alloc(b, c->rows * d);
  float *t_scales = km_bench_device_alloc(b, c->rows * 4);
  uint16_t *t_out = km_bench_device_alloc(b, c->rows * d * 2);
  km_check k;
  if (!t_codes || !t_scales || !t_out || km_check_init(&k, b)) return -1;
  const km_paged_geom codes = pool_geom(c, (int)d, 1), scales = pool_geom(c, 1, 4);
  KM_CUDA_OR_FAIL(b, km_q_quantize(c, 0, c->packed, c->side, s)); /* the pool: fp8 codes, per-token-head scales */
  KM_CUDA_OR_FAIL(b, cudaMemsetAsync(c->out, 0xFF, c->rows * d * 2, s));
  KM_CUDA_OR_FAIL(b, km_q_enqueue(c, 0, s));
  KM_CUDA_OR_FAIL(b, km_verify_paged_gather(&codes, c->packed, c->table, t_codes, s));
  KM_CUDA_OR_FAIL(b, km_verify_paged_gather(&scales, c->side, c->table, t_scales, s));
  KM_CUDA_OR_FAIL(b, km_scalar_fp8_dequantize(t_codes, t_scales, t_out, c->tokens, c->heads, c->d,
                                              km_q_kernel_fmt(p->fmt), KM_QUANT_PER_TOKEN_HEAD, s));
  km_check_device(&k, "output", c->out, t_out, c->rows * d, 2, 1, 1);
  check_gather_slice(b, &k, c);
  return km_check_done(&k, TOL_OUT "; the whole output against a trusted gather of codes and scales then the scalar "
                                   "dequantize, 2 x 128 tokens against the CPU decode of their pool slots")
             ? 0
             : -1;
}

/* ---- accuracy on the run's dataset */

/* ACC_ROWS rows of head_dim d like the case's data (K: outlier channels; V: Gaussian), drawn from the run's
 * seed: the same rows in every case of one run. Host copy, or NULL after failing the case. */
static uint16_t *dataset(km_bench *b, int d, int v_like) {
  const size_t n = (size_t)ACC_ROWS * d;
  const uint64_t seed = km_bench_run_seed(b) ^ ((uint64_t)d << 40) ^ (v_like ? 0x56ull : 0x4Bull);
  uint16_t *dev = km_bench_device_alloc(b, n * 2), *host = km_bench_host_alloc(b, n * 2);
  if (!dev || !host) return NULL;
  cudaStream_t s = km_bench_stream(b);
  cudaError_t e = km_fill_normal_bf16(dev, n, seed, 1.0f, d, v_like ? 0 : KM_Q_OUTLIER_EVERY, KM_Q_OUTLIER_OFFSET,
                                      KM_Q_OUTLIER_SCALE, s);
  if (e == cudaSuccess) e = cudaMemcpyAsync(host, dev, n * 2, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    km_bench_fail(b, "accuracy dataset: %s", cudaGetErrorString(e));
    return NULL;
  }
  return host;
}

/* Quantize and dequantize every dataset row with the CPU reference (static scales calibrated on the
 * dataset, row k in head k % heads) and measure the error; q.k queries drawn from the run's seed too. */
static int accuracy_on(km_bench *b, const km_q_ctx *c, int v_like, km_ref_accuracy *acc) {
  const km_q_params *p = c->p;
  const size_t n = ACC_ROWS, d = c->d;
  uint16_t *x = dataset(b, (int)d, v_like), *y = km_bench_host_alloc(b, n * d * 2);
  uint8_t *q = km_bench_host_alloc(b, d);
  size_t *row_of = km_bench_host_alloc(b, n * sizeof *row_of);
  float scales[MAX_STATIC_HEADS];
  if (!x || !y || !q || !row_of || c->heads > MAX_STATIC_HEADS) return -1;
  for (size_t k = 0; k < n; ++k) row_of[k] = k;
  if (km_q_static_scales(p)) calibrate(p, x, n, (int)d, c->heads, row_of, scales);
  for (size_t k = 0; k < n; ++k) {
    uint32_t side[1];
    const float ss = static_scale_of(p, scales, k, c->heads);
    ref_quantize_row(p, x + k * d, (int)d, ss, q, side);
    ref_dequantize_row(p, q, side, ss, (int)d, y + k * d);
  }
  km_ref_measure_accuracy(x, y, n, (int)d, km_bench_run_seed(b) ^ 0x716bull, acc);
  return 0;
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

int km_q_accuracy(km_bench *b, const km_q_ctx *c) {
  km_ref_accuracy acc;
  if (accuracy_on(b, c, c->p->is_v, &acc)) return -1;
  set_accuracy(b, &acc, "");
  if (c->p->is_v) return 0;
  if (accuracy_on(b, c, 1, &acc)) return -1;
  set_accuracy(b, &acc, "_v");
  return 0;
}
