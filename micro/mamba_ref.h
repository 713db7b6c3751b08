/* CPU references for the mamba family, in fp64 from the same stored inputs, written apart from the kernels:
 * the selective state update and the causal conv1d update (kernels/mamba_state.h semantics), the
 * tolerance checks the micro file and the tests share, and the model shapes the cases run. */
#ifndef KM_MAMBA_REF_H
#define KM_MAMBA_REF_H

#include <stddef.h>
#include <stdint.h>

#include "mamba_state.h"

/* A Mamba model's layer shape, and the attention layer its crossover is measured against. */
typedef struct km_mamba_model {
  const char *name;
  int nheads, headdim, dstate, ngroups, d_conv;
  int attn_kv_heads, attn_head_dim; /* 0: no attention layers */
} km_mamba_model;

/* Nemotron-H-8B (config.json of nvidia/Nemotron-H-8B-Base-8K, the nemotron-h-8b preset): mamba_num_heads
 * 128, mamba_head_dim 64, ssm_state_size 128, n_groups 8, conv_kernel 4; attention layers 8 KV heads x 128. */
extern const km_mamba_model km_mamba_nemotron_h_8b;
/* Mamba-2 2.7B (state-spaces/mamba2-2.7b: d_model 2560, 64 layers, all Mamba2) with mamba_ssm's Mamba2
 * defaults (modules/mamba2.py): expand 2 -> d_inner 5120 = 80 heads x headdim 64, d_state 128, ngroups 1,
 * d_conv 4. No attention layers. */
extern const km_mamba_model km_mamba_mamba2_2p7b;

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
