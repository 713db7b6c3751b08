/* Mamba-2 decode step (the hybrid model's per-token state update): the selective state update with
 * mamba_ssm's selective_state_update semantics in Mamba-2's tied form (one dt, A, D and dt_bias per head),
 * and the causal conv1d state update with causal_conv1d_update semantics. Both read and write their whole
 * state every token. The shape checks are inline here so CPU tests and the micro file run them too.
 *
 * Selective state update, per sequence b, head h (group g = h / (nheads / ngroups)), row p < headdim,
 * state column n < dstate:
 *   dt'   = dt[b,h] + dt_bias[h];  dt' = softplus(dt') = log1p(exp(dt')) when dt_softplus and dt' <= 20
 *   dA    = exp(A[h] * dt')
 *   s'    = s[b,h,p,n] * dA + (B[b,g,n] * dt') * x[b,h,p]       (stored back: fp32, or bf16 rounded to nearest)
 *   y     = sum_n s'[n] * C[b,g,n]  (+ D[h] * x[b,h,p])  (* z * sigmoid(z) when z is given)
 * computed in fp32 from the unrounded s' (as the Triton kernel does), y stored as bf16.
 *
 * Conv update, per sequence b and channel c < dim, state_len S = width - 1 (causal_conv1d, vLLM) or width
 * (mamba_ssm's allocate_inference_cache):
 *   xs    = [state[b,0,c], ..., state[b,S-1,c], x[b,c]]           (S + 1 values)
 *   out   = bias[c] + sum_{w < width} weight[c,w] * xs[S + 1 - width + w]   (silu(out) when silu), bf16
 *   state[b,s,c] = xs[s + 1]                                        (shifted by one, bitwise)
 * The state is channel-last, [batch][S][dim], the layout mamba_ssm's allocate_inference_cache makes
 * (a (batch, dim, S) tensor with stride 1 over dim), so 16-byte vectors run over channels. */
#ifndef KM_KERNELS_MAMBA_STATE_H
#define KM_KERNELS_MAMBA_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum km_mamba_state_dtype {
  KM_MAMBA_STATE_F32 = 0,
  KM_MAMBA_STATE_BF16,
  KM_MAMBA_STATE_DTYPE_COUNT
} km_mamba_state_dtype;

typedef struct km_mamba_ssm_shape {
  int batch, nheads, headdim, dstate, ngroups;
  km_mamba_state_dtype state_dtype;
  int dt_softplus; /* 1: dt' = softplus(dt + dt_bias) (Mamba-2 always) */
  int has_d;       /* 1: add D[h] * x */
  int has_z;       /* 1: multiply by silu(z) (Mamba-2 with rmsnorm=True gates in the norm instead: 0) */
  /* Elements between consecutive sequences of the bf16 inputs: x, B and C are views of the conv output
   * row [x | B | C] in a real step, dt and z of the input projection's row. */
  long long x_stride, dt_stride, bc_stride, z_stride;
} km_mamba_ssm_shape;

typedef struct km_mamba_ssm_args {
  void *state;          /* [batch][nheads][headdim][dstate], fp32 or bf16; updated in place */
  const uint16_t *x;    /* bf16: x[b * x_stride + h * headdim + p] */
  const uint16_t *dt;   /* bf16: dt[b * dt_stride + h] */
  const float *dt_bias; /* [nheads] */
  const float *A;       /* [nheads] (negative: -exp(A_log)) */
  const uint16_t *B;    /* bf16: B[b * bc_stride + g * dstate + n] */
  const uint16_t *C;    /* bf16: C[b * bc_stride + g * dstate + n] */
  const float *D;       /* [nheads] (has_d) */
  const uint16_t *z;    /* bf16: z[b * z_stride + h * headdim + p] (has_z) */
  uint16_t *out;        /* bf16 [batch][nheads][headdim] */
} km_mamba_ssm_args;

typedef struct km_mamba_conv_shape {
  int batch, dim, width, state_len;
  int silu;                      /* 1: out = silu(conv) (Mamba-2) */
  int has_bias;
  long long x_stride, out_stride; /* elements between sequences of x and out */
} km_mamba_conv_shape;

typedef struct km_mamba_conv_args {
  uint16_t *state;        /* bf16 [batch][state_len][dim], updated in place */
  const uint16_t *x;      /* bf16: x[b * x_stride + c] */
  const uint16_t *weight; /* bf16 [dim][width] */
  const uint16_t *bias;   /* bf16 [dim] (has_bias) */
  uint16_t *out;          /* bf16: out[b * out_stride + c] */
} km_mamba_conv_args;

#ifdef __CUDACC__
#define KM_MAMBA_HD __host__ __device__ __forceinline__
#else
#define KM_MAMBA_HD static inline
#endif

/* NULL when the kernel takes shape s, else what is wrong with it (one phrase naming the field).
 * dstate 64/128/256 (a state row is whole 16-byte vectors over at most 2 per lane), headdim a multiple of
 * 4 up to 256, ngroups dividing nheads, strides multiples of 8 elements (16-byte loads of B and C). */
KM_MAMBA_HD const char *km_mamba_ssm_shape_error(const km_mamba_ssm_shape *s) {
  if (s->batch <= 0 || s->nheads <= 0 || s->ngroups <= 0) return "batch, nheads and ngroups must be positive";
  if (s->batch > 65535 || (long long)s->batch * s->nheads > 0x7fffffffLL) return "batch x nheads too large";
  if (s->nheads % s->ngroups != 0) return "ngroups must divide nheads";
  if (s->dstate != 64 && s->dstate != 128 && s->dstate != 256) return "dstate must be 64, 128 or 256";
  if (s->headdim <= 0 || s->headdim % 4 != 0 || s->headdim > 256) return "headdim must be a multiple of 4 up to 256";
  if ((unsigned)s->state_dtype >= KM_MAMBA_STATE_DTYPE_COUNT) return "state dtype must be fp32 or bf16";
  if (s->x_stride < (long long)s->nheads * s->headdim || s->x_stride % 8 != 0)
    return "x stride must be a multiple of 8 of at least nheads x headdim";
  if (s->dt_stride < s->nheads) return "dt stride must be at least nheads";
  if (s->bc_stride < (long long)s->ngroups * s->dstate || s->bc_stride % 8 != 0)
    return "B/C stride must be a multiple of 8 of at least ngroups x dstate";
  if (s->has_z && (s->z_stride < (long long)s->nheads * s->headdim)) return "z stride must be at least nheads x headdim";
  return 0;
}

KM_MAMBA_HD const char *km_mamba_conv_shape_error(const km_mamba_conv_shape *s) {
  if (s->batch <= 0 || s->dim <= 0) return "batch and dim must be positive";
  if (s->dim % 8 != 0) return "dim must be a multiple of 8 (16-byte vectors over channels)";
  if (s->width < 2 || s->width > 4) return "width must be 2, 3 or 4";
  if (s->state_len != s->width - 1 && s->state_len != s->width) return "state_len must be width - 1 or width";
  if (s->x_stride < s->dim || s->x_stride % 8 != 0 || s->out_stride < s->dim || s->out_stride % 8 != 0)
    return "x and out strides must be multiples of 8 of at least dim";
  if ((long long)s->batch * (s->dim / 8) > 0x7fffffffLL) return "batch x dim too large";
  return 0;
}

/* Bytes of one sequence's SSM state and conv state. */
KM_MAMBA_HD size_t km_mamba_ssm_state_bytes(const km_mamba_ssm_shape *s) {
  return (size_t)s->nheads * s->headdim * s->dstate * (s->state_dtype == KM_MAMBA_STATE_F32 ? 4u : 2u);
}
KM_MAMBA_HD size_t km_mamba_conv_state_bytes(const km_mamba_conv_shape *s) {
  return (size_t)s->state_len * s->dim * 2u;
}

/* One decode step of every (sequence, head); pointers must be 16-byte aligned (B, C: at each group's
 * start). cudaErrorInvalidValue for a shape km_mamba_ssm_shape_error rejects. */
cudaError_t km_mamba_ssm_update(const km_mamba_ssm_shape *s, const km_mamba_ssm_args *a, cudaStream_t stream);
/* One conv step of every (sequence, channel); pointers 16-byte aligned. */
cudaError_t km_mamba_conv_update(const km_mamba_conv_shape *s, const km_mamba_conv_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
