/* prefix/prefill/...: the compute a reused prefix token saves, so that the saving has a time. One layer's
 * linear GEMMs (QKV, O, gate/up, down; an MoE layer's active experts as batched GEMMs) on a chunk of
 * tokens, with cuBLASLt in bf16, timed as one enqueue; per prefill token over all layers, with the
 * attention FLOPs at the prefix length timed at the rate of a large square GEMM measured beside it. The
 * square GEMM is also its own row: the ceiling. Every timed output is checked whole against a plain
 * fp32 GEMM on the device, itself checked against a CPU GEMM in double on a small shape, outputs
 * poisoned (NaN) first. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fill.h"
#include "prefill_cublaslt.h"
#include "prefill_gemm_ref.h"
#include "prefill_shapes.h"
#include "prefix_cases.h"
#include "prefix_ref.h"
#include "sparse_ref.h"

/* The ceiling: cuBLASLt on a square GEMM this large, bf16 in and out, fp32 accumulation. */
#define SQUARE 8192
/* Activations ~ N(0, 1), weights ~ N(0, 0.02^2), the usual initialisation scale. */
#define IN_STD 1.0f
#define WEIGHT_STD 0.02f
/* The shape checked on the CPU: not multiples of the reference's 64-wide tiles, two batch elements. */
enum { SMALL_T = 48, SMALL_N = 80, SMALL_K = 136, SMALL_BATCH = 2 };

typedef struct pf_gemm {
  km_prefill_gemm g;
  uint16_t *in, *weight, *out;
  km_lt_gemm *plan;
} pf_gemm;

typedef struct pf_run {
  km_lt *lt;
  int n;
  pf_gemm gemm[KM_PREFILL_MAX_GEMMS];
  int status; /* cuBLAS's status of a failed launch */
} pf_run;

/* The reference's buffers (fp32 sums and sums of |products|), sized for the largest output checked. */
typedef struct pf_check {
  float *ref, *mag;
  unsigned long long *counts; /* [0] wrong elements, [1] the first wrong index */
  size_t cap;
} pf_check;

static size_t in_elems(const km_prefill_gemm *g) { return (size_t)g->batch * g->tokens * g->k; }
static size_t weight_elems(const km_prefill_gemm *g) { return (size_t)g->batch * g->n * g->k; }
static size_t out_elems(const km_prefill_gemm *g) { return (size_t)g->batch * g->tokens * g->n; }

static cudaError_t enq_gemms(void *arg, int rep, cudaStream_t s) {
  pf_run *r = arg;
  for (int i = 0; i < r->n; i++) {
    const pf_gemm *p = &r->gemm[i];
    int st = km_lt_gemm_run(p->plan, p->in, p->weight, p->out, s);
    if (st) {
      r->status = st;
      return cudaErrorUnknown;
    }
  }
  return cudaSuccess;
}

static void free_lt(void *p) { km_lt_destroy(p); }
static void free_plan(void *p) { km_lt_gemm_free(p); }

static km_lt *lt_for(km_bench *b) {
  void *ws = km_bench_device_alloc(b, KM_LT_WORKSPACE_BYTES);
  km_lt *lt = NULL;
  char err[256];
  if (!ws) return NULL;
  if (km_lt_create(ws, &lt, err, sizeof err)) {
    km_bench_fail(b, "%s", err);
    return NULL;
  }
  km_bench_defer(b, free_lt, lt);
  return lt;
}

/* Buffers, fresh random inputs and weights, and a plan per GEMM. 0 ok; -1 failed or skipped. */
static int setup(km_bench *b, km_lt *lt, pf_run *r, const km_prefill_gemm *g, int n) {
  cudaStream_t s = km_bench_stream(b);
  char err[256];
  memset(r, 0, sizeof *r);
  r->lt = lt;
  r->n = n;
  for (int i = 0; i < n; i++) {
    pf_gemm *p = &r->gemm[i];
    p->g = g[i];
    p->in = km_bench_device_alloc(b, in_elems(&p->g) * 2);
    p->weight = km_bench_device_alloc(b, weight_elems(&p->g) * 2);
    p->out = km_bench_device_alloc(b, out_elems(&p->g) * 2);
    if (!p->in || !p->weight || !p->out) return -1;
    KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(p->in, in_elems(&p->g), km_bench_seed(b), IN_STD, p->g.k, 0, 0, 1.0f, s));
    KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(p->weight, weight_elems(&p->g), km_bench_seed(b), WEIGHT_STD, p->g.k, 0, 0,
                                           1.0f, s));
    if (km_lt_gemm_plan(lt, p->g.tokens, p->g.n, p->g.k, p->g.batch, &p->plan, err, sizeof err)) {
      km_bench_fail(b, "%s: %s", p->g.what, err);
      return -1;
    }
    km_bench_defer(b, free_plan, p->plan);
  }
  return 0;
}

static int check_buffers(km_bench *b, pf_check *c, size_t cap) {
  c->cap = cap;
  c->ref = km_bench_device_alloc(b, cap * sizeof *c->ref);
  c->mag = km_bench_device_alloc(b, cap * sizeof *c->mag);
  c->counts = km_bench_device_alloc(b, 2 * sizeof *c->counts);
  return c->ref && c->mag && c->counts ? 0 : -1;
}

/* Poison every output, run the timed enqueue once, and compare each output whole with the reference.
 * The wrong elements are added to *bad and the checked ones to *n. 0 ok; -1 on a CUDA or cuBLAS error. */
static int check_outputs(km_bench *b, pf_run *r, const pf_check *c, size_t *bad, size_t *n) {
  cudaStream_t s = km_bench_stream(b);
  for (int i = 0; i < r->n; i++)
    KM_CUDA_OR_FAIL(b, cudaMemsetAsync(r->gemm[i].out, 0xFF, out_elems(&r->gemm[i].g) * 2, s));
  if (enq_gemms(r, 0, s) != cudaSuccess) {
    km_bench_fail(b, "cuBLASLt matmul: %s", km_lt_status_string(r->lt, r->status));
    return -1;
  }
  for (int i = 0; i < r->n; i++) {
    const pf_gemm *p = &r->gemm[i];
    const size_t count = out_elems(&p->g);
    unsigned long long host[2];
    KM_CUDA_OR_FAIL(b, km_gemm_ref_bf16(p->in, p->weight, c->ref, c->mag, p->g.tokens, p->g.n, p->g.k, p->g.batch, s));
    KM_CUDA_OR_FAIL(b, km_gemm_compare_bf16(p->out, c->ref, c->mag, count, KM_PREFILL_OUT_REL, KM_PREFILL_OUT_SHARE,
                                            &c->counts[0], &c->counts[1], s));
    KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(host, c->counts, sizeof host, cudaMemcpyDeviceToHost, s));
    KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(s));
    if (host[0]) {
      uint16_t got;
      float ref, mag;
      KM_CUDA_OR_FAIL(b, cudaMemcpy(&got, p->out + host[1], sizeof got, cudaMemcpyDeviceToHost));
      KM_CUDA_OR_FAIL(b, cudaMemcpy(&ref, c->ref + host[1], sizeof ref, cudaMemcpyDeviceToHost));
      KM_CUDA_OR_FAIL(b, cudaMemcpy(&mag, c->mag + host[1], sizeof mag, cudaMemcpyDeviceToHost));
      km_bench_mismatch(b, "%s %d x %d x %d (batch %d): %llu wrong, first at %llu: %g, reference %g (sum|a*b| %g)",
                        p->g.what, p->g.tokens, p->g.n, p->g.k, p->g.batch, host[0], host[1],
                        km_bf16_to_float(got), ref, mag);
    }
    *bad += host[0];
    *n += count;
  }
  return 0;
}

/* The small shape: cuBLASLt and the reference GEMM each against the CPU in double, every element.
 * 0 ok (mismatches counted); -1 on an error. */
static int check_small(km_bench *b, km_lt *lt, const pf_check *c, size_t *bad, size_t *n) {
  const km_prefill_gemm g = {"cpu check", SMALL_T, SMALL_N, SMALL_K, SMALL_BATCH};
  pf_run r;
  if (setup(b, lt, &r, &g, 1) || check_outputs(b, &r, c, bad, n)) return -1;
  const size_t ni = in_elems(&g), nw = weight_elems(&g), no = out_elems(&g);
  uint16_t *in = km_bench_host_alloc(b, ni * 2), *w = km_bench_host_alloc(b, nw * 2);
  uint16_t *out = km_bench_host_alloc(b, no * 2);
  float *ref = km_bench_host_alloc(b, no * sizeof *ref);
  double *want = km_bench_host_alloc(b, no * sizeof *want), *mag = km_bench_host_alloc(b, no * sizeof *mag);
  if (!in || !w || !out || !ref || !want || !mag) return -1;
  KM_CUDA_OR_FAIL(b, cudaMemcpy(in, r.gemm[0].in, ni * 2, cudaMemcpyDeviceToHost));
  KM_CUDA_OR_FAIL(b, cudaMemcpy(w, r.gemm[0].weight, nw * 2, cudaMemcpyDeviceToHost));
  KM_CUDA_OR_FAIL(b, cudaMemcpy(out, r.gemm[0].out, no * 2, cudaMemcpyDeviceToHost));
  KM_CUDA_OR_FAIL(b, cudaMemcpy(ref, c->ref, no * sizeof *ref, cudaMemcpyDeviceToHost));
  for (int e = 0; e < g.batch; e++) {
    const size_t oi = (size_t)e * g.tokens * g.k, ow = (size_t)e * g.n * g.k, oo = (size_t)e * g.tokens * g.n;
    km_prefix_ref_gemm(in + oi, w + ow, want + oo, mag + oo, g.tokens, g.n, g.k);
  }
  for (size_t i = 0; i < no; i++) {
    const double got = km_bf16_to_float(out[i]);
    const int ref_ok = fabs(ref[i] - want[i]) <= KM_PREFILL_REF_SHARE(g.k) * mag[i];
    const int out_ok = fabs(got - want[i]) <= KM_PREFILL_OUT_REL * fabs(want[i]) + KM_PREFILL_OUT_SHARE * mag[i];
    if (!ref_ok || !out_ok)
      km_bench_mismatch(b, "small shape element %zu: cuBLASLt %g, fp32 reference %g, CPU %g", i, got, ref[i], want[i]);
    *bad += !ref_ok + !out_ok;
  }
  *n += 2 * no;
  return 0;
}

/* Verify the small shape on the CPU, then the run's outputs whole; reports the outcome. 1 verified. */
static int verify(km_bench *b, pf_run *r) {
  size_t most = (size_t)SMALL_BATCH * SMALL_T * SMALL_N, bad = 0, n = 0;
  for (int i = 0; i < r->n; i++)
    if (out_elems(&r->gemm[i].g) > most) most = out_elems(&r->gemm[i].g);
  pf_check c;
  if (check_buffers(b, &c, most) || check_small(b, r->lt, &c, &bad, &n) || check_outputs(b, r, &c, &bad, &n)) return 0;
  return km_bench_verified(b, bad, n,
                           "every output element: |cuBLASLt - fp32 GEMM| <= 2^-8 |ref| + 2^-12 sum|a*b|; the fp32 GEMM "
                           "within k 2^-24 sum|a*b| of a CPU GEMM in double (48x80x136, batch 2)");
}

static double gemm_bytes_read(const pf_run *r) {
  double bytes = 0;
  for (int i = 0; i < r->n; i++) bytes += 2.0 * (in_elems(&r->gemm[i].g) + weight_elems(&r->gemm[i].g));
  return bytes;
}

static double gemm_bytes_written(const pf_run *r) {
  double bytes = 0;
  for (int i = 0; i < r->n; i++) bytes += 2.0 * out_elems(&r->gemm[i].g);
  return bytes;
}

static const km_prefill_gemm square_gemm = {"square", SQUARE, SQUARE, SQUARE, 1};
static double square_flops(void) { return 2.0 * SQUARE * (double)SQUARE * SQUARE; }

/* The ceiling beside a layer row: the square GEMM set up, verified, timed as the stage gemm_ceiling.
 * TFLOP/s, or 0 when it failed (the case is failed). */
static double ceiling_tflops(km_bench *b, km_lt *lt) {
  pf_run sq;
  if (setup(b, lt, &sq, &square_gemm, 1)) return 0.0;
  if (km_bench_verify_enabled(b) && !verify(b, &sq)) return 0.0;
  const km_work w = {gemm_bytes_read(&sq), gemm_bytes_written(&sq), 0, 1, 0};
  km_stage st;
  if (km_bench_measure_stage(b, "gemm_ceiling", enq_gemms, &sq, &w, KM_STAGE_BATCHED, &st) != 0) return 0.0;
  return st.median_s > 0 ? square_flops() / st.median_s / 1e12 : 0.0;
}

double km_prefix_gemm_ceiling_tflops(km_bench *b) {
  km_lt *lt = lt_for(b);
  return lt ? ceiling_tflops(b, lt) : 0.0;
}

static void run_square(km_bench *b, km_lt *lt) {
  pf_run r;
  if (setup(b, lt, &r, &square_gemm, 1)) return;
  if (km_bench_verify_enabled(b) && !verify(b, &r)) return;
  const km_work w = {gemm_bytes_read(&r), gemm_bytes_written(&r), 0, 1, 0};
  double sec = km_bench_measure(b, enq_gemms, &r, &w);
  if (!(sec > 0)) return;
  km_bench_counter(b, "tflops", square_flops() / sec / 1e12);
  km_bench_label(b, "cuBLASLt bf16 %d^3, fp32 accumulation: %.0f TFLOP/s (the prefill rows' ceiling)", SQUARE,
                 square_flops() / sec / 1e12);
}

/* Counters and label of a layer row: per prefill token over all layers, and for the saving row what a
 * reused block saves against what hashing it costs. */
static void report_layer(km_bench *b, const km_prefill_params *p, const km_prefill_shape *s, double sec, km_lt *lt) {
  const double linear_tflops = km_prefill_linear_flops(s, p->chunk) / sec / 1e12;
  const double linear_us = sec * 1e6 / p->chunk * s->layers; /* per token, all layers */
  const double attn_flops = km_prefill_attention_flops(s, p->chunk, p->prefix) / p->chunk * s->layers;
  km_bench_counter(b, "tflops", linear_tflops);
  km_bench_counter(b, "us_per_prefill_token", linear_us);
  km_bench_counter(b, "attention_flops_per_token", attn_flops);
  char ceiling_text[160] = "ceiling not timed under --quick";
  double attn_us = NAN;
  if (!km_bench_quick(b) && !km_bench_smoke(b)) {
    const double ceiling = ceiling_tflops(b, lt);
    if (!(ceiling > 0)) return;
    attn_us = attn_flops / (ceiling * 1e12) * 1e6;
    km_bench_counter(b, "gemm_ceiling_tflops", ceiling);
    km_bench_counter(b, "pct_of_gemm_ceiling", 100.0 * linear_tflops / ceiling);
    km_bench_counter(b, "attention_us_per_token_at_ceiling", attn_us);
    snprintf(ceiling_text, sizeof ceiling_text, "%.0f%% of the %d^3 GEMM's %.0f; attention %.2f us/token at that rate",
             100.0 * linear_tflops / ceiling, SQUARE, ceiling, attn_us);
  }
  char saving_text[200] = "";
  if (p->saving && isfinite(attn_us)) {
    double hash_ns = 0;
    if (km_prefix_hash_ns_per_block(b, KM_HASH_SHA256, &hash_ns)) return;
    const double saved_us = (linear_us + attn_us) * KM_PREFIX_BLOCK;
    km_bench_counter(b, "saved_us_per_block", saved_us);
    km_bench_counter(b, "hash_ns_per_block", hash_ns);
    snprintf(saving_text, sizeof saving_text, "; a reused %d-token block saves %.0f us of prefill, hashing it costs "
             "%.0f ns (sha256, one thread): %.0fx", KM_PREFIX_BLOCK, saved_us, hash_ns, saved_us * 1e3 / hash_ns);
  }
  km_bench_label(b, "%s: %d-token chunk after %d: %.2f us/token over %d layers (GEMMs %.0f TFLOP/s, %s)%s", s->name,
                 p->chunk, p->prefix, linear_us, s->layers, linear_tflops, ceiling_text, saving_text);
}

static void run_layer(km_bench *b, const km_prefill_params *p, km_lt *lt) {
  km_prefill_shape s;
  km_prefill_gemm g[KM_PREFILL_MAX_GEMMS];
  char err[256];
  if (km_prefill_shape_resolve(km_bench_model(b), p->shape, &s, err, sizeof err)) {
    km_bench_skip(b, "%s", err);
    return;
  }
  const int n = km_prefill_layer_gemms(&s, p->chunk, g);
  if (n == 0) {
    km_bench_skip(b, "%d tokens x top-%d do not split evenly over %d experts", p->chunk, s.experts_active, s.experts);
    return;
  }
  pf_run r;
  if (setup(b, lt, &r, g, n)) return;
  if (km_bench_verify_enabled(b) && !verify(b, &r)) return;
  const km_work w = {gemm_bytes_read(&r), gemm_bytes_written(&r), p->chunk, 1, 0};
  double sec = km_bench_measure(b, enq_gemms, &r, &w);
  if (sec > 0) report_layer(b, p, &s, sec, lt);
}

void km_prefix_run_prefill(km_bench *b, const void *params) {
  const km_prefill_params *p = params;
  km_lt *lt = lt_for(b);
  if (!lt) return;
  if (p->kind == KM_PREFILL_SQUARE) run_square(b, lt);
  else run_layer(b, p, lt);
}
