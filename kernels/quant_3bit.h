/* 3-bit KV quantization (primitive 2): (a) uniform asymmetric, group 32 along head_dim, fp16 scale and
 * zero; (b) TurboQuant-style: fp16 vector norm, fixed random sign flip, fast Walsh-Hadamard rotation over
 * head_dim, 3-bit Lloyd-Max codebook for N(0, 1), codes packed 8 per 3 bytes. Layouts and byte counts
 * are defined here, next to the constants that define the formats. */
#ifndef KM_KERNELS_QUANT_3BIT_H
#define KM_KERNELS_QUANT_3BIT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Packing (both formats): codes in element order, 3 bits each, least significant bit first, so 8
 * codes make one little-endian 24-bit value = 3 bytes: byte0 = c0 | c1 << 3 | (c2 & 3) << 6, ...
 *
 * (a) Uniform 3-bit, group 32. Per group one 16-byte record, groups in element order:
 *     bytes 0..11 the 32 codes, bytes 12..13 fp16 scale = fp16((max - min) / 7), bytes 14..15 fp16
 *     zero = fp16(min). code = clamp(rint((x - zero) * (1 / scale)), 0, 7) with the fp16-rounded scale
 *     and zero (what dequantize uses); dequantize x = fma(code, scale, zero). Bytes per (token, head):
 *     d/32 * (12 + 2 + 2) = d / 2 (64 B at d = 128), the byte table's rule.
 * (b) TurboQuant 3-bit. Per (token, head) vector: codes[ceil(3d/8)] in one array [rows, 3d/8] and
 *     fp16 side data in another: K [rows] = norm; V [rows][2] = norm, residual norm. Bytes per vector
 *     3d/8 + 2 (K) and 3d/8 + 4 (V), vLLM turboquant_3bit_nc's slot sizes (50 / 52 B at d = 128); the
 *     two arrays are kept apart rather than interleaved because a 50-byte slot breaks 4- and 16-byte
 *     alignment of the codes. V's extra fp16 is ||x - x_hat|| (computed in the rotated domain, where
 *     it is the same): dequantize does not use it; it is kept so a residual correction could be added
 *     and is an honest stand-in for whatever vLLM stores there (we did not replicate vLLM's bytes). */
#define KM_U3_GROUP 32
#define KM_U3_GROUP_BYTES 16

/* The 8-level Lloyd-Max quantizer of N(0, 1) (MSE 0.034548), levels ascending for codes 0..7:
 * -L3 -L2 -L1 -L0 +L0 +L1 +L2 +L3; boundaries at the midpoints, 0, +-B1, +-B2, +-B3. The sign bit of u
 * picks the side (so -0 goes to code 3, +0 to code 4) and |u| >= B goes to the larger magnitude:
 * code = (4 + [|u| >= B1] + [|u| >= B2] + [|u| >= B3]) ^ (signbit(u) ? 7 : 0). */
#define KM_TQ_L0 0.2450942f
#define KM_TQ_L1 0.7560053f
#define KM_TQ_L2 1.3439093f
#define KM_TQ_L3 2.1519457f
#define KM_TQ_B1 0.5005497f
#define KM_TQ_B2 1.0499573f
#define KM_TQ_B3 1.7479275f
#define KM_TQ_LLOYD_MSE 0.034548

/* Sign of element i (0 <= i < head_dim) is negative when bit 63 of splitmix64(KM_TQ_SIGN_SEED + i) is
 * set, splitmix64(z): z += 0x9E3779B97F4A7C15; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9;
 * z = (z ^ z >> 27) * 0x94D049BB133111EB; z ^= z >> 31. */
#define KM_TQ_SIGN_SEED 0x7475726271756E74ull

/* TurboQuant math (fp32, each step rounded as written, so the CPU reference can match it bit for bit):
 *   s2 = pairwise sum of x_i^2 (tree over index bits, low bit first), norm = sqrt(s2),
 *   inv = s2 > 0 ? 1/norm : 0; y = H (sign * x) unnormalised, stages in increasing stride;
 *   u_i = y_i * inv (~ N(0, 1): the normalised rotation's N(0, 1/d) times sqrt(d)); code = nearest level.
 *   Dequantize: y = H level(code); x_i = sign_i * y_i * (fp16 norm * (1/d)).
 *   V residual = norm * sqrt(pairwise sum of (u_i - level_i)^2 * (1/d)). */

/* What the 3-bit launchers size their grids by, looked up once at setup (a launch sits between the
 * timing events, so it must not query the device): the SM count and, per kernel and head_dim (64, 128,
 * 256), the blocks of it one SM holds at once. The kernels whose grids stop at a few such waves use it. */
typedef struct km_quant_plan {
  int sms;
  int u3_quantize[3], u3_dequantize[3];
  int tq3_quantize[2][3], tq3_dequantize[2][3]; /* [is_v][head_dim] */
  int tq3_rows_quantize[4][2][3];               /* [variant - KM_TQ3_ROWS64][is_v][head_dim] */
  int tq3_mma_quantize[2][2];                   /* [v6 0, v8 1][is_v], head_dim 128 */
} km_quant_plan;

/* The TurboQuant quantize kernels (same codes and side data, bit for bit; reports/quant-notes.md has
 * the instruction counts behind them):
 *   KM_TQ3_LANES      v1: a row over head_dim / 16 lanes, the rotation's middle stages by shuffles;
 *   KM_TQ3_ROWS64     v2: 64 elements per thread (head_dim / 64 threads per row), stages inside 64 in
 *                     registers, the rest by shuffles; rows staged in shared memory by cp.async;
 *   KM_TQ3_ROWS       v3: a thread per row up to head_dim 128 (2 threads at 256), the sign flip folded
 *                     into the first butterflies at compile time;
 *   KM_TQ3_ROWS_FOLD  v4: v3 with K's scale folded into per-row code thresholds (no multiply per
 *                     element); for V, which needs the scaled values for its residual, it is v3.
 *   KM_TQ3_ROWS_LEAN  v5: v4 (K) / v3 (V) with the norm tree's first level as one FFMA per pair, the
 *                     thresholds by a two-step search instead of three divisions, and the per-row square
 *                     root and reciprocal without slow-path branches.
 *   KM_TQ3_MMA        v6 (head_dim 128; others are cudaErrorInvalidValue): a warp per 16 rows on tensor cores: the sign flip and the
 *                     rotation's first four stages as one bf16 mma per 16 elements against +-1 (H16 with the
 *                     signs folded in), the rest of the stages in registers, and the sum of squares as the
 *                     diagonal of X X^T (mma too). Not bit for bit: tensor-core sums round differently from
 *                     the reference's tree, so a code may be the adjacent one where the exact rotated value
 *                     sits at a boundary, and a norm one fp16 unit off (km_tq3_variant_bitwise is 0).
 *   KM_TQ3_MMA_LEAN   v8 (head_dim 128): v6 with the Gram mma's B operands loaded by a second ldmatrix instead of
 *                     four register copies per 16 elements, and the Gram products in two chains of 4 mma instead
 *                     of one of 8; the same rotation, the sum of squares rounded once more (boundary rule).
 * KM_TQ3_BEST is the one km_quant_tq3_quantize runs: the fastest measured for the head_dim and K or V
 * (km_tq3_resolve: v2, except K at 64 (v5) and K at 128 (v6)). */
typedef enum km_tq3_variant {
  KM_TQ3_BEST = 0,
  KM_TQ3_LANES,
  KM_TQ3_ROWS64,
  KM_TQ3_ROWS,
  KM_TQ3_ROWS_FOLD,
  KM_TQ3_ROWS_LEAN,
  KM_TQ3_MMA,
  KM_TQ3_MMA_LEAN,
  KM_TQ3_VARIANT_COUNT
} km_tq3_variant;

/* 1 when the variant's codes and norms equal the CPU reference's bit for bit (V residual norm within one fp16
 * unit); 0 for the tensor-core kernels, checked by the boundary rule above instead. */
static inline int km_tq3_variant_mma(km_tq3_variant v) { return v == KM_TQ3_MMA || v == KM_TQ3_MMA_LEAN; }
static inline int km_tq3_variant_bitwise(km_tq3_variant v) { return !km_tq3_variant_mma(v); }

/* The kernel a variant runs for the head_dim and K (is_v 0) or V: KM_TQ3_BEST is the fastest measured (H200):
 * K d64 v5 (192.0 / 194.2 us against v2's 199.8 / 200.7, revisions db2a279 and 9621248); K d128 v6 (185.5 us,
 * 72.9% of the mixed ceiling, against v5's 210.0 in the recorded run of 6a432be; 184.9 against 211.7 at
 * d1e8aea); K d256 v2 (240.7 against v5's 306.2); V v2 at every head_dim (d128: 258.9 us against v5's 268.6 and
 * v6's 289.6). Before v5 and v6 (revision 38d54ae96a26, share of the mixed ceiling): K d64 v2 68.2% (v4 64.2%),
 * K d128 v3 64.2% (v2 61.4%, v4 60.4%), K d256 v2 55.9% (v3 48.8%, v4 47.1%), V d128 v2 53.4% (v3 48.0%); V at
 * d64 and d256 were not timed per variant: v2, as K there. reports/quant-notes.md; the former defaults stay
 * rows. Any other variant is itself. */
static inline km_tq3_variant km_tq3_resolve(km_tq3_variant v, int head_dim, int is_v) {
  if (v != KM_TQ3_BEST) return v;
  if (is_v) return KM_TQ3_ROWS64;
  return head_dim == 128 ? KM_TQ3_MMA : head_dim == 64 ? KM_TQ3_ROWS_LEAN : KM_TQ3_ROWS64;
}

/* Fill *plan for the current device. Outside any timed region. */
cudaError_t km_quant_plan_make(km_quant_plan *plan);

/* rows = tokens * heads (< 2^32) of bf16 [rows, head_dim]; head_dim 64, 128 or 256; pointers 16-byte aligned;
 * anything else (or no plan) is cudaErrorInvalidValue. */
cudaError_t km_quant_u3_quantize(const km_quant_plan *plan, const uint16_t *src, uint8_t *dst, size_t tokens, int heads,
                                 int head_dim, cudaStream_t stream);
cudaError_t km_quant_u3_dequantize(const km_quant_plan *plan, const uint8_t *src, uint16_t *dst, size_t tokens,
                                   int heads, int head_dim, cudaStream_t stream);

/* is_v: 0 = K layout (side fp16 [rows]), 1 = V layout (side fp16 [rows][2]). */
cudaError_t km_quant_tq3_quantize(const km_quant_plan *plan, const uint16_t *src, uint8_t *codes, uint16_t *side,
                                  size_t tokens, int heads, int head_dim, int is_v, cudaStream_t stream);
/* The same with a chosen kernel (KM_TQ3_BEST: the one above); another variant value is cudaErrorInvalidValue. */
cudaError_t km_quant_tq3_quantize_variant(const km_quant_plan *plan, km_tq3_variant variant, const uint16_t *src,
                                          uint8_t *codes, uint16_t *side, size_t tokens, int heads, int head_dim,
                                          int is_v, cudaStream_t stream);
cudaError_t km_quant_tq3_dequantize(const km_quant_plan *plan, const uint8_t *codes, const uint16_t *side,
                                    uint16_t *dst, size_t tokens, int heads, int head_dim, int is_v,
                                    cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
