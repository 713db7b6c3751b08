/* CPU reference for the quant/ family: encoders from float bits, FWHT, packing, row quantizers and
 * accuracy metrics. Float steps follow the format definitions in kernels/quant_3bit.h and quant_fp8.h
 * one rounding at a time (x86-64 has no implicit FMA contraction), so codes match the GPU bit for bit. */
#include "quant_ref.h"

#include <math.h>
#include <string.h>

#include "quant_3bit.h"

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Magnitude code of |x| (bits of a non-NaN float) in a binary format with `mbits` mantissa bits and
 * minimum normal exponent emin, rounded to nearest even: the count of quanta at the target exponent,
 * offset by the exponent, so carries into the next binade happen by themselves. */
static uint32_t round_magnitude(uint32_t a, int mbits, int emin) {
  const int fexp = (int)(a >> 23);
  const uint32_t man = fexp ? (a & 0x7fffffu) | 0x800000u : a & 0x7fffffu;
  const int e = fexp ? fexp - 127 : -126;
  const int te = e > emin ? e : emin;
  const int shift = 23 + te - mbits - e; /* >= 23 - mbits > 0 */
  if (shift > 25) return 0;              /* below half the smallest quantum */
  uint32_t q = man >> shift;
  const uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return ((uint32_t)(te - emin) << mbits) + q;
}

uint8_t km_ref_fp8_encode(float x, int fmt) {
  const uint32_t u = f2u(x), a = u & 0x7fffffffu, sign = (u >> 24) & 0x80u;
  const int mbits = fmt == KM_REF_E4M3 ? 3 : 2, emin = fmt == KM_REF_E4M3 ? -6 : -14;
  const uint32_t maxc = fmt == KM_REF_E4M3 ? 0x7eu : 0x7bu;
  if (a > 0x7f800000u) return 0x7f;
  if (a == 0x7f800000u) return (uint8_t)(sign | maxc);
  uint32_t m = round_magnitude(a, mbits, emin);
  if (m > maxc) m = maxc;
  return (uint8_t)(sign | m);
}

float km_ref_fp8_decode(uint8_t c, int fmt) {
  const int mbits = fmt == KM_REF_E4M3 ? 3 : 2, ebits = fmt == KM_REF_E4M3 ? 4 : 5;
  const int bias = fmt == KM_REF_E4M3 ? 7 : 15;
  const int e = (c >> mbits) & ((1 << ebits) - 1), m = c & ((1 << mbits) - 1);
  const float s = (c & 0x80) ? -1.0f : 1.0f;
  if (fmt == KM_REF_E4M3 && e == 15 && m == 7) return NAN;
  if (fmt == KM_REF_E5M2 && e == 31) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexpf((float)m, 1 - bias - mbits);
  return s * ldexpf((float)((1 << mbits) + m), e - bias - mbits);
}

float km_ref_fp8_max(int fmt) { return fmt == KM_REF_E4M3 ? 448.0f : 57344.0f; }

uint16_t km_ref_f32_to_f16(float x) {
  const uint32_t u = f2u(x), a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
  if (a > 0x7f800000u) return 0x7e00;
  if (a == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
  uint32_t m = round_magnitude(a, 10, -14);
  if (m > 0x7c00u) m = 0x7c00u;
  return (uint16_t)(sign | m);
}

float km_ref_f16_to_f32(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float s = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 31) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexpf((float)m, -24);
  return s * ldexpf((float)(1024 + m), e - 25);
}

uint16_t km_ref_f32_to_bf16(float x) {
  const uint32_t u = f2u(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float km_ref_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

void km_ref_fwht(float *a, int n) {
  for (int h = 1; h < n; h *= 2)
    for (int i = 0; i < n; i += 2 * h)
      for (int j = i; j < i + h; ++j) {
        const float x = a[j], y = a[j + h];
        a[j] = x + y;
        a[j + h] = x - y;
      }
}

float km_ref_pairwise_sum(float *a, int n) {
  for (int h = 1; h < n; h *= 2)
    for (int i = 0; i < n; i += 2 * h) a[i] = a[i] + a[i + h];
  return a[0];
}

void km_ref_pack3(const uint8_t *codes, int n, uint8_t *out) {
  for (int g = 0; g < n / 8; ++g) {
    uint32_t v = 0;
    for (int j = 0; j < 8; ++j) v |= (uint32_t)(codes[8 * g + j] & 7u) << (3 * j);
    out[3 * g] = (uint8_t)v;
    out[3 * g + 1] = (uint8_t)(v >> 8);
    out[3 * g + 2] = (uint8_t)(v >> 16);
  }
}

void km_ref_unpack3(const uint8_t *in, int n, uint8_t *codes) {
  for (int g = 0; g < n / 8; ++g) {
    const uint32_t v = in[3 * g] | (uint32_t)in[3 * g + 1] << 8 | (uint32_t)in[3 * g + 2] << 16;
    for (int j = 0; j < 8; ++j) codes[8 * g + j] = (uint8_t)((v >> (3 * j)) & 7u);
  }
}

int km_ref_tq_negative(int i) {
  uint64_t z = KM_TQ_SIGN_SEED + (uint64_t)i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (int)(z >> 63);
}

void km_ref_fp8_quantize_row(const uint16_t *x, int d, float scale, int fmt, uint8_t *q, float *scale_out) {
  if (scale < 0.0f) {
    float amax = 0.0f;
    for (int i = 0; i < d; ++i) amax = fmaxf(amax, fabsf(km_ref_bf16_to_f32(x[i])));
    scale = amax / km_ref_fp8_max(fmt);
  }
  if (scale_out) *scale_out = scale;
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < d; ++i) q[i] = km_ref_fp8_encode(km_ref_bf16_to_f32(x[i]) * inv, fmt);
}

void km_ref_fp8_dequantize_row(const uint8_t *q, int d, float scale, int fmt, uint16_t *out) {
  for (int i = 0; i < d; ++i) out[i] = km_ref_f32_to_bf16(km_ref_fp8_decode(q[i], fmt) * scale);
}

void km_ref_u3_quantize_row(const uint16_t *x, int d, uint8_t *rec) {
  for (int g = 0; g < d / KM_U3_GROUP; ++g, rec += KM_U3_GROUP_BYTES) {
    const uint16_t *xg = x + g * KM_U3_GROUP;
    float mn = km_ref_bf16_to_f32(xg[0]), mx = mn;
    for (int i = 1; i < KM_U3_GROUP; ++i) {
      mn = fminf(mn, km_ref_bf16_to_f32(xg[i]));
      mx = fmaxf(mx, km_ref_bf16_to_f32(xg[i]));
    }
    const uint16_t zh = km_ref_f32_to_f16(mn), sh = km_ref_f32_to_f16((mx - mn) / 7.0f);
    const float z = km_ref_f16_to_f32(zh), s = km_ref_f16_to_f32(sh);
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    uint8_t codes[KM_U3_GROUP];
    for (int i = 0; i < KM_U3_GROUP; ++i) {
      const float t = nearbyintf((km_ref_bf16_to_f32(xg[i]) - z) * inv); /* default mode: ties to even */
      codes[i] = (uint8_t)(t < 0.0f ? 0 : t > 7.0f ? 7 : (int)t);
    }
    km_ref_pack3(codes, KM_U3_GROUP, rec);
    rec[12] = (uint8_t)sh;
    rec[13] = (uint8_t)(sh >> 8);
    rec[14] = (uint8_t)zh;
    rec[15] = (uint8_t)(zh >> 8);
  }
}

void km_ref_u3_dequantize_row(const uint8_t *rec, int d, uint16_t *out) {
  for (int g = 0; g < d / KM_U3_GROUP; ++g, rec += KM_U3_GROUP_BYTES) {
    uint8_t codes[KM_U3_GROUP];
    km_ref_unpack3(rec, KM_U3_GROUP, codes);
    const float s = km_ref_f16_to_f32((uint16_t)(rec[12] | rec[13] << 8));
    const float z = km_ref_f16_to_f32((uint16_t)(rec[14] | rec[15] << 8));
    for (int i = 0; i < KM_U3_GROUP; ++i) out[g * KM_U3_GROUP + i] = km_ref_f32_to_bf16(fmaf((float)codes[i], s, z));
  }
}

static const float tq_levels[8] = {-KM_TQ_L3, -KM_TQ_L2, -KM_TQ_L1, -KM_TQ_L0, KM_TQ_L0, KM_TQ_L1, KM_TQ_L2, KM_TQ_L3};

static uint8_t tq_code(float u) {
  const float a = fabsf(u);
  const int idx = (a >= KM_TQ_B1) + (a >= KM_TQ_B2) + (a >= KM_TQ_B3);
  return (uint8_t)(signbit(u) ? 3 - idx : 4 + idx);
}

enum { TQ_MAX_D = 256 };

void km_ref_tq3_quantize_row(const uint16_t *x, int d, int is_v, uint8_t *codes, uint16_t *side) {
  float y[TQ_MAX_D], sq[TQ_MAX_D];
  uint8_t c[TQ_MAX_D];
  if (d <= 0 || d > TQ_MAX_D || d % 8) return;
  for (int i = 0; i < d; ++i) {
    const float v = km_ref_bf16_to_f32(x[i]);
    sq[i] = v * v;
    y[i] = km_ref_tq_negative(i) ? -v : v;
  }
  const float s2 = km_ref_pairwise_sum(sq, d);
  const float norm = sqrtf(s2), inv = s2 > 0.0f ? 1.0f / norm : 0.0f;
  km_ref_fwht(y, d);
  for (int i = 0; i < d; ++i) {
    const float u = y[i] * inv;
    c[i] = tq_code(u);
    const float diff = u - tq_levels[c[i]];
    sq[i] = diff * diff;
  }
  km_ref_pack3(c, d, codes);
  side[0] = km_ref_f32_to_f16(norm);
  if (is_v) {
    const float r2 = km_ref_pairwise_sum(sq, d);
    side[1] = km_ref_f32_to_f16(norm * sqrtf(r2 * (1.0f / (float)d)));
  }
}

void km_ref_tq3_dequantize_row(const uint8_t *codes, uint16_t norm_h, int d, uint16_t *out) {
  float y[TQ_MAX_D];
  uint8_t c[TQ_MAX_D];
  if (d <= 0 || d > TQ_MAX_D || d % 8) return;
  km_ref_unpack3(codes, d, c);
  for (int i = 0; i < d; ++i) y[i] = tq_levels[c[i]];
  km_ref_fwht(y, d);
  const float scale = km_ref_f16_to_f32(norm_h) * (1.0f / (float)d);
  for (int i = 0; i < d; ++i) {
    const float v = y[i] * scale;
    out[i] = km_ref_f32_to_bf16(km_ref_tq_negative(i) ? -v : v);
  }
}

void km_ref_tq3_exact_u(const uint16_t *x, int d, double *u) {
  if (d <= 0 || d > TQ_MAX_D || d % 8) return;
  double s2 = 0.0;
  for (int i = 0; i < d; ++i) {
    const double v = km_ref_bf16_to_f32(x[i]);
    s2 += v * v; /* squares of bf16 values are exact, and so is their sum for realistic ranges */
    u[i] = km_ref_tq_negative(i) ? -v : v;
  }
  for (int h = 1; h < d; h *= 2) /* the FWHT of km_ref_fwht, in double */
    for (int i = 0; i < d; i += 2 * h)
      for (int j = i; j < i + h; ++j) {
        const double a = u[j], b = u[j + h];
        u[j] = a + b;
        u[j + h] = a - b;
      }
  const double norm = sqrt(s2);
  const int ok = norm > 0.0 && isfinite(norm);
  for (int i = 0; i < d; ++i) u[i] = ok ? u[i] / norm : 0.0;
}

int km_ref_tq3_code_near(int got, int want, double u, double rel) {
  if (got == want) return 1;
  if (got - want != 1 && want - got != 1) return 0;
  const int lo = got < want ? got : want; /* the boundary between codes lo and lo + 1, on u's own side */
  static const double bound[7] = {-KM_TQ_B3, -KM_TQ_B2, -KM_TQ_B1, 0.0, KM_TQ_B1, KM_TQ_B2, KM_TQ_B3};
  if (lo < 0 || lo > 6) return 0;
  const double b = bound[lo];
  return fabs(u - b) <= rel * (b == 0.0 ? 1.0 : fabs(b));
}

size_t km_ref_tq3_codes_outside(const uint16_t *x, const uint8_t *got, const uint8_t *want, size_t rows, int d,
                                double rel, size_t *near, km_ref_tq3_bad_fn bad, void *arg) {
  if (near) *near = 0;
  if (d < 8 || d > TQ_MAX_D || d % 8) return rows * (size_t)(d > 0 ? d : 0);
  const size_t pq = (size_t)d / 8 * 3;
  uint8_t gc[TQ_MAX_D], wc[TQ_MAX_D];
  double u[TQ_MAX_D];
  size_t out = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (memcmp(got + r * pq, want + r * pq, pq) == 0) continue;
    km_ref_unpack3(got + r * pq, d, gc);
    km_ref_unpack3(want + r * pq, d, wc);
    km_ref_tq3_exact_u(x + r * (size_t)d, d, u);
    for (int i = 0; i < d; ++i) {
      if (gc[i] == wc[i]) continue;
      if (km_ref_tq3_code_near(gc[i], wc[i], u[i], rel)) {
        if (near) ++*near;
        continue;
      }
      out++;
      if (bad) bad(arg, r, i, gc[i], wc[i], u[i]);
    }
  }
  return out;
}

/* splitmix64 stream + Box-Muller for the query vectors of the q.k metric. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double next_normal(uint64_t *s) {
  const uint64_t h = next_u64(s);
  const double u1 = ((double)(uint32_t)h + 1.0) / 4294967296.0, u2 = (double)(uint32_t)(h >> 32) / 4294967296.0;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

void km_ref_measure_accuracy(const uint16_t *x, const uint16_t *x_hat, size_t rows, int d, uint64_t seed, km_ref_accuracy *out) {
  double err = 0, ref = 0, cos_sum = 0, qk_err = 0, qk_ref = 0;
  uint64_t rng = seed;
  for (size_t r = 0; r < rows; ++r) {
    double dot = 0, nx = 0, ny = 0, qx = 0, qy = 0;
    for (int i = 0; i < d; ++i) {
      const double a = km_ref_bf16_to_f32(x[r * d + i]), b = km_ref_bf16_to_f32(x_hat[r * d + i]);
      const double q = next_normal(&rng);
      err += (a - b) * (a - b);
      dot += a * b;
      nx += a * a;
      ny += b * b;
      qx += q * a;
      qy += q * b;
    }
    ref += nx;
    cos_sum += (nx > 0 && ny > 0) ? dot / sqrt(nx * ny) : (nx == ny ? 1.0 : 0.0);
    qk_err += (qx - qy) * (qx - qy);
    qk_ref += qx * qx;
  }
  out->rel_mse = ref > 0 ? err / ref : 0;
  out->cosine = rows ? cos_sum / (double)rows : 1.0;
  out->qk_rel_err = qk_ref > 0 ? sqrt(qk_err / qk_ref) : 0;
}

static double gauss_pdf(double x) { return isinf(x) ? 0.0 : exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846); }
static double gauss_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

void km_ref_lloyd_max_gaussian(int levels, int iters, double *c, double *out_mse) {
  double b[17];
  for (int i = 0; i < levels; ++i) c[i] = -2.0 + 4.0 * i / (levels - 1);
  for (int it = 0; it <= iters; ++it) {
    b[0] = -INFINITY;
    b[levels] = INFINITY;
    for (int i = 1; i < levels; ++i) b[i] = 0.5 * (c[i - 1] + c[i]);
    if (it == iters) break;
    /* centroid of N(0,1) on [lo, hi] = (pdf(lo) - pdf(hi)) / (cdf(hi) - cdf(lo)) */
    for (int i = 0; i < levels; ++i)
      c[i] = (gauss_pdf(b[i]) - gauss_pdf(b[i + 1])) / (gauss_cdf(b[i + 1]) - gauss_cdf(b[i]));
  }
  double mse = 0;
  for (int i = 0; i < levels; ++i) { /* E[(X - c)^2 on the cell] from the first two truncated moments */
    const double lo = b[i], hi = b[i + 1], p = gauss_cdf(hi) - gauss_cdf(lo);
    const double m1 = gauss_pdf(lo) - gauss_pdf(hi);
    const double m2 = p + (isinf(lo) ? 0 : lo * gauss_pdf(lo)) - (isinf(hi) ? 0 : hi * gauss_pdf(hi));
    mse += m2 - 2.0 * c[i] * m1 + c[i] * c[i] * p;
  }
  *out_mse = mse;
}
