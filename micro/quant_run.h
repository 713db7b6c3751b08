/* One quant/ case: its parameters and device state, the instances it times, and the checks of their
 * whole outputs, shared by micro/quant.c (setup, sweep, timing) and micro/quant_verify.c (checks and
 * accuracy). */
#ifndef KM_MICRO_QUANT_RUN_H
#define KM_MICRO_QUANT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "quant_3bit.h"
#include "quant_fp8.h"

typedef enum km_q_fmt { KM_Q_E4M3 = 0, KM_Q_E5M2, KM_Q_U3, KM_Q_TQ3, KM_Q_FMT_COUNT } km_q_fmt;
typedef enum km_q_op { KM_Q_QUANTIZE = 0, KM_Q_DEQUANTIZE, KM_Q_DEQUANT_GATHER, KM_Q_OP_COUNT } km_q_op;

typedef struct km_q_params {
  km_q_fmt fmt;
  km_q_op op;
  km_quant_granularity gran; /* fp8 only */
  int head_dim;
  int is_v;       /* TurboQuant V layout and Gaussian V data; otherwise K data with outlier channels */
  int block_size; /* dequant + gather */
  int scalar;     /* the baseline kernels */
  km_tq3_variant variant; /* TurboQuant quantize: which kernel (0: the default one) */
} km_q_params;

/* Gather rows: sequences of this many tokens, blocks randomly permuted. */
#define KM_Q_TOKENS_PER_SEQ 2048
/* K data: every 32nd channel (4 of 128), from channel 7, is 10x larger, as real keys have. */
#define KM_Q_OUTLIER_EVERY 32
#define KM_Q_OUTLIER_OFFSET 7
#define KM_Q_OUTLIER_SCALE 10.0f

typedef struct km_q_ctx {
  const km_q_params *p;
  km_quant_plan plan; /* the 3-bit launchers' device facts, looked up once */
  int heads, d;
  size_t tokens, rows;
  int num_seqs;
  uint16_t *src, *out;
  uint8_t *packed;
  void *side;     /* static fp8 scales (input), or per-row scales / norms */
  int32_t *table; /* gather: [num_seqs][KM_Q_TOKENS_PER_SEQ / block_size] */
} km_q_ctx;

int km_q_is_fp8(km_q_fmt f);
km_fp8_format km_q_kernel_fmt(km_q_fmt f);
int km_q_ref_fmt(km_q_fmt f);
size_t km_q_packed_row_bytes(const km_q_params *p);
/* Per-row side data written beside the codes (0 when the side is a static input or inside the record). */
size_t km_q_side_row_bytes(const km_q_params *p);
size_t km_q_side_bytes(const km_q_ctx *c);
int km_q_static_scales(const km_q_params *p); /* fp8 per tensor or per head: scales are an input */

/* Quantize c->src into `packed` / `side` (side: the static scales read, or the per-row side written),
 * by the fast kernels or (scalar) the baselines. */
cudaError_t km_q_quantize(const km_q_ctx *c, int scalar, uint8_t *packed, void *side, cudaStream_t s);
/* Dequantize c->packed / c->side into `out`, fast or scalar; the gather's fused kernel for its op. */
cudaError_t km_q_dequantize(const km_q_ctx *c, int scalar, uint16_t *out, cudaStream_t s);
/* The timed instance (arg: a km_q_ctx): the case's op by the case's implementation. */
cudaError_t km_q_enqueue(void *arg, int rep, cudaStream_t s);

/* Check the timed instance's whole output on the device against the other implementation (scalar for the
 * fast kernels, fast for the scalar baselines; both checked against the CPU in tests/gpu_quant.c), and a
 * head and a tail slice of it on the CPU against micro/quant_ref.c; static fp8 scales are calibrated
 * and uploaded first. 0 when verified; otherwise the case has failed. */
int km_q_verify_rows(km_bench *b, km_q_ctx *c);
/* The same for the fused dequantize + gather: whole output against a trusted gather (kernels/
 * verify_paged.h) of codes and scales then the scalar dequantize; head and tail tokens on the CPU. */
int km_q_verify_gather(km_bench *b, km_q_ctx *c);
/* Accuracy counters of the format (rel_mse, cosine, qk_rel_err; "_v" on V-like data for K rows) on the
 * run's shared dataset. 0 ok. */
int km_q_accuracy(km_bench *b, const km_q_ctx *c);

#endif
