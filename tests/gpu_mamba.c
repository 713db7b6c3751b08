/* GPU test of kernels/mamba_ssm.cu and mamba_conv.cu against the fp64 references of micro/mamba_ref.c on
 * fresh random data: both state dtypes at dstate 64/128/256, head_dims that leave a partial warp task
 * (20, 36), groups of 1..8, with and without softplus, D and the z gate, inputs with row strides (x, B, C as
 * views of one conv output row, odd dt strides), the Nemotron-H-8B and Mamba-2 2.7B shapes and a grid of
 * many CTAs; the conv update at widths 2..4 with both state lengths, bias and silu on and off. Outputs
 * poisoned, every element checked, guard bytes after each output untouched, bad shapes refused.
 * Exit 77 without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mamba_ref.h"
#include "mamba_state.h"
#include "sparse_ref.h"
#include "test_util.h"

static void fill_bf16(uint16_t *p, size_t n, uint64_t *st, float scale) {
  for (size_t i = 0; i < n; ++i) p[i] = km_float_to_bf16(scale * km_test_rng_normal(st));
}

static double uniform(uint64_t *st) { return (double)(km_test_rng_next(st) >> 11) / 9007199254740992.0; }

typedef struct ssm_case {
  int batch, nheads, headdim, dstate, ngroups;
  km_mamba_state_dtype dtype;
  int softplus, has_d, has_z, row_pad; /* row_pad: extra elements (a multiple of 8) after x | B | C */
} ssm_case;

static void test_ssm(const ssm_case *c, uint64_t seed) {
  const int d_inner = c->nheads * c->headdim, row = d_inner + 2 * c->ngroups * c->dstate + c->row_pad;
  km_mamba_ssm_shape s = {c->batch, c->nheads, c->headdim, c->dstate, c->ngroups, c->dtype, c->softplus, c->has_d,
                          c->has_z, row, c->nheads + 3, row, d_inner + 8};
  KM_EXPECT(km_mamba_ssm_shape_error(&s) == NULL);
  const size_t es = c->dtype == KM_MAMBA_STATE_F32 ? 4 : 2;
  const size_t n_state = (size_t)c->batch * d_inner * c->dstate, state_bytes = n_state * es;
  const size_t n_row = (size_t)c->batch * row, n_dt = (size_t)c->batch * s.dt_stride, n_z = (size_t)c->batch * s.z_stride;
  const size_t n_out = (size_t)c->batch * d_inner;
  uint64_t st = seed;
  uint16_t *xbc = malloc(n_row * 2), *dt = malloc(n_dt * 2), *z = malloc(n_z * 2);
  void *state = malloc(state_bytes);
  unsigned char *state_got = malloc(state_bytes + KM_TEST_GUARD_BYTES);
  unsigned char *out_got = malloc(n_out * 2 + KM_TEST_GUARD_BYTES);
  float *par = malloc(3 * (size_t)c->nheads * sizeof *par);
  double *ns = malloc((size_t)c->headdim * c->dstate * sizeof *ns), *nm = malloc((size_t)c->headdim * c->dstate * sizeof *nm);
  double *y = malloc((size_t)c->headdim * sizeof *y), *ym = malloc((size_t)c->headdim * sizeof *ym);
  if (!xbc || !dt || !z || !state || !state_got || !out_got || !par || !ns || !nm || !y || !ym) exit(1);
  fill_bf16(xbc, n_row, &st, 1.0f);
  fill_bf16(dt, n_dt, &st, 1.5f);
  /* without softplus the step takes dt + bias as it is: keep it positive, as a caller passing softplus'ed
   * values would (a negative dt with A < 0 grows the state as exp(|A dt|), past bf16's range) */
  if (!c->softplus)
    for (size_t i = 0; i < n_dt; ++i) dt[i] = km_float_to_bf16((float)(0.001 + 0.05 * uniform(&st)));
  fill_bf16(z, n_z, &st, 2.0f);
  if (c->dtype == KM_MAMBA_STATE_F32)
    for (size_t i = 0; i < n_state; ++i) ((float *)state)[i] = km_test_rng_normal(&st);
  else
    fill_bf16(state, n_state, &st, 1.0f);
  for (int h = 0; h < c->nheads; ++h) {
    const double dt0 = exp(log(0.001) + uniform(&st) * (log(0.1) - log(0.001)));
    par[h] = c->softplus ? (float)(dt0 + log(-expm1(-dt0))) : (float)dt0; /* softplus(bias) = dt0 */
    par[c->nheads + h] = (float)-(1.0 + 15.0 * uniform(&st));
    par[2 * c->nheads + h] = (float)(0.5 + uniform(&st));
  }
  uint16_t *d_xbc = km_test_dev_upload(xbc, n_row * 2), *d_dt = km_test_dev_upload(dt, n_dt * 2);
  uint16_t *d_z = km_test_dev_upload(z, n_z * 2);
  float *d_par = km_test_dev_upload(par, 3 * (size_t)c->nheads * sizeof *par);
  unsigned char *d_state = km_test_dev_guarded(state, state_bytes), *d_out = km_test_dev_guarded(NULL, n_out * 2);
  KM_EXPECT(d_xbc && d_dt && d_z && d_par && d_state && d_out);
  if (!d_xbc || !d_dt || !d_z || !d_par || !d_state || !d_out) exit(1);
  km_mamba_ssm_args a = {d_state, d_xbc, d_dt, d_par, d_par + c->nheads, d_xbc + d_inner,
                         d_xbc + d_inner + c->ngroups * c->dstate, c->has_d ? d_par + 2 * c->nheads : NULL,
                         c->has_z ? d_z : NULL, (uint16_t *)d_out};
  cudaError_t e = km_mamba_ssm_update(&s, &a, 0);
  KM_EXPECT_MSG(e == cudaSuccess, "ssm launch: %s", cudaGetErrorString(e));
  if (km_test_download(state_got, d_state, state_bytes + KM_TEST_GUARD_BYTES) ||
      km_test_download(out_got, d_out, n_out * 2 + KM_TEST_GUARD_BYTES)) {
    ++km_test_failures;
    return;
  }
  km_mamba_ssm_ref_in in = {state, xbc, dt, xbc + d_inner, xbc + d_inner + c->ngroups * c->dstate, z,
                            par, par + c->nheads, par + 2 * c->nheads};
  size_t bad = 0, checked = 0;
  const size_t per_head = (size_t)c->headdim * c->dstate;
  for (int b = 0; b < c->batch; ++b)
    for (int h = 0; h < c->nheads; ++h) {
      km_mamba_ref_ssm_head(&s, &in, b, h, ns, nm, y, ym);
      const size_t head = (size_t)b * c->nheads + h;
      for (size_t i = 0; i < per_head; ++i) {
        const size_t at = head * per_head + i;
        const int ok = c->dtype == KM_MAMBA_STATE_F32 ? km_mamba_f32_close(((const float *)state_got)[at], ns[i], nm[i])
                                                      : km_mamba_bf16_close(((const uint16_t *)state_got)[at], ns[i], nm[i]);
        if (!ok && bad++ < 5) fprintf(stderr, "state[%zu] wrong (want %.9g)\n", at, ns[i]);
      }
      for (int p = 0; p < c->headdim; ++p) {
        const uint16_t got = ((const uint16_t *)out_got)[head * c->headdim + p];
        if (!km_mamba_bf16_close(got, y[p], ym[p]) && bad++ < 5)
          fprintf(stderr, "y[b%d h%d p%d] = %.9g, want %.9g\n", b, h, p, km_bf16_to_float(got), y[p]);
      }
      checked += per_head + c->headdim;
    }
  KM_EXPECT_MSG(bad == 0, "ssm b%d h%d p%d n%d g%d %s: %zu of %zu wrong", c->batch, c->nheads, c->headdim, c->dstate,
                c->ngroups, c->dtype == KM_MAMBA_STATE_F32 ? "f32" : "bf16", bad, checked);
  KM_EXPECT(km_test_guard_intact(state_got, state_bytes) && km_test_guard_intact(out_got, n_out * 2));
  /* refused: a dstate the kernel does not take, a misaligned state or B, a z gate without z */
  km_mamba_ssm_shape bad_s = s;
  bad_s.dstate = 96;
  KM_EXPECT(km_mamba_ssm_update(&bad_s, &a, 0) == cudaErrorInvalidValue);
  km_mamba_ssm_args bad_a = a;
  bad_a.state = d_state + 4;
  KM_EXPECT(km_mamba_ssm_update(&s, &bad_a, 0) == cudaErrorInvalidValue);
  bad_a = a;
  bad_a.B = a.B + 1;
  KM_EXPECT(km_mamba_ssm_update(&s, &bad_a, 0) == cudaErrorInvalidValue);
  bad_s = s;
  bad_s.has_z = 1;
  bad_a = a;
  bad_a.z = NULL;
  KM_EXPECT(km_mamba_ssm_update(&bad_s, &bad_a, 0) == cudaErrorInvalidValue);
  cudaFree(d_xbc), cudaFree(d_dt), cudaFree(d_z), cudaFree(d_par), cudaFree(d_state), cudaFree(d_out);
  free(xbc), free(dt), free(z), free(state), free(state_got), free(out_got), free(par), free(ns), free(nm), free(y), free(ym);
}

typedef struct conv_case {
  int batch, dim, width, state_len, silu, has_bias, x_pad, out_pad;
} conv_case;

static void test_conv(const conv_case *c, uint64_t seed) {
  km_mamba_conv_shape s = {c->batch, c->dim, c->width, c->state_len, c->silu, c->has_bias, c->dim + c->x_pad,
                           c->dim + c->out_pad};
  KM_EXPECT(km_mamba_conv_shape_error(&s) == NULL);
  const size_t n_state = (size_t)c->batch * c->state_len * c->dim, n_x = (size_t)c->batch * s.x_stride;
  const size_t n_out = (size_t)c->batch * s.out_stride, n_w = (size_t)c->dim * (c->width + 1);
  uint64_t st = seed;
  uint16_t *state = malloc(n_state * 2), *x = malloc(n_x * 2), *w = malloc(n_w * 2), *want_state = malloc(n_state * 2);
  unsigned char *state_got = malloc(n_state * 2 + KM_TEST_GUARD_BYTES);
  unsigned char *out_got = malloc(n_out * 2 + KM_TEST_GUARD_BYTES);
  double *want = malloc(n_out * sizeof *want), *mag = malloc(n_out * sizeof *mag);
  if (!state || !x || !w || !want_state || !state_got || !out_got || !want || !mag) exit(1);
  fill_bf16(state, n_state, &st, 1.0f);
  fill_bf16(x, n_x, &st, 1.0f);
  fill_bf16(w, n_w, &st, 0.5f);
  uint16_t *d_x = km_test_dev_upload(x, n_x * 2), *d_w = km_test_dev_upload(w, n_w * 2);
  unsigned char *d_state = km_test_dev_guarded(state, n_state * 2), *d_out = km_test_dev_guarded(NULL, n_out * 2);
  if (!d_x || !d_w || !d_state || !d_out) exit(1);
  km_mamba_conv_args a = {(uint16_t *)d_state, d_x, d_w, c->has_bias ? d_w + (size_t)c->dim * c->width : NULL,
                          (uint16_t *)d_out};
  cudaError_t e = km_mamba_conv_update(&s, &a, 0);
  KM_EXPECT_MSG(e == cudaSuccess, "conv launch: %s", cudaGetErrorString(e));
  if (km_test_download(state_got, d_state, n_state * 2 + KM_TEST_GUARD_BYTES) ||
      km_test_download(out_got, d_out, n_out * 2 + KM_TEST_GUARD_BYTES)) {
    ++km_test_failures;
    return;
  }
  for (size_t i = 0; i < n_out; ++i) want[i] = mag[i] = 0;
  km_mamba_ref_conv(&s, state, x, w, w + (size_t)c->dim * c->width, want_state, want, mag);
  KM_EXPECT_MSG(memcmp(state_got, want_state, n_state * 2) == 0, "conv state w%d S%d dim %d: not the shift", c->width,
                c->state_len, c->dim);
  size_t bad = 0;
  const uint16_t *og = (const uint16_t *)out_got;
  for (int b = 0; b < c->batch; ++b) {
    for (int ch = 0; ch < c->dim; ++ch) {
      const size_t i = (size_t)b * s.out_stride + ch;
      if (!km_mamba_bf16_close(og[i], want[i], mag[i]) && bad++ < 5)
        fprintf(stderr, "conv out[b%d c%d] = %.9g, want %.9g\n", b, ch, km_bf16_to_float(og[i]), want[i]);
    }
    for (int ch = c->dim; ch < s.out_stride; ++ch) /* the row's padding is not written */
      if (og[(size_t)b * s.out_stride + ch] != 0xffff) ++bad;
  }
  KM_EXPECT_MSG(bad == 0, "conv w%d S%d dim %d silu %d bias %d: %zu wrong", c->width, c->state_len, c->dim, c->silu,
                c->has_bias, bad);
  KM_EXPECT(km_test_guard_intact(state_got, n_state * 2) && km_test_guard_intact(out_got, n_out * 2));
  km_mamba_conv_shape bad_s = s;
  bad_s.width = 5;
  KM_EXPECT(km_mamba_conv_update(&bad_s, &a, 0) == cudaErrorInvalidValue);
  bad_s = s;
  bad_s.state_len = c->width - 2;
  KM_EXPECT(km_mamba_conv_update(&bad_s, &a, 0) == cudaErrorInvalidValue);
  km_mamba_conv_args bad_a = a;
  bad_a.x = d_x + 4;
  KM_EXPECT(km_mamba_conv_update(&s, &bad_a, 0) == cudaErrorInvalidValue);
  cudaFree(d_x), cudaFree(d_w), cudaFree(d_state), cudaFree(d_out);
  free(state), free(x), free(w), free(want_state), free(state_got), free(out_got), free(want), free(mag);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  const ssm_case ssm[] = {
      {3, 4, 64, 128, 2, KM_MAMBA_STATE_F32, 1, 1, 0, 8},
      {3, 4, 64, 128, 2, KM_MAMBA_STATE_BF16, 1, 1, 1, 0},
      {2, 6, 36, 64, 3, KM_MAMBA_STATE_F32, 1, 0, 1, 16},
      {2, 6, 36, 64, 3, KM_MAMBA_STATE_BF16, 0, 1, 0, 8},
      {2, 2, 20, 256, 1, KM_MAMBA_STATE_F32, 1, 1, 1, 0},
      {2, 4, 20, 256, 2, KM_MAMBA_STATE_BF16, 1, 1, 0, 0},
      {2, 8, 128, 128, 8, KM_MAMBA_STATE_F32, 1, 1, 1, 0},
      {1, 128, 64, 128, 8, KM_MAMBA_STATE_F32, 1, 1, 0, 0},  /* Nemotron-H-8B */
      {2, 80, 64, 128, 1, KM_MAMBA_STATE_BF16, 1, 1, 0, 0},  /* Mamba-2 2.7B */
      {40, 16, 64, 128, 4, KM_MAMBA_STATE_F32, 1, 1, 0, 0},  /* 640 heads: many CTAs */
  };
  for (size_t i = 0; i < sizeof ssm / sizeof ssm[0]; ++i) test_ssm(&ssm[i], 1000 + i);
  const conv_case conv[] = {
      {3, 24, 4, 3, 1, 1, 8, 16}, {2, 8, 2, 1, 0, 0, 0, 0},    {2, 40, 3, 3, 1, 0, 8, 0}, {2, 16, 3, 2, 0, 1, 0, 8},
      {2, 10240, 4, 4, 1, 1, 0, 0}, {5, 5376, 4, 3, 1, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof conv / sizeof conv[0]; ++i) test_conv(&conv[i], 2000 + i);
  return km_test_finish("gpu_mamba");
}
