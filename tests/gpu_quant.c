/* GPU test of kernels/quant_fp8.cu, quant_3bit.cu, quant_tq3_rows.cu, quant_tq3_mma.cu and
 * baselines/quant_scalar.cu on small shapes (odd token and head counts for the tails, shapes large enough that
 * the grid-stride and persistent loops go round; every TurboQuant quantize variant): codes and side data bit
 * for bit against micro/quant_ref.c (the tensor-core variant by its boundary rule), dequantized values within
 * 1 bf16 ulp (the exact-match count is printed: it is expected to be all of them); and the whole-output checks
 * of micro/quant_verify.c (fast kernels against the scalar baselines, the fused gather against a trusted
 * gather then the scalar dequantize) passing, then failing on one changed element. Exit 77 without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "test_util.h"

#include "quant_3bit.h"
#include "quant_fp8.h"
#include "quant_ref.h"
#include "quant_scalar.h"
#include "verify_paged.h"

static int failures;

#define CHECK_CUDA(expr)                                                                            \
  do {                                                                                              \
    cudaError_t e_ = (expr);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

#define rng_next km_test_rng_next
#define rng_normal km_test_rng_normal

static void *dev(size_t bytes) {
  void *p = NULL;
  CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
  CHECK_CUDA(cudaMemset(p, 0xFF, bytes ? bytes : 1)); /* poison */
  return p;
}

static void *host(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) exit(1);
  return p;
}

static void *to_host(const void *d, size_t bytes) {
  void *h = host(bytes);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  return h;
}

static void expect_bytes(const char *what, const void *got, const void *want, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (((const uint8_t *)got)[i] != ((const uint8_t *)want)[i] && bad++ < 5)
      fprintf(stderr, "%s: byte %zu got 0x%02X want 0x%02X\n", what, i, ((const uint8_t *)got)[i], ((const uint8_t *)want)[i]);
  if (bad) {
    fprintf(stderr, "FAIL %s: %zu of %zu bytes differ\n", what, bad, n);
    failures++;
  }
}

static void expect_bf16(const char *what, const uint16_t *got, const uint16_t *want, size_t n) {
  size_t bad = 0, exact = 0;
  for (size_t i = 0; i < n; ++i) {
    const int a = (got[i] & 0x8000) ? -(int)(got[i] & 0x7fff) : got[i], b = (want[i] & 0x8000) ? -(int)(want[i] & 0x7fff) : want[i];
    exact += got[i] == want[i];
    if ((a - b > 1 || b - a > 1) && bad++ < 5) fprintf(stderr, "%s: element %zu got 0x%04X want 0x%04X\n", what, i, got[i], want[i]);
  }
  printf("%s: %zu/%zu exact\n", what, exact, n);
  if (bad) {
    fprintf(stderr, "FAIL %s: %zu of %zu beyond 1 ulp\n", what, bad, n);
    failures++;
  }
}

static void expect_count(const char *what, unsigned long long got, unsigned long long want) {
  if (got == want) return;
  fprintf(stderr, "FAIL %s: %llu, want %llu\n", what, got, want);
  failures++;
}

static uint16_t *make_input(size_t rows, int d, uint64_t seed) {
  uint16_t *x = host(rows * d * 2);
  for (size_t i = 0; i < rows * (size_t)d; ++i) {
    float v = rng_normal(&seed);
    if ((i % d) % 32 == 7) v *= 10.0f;
    x[i] = km_ref_f32_to_bf16(v);
  }
  for (int i = 0; i < d; ++i) x[i] = 0; /* an all-zero row: zero scale / zero norm paths */
  return x;
}

static void test_fp8(size_t tokens, int heads, int d, int fmt, km_quant_granularity gran, int scalar) {
  const size_t rows = tokens * heads, n = rows * d;
  char what[128];
  snprintf(what, sizeof what, "fp8 %s gran %d d%d t%zu h%d%s", fmt ? "e5m2" : "e4m3", (int)gran, d, tokens, heads,
           scalar ? " scalar" : "");
  uint16_t *x = make_input(rows, d, 100 + d + gran);
  float *scales = host(rows * 4);
  for (int h = 0; h < heads; ++h) scales[h] = gran == KM_QUANT_PER_TENSOR ? 0.05f : 0.02f + 0.01f * h;
  uint16_t *dx = dev(n * 2), *dout = dev(n * 2);
  uint8_t *dq = dev(n);
  float *ds = dev(rows * 4);
  CHECK_CUDA(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
  if (gran != KM_QUANT_PER_TOKEN_HEAD) CHECK_CUDA(cudaMemcpy(ds, scales, heads * 4, cudaMemcpyHostToDevice));
  const km_fp8_format kf = fmt ? KM_FP8_E5M2 : KM_FP8_E4M3;
  CHECK_CUDA(scalar ? km_scalar_fp8_quantize(dx, dq, ds, tokens, heads, d, kf, gran, 0)
                    : km_quant_fp8_quantize(dx, dq, ds, tokens, heads, d, kf, gran, 0));
  uint8_t *gq = to_host(dq, n), *wq = host(n);
  float *gs = to_host(ds, rows * 4), *ws = host(rows * 4);
  for (size_t r = 0; r < rows; ++r) {
    const float st = gran == KM_QUANT_PER_TENSOR ? scales[0] : gran == KM_QUANT_PER_HEAD ? scales[r % heads] : -1.0f;
    km_ref_fp8_quantize_row(x + r * d, d, st, fmt, wq + r * d, ws + r);
  }
  expect_bytes(what, gq, wq, n);
  if (gran == KM_QUANT_PER_TOKEN_HEAD) expect_bytes("  scales", gs, ws, rows * 4);
  CHECK_CUDA(scalar ? km_scalar_fp8_dequantize(dq, ds, dout, tokens, heads, d, kf, gran, 0)
                    : km_quant_fp8_dequantize(dq, ds, dout, tokens, heads, d, kf, gran, 0));
  uint16_t *go = to_host(dout, n * 2), *wo = host(n * 2);
  for (size_t r = 0; r < rows; ++r) km_ref_fp8_dequantize_row(gq + r * d, d, gran == KM_QUANT_PER_TOKEN_HEAD ? gs[r] : ws[r], fmt, wo + r * d);
  expect_bf16("  dequantize", go, wo, n);
  cudaFree(dx), cudaFree(dout), cudaFree(dq), cudaFree(ds);
  free(x), free(scales), free(gq), free(wq), free(gs), free(ws), free(go), free(wo);
}

/* Special values through the hardware conversion with a unit scale: NaN/Inf handling, saturation,
 * ties to even, subnormals; compared with the CPU encoder. */
static void test_fp8_specials(void) {
  const float vals[] = {NAN, INFINITY, -INFINITY, 448.0f, 464.0f, 480.0f, 500.0f, -1e6f, 57344.0f, 61440.0f,
                        0x1p-10f, 0x3p-10f, 0x5p-10f, 0x1p-17f, 0x3p-17f, 1.0625f, 1.1875f, 1.125f, 1.375f, -0.0f,
                        0x1p-133f, 0xFp-10f};
  const int d = 64, nv = (int)(sizeof vals / sizeof vals[0]);
  uint16_t x[64];
  for (int i = 0; i < d; ++i) x[i] = km_ref_f32_to_bf16(i < nv ? vals[i] : 0.5f * i);
  for (int fmt = 0; fmt < 2; ++fmt) {
    const float one = 1.0f;
    uint16_t *dx = dev(d * 2);
    uint8_t *dq = dev(d);
    float *ds = dev(4);
    CHECK_CUDA(cudaMemcpy(dx, x, d * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(ds, &one, 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(km_quant_fp8_quantize(dx, dq, ds, 1, 1, d, fmt ? KM_FP8_E5M2 : KM_FP8_E4M3, KM_QUANT_PER_TENSOR, 0));
    uint8_t *g = to_host(dq, d), w[64];
    km_ref_fp8_quantize_row(x, d, 1.0f, fmt, w, NULL);
    expect_bytes(fmt ? "fp8 e5m2 specials (NaN, Inf, saturation, ties, subnormals)" : "fp8 e4m3 specials (NaN, Inf, saturation, ties, subnormals)",
                 g, w, d);
    cudaFree(dx), cudaFree(dq), cudaFree(ds), free(g);
  }
}

static void test_gather(int fmt) {
  const int heads = 3, d = 128, bs = 16, seqs = 3, tps = 50, bps = (tps + bs - 1) / bs, nblocks = 16;
  const size_t pool_rows = (size_t)nblocks * bs * heads, out_rows = (size_t)seqs * tps * heads;
  uint16_t *x = make_input(pool_rows, d, 77);
  uint16_t *dx = dev(pool_rows * d * 2), *dout = dev(out_rows * d * 2);
  uint8_t *dq = dev(pool_rows * d);
  float *ds = dev(pool_rows * 4);
  int32_t table[3 * 4], *dt = dev(sizeof table);
  uint64_t s = 5;
  int perm[16];
  for (int i = 0; i < nblocks; ++i) perm[i] = i;
  for (int i = nblocks - 1; i > 0; --i) {
    const int j = (int)(rng_next(&s) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (int i = 0; i < seqs * bps; ++i) table[i] = perm[i];
  CHECK_CUDA(cudaMemcpy(dx, x, pool_rows * d * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dt, table, sizeof table, cudaMemcpyHostToDevice));
  const km_fp8_format kf = fmt ? KM_FP8_E5M2 : KM_FP8_E4M3;
  CHECK_CUDA(km_quant_fp8_quantize(dx, dq, ds, (size_t)nblocks * bs, heads, d, kf, KM_QUANT_PER_TOKEN_HEAD, 0));
  CHECK_CUDA(km_quant_fp8_dequant_gather(dq, ds, dt, dout, seqs, tps, bs, heads, d, kf, 0));
  uint8_t *q = to_host(dq, pool_rows * d);
  float *sc = to_host(ds, pool_rows * 4);
  uint16_t *go = to_host(dout, out_rows * d * 2), *wo = host(out_rows * d * 2);
  for (int sq = 0; sq < seqs; ++sq)
    for (int t = 0; t < tps; ++t)
      for (int h = 0; h < heads; ++h) {
        const size_t prow = ((size_t)table[sq * bps + t / bs] * bs + t % bs) * heads + h;
        const size_t orow = ((size_t)sq * tps + t) * heads + h;
        km_ref_fp8_dequantize_row(q + prow * d, d, sc[prow], fmt, wo + orow * d);
      }
  expect_bf16(fmt ? "fp8 e5m2 dequant + gather" : "fp8 e4m3 dequant + gather", go, wo, out_rows * d);
  /* the trusted composition micro/quant_verify.c holds the whole output to: gather codes and scales as a
   * paged cache, then the scalar dequantize (the sequences' last blocks are partial: whole blocks only) */
  const int full = tps / bs * bs;
  uint8_t *tq = dev((size_t)seqs * full * heads * d);
  float *tsc = dev((size_t)seqs * full * heads * 4);
  uint16_t *tout = dev((size_t)seqs * full * heads * d * 2), *fout = dev((size_t)seqs * full * heads * d * 2);
  int32_t whole[3 * 3], *dw = dev(sizeof whole);
  for (int sq = 0; sq < seqs; ++sq)
    for (int j = 0; j < full / bs; ++j) whole[sq * (full / bs) + j] = table[sq * bps + j];
  CHECK_CUDA(cudaMemcpy(dw, whole, sizeof whole, cudaMemcpyHostToDevice));
  const km_paged_geom gc = {KM_PAGED_NHD, bs, heads, d, 1, nblocks, seqs, full / bs};
  const km_paged_geom gs = {KM_PAGED_NHD, bs, heads, 1, 4, nblocks, seqs, full / bs};
  CHECK_CUDA(km_quant_fp8_dequant_gather(dq, ds, dw, fout, seqs, full, bs, heads, d, kf, 0));
  CHECK_CUDA(km_verify_paged_gather(&gc, dq, dw, tq, 0));
  CHECK_CUDA(km_verify_paged_gather(&gs, ds, dw, tsc, 0));
  CHECK_CUDA(km_scalar_fp8_dequantize(tq, tsc, tout, (size_t)seqs * full, heads, d, kf, KM_QUANT_PER_TOKEN_HEAD, 0));
  km_diff diff;
  const size_t nt = (size_t)seqs * full * heads * d;
  expect_count("  trusted gather + scalar dequantize", km_test_device_diff(fout, tout, nt, 2, 1, 1, &diff), 0);
  CHECK_CUDA(cudaMemset(fout + 1234, 0xFF, 2)); /* one element left as poison */
  expect_count("  ... with one element poisoned", km_test_device_diff(fout, tout, nt, 2, 1, 1, &diff), 1);
  if (diff.count == 1 && diff.index[0] != 1234) expect_count("  ... the element named", diff.index[0], 1234);
  cudaFree(tq), cudaFree(tsc), cudaFree(tout), cudaFree(fout), cudaFree(dw);
  cudaFree(dx), cudaFree(dout), cudaFree(dq), cudaFree(ds), cudaFree(dt);
  free(x), free(q), free(sc), free(go), free(wo);
}

static void test_u3(const km_quant_plan *plan, size_t tokens, int heads, int d, int scalar) {
  const size_t rows = tokens * heads, n = rows * d, nb = rows * d / 2;
  char what[96];
  snprintf(what, sizeof what, "uniform 3-bit d%d t%zu h%d%s", d, tokens, heads, scalar ? " scalar" : "");
  uint16_t *x = make_input(rows, d, 300 + d);
  uint16_t *dx = dev(n * 2), *dout = dev(n * 2);
  uint8_t *dq = dev(nb);
  CHECK_CUDA(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(scalar ? km_scalar_u3_quantize(dx, dq, tokens, heads, d, 0) : km_quant_u3_quantize(plan, dx, dq, tokens, heads, d, 0));
  uint8_t *gq = to_host(dq, nb), *wq = host(nb);
  for (size_t r = 0; r < rows; ++r) km_ref_u3_quantize_row(x + r * d, d, wq + r * d / 2);
  expect_bytes(what, gq, wq, nb);
  CHECK_CUDA(scalar ? km_scalar_u3_dequantize(dq, dout, tokens, heads, d, 0) : km_quant_u3_dequantize(plan, dq, dout, tokens, heads, d, 0));
  uint16_t *go = to_host(dout, n * 2), *wo = host(n * 2);
  for (size_t r = 0; r < rows; ++r) km_ref_u3_dequantize_row(gq + r * d / 2, d, wo + r * d);
  expect_bf16("  dequantize", go, wo, n);
  cudaFree(dx), cudaFree(dout), cudaFree(dq);
  free(x), free(gq), free(wq), free(go), free(wo);
}

/* A non-bitwise variant's codes (km_tq3_variant_bitwise 0) against the reference's, by
 * km_ref_tq3_codes_outside: a code may differ only to an adjacent one, and only where the exact rotated value
 * lies within 2^-16 of the boundary between them. The first few that break the rule are printed. */
static void print_outside(void *arg, size_t row, int i, int got, int want, double u) {
  size_t *shown = arg;
  if ((*shown)++ < 5) fprintf(stderr, "  row %zu code %d: got %d want %d (exact u %.9g)\n", row, i, got, want, u);
}

/* TurboQuant quantize output gq (codes, then `guard` bytes) and gs (side data, then `guard` bytes) of rows x d
 * against the CPU reference: codes and norms bit for bit and V residual norms within one fp16 unit, or (not
 * bitwise) codes by km_ref_tq3_codes_outside, norms within one fp16 unit and residuals within two; the guard
 * bytes (poisoned 0xFF before the kernel) untouched. */
static void expect_tq3(const char *what, const uint16_t *x, const uint8_t *gq, const uint16_t *gs, size_t rows, int d,
                       int is_v, int bitwise, size_t guard) {
  const size_t nb = rows * 3 * d / 8, ns = rows * (is_v ? 2 : 1);
  uint8_t *wq = host(nb + guard);
  uint16_t *ws = host(ns * 2 + guard);
  for (size_t r = 0; r < rows; ++r) {
    uint16_t side[2];
    km_ref_tq3_quantize_row(x + r * d, d, is_v, wq + r * (3 * d / 8), side);
    ws[is_v ? 2 * r : r] = side[0];
    if (is_v) ws[2 * r + 1] = side[1];
  }
  memset(wq + nb, 0xFF, guard);
  memset((uint8_t *)ws + ns * 2, 0xFF, guard);
  if (bitwise) {
    expect_bytes(what, gq, wq, nb + guard);
  } else {
    size_t near = 0, shown = 0;
    const size_t bad = km_ref_tq3_codes_outside(x, gq, wq, rows, d, 1.0 / 65536, &near, print_outside, &shown);
    printf("%s: %zu of %zu codes the adjacent one at a boundary\n", what, near, rows * (size_t)d);
    if (bad) {
      fprintf(stderr, "FAIL %s: %zu codes outside the boundary rule\n", what, bad);
      failures++;
    }
    expect_bytes("  guard bytes after the codes", gq + nb, wq + nb, guard);
  }
  size_t bad = 0;
  for (size_t i = 0; i < ns + guard / 2; ++i) {
    const int residual = i < ns && is_v && (i & 1), diff = (int)gs[i] - (int)ws[i];
    const int allowed = i >= ns ? 0 : residual ? (bitwise ? 1 : 2) : (bitwise ? 0 : 1);
    if ((diff > allowed || -diff > allowed) && bad++ < 5)
      fprintf(stderr, "  side %zu got 0x%04X want 0x%04X\n", i, gs[i], ws[i]);
  }
  if (bad) {
    fprintf(stderr, "FAIL %s side data: %zu differ\n", what, bad);
    failures++;
  }
  free(wq), free(ws);
}

static void test_tq3(const km_quant_plan *plan, size_t tokens, int heads, int d, int is_v, int scalar) {
  const size_t rows = tokens * heads, n = rows * d, nb = rows * 3 * d / 8, ns = rows * (is_v ? 2 : 1);
  char what[96];
  snprintf(what, sizeof what, "turboquant %s d%d t%zu h%d%s", is_v ? "V" : "K", d, tokens, heads, scalar ? " scalar" : "");
  uint16_t *x = make_input(rows, d, 500 + d + is_v);
  uint16_t *dx = dev(n * 2), *dout = dev(n * 2), *dside = dev(ns * 2);
  uint8_t *dq = dev(nb);
  CHECK_CUDA(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(scalar ? km_scalar_tq3_quantize(dx, dq, dside, tokens, heads, d, is_v, 0)
                    : km_quant_tq3_quantize(plan, dx, dq, dside, tokens, heads, d, is_v, 0));
  uint8_t *gq = to_host(dq, nb);
  uint16_t *gs = to_host(dside, ns * 2);
  expect_tq3(what, x, gq, gs, rows, d, is_v, scalar || km_tq3_variant_bitwise(km_tq3_resolve(KM_TQ3_BEST, d, is_v)), 0);
  CHECK_CUDA(scalar ? km_scalar_tq3_dequantize(dq, dside, dout, tokens, heads, d, is_v, 0)
                    : km_quant_tq3_dequantize(plan, dq, dside, dout, tokens, heads, d, is_v, 0));
  uint16_t *go = to_host(dout, n * 2), *wo = host(n * 2);
  for (size_t r = 0; r < rows; ++r) km_ref_tq3_dequantize_row(gq + r * (3 * d / 8), gs[is_v ? 2 * r : r], d, wo + r * d);
  expect_bf16("  dequantize", go, wo, n);
  cudaFree(dx), cudaFree(dout), cudaFree(dside), cudaFree(dq);
  free(x), free(gq), free(gs), free(go), free(wo);
}

/* One TurboQuant quantize kernel (quant_3bit.h's variants) on rows x d against the CPU reference: codes
 * and norms bit for bit, V residual norms within one fp16 unit (a non-bitwise variant: codes by
 * km_ref_tq3_codes_outside, norms within one fp16 unit and residuals within two), every byte written (outputs
 * poisoned first, and poisoned guard bytes after them left alone). A variant that does not take the
 * head_dim must refuse it. */
static void test_tq3_variant(const km_quant_plan *plan, km_tq3_variant var, size_t tokens, int heads, int d, int is_v,
                             uint64_t seed) {
  const size_t rows = tokens * heads, n = rows * d, nb = rows * 3 * d / 8, ns = rows * (is_v ? 2 : 1);
  enum { GUARD = 64 };
  const int bitwise = km_tq3_variant_bitwise(km_tq3_resolve(var, d, is_v));
  char what[112];
  snprintf(what, sizeof what, "turboquant %s v%d d%d t%zu h%d", is_v ? "V" : "K", (int)var, d, tokens, heads);
  if (km_tq3_variant_mma(var) && d != 128) {
    expect_count(what, km_quant_tq3_quantize_variant(plan, var, NULL, NULL, NULL, tokens, heads, d, is_v, 0) ==
                           cudaErrorInvalidValue,
                 1);
    return;
  }
  uint16_t *x = make_input(rows, d, seed);
  /* rows 1-6 (row 0 is all zeros): equal magnitudes with mixed signs (many rotated values exactly equal);
   * huge values (the squares overflow: norm inf, scale 0); tiny ones (the squares underflow: norm 0); small
   * ones (a scale near 1e14); and two where the sum of squares is under 2^-100 (v5's scaled square root),
   * normal (1e-17) and subnormal (3e-21: the squares are subnormal too) */
  static const float scale[6] = {0.5f, 1e30f, 1e-30f, 1e-15f, 1e-17f, 3e-21f};
  for (size_t r = 1; r < 7 && r < rows; ++r)
    for (int i = 0; i < d; ++i) {
      const float m = r == 1 ? scale[0] : scale[r - 1] * (1.0f + (float)(i % 5) * 0.25f);
      x[r * d + i] = km_ref_f32_to_bf16((i * 7 % 3) ? m : -m);
    }
  uint16_t *dx = dev(n * 2), *dside = dev(ns * 2 + GUARD);
  uint8_t *dq = dev(nb + GUARD);
  CHECK_CUDA(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(km_quant_tq3_quantize_variant(plan, var, dx, dq, dside, tokens, heads, d, is_v, 0));
  uint8_t *gq = to_host(dq, nb + GUARD);
  uint16_t *gs = to_host(dside, ns * 2 + GUARD);
  expect_tq3(what, x, gq, gs, rows, d, is_v, bitwise, GUARD);
  cudaFree(dx), cudaFree(dside), cudaFree(dq);
  free(x), free(gq), free(gs);
}

/* Every quantize variant at every head_dim and layout on row counts off every tile (1 row; 111 rows, under
 * one tile; 20,485 and 72,008 rows, enough tiles that the persistent blocks go round and the last tile is
 * partial), and a variant outside the list refused. */
static void test_tq3_variants(const km_quant_plan *plan) {
  static const struct {
    size_t tokens;
    int heads;
  } shapes[] = {{1, 1}, {37, 3}, {4097, 5}, {9001, 8}};
  for (int v = KM_TQ3_BEST; v < KM_TQ3_VARIANT_COUNT; ++v)
    for (int d = 64; d <= 256; d *= 2)
      for (int is_v = 0; is_v < 2; ++is_v)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k)
          test_tq3_variant(plan, (km_tq3_variant)v, shapes[k].tokens, shapes[k].heads, d, is_v, 700 + 10 * v + d + k);
  expect_count("tq3 quantize, variant out of range",
               km_quant_tq3_quantize_variant(plan, KM_TQ3_VARIANT_COUNT, NULL, NULL, NULL, 1, 1, 128, 0, 0) ==
                   cudaErrorInvalidValue,
               1);
}

/* The whole-output checks micro/quant_verify.c runs: the fast kernels' codes, side data and outputs
 * against the scalar baselines' on a shape whose grid-stride loops go round, equal within the stated
 * tolerance; then one changed code byte, one residual norm two fp16 units off and one output element
 * left as poison must each be the one mismatch found. */
static void test_device_checks(const km_quant_plan *plan) {
  const size_t tokens = 9001, rows = tokens * 8;
  const int heads = 8, d = 128;
  const size_t n = rows * d, nb = rows * 3 * d / 8;
  uint16_t *x = make_input(rows, d, 4242);
  uint16_t *dx = dev(n * 2), *fo = dev(n * 2), *so = dev(n * 2), *fs = dev(rows * 4), *ss = dev(rows * 4);
  uint8_t *fq = dev(n), *sq = dev(n);
  km_diff diff;
  CHECK_CUDA(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
  /* fp8 per token-head: codes and scales bitwise, outputs within 1 ulp */
  CHECK_CUDA(km_quant_fp8_quantize(dx, fq, (float *)fs, tokens, heads, d, KM_FP8_E4M3, KM_QUANT_PER_TOKEN_HEAD, 0));
  CHECK_CUDA(km_scalar_fp8_quantize(dx, sq, (float *)ss, tokens, heads, d, KM_FP8_E4M3, KM_QUANT_PER_TOKEN_HEAD, 0));
  expect_count("fp8 codes fast vs scalar", km_test_device_diff(fq, sq, n / 4, 4, 1, 0, &diff), 0);
  expect_count("fp8 scales fast vs scalar", km_test_device_diff(fs, ss, rows, 4, 1, 0, &diff), 0);
  CHECK_CUDA(km_quant_fp8_dequantize(fq, (float *)fs, fo, tokens, heads, d, KM_FP8_E4M3, KM_QUANT_PER_TOKEN_HEAD, 0));
  CHECK_CUDA(km_scalar_fp8_dequantize(fq, (float *)fs, so, tokens, heads, d, KM_FP8_E4M3, KM_QUANT_PER_TOKEN_HEAD, 0));
  expect_count("fp8 outputs fast vs scalar", km_test_device_diff(fo, so, n, 2, 1, 1, &diff), 0);
  uint8_t byte;
  CHECK_CUDA(cudaMemcpy(&byte, fq + 77777, 1, cudaMemcpyDeviceToHost));
  expect_count("  corrupting a byte", (unsigned long long)km_test_corrupt_byte(fq, 77777, (unsigned char)(byte ^ 0x10)), 0);
  expect_count("  one code byte changed", km_test_device_diff(fq, sq, n / 4, 4, 1, 0, &diff), 1);
  expect_count("  ... its word named", diff.index[0], 77777 / 4);
  CHECK_CUDA(cudaMemset(fo + n - 1, 0xFF, 2));
  expect_count("  last output element poisoned", km_test_device_diff(fo, so, n, 2, 1, 1, &diff), 1);
  expect_count("  ... named", diff.index[0], n - 1);
  /* TurboQuant V: codes and norms bitwise, residual norms within one fp16 unit */
  CHECK_CUDA(km_quant_tq3_quantize(plan, dx, fq, fs, tokens, heads, d, 1, 0));
  CHECK_CUDA(km_scalar_tq3_quantize(dx, sq, ss, tokens, heads, d, 1, 0));
  expect_count("tq3 V codes fast vs scalar", km_test_device_diff(fq, sq, nb / 4, 4, 1, 0, &diff), 0);
  expect_count("tq3 V norms fast vs scalar", km_test_device_diff(fs, ss, rows, 2, 2, 0, &diff), 0);
  expect_count("tq3 V residual norms fast vs scalar", km_test_device_diff(fs + 1, ss + 1, rows, 2, 2, 1, &diff), 0);
  uint16_t res;
  CHECK_CUDA(cudaMemcpy(&res, ss + 2 * 500 + 1, 2, cudaMemcpyDeviceToHost));
  res = (uint16_t)(res + 2); /* a positive norm: two units in the last place up */
  CHECK_CUDA(cudaMemcpy(fs + 2 * 500 + 1, &res, 2, cudaMemcpyHostToDevice));
  expect_count("  one residual norm 2 ulp off", km_test_device_diff(fs + 1, ss + 1, rows, 2, 2, 1, &diff), 1);
  expect_count("  ... its row named", diff.index[0], 500);
  expect_count("  ... norms untouched", km_test_device_diff(fs, ss, rows, 2, 2, 0, &diff), 0);
  /* uniform 3-bit: records bitwise */
  CHECK_CUDA(km_quant_u3_quantize(plan, dx, fq, tokens, heads, d, 0));
  CHECK_CUDA(km_scalar_u3_quantize(dx, sq, tokens, heads, d, 0));
  expect_count("u3 records fast vs scalar", km_test_device_diff(fq, sq, n / 2 / 4, 4, 1, 0, &diff), 0);
  cudaFree(dx), cudaFree(fo), cudaFree(so), cudaFree(fs), cudaFree(ss), cudaFree(fq), cudaFree(sq);
  free(x);
}

int main(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  km_quant_plan plan;
  CHECK_CUDA(km_quant_plan_make(&plan));
  test_fp8_specials();
  for (int d = 64; d <= 256; d *= 2)
    for (int fmt = 0; fmt < 2; ++fmt)
      for (int g = 0; g < KM_QUANT_GRANULARITY_COUNT; ++g) test_fp8(37, 3, d, fmt, (km_quant_granularity)g, 0);
  test_fp8(9001, 8, 128, 0, KM_QUANT_PER_TOKEN_HEAD, 0); /* > one resident wave: the grid-stride loop turns */
  for (int fmt = 0; fmt < 2; ++fmt)
    for (int g = 0; g < KM_QUANT_GRANULARITY_COUNT; ++g) test_fp8(37, 3, 128, fmt, (km_quant_granularity)g, 1);
  test_gather(0);
  test_gather(1);
  for (int d = 64; d <= 256; d *= 2) {
    test_u3(&plan, 37, 3, d, 0);
    test_u3(&plan, 37, 3, d, 1);
    for (int v = 0; v < 2; ++v) {
      test_tq3(&plan, 37, 3, d, v, 0);
      test_tq3(&plan, 37, 3, d, v, 1);
    }
  }
  test_u3(&plan, 9001, 8, 128, 0);
  test_tq3(&plan, 9001, 8, 128, 0, 0);
  test_tq3(&plan, 9001, 8, 256, 1, 0);
  test_tq3_variants(&plan);
  test_device_checks(&plan);
  if (failures) {
    fprintf(stderr, "gpu_quant: %d failure(s)\n", failures);
    return 1;
  }
  printf("gpu_quant: all passed\n");
  return 0;
}
