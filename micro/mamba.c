/* mamba/: the hybrid model's per-token state update. The Mamba-2 selective state update (fp32 and bf16
 * state), the causal conv1d update, and the whole layer step (conv, then the SSM reading the conv output
 * in place), for Nemotron-H-8B's and Mamba-2 2.7B's shapes at batch 1..256. Each reads and writes its whole
 * state every token: GB/s against the copy ceiling is the figure. Verified against fp64 on the CPU over
 * the whole timed instance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "fill.h"
#include "mamba_ref.h"
#include "mamba_state.h"
#include "micro_tables.h"
#include "sparse_ref.h"
#include "verify.h"

typedef enum mamba_op { MB_SSM = 0, MB_CONV, MB_STEP, MB_OP_COUNT } mamba_op;

typedef struct mamba_params {
  mamba_op op;
  const km_mamba_model *m;
  int batch;
  km_mamba_state_dtype dtype;
  int gated; /* z gate (Mamba-2 with rmsnorm=False); both models gate in the norm instead */
} mamba_params;

/* Per-layer constants shared by the rotated copies; per-copy activations and states. */
typedef struct mb_run {
  mamba_op op;
  km_mamba_ssm_shape ss;
  km_mamba_conv_shape cs;
  int copies, d_inner, conv_dim;
  size_t state_bytes, conv_state_elems, row_elems, dt_elems, z_elems, out_elems; /* per copy */
  unsigned char *state;
  uint16_t *conv_state, *conv_in, *xbc, *dt, *z, *out, *weight, *bias;
  float *dt_bias, *A, *D;
} mb_run;

static km_mamba_ssm_args ssm_args(const mb_run *r, int c) {
  km_mamba_ssm_args a;
  uint16_t *xbc = r->xbc + (size_t)c * r->row_elems;
  a.state = r->state + (size_t)c * r->state_bytes;
  a.x = xbc;
  a.B = xbc + r->d_inner;
  a.C = xbc + r->d_inner + (size_t)r->ss.ngroups * r->ss.dstate;
  a.dt = r->dt + (size_t)c * r->dt_elems;
  a.z = r->z ? r->z + (size_t)c * r->z_elems : NULL;
  a.out = r->out + (size_t)c * r->out_elems;
  a.dt_bias = r->dt_bias;
  a.A = r->A;
  a.D = r->D;
  return a;
}

static km_mamba_conv_args conv_args(const mb_run *r, int c) {
  km_mamba_conv_args a;
  a.state = r->conv_state + (size_t)c * r->conv_state_elems;
  a.x = r->conv_in + (size_t)c * r->row_elems;
  a.weight = r->weight;
  a.bias = r->bias;
  a.out = r->xbc + (size_t)c * r->row_elems;
  return a;
}

static cudaError_t enq(void *arg, int rep, cudaStream_t st) {
  const mb_run *r = arg;
  const int c = rep % r->copies;
  cudaError_t e = cudaSuccess;
  if (r->op != MB_SSM) {
    const km_mamba_conv_args a = conv_args(r, c);
    e = km_mamba_conv_update(&r->cs, &a, st);
  }
  if (e == cudaSuccess && r->op != MB_CONV) {
    const km_mamba_ssm_args a = ssm_args(r, c);
    e = km_mamba_ssm_update(&r->ss, &a, st);
  }
  return e;
}

/* ------------------------------------------------------------------ shapes and bytes */
static mb_run make_run(const mamba_params *p) {
  mb_run r;
  memset(&r, 0, sizeof r);
  const km_mamba_model *m = p->m;
  r.op = p->op;
  r.d_inner = m->nheads * m->headdim;
  r.conv_dim = r.d_inner + 2 * m->ngroups * m->dstate;
  r.ss = (km_mamba_ssm_shape){p->batch, m->nheads, m->headdim, m->dstate, m->ngroups, p->dtype, 1, 1, p->gated,
                              r.conv_dim, m->nheads, r.conv_dim, r.d_inner};
  /* vLLM keeps width - 1 columns of conv state */
  r.cs = (km_mamba_conv_shape){p->batch, r.conv_dim, m->d_conv, m->d_conv - 1, 1, 1, r.conv_dim, r.conv_dim};
  r.state_bytes = (size_t)p->batch * km_mamba_ssm_state_bytes(&r.ss);
  r.conv_state_elems = (size_t)p->batch * r.cs.state_len * r.conv_dim;
  r.row_elems = (size_t)p->batch * r.conv_dim;
  r.dt_elems = (size_t)p->batch * m->nheads;
  r.z_elems = p->gated ? (size_t)p->batch * r.d_inner : 0;
  r.out_elems = (size_t)p->batch * r.d_inner;
  return r;
}

/* Bytes one step moves, each once: the SSM reads its state, x, B, C, dt (z), the per-head parameters, and
 * writes the state and y; the conv reads its state, the new column, weights and bias, and writes the state
 * and its output. */
static void ssm_bytes(const mb_run *r, double *rd, double *wr) {
  const km_mamba_ssm_shape *s = &r->ss;
  *rd += (double)r->state_bytes + 2.0 * s->batch * (r->d_inner + 2.0 * s->ngroups * s->dstate + s->nheads) +
         2.0 * r->z_elems + 12.0 * s->nheads;
  *wr += (double)r->state_bytes + 2.0 * r->out_elems;
}

static void conv_bytes(const mb_run *r, double *rd, double *wr) {
  *rd += 2.0 * r->conv_state_elems + 2.0 * r->row_elems + 2.0 * r->conv_dim * (r->cs.width + 1);
  *wr += 2.0 * r->conv_state_elems + 2.0 * r->row_elems;
}

static km_work step_work(const mb_run *r) {
  km_work w = {0, 0, r->ss.batch, 1, 0};
  if (r->op != MB_CONV) ssm_bytes(r, &w.bytes_read, &w.bytes_written);
  if (r->op != MB_SSM) conv_bytes(r, &w.bytes_read, &w.bytes_written);
  return w;
}

/* ------------------------------------------------------------------ data */
static void *alloc_copies(km_bench *b, size_t per_copy, int copies) {
  return km_bench_device_alloc(b, per_copy * copies + KM_VERIFY_GUARD_BYTES);
}

/* Mamba-2's initialisation (mamba_ssm modules/mamba2.py): dt_bias = softplus^-1(dt), dt log-uniform in
 * [0.001, 0.1]; A = -U(1, 16); D near 1. On the host: nheads values each. */
static int upload_head_params(km_bench *b, mb_run *r) {
  const int H = r->ss.nheads;
  float *h = km_bench_host_alloc(b, 3 * (size_t)H * sizeof *h);
  if (!h) return -1;
  uint64_t st = km_bench_seed(b);
  for (int i = 0; i < 3 * H; ++i) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const double u = (double)(st >> 11) / 9007199254740992.0;
    if (i < H) {
      const double dt = exp(log(0.001) + u * (log(0.1) - log(0.001)));
      h[i] = (float)(dt + log(-expm1(-dt)));
    } else if (i < 2 * H) {
      h[i] = (float)(-(1.0 + 15.0 * u));
    } else {
      h[i] = (float)(0.5 + u);
    }
  }
  KM_CUDA_OR_FAIL(b, cudaMemcpy(r->dt_bias, h, 3 * (size_t)H * sizeof *h, cudaMemcpyHostToDevice));
  return 0;
}

static int alloc_run(km_bench *b, mb_run *r, const mamba_params *p) {
  cudaStream_t st = km_bench_stream(b);
  const size_t ssm_touch = r->state_bytes * 2, conv_touch = r->conv_state_elems * 4 + r->row_elems * 4;
  r->copies = km_bench_rotation(b, (r->op != MB_CONV ? ssm_touch : 0) + (r->op != MB_SSM ? conv_touch : 0));
  const int n = r->copies;
  r->xbc = alloc_copies(b, r->row_elems * 2, n);
  r->dt_bias = km_bench_device_alloc(b, 3 * (size_t)r->ss.nheads * sizeof(float));
  if (!r->xbc || !r->dt_bias) return -1;
  r->A = r->dt_bias + r->ss.nheads;
  r->D = r->A + r->ss.nheads;
  if (upload_head_params(b, r)) return -1;
  KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->xbc, r->row_elems * n, km_bench_seed(b), 1.0f, 1, 0, 0, 1.0f, st));
  if (r->op != MB_CONV) {
    r->state = alloc_copies(b, r->state_bytes, n);
    r->dt = alloc_copies(b, r->dt_elems * 2, n);
    r->out = alloc_copies(b, r->out_elems * 2, n);
    r->z = p->gated ? alloc_copies(b, r->z_elems * 2, n) : NULL;
    if (!r->state || !r->dt || !r->out || (p->gated && !r->z)) return -1;
    const size_t state_elems = r->state_bytes / (r->ss.state_dtype == KM_MAMBA_STATE_F32 ? 4 : 2) * n;
    if (r->ss.state_dtype == KM_MAMBA_STATE_F32)
      KM_CUDA_OR_FAIL(b, km_fill_normal_f32((float *)r->state, state_elems, km_bench_seed(b), 0.0f, 1.0f, st));
    else
      KM_CUDA_OR_FAIL(b, km_fill_normal_bf16((uint16_t *)r->state, state_elems, km_bench_seed(b), 1.0f, 1, 0, 0, 1.0f, st));
    KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->dt, r->dt_elems * n, km_bench_seed(b), 1.0f, 1, 0, 0, 1.0f, st));
    if (r->z) KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->z, r->z_elems * n, km_bench_seed(b), 1.0f, 1, 0, 0, 1.0f, st));
  }
  if (r->op != MB_SSM) {
    r->conv_state = alloc_copies(b, r->conv_state_elems * 2, n);
    r->conv_in = alloc_copies(b, r->row_elems * 2, n);
    r->weight = km_bench_device_alloc(b, (size_t)r->conv_dim * (r->cs.width + 1) * 2);
    if (!r->conv_state || !r->conv_in || !r->weight) return -1;
    r->bias = r->weight + (size_t)r->conv_dim * r->cs.width;
    KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->conv_state, r->conv_state_elems * n, km_bench_seed(b), 1.0f, 1, 0, 0, 1.0f, st));
    KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->conv_in, r->row_elems * n, km_bench_seed(b), 1.0f, 1, 0, 0, 1.0f, st));
    /* conv1d weights ~ U(-1/sqrt(width), ..) in size: N(0, 0.5) */
    KM_CUDA_OR_FAIL(b, km_fill_normal_bf16(r->weight, (size_t)r->conv_dim * (r->cs.width + 1), km_bench_seed(b), 0.5f,
                                           1, 0, 0, 1.0f, st));
  }
  return 0;
}

/* ------------------------------------------------------------------ verification (the last copy, whose
 * buffers end at the guards) */
typedef struct mb_check {
  km_bench *b;
  size_t bad, n;
} mb_check;

static void note_bad(mb_check *c, const char *what, size_t i, double got, double want, double mag) {
  if (c->bad++ < 10) km_bench_mismatch(c->b, "%s[%zu] = %.9g, CPU %.9g (scale %.3g)", what, i, got, want, mag);
}

static int check_conv(mb_check *c, const mb_run *r, const uint16_t *state_in, const uint16_t *x, const uint16_t *w,
                      const uint16_t *state_got, const uint16_t *out_got) {
  uint16_t *want_state = km_bench_host_alloc(c->b, r->conv_state_elems * 2);
  double *want = km_bench_host_alloc(c->b, r->row_elems * sizeof(double)), *mag = km_bench_host_alloc(c->b, r->row_elems * sizeof(double));
  if (!want_state || !want || !mag) return -1;
  km_mamba_ref_conv(&r->cs, state_in, x, w, w + (size_t)r->conv_dim * r->cs.width, want_state, want, mag);
  for (size_t i = 0; i < r->conv_state_elems; ++i)
    if (state_got[i] != want_state[i]) note_bad(c, "conv state", i, km_bf16_to_float(state_got[i]), km_bf16_to_float(want_state[i]), 0);
  for (size_t i = 0; i < r->row_elems; ++i)
    if (!km_mamba_bf16_close(out_got[i], want[i], mag[i])) note_bad(c, "conv out", i, km_bf16_to_float(out_got[i]), want[i], mag[i]);
  c->n += r->conv_state_elems + r->row_elems;
  return 0;
}

static int check_ssm(mb_check *c, const mb_run *r, const km_mamba_ssm_ref_in *in, const void *state_got,
                     const uint16_t *out_got) {
  const km_mamba_ssm_shape *s = &r->ss;
  const size_t per_head = (size_t)s->headdim * s->dstate;
  double *ns = km_bench_host_alloc(c->b, per_head * sizeof(double)), *nm = km_bench_host_alloc(c->b, per_head * sizeof(double));
  double *y = km_bench_host_alloc(c->b, s->headdim * sizeof(double)), *ym = km_bench_host_alloc(c->b, s->headdim * sizeof(double));
  if (!ns || !nm || !y || !ym) return -1;
  const int f32 = s->state_dtype == KM_MAMBA_STATE_F32;
  for (int b = 0; b < s->batch; ++b)
    for (int h = 0; h < s->nheads; ++h) {
      km_mamba_ref_ssm_head(s, in, b, h, ns, nm, y, ym);
      const size_t head = (size_t)b * s->nheads + h;
      for (size_t i = 0; i < per_head; ++i) {
        const size_t at = head * per_head + i;
        const double got = f32 ? ((const float *)state_got)[at] : km_bf16_to_float(((const uint16_t *)state_got)[at]);
        const int ok = f32 ? km_mamba_f32_close((float)got, ns[i], nm[i])
                           : km_mamba_bf16_close(((const uint16_t *)state_got)[at], ns[i], nm[i]);
        if (!ok) note_bad(c, "state", at, got, ns[i], nm[i]);
      }
      for (int p = 0; p < s->headdim; ++p)
        if (!km_mamba_bf16_close(out_got[head * s->headdim + p], y[p], ym[p]))
          note_bad(c, "y", head * s->headdim + p, km_bf16_to_float(out_got[head * s->headdim + p]), y[p], ym[p]);
      c->n += per_head + s->headdim;
    }
  return 0;
}

static int guards_set(km_bench *b, const mb_run *r) {
  const int n = r->copies;
  if (km_verify_guard_set(b, (unsigned char *)r->xbc + r->row_elems * 2 * n)) return -1;
  if (r->op != MB_CONV && (km_verify_guard_set(b, r->state + r->state_bytes * n) ||
                           km_verify_guard_set(b, (unsigned char *)r->out + r->out_elems * 2 * n)))
    return -1;
  if (r->op != MB_SSM && km_verify_guard_set(b, (unsigned char *)r->conv_state + r->conv_state_elems * 2 * n)) return -1;
  return 0;
}

static size_t guards_check(km_bench *b, const mb_run *r) {
  const int n = r->copies;
  size_t bad = km_verify_guard_check(b, (unsigned char *)r->xbc + r->row_elems * 2 * n);
  if (r->op != MB_CONV)
    bad += km_verify_guard_check(b, r->state + r->state_bytes * n) +
           km_verify_guard_check(b, (unsigned char *)r->out + r->out_elems * 2 * n);
  if (r->op != MB_SSM) bad += km_verify_guard_check(b, (unsigned char *)r->conv_state + r->conv_state_elems * 2 * n);
  return bad;
}

static int verify(km_bench *b, mb_run *r) {
  const int v = r->copies - 1;
  cudaStream_t st = km_bench_stream(b);
  const km_mamba_ssm_args sa = ssm_args(r, v);
  const km_mamba_conv_args ca = conv_args(r, v);
  /* inputs as they are before the step */
  km_mamba_ssm_ref_in in;
  memset(&in, 0, sizeof in);
  uint16_t *conv_state_in = NULL, *conv_x = NULL, *weight = NULL;
  if (r->op != MB_SSM) {
    conv_state_in = km_verify_to_host(b, ca.state, r->conv_state_elems * 2);
    conv_x = km_verify_to_host(b, ca.x, r->row_elems * 2);
    weight = km_verify_to_host(b, r->weight, (size_t)r->conv_dim * (r->cs.width + 1) * 2);
    if (!conv_state_in || !conv_x || !weight) return -1;
    KM_CUDA_OR_FAIL(b, cudaMemsetAsync(ca.out, 0xff, r->row_elems * 2, st)); /* the conv's output, poisoned */
  }
  if (r->op != MB_CONV) {
    in.state_in = km_verify_to_host(b, sa.state, r->state_bytes);
    in.dt = km_verify_to_host(b, sa.dt, r->dt_elems * 2);
    in.z = sa.z ? km_verify_to_host(b, sa.z, r->z_elems * 2) : NULL;
    float *par = km_verify_to_host(b, r->dt_bias, 3 * (size_t)r->ss.nheads * sizeof(float));
    if (!in.state_in || !in.dt || (sa.z && !in.z) || !par) return -1;
    in.dt_bias = par;
    in.A = par + r->ss.nheads;
    in.D = par + 2 * r->ss.nheads;
    KM_CUDA_OR_FAIL(b, cudaMemsetAsync(sa.out, 0xff, r->out_elems * 2, st));
  }
  if (guards_set(b, r)) return -1;
  KM_CUDA_OR_FAIL(b, enq(r, v, st));
  mb_check c = {b, 0, 0};
  /* the SSM's x, B and C: the conv output row as the GPU left it (checked on its own just below) */
  uint16_t *xbc = km_verify_to_host(b, r->xbc + (size_t)v * r->row_elems, r->row_elems * 2);
  if (!xbc) return -1;
  if (r->op != MB_SSM) {
    uint16_t *state_got = km_verify_to_host(b, ca.state, r->conv_state_elems * 2);
    if (!state_got || check_conv(&c, r, conv_state_in, conv_x, weight, state_got, xbc)) return -1;
  }
  if (r->op != MB_CONV) {
    in.x = xbc;
    in.B = xbc + r->d_inner;
    in.C = xbc + r->d_inner + (size_t)r->ss.ngroups * r->ss.dstate;
    void *state_got = km_verify_to_host(b, sa.state, r->state_bytes);
    uint16_t *out_got = km_verify_to_host(b, sa.out, r->out_elems * 2);
    if (!state_got || !out_got || check_ssm(&c, r, &in, state_got, out_got)) return -1;
  }
  c.bad += guards_check(b, r);
  if (!km_bench_ok(b)) return -1;
  return km_bench_verified(b, c.bad, c.n,
                           "every element vs fp64: bf16 within 2^-8 |ref| + 2e-5 x scale, fp32 state within 1e-5 x "
                           "scale; conv state bitwise; guards untouched")
             ? 0
             : -1;
}

/* ------------------------------------------------------------------ the case */
static void run_mamba(km_bench *b, const void *params) {
  const mamba_params *p = params;
  mb_run r = make_run(p);
  const char *why = km_mamba_ssm_shape_error(&r.ss);
  if (!why) why = km_mamba_conv_shape_error(&r.cs);
  if (why) {
    km_bench_skip(b, "%s shape: %s", p->m->name, why);
    return;
  }
  if (alloc_run(b, &r, p) != 0) return;
  if (km_bench_verify_enabled(b) && verify(b, &r) != 0) return;
  const km_work w = step_work(&r);
  km_bench_measure(b, enq, &r, &w);
  km_bench_counter(b, "state_bytes_per_seq", (double)km_mamba_ssm_state_bytes(&r.ss));
  if (p->m->attn_kv_heads > 0) {
    /* the context at which one attention layer's K+V read (bf16) moves as many bytes per sequence as this step */
    const double kv_per_token = 2.0 * p->m->attn_kv_heads * p->m->attn_head_dim * 2.0;
    km_bench_counter(b, "crossover_ctx_by_bytes", (w.bytes_read + w.bytes_written) / p->batch / kv_per_token);
  }
}

/* ------------------------------------------------------------------ the sweep
 * The SSM update at batch 1..256 for both shapes in fp32 (the target: >= 90% of the copy ceiling at batch
 * >= 64) and bf16 state, one gated row, the conv update, and the whole layer step. */
#define MB(op, m, bat, dt, gated) (&(const mamba_params){op, &m, bat, dt, gated})
#define SSM(m, mname, dt, dname, bat, fl)                                                                        \
  {"mamba/ssm/" mname "/" dname "/b" #bat, "hybrid_mamba",                                                     \
   "Mamba-2 selective state update: whole SSM state read and written per token", run_mamba,                     \
   MB(MB_SSM, m, bat, dt, 0), fl, NULL}
#define CONV(m, mname, bat, fl)                                                                                  \
  {"mamba/conv/" mname "/b" #bat, "hybrid_mamba", "causal conv1d state update (width 4, state width - 1)",     \
   run_mamba, MB(MB_CONV, m, bat, KM_MAMBA_STATE_F32, 0), fl, NULL}
#define STEP(m, mname, dt, dname, bat, fl)                                                                       \
  {"mamba/step/" mname "/" dname "/b" #bat, "hybrid_mamba",                                                    \
   "one Mamba layer's decode step: conv update, then the SSM update reading the conv output", run_mamba,       \
   MB(MB_STEP, m, bat, dt, 0), fl, NULL}
#define NEMO km_mamba_nemotron_h_8b, "nemotron-h-8b"
#define M2 km_mamba_mamba2_2p7b, "mamba2-2.7b"
#define F32 KM_MAMBA_STATE_F32, "f32"
#define BF16 KM_MAMBA_STATE_BF16, "bf16"
#define SSM_(...) SSM(__VA_ARGS__)
#define CONV_(...) CONV(__VA_ARGS__)
#define STEP_(...) STEP(__VA_ARGS__)

static const km_case mamba_cases[] = {
    SSM_(NEMO, F32, 1, KM_CASE_QUICK),
    SSM_(NEMO, F32, 2, 0),
    SSM_(NEMO, F32, 4, 0),
    SSM_(NEMO, F32, 8, 0),
    SSM_(NEMO, F32, 16, 0),
    SSM_(NEMO, F32, 32, 0),
    SSM_(NEMO, F32, 64, KM_CASE_REPRESENTATIVE),
    SSM_(NEMO, F32, 128, 0),
    SSM_(NEMO, F32, 256, 0),
    SSM_(NEMO, BF16, 1, KM_CASE_QUICK),
    SSM_(NEMO, BF16, 16, 0),
    SSM_(NEMO, BF16, 64, 0),
    SSM_(NEMO, BF16, 256, 0),
    SSM_(M2, F32, 1, KM_CASE_QUICK),
    SSM_(M2, F32, 4, 0),
    SSM_(M2, F32, 16, 0),
    SSM_(M2, F32, 64, KM_CASE_REPRESENTATIVE),
    SSM_(M2, F32, 128, 0),
    SSM_(M2, F32, 256, 0),
    SSM_(M2, BF16, 1, 0),
    SSM_(M2, BF16, 64, 0),
    SSM_(M2, BF16, 256, 0),
    {"mamba/ssm/mamba2-2.7b/f32/gated/b64", "hybrid_mamba",
     "the same update with the z gate applied in the kernel (Mamba-2 with rmsnorm=False)", run_mamba,
     MB(MB_SSM, km_mamba_mamba2_2p7b, 64, KM_MAMBA_STATE_F32, 1), 0, NULL},
    {"mamba/ssm/mamba2-2.7b/f32/gated/b1", "hybrid_mamba",
     "the same update with the z gate applied in the kernel (Mamba-2 with rmsnorm=False)", run_mamba,
     MB(MB_SSM, km_mamba_mamba2_2p7b, 1, KM_MAMBA_STATE_F32, 1), KM_CASE_QUICK, NULL},
    CONV_(NEMO, 1, KM_CASE_QUICK),
    CONV_(NEMO, 16, 0),
    CONV_(NEMO, 64, 0),
    CONV_(NEMO, 256, 0),
    CONV_(M2, 1, 0),
    CONV_(M2, 64, 0),
    CONV_(M2, 256, 0),
    STEP_(NEMO, F32, 1, KM_CASE_QUICK),
    STEP_(NEMO, F32, 4, 0),
    STEP_(NEMO, F32, 16, 0),
    STEP_(NEMO, F32, 64, KM_CASE_REPRESENTATIVE),
    STEP_(NEMO, F32, 128, 0),
    STEP_(NEMO, F32, 256, 0),
    STEP_(NEMO, BF16, 64, 0),
    STEP_(M2, F32, 1, 0),
    STEP_(M2, F32, 16, 0),
    STEP_(M2, F32, 64, 0),
    STEP_(M2, F32, 256, 0),
};

/* Where a hybrid pays: the context at which one attention layer's decode step (GQA 32:8 d128 bf16, the
 * attention family's rows at 1K and 4K, interpolated) costs as much as one Mamba-2 layer's whole step. */
static const km_derived mamba_cases_derived[] = {
    {"hybrid_mamba", "context (tokens) where an attention layer's step costs one Nemotron-H-8B Mamba step, b64",
     KM_DERIVED_CROSSOVER, "mamba/step/nemotron-h-8b/f32/b64", "attn/decode/gqa32x8/d128/bf16/b64/ctx1k",
     "attn/decode/gqa32x8/d128/bf16/b64/ctx4k", {NULL}, 0, 1024, 4096},
    {"hybrid_mamba", "context (tokens) where an attention layer's step costs one Nemotron-H-8B Mamba step, b16",
     KM_DERIVED_CROSSOVER, "mamba/step/nemotron-h-8b/f32/b16", "attn/decode/gqa32x8/d128/bf16/b16/ctx1k",
     "attn/decode/gqa32x8/d128/bf16/b16/ctx4k", {NULL}, 0, 1024, 4096},
};

const km_case_table km_mamba_table = {mamba_cases, sizeof mamba_cases / sizeof mamba_cases[0], NULL, mamba_cases_derived,
                                   sizeof mamba_cases_derived / sizeof mamba_cases_derived[0]};
