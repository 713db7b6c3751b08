/* CPU reference for the quant/ family, written independently of the kernels: fp8 e4m3/e5m2, fp16 and
 * bf16 encoders from float bits (round to nearest even), the FWHT, 3-bit packing, the uniform and
 * TurboQuant row quantizers, accuracy metrics (relative MSE, cosine, q.k error) and a Lloyd-Max solver. */
#ifndef KM_MICRO_QUANT_REF_H
#define KM_MICRO_QUANT_REF_H

#include <stddef.h>
#include <stdint.h>

enum { KM_REF_E4M3 = 0, KM_REF_E5M2 = 1 };

/* Saturating fp8 encode (|x| > max and +-Inf -> +-max; NaN -> 0x7F), and exact decode. */
uint8_t km_ref_fp8_encode(float x, int fmt);
float km_ref_fp8_decode(uint8_t c, int fmt);
float km_ref_fp8_max(int fmt);
uint16_t km_ref_f32_to_f16(float x); /* IEEE: overflow -> Inf, NaN -> 0x7E00 */
float km_ref_f16_to_f32(uint16_t h);
uint16_t km_ref_f32_to_bf16(float x);
float km_ref_bf16_to_f32(uint16_t h);

void km_ref_fwht(float *a, int n);             /* unnormalised, strides 1, 2, 4, ... */
float km_ref_pairwise_sum(float *a, int n);    /* tree over index bits, low first; destroys a */
void km_ref_pack3(const uint8_t *codes, int n, uint8_t *out);   /* n % 8 == 0; 3n/8 bytes */
void km_ref_unpack3(const uint8_t *in, int n, uint8_t *codes);
int km_ref_tq_negative(int i); /* the fixed random sign of element i */

/* One (token, head) row. scale < 0 asks for the dynamic scale (amax / max), returned in *scale_out. */
void km_ref_fp8_quantize_row(const uint16_t *x, int d, float scale, int fmt, uint8_t *q, float *scale_out);
void km_ref_fp8_dequantize_row(const uint8_t *q, int d, float scale, int fmt, uint16_t *out);
void km_ref_u3_quantize_row(const uint16_t *x, int d, uint8_t *rec); /* d/2 bytes */
void km_ref_u3_dequantize_row(const uint8_t *rec, int d, uint16_t *out);
/* side: [0] fp16 norm, [1] (V only) fp16 residual norm. */
void km_ref_tq3_quantize_row(const uint16_t *x, int d, int is_v, uint8_t *codes, uint16_t *side);
void km_ref_tq3_dequantize_row(const uint8_t *codes, uint16_t norm_h, int d, uint16_t *out);
/* The rotated, normalised row without rounding, for quantizers that are not bit for bit (their sums round
 * differently): u[i] = (H S x)[i] / |x| in double (the rotation's sums of +-bf16 values are exact there),
 * 0 for a zero or non-finite norm. */
void km_ref_tq3_exact_u(const uint16_t *x, int d, double *u);
/* 1 when code `got` is acceptable for `want` at the exact rotated value u: equal, or adjacent (they differ
 * by 1) with u within rel of the boundary between them (between codes 3 and 4 the boundary 0: |u| <= rel;
 * the others +-B1..B3, negative below code 3: |u - B| <= rel * |B|). */
int km_ref_tq3_code_near(int got, int want, double u, double rel);
/* The rule over `rows` rows of packed codes (3d/8 bytes each) from the inputs x: returns the codes that break
 * km_ref_tq3_code_near(got, want, exact u, rel), each passed to `bad` (when not NULL) with its row, index, codes
 * and exact value; *near (when not NULL) counts the adjacent codes the rule allows. Every code breaks it for d
 * outside 8..256 or not a multiple of 8. */
typedef void (*km_ref_tq3_bad_fn)(void *arg, size_t row, int i, int got, int want, double u);
size_t km_ref_tq3_codes_outside(const uint16_t *x, const uint8_t *got, const uint8_t *want, size_t rows, int d,
                                double rel, size_t *near, km_ref_tq3_bad_fn bad, void *arg);

typedef struct km_ref_accuracy {
  double rel_mse;    /* sum (x - x_hat)^2 / sum x^2 */
  double cosine;     /* mean over rows of cos(x, x_hat) */
  double qk_rel_err; /* sqrt(sum (q.x - q.x_hat)^2 / sum (q.x)^2), q ~ N(0, I) per row */
} km_ref_accuracy;
void km_ref_measure_accuracy(const uint16_t *x, const uint16_t *x_hat, size_t rows, int d, uint64_t seed, km_ref_accuracy *out);

/* Lloyd-Max quantizer of N(0, 1) with `levels` levels (<= 16): levels ascending and its MSE. */
void km_ref_lloyd_max_gaussian(int levels, int iters, double *out_levels, double *out_mse);

#endif
