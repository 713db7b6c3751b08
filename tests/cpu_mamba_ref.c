/* CPU checks of the mamba references the GPU kernels are verified against: the state update and output on
 * values worked by hand (softplus, its cut-off at 20, the group a head reads, D, the z gate), the conv update
 * for both state lengths, the tolerance rules, the shape checks, and the model shapes against the
 * nemotron-h-8b preset. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bytes_table.h"
#include "mamba_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

static uint16_t bf(float f) { return km_float_to_bf16(f); }

/* batch 1, 2 heads in 2 groups, headdim 1, dstate 2: every number by hand. */
static void test_ssm_by_hand(void) {
  km_mamba_ssm_shape s = {1, 2, 1, 2, 2, KM_MAMBA_STATE_F32, 1, 1, 1, 2, 2, 4, 2};
  const float state[4] = {1.0f, -1.0f, 2.0f, 4.0f};
  const uint16_t x[2] = {bf(2.0f), bf(1.0f)}, dt[2] = {bf(0.0f), bf(30.0f)};
  const uint16_t B[4] = {bf(1.0f), bf(2.0f), bf(0.5f), bf(0.25f)}, C[4] = {bf(1.0f), bf(1.0f), bf(2.0f), bf(-1.0f)};
  const uint16_t z[2] = {bf(1.0f), bf(-2.0f)};
  const float dt_bias[2] = {0.0f, 0.0f}, A[2] = {-1.0f, -0.125f}, D[2] = {0.5f, 0.0f};
  km_mamba_ssm_ref_in in = {state, x, dt, B, C, z, dt_bias, A, D};
  double ns[2], nm[2], y[1], ym[1];
  /* head 0: dt' = softplus(0) = ln 2, dA = exp(-ln 2) = 0.5, B (group 0) x dt' x = (2 ln2, 4 ln2) */
  km_mamba_ref_ssm_head(&s, &in, 0, 0, ns, nm, y, ym);
  const double l2 = log(2.0);
  KM_EXPECT_NEAR(ns[0], 0.5 + 2 * l2, 1e-12);
  KM_EXPECT_NEAR(ns[1], -0.5 + 4 * l2, 1e-12);
  const double gate0 = 1.0 / (1.0 + exp(-1.0));
  KM_EXPECT_NEAR(y[0], ((0.5 + 2 * l2) + (-0.5 + 4 * l2) + 0.5 * 2.0) * gate0, 1e-12);
  KM_EXPECT(nm[0] > 0 && ym[0] > 0);
  /* head 1: dt' = 30 (past the softplus cut-off), dA = exp(-3.75), group 1's B and C */
  km_mamba_ref_ssm_head(&s, &in, 0, 1, ns, nm, y, ym);
  const double dA = exp(-3.75);
  KM_EXPECT_NEAR(ns[0], 2.0 * dA + 0.5 * 30.0, 1e-12);
  KM_EXPECT_NEAR(ns[1], 4.0 * dA + 0.25 * 30.0, 1e-12);
  const double gate1 = -2.0 / (1.0 + exp(2.0));
  KM_EXPECT_NEAR(y[0], (2.0 * ns[0] - ns[1]) * gate1, 1e-12);
  /* without D and z: the plain sum */
  s.has_d = 0;
  s.has_z = 0;
  km_mamba_ref_ssm_head(&s, &in, 0, 0, ns, nm, y, ym);
  KM_EXPECT_NEAR(y[0], 6 * l2, 1e-12);
  /* a bf16 state reads its bits */
  const uint16_t state16[4] = {bf(1.0f), bf(-1.0f), bf(2.0f), bf(4.0f)};
  s.state_dtype = KM_MAMBA_STATE_BF16;
  in.state_in = state16;
  km_mamba_ref_ssm_head(&s, &in, 0, 0, ns, nm, y, ym);
  KM_EXPECT_NEAR(ns[0], 0.5 + 2 * l2, 1e-12);
  /* no softplus: dt' = dt + bias = 0, so dA = 1 and nothing is added */
  s.dt_softplus = 0;
  km_mamba_ref_ssm_head(&s, &in, 0, 0, ns, nm, y, ym);
  KM_EXPECT_NEAR(ns[0], 1.0, 0);
  KM_EXPECT_NEAR(ns[1], -1.0, 0);
}

/* One channel (plus a second to see the stride), width 4, state 3 and 4 columns. */
static void test_conv_by_hand(void) {
  for (int S = 3; S <= 4; ++S) {
    km_mamba_conv_shape s = {1, 2, 4, S, 0, 1, 2, 2};
    uint16_t state[8], x[2] = {bf(4.0f), bf(-1.0f)}, w[8], bias[2] = {bf(0.5f), bf(0.0f)}, ns[8];
    /* channel 0's columns oldest first: (9,) 1, 2, 3; channel 1's all 1 */
    const float col0[4] = {9.0f, 1.0f, 2.0f, 3.0f};
    for (int i = 0; i < S; ++i) {
      state[i * 2 + 0] = bf(col0[4 - S + i]);
      state[i * 2 + 1] = bf(1.0f);
    }
    const float taps[4] = {1.0f, 10.0f, 100.0f, 1000.0f};
    for (int t = 0; t < 4; ++t) {
      w[t] = bf(taps[t]);
      w[4 + t] = bf(1.0f);
    }
    double out[2], mag[2];
    km_mamba_ref_conv(&s, state, x, w, bias, ns, out, mag);
    KM_EXPECT_NEAR(out[0], 1 * 1 + 2 * 10 + 3 * 100 + 4 * 1000 + 0.5, 0);
    KM_EXPECT_NEAR(out[1], 1 + 1 + 1 - 1, 0);
    KM_EXPECT_NEAR(mag[0], 4321.5, 0);
    KM_EXPECT_NEAR(mag[1], 4.0, 0);
    for (int i = 0; i < S; ++i) { /* shifted by one, the new value last */
      const float want0 = i + 1 < S ? col0[4 - S + i + 1] : 4.0f;
      KM_EXPECT(ns[i * 2] == bf(want0));
      KM_EXPECT(ns[i * 2 + 1] == (i + 1 < S ? bf(1.0f) : bf(-1.0f)));
    }
    s.silu = 1;
    km_mamba_ref_conv(&s, state, x, w, bias, ns, out, mag);
    KM_EXPECT_NEAR(out[1], 2.0 / (1.0 + exp(-2.0)), 1e-15);
  }
}

static void test_tolerances(void) {
  KM_EXPECT(km_mamba_bf16_close(bf(1.0f), 1.0 + ldexp(1.0, -9), 0.0));  /* half a unit: rounding */
  KM_EXPECT(!km_mamba_bf16_close(bf(1.0f), 1.0 + ldexp(1.0, -6), 0.0)); /* two units: an error */
  KM_EXPECT(!km_mamba_bf16_close(0x7fc0, 1.0, 1.0));                     /* NaN never passes */
  KM_EXPECT(!km_mamba_bf16_close(0xffff, 1.0, 1.0));                     /* nor the poison */
  KM_EXPECT(km_mamba_f32_close(1.0f + 1e-6f, 1.0, 1.0));
  KM_EXPECT(!km_mamba_f32_close(1.0f + 1e-4f, 1.0, 1.0));
  KM_EXPECT(!km_mamba_f32_close(NAN, 1.0, 1.0));
}

static void test_shape_checks(void) {
  km_mamba_ssm_shape ok = {4, 128, 64, 128, 8, KM_MAMBA_STATE_F32, 1, 1, 0, 10240, 128, 10240, 8192};
  KM_EXPECT(km_mamba_ssm_shape_error(&ok) == NULL);
  km_mamba_ssm_shape s = ok;
  s.dstate = 96;
  KM_EXPECT(km_mamba_ssm_shape_error(&s) != NULL);
  s = ok;
  s.ngroups = 3;
  KM_EXPECT(km_mamba_ssm_shape_error(&s) != NULL);
  s = ok;
  s.headdim = 62;
  KM_EXPECT(km_mamba_ssm_shape_error(&s) != NULL);
  s = ok;
  s.bc_stride = 10244;
  KM_EXPECT(km_mamba_ssm_shape_error(&s) != NULL);
  s = ok;
  s.batch = 0;
  KM_EXPECT(km_mamba_ssm_shape_error(&s) != NULL);
  km_mamba_conv_shape c = {4, 10240, 4, 3, 1, 1, 10240, 10240};
  KM_EXPECT(km_mamba_conv_shape_error(&c) == NULL);
  c.state_len = 4;
  KM_EXPECT(km_mamba_conv_shape_error(&c) == NULL);
  c.state_len = 2;
  KM_EXPECT(km_mamba_conv_shape_error(&c) != NULL);
  c.state_len = 3;
  c.width = 5;
  KM_EXPECT(km_mamba_conv_shape_error(&c) != NULL);
  c.width = 4;
  c.dim = 10244;
  KM_EXPECT(km_mamba_conv_shape_error(&c) != NULL);
  KM_EXPECT(km_mamba_ssm_state_bytes(&ok) == (size_t)128 * 64 * 128 * 4);
}

/* The case shapes agree with the preset (and so with the model's config.json, which cpu_model_config checks). */
static void test_models(void) {
  km_model m;
  KM_EXPECT(km_model_preset("nemotron-h-8b", &m) == 0);
  const km_mamba_model *n = &km_mamba_nemotron_h_8b;
  KM_EXPECT(n->nheads * n->headdim == m.mamba_d_inner);
  KM_EXPECT(n->dstate == m.mamba_d_state && n->ngroups == m.mamba_n_groups && n->d_conv == m.mamba_d_conv);
  KM_EXPECT(n->attn_kv_heads == m.num_kv_heads && n->attn_head_dim == m.head_dim);
  const km_mamba_model *q = &km_mamba_mamba2_2p7b;
  KM_EXPECT(q->nheads * q->headdim == 2 * 2560 && q->dstate == 128 && q->ngroups == 1 && q->attn_kv_heads == 0);
}

int main(void) {
  test_ssm_by_hand();
  test_conv_by_hand();
  test_tolerances();
  test_shape_checks();
  test_models();
  return km_test_finish("cpu_mamba_ref");
}
