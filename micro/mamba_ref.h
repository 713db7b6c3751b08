/* CPU references for the mamba family, in fp64 from the same stored inputs, written apart from the kernels:
 * the selective state update and the causal conv1d update (kernels/mamba_state.h semantics), and the
 * tolerance checks the micro file and the tests share. */
#ifndef KM_MAMBA_REF_H
#define KM_MAMBA_REF_H

#include <stddef.h>
#include <stdint.h>

#include "mamba_state.h"

/* Host copies of one step's inputs, laid out as kernels/mamba_state.h says; state_in holds fp32 or bf16
 * bits per s->state_dtype. */
typedef struct km_mamba_ssm_ref_in {
  const void *state_in;
  const uint16_t *x, *dt, *B, *C, *z;
  const float *dt_bias, *A, *D;
} km_mamba_ssm_ref_in;

/* One (sequence b, head h): new_state and state_mag ([headdim][dstate], the fp64 update and the scale of
 * its rounding, |s dA| (1 + |A dt'|) + |dB x|), out and out_mag ([headdim], y and the scale of its rounding,
 * the sum of |terms| with each state's own bound, times |silu(z)|). Heads are independent, so a caller
 * checks the whole batch head by head without holding it in fp64. */
void km_mamba_ref_ssm_head(const km_mamba_ssm_shape *s, const km_mamba_ssm_ref_in *in, int b, int h, double *new_state,
                           double *state_mag, double *out, double *out_mag);

/* Conv: new_state (bf16 bits, [batch][state_len][dim]: the shift, exact) and out (fp64) with out_mag
 * (|bias| + sum |w x| per channel, before the activation). */
void km_mamba_ref_conv(const km_mamba_conv_shape *s, const uint16_t *state_in, const uint16_t *x, const uint16_t *weight,
                       const uint16_t *bias, uint16_t *new_state, double *out, double *out_mag);

/* Tolerances. A stored bf16 is within one bf16 unit in the last place of the fp64 value plus the fp32
 * computation's error: |got - want| <= 2^-8 |want| + KM_MAMBA_F32_REL * mag. An fp32 state within
 * KM_MAMBA_F32_REL * mag (a few fp32 roundings plus exp and log1p, each far under 1e-6 relative). */
#define KM_MAMBA_F32_REL 1e-5
int km_mamba_bf16_close(uint16_t got, double want, double mag);
int km_mamba_f32_close(float got, double want, double mag);

#endif
