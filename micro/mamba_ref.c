/* CPU references for the mamba family in fp64: straightforward loops over (sequence, head, row, column)
 * in index order, as mamba_ssm's selective_state_update_ref and causal_conv1d_update_ref write them. */
#include "mamba_ref.h"

#include <math.h>

#include "sparse_ref.h"

const km_mamba_model km_mamba_nemotron_h_8b = {"nemotron-h-8b", 128, 64, 128, 8, 4, 8, 128};
const km_mamba_model km_mamba_mamba2_2p7b = {"mamba2-2.7b", 80, 64, 128, 1, 4, 0, 0};

static double bf(uint16_t bits) { return (double)km_bf16_to_float(bits); }

static double softplus(double x) { return x <= 20.0 ? log1p(exp(x)) : x; }

static double state_at(const km_mamba_ssm_shape *s, const void *state, size_t i) {
  return s->state_dtype == KM_MAMBA_STATE_F32 ? (double)((const float *)state)[i] : bf(((const uint16_t *)state)[i]);
}

void km_mamba_ref_ssm_head(const km_mamba_ssm_shape *s, const km_mamba_ssm_ref_in *in, int b, int h, double *new_state,
                           double *state_mag, double *out, double *out_mag) {
  const int g = h / (s->nheads / s->ngroups);
  double dt = bf(in->dt[(size_t)b * s->dt_stride + h]) + (double)in->dt_bias[h];
  if (s->dt_softplus) dt = softplus(dt);
  const double adt = (double)in->A[h] * dt, dA = exp(adt);
  const uint16_t *B = in->B + (size_t)b * s->bc_stride + (size_t)g * s->dstate;
  const uint16_t *C = in->C + (size_t)b * s->bc_stride + (size_t)g * s->dstate;
  const size_t head = ((size_t)b * s->nheads + h) * s->headdim;
  for (int p = 0; p < s->headdim; ++p) {
    const double x = bf(in->x[(size_t)b * s->x_stride + (size_t)h * s->headdim + p]);
    double y = 0.0, mag = 0.0;
    for (int n = 0; n < s->dstate; ++n) {
      const size_t i = (size_t)p * s->dstate + n;
      const double old = state_at(s, in->state_in, (head + p) * s->dstate + n), dbx = bf(B[n]) * dt * x;
      const double v = old * dA + dbx;
      new_state[i] = v;
      state_mag[i] = fabs(old * dA) * (1.0 + fabs(adt)) + fabs(dbx); /* exp(A dt') carries dt's rounding x |A dt'| */
      y += v * bf(C[n]);
      mag += fabs(bf(C[n])) * (fabs(v) + state_mag[i]);
    }
    if (s->has_d) {
      y += (double)in->D[h] * x;
      mag += fabs((double)in->D[h] * x);
    }
    if (s->has_z) {
      const double z = bf(in->z[(size_t)b * s->z_stride + (size_t)h * s->headdim + p]);
      const double gate = z / (1.0 + exp(-z));
      y *= gate;
      mag *= fabs(gate);
    }
    out[p] = y;
    out_mag[p] = mag;
  }
}

void km_mamba_ref_conv(const km_mamba_conv_shape *s, const uint16_t *state_in, const uint16_t *x, const uint16_t *weight,
                       const uint16_t *bias, uint16_t *new_state, double *out, double *out_mag) {
  const int S = s->state_len, W = s->width;
  for (int b = 0; b < s->batch; ++b)
    for (int c = 0; c < s->dim; ++c) {
      /* xs[0..S-1] the state column, xs[S] the new value */
      double acc = s->has_bias ? bf(bias[c]) : 0.0, mag = fabs(acc);
      for (int w = 0; w < W; ++w) {
        const int i = S + 1 - W + w;
        const uint16_t v = i < S ? state_in[((size_t)b * S + i) * s->dim + c] : x[(size_t)b * s->x_stride + c];
        acc += bf(weight[(size_t)c * W + w]) * bf(v);
        mag += fabs(bf(weight[(size_t)c * W + w]) * bf(v));
      }
      for (int i = 0; i < S; ++i)
        new_state[((size_t)b * S + i) * s->dim + c] =
            i + 1 < S ? state_in[((size_t)b * S + i + 1) * s->dim + c] : x[(size_t)b * s->x_stride + c];
      if (s->silu) acc = acc / (1.0 + exp(-acc));
      out[(size_t)b * s->out_stride + c] = acc;
      out_mag[(size_t)b * s->out_stride + c] = mag;
    }
}

int km_mamba_bf16_close(uint16_t got, double want, double mag) {
  const double g = bf(got);
  return fabs(g - want) <= ldexp(fabs(want), -8) + 2 * KM_MAMBA_F32_REL * mag + 1e-30;
}

int km_mamba_f32_close(float got, double want, double mag) {
  return fabs((double)got - want) <= KM_MAMBA_F32_REL * mag + 1e-30;
}
