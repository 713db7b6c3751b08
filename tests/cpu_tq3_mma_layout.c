/* CPU test of kernels/tq3_mma_layout.h, the maps the tensor-core TurboQuant quantize (kernels/quant_tq3_mma.cu)
 * is built on, against a model of the m16n8k16 fragments (PTX ISA: A row g = lane / 4 holds k 2c, 2c + 1 in
 * a0 and 2c + 8, 2c + 9 in a2, row g + 8 in a1 and a3; C holds rows g, g + 8 at columns 2c, 2c + 1), with
 * integer-valued rows so that every sum is exact:
 *   - the rotation: C of X_j B_j (B_j from km_tq3_mma_column_element) for every lane and both n-halves, then
 *     the kernel's in-lane stages over the groups, equals the reference's sign flip and FWHT at the element
 *     km_tq3_mma_code_element names for each code of each word;
 *   - the Gram diagonal: the lane km_tq3_mma_gram_lane names holds each row's sum of squares where the kernel
 *     reads it;
 *   - the packing: words built per lane in that element order and assembled by km_tq3_mma_assemble give the
 *     reference's packed row (km_ref_pack3), byte for byte. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "quant_ref.h"
#include "test_util.h"
#include "tq3_mma_layout.h"

enum { D = 128, NG = D / 16, ROWS = 16 };

static int failures;

static int h16_negative(int a, int b) {
  int m = a & b, p = 0;
  while (m) p ^= m & 1, m >>= 1;
  return p;
}

/* the kernel's lane holdings after its stages: y[lane][j][h][e], e = 0, 1 row g at columns 2c, 2c + 1 of half
 * h, e = 2, 3 row g + 8 */
static double y[32][NG][2][4];

static void rotate_by_lanes(double x[ROWS][D]) {
  double c[NG][ROWS][16]; /* C of group j: [row][8 h + column] */
  for (int j = 0; j < NG; ++j)
    for (int m = 0; m < ROWS; ++m)
      for (int h = 0; h < 2; ++h)
        for (int n = 0; n < 8; ++n) {
          const int e = km_tq3_mma_column_element(h, n);
          double s = 0.0;
          for (int k = 0; k < 16; ++k) {
            const int neg = km_ref_tq_negative(16 * j + k) ^ h16_negative(k, e);
            s += neg ? -x[m][16 * j + k] : x[m][16 * j + k];
          }
          c[j][m][8 * h + n] = s;
        }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, cc = lane & 3;
    for (int j = 0; j < NG; ++j)
      for (int h = 0; h < 2; ++h) {
        y[lane][j][h][0] = c[j][g][8 * h + 2 * cc];
        y[lane][j][h][1] = c[j][g][8 * h + 2 * cc + 1];
        y[lane][j][h][2] = c[j][g + 8][8 * h + 2 * cc];
        y[lane][j][h][3] = c[j][g + 8][8 * h + 2 * cc + 1];
      }
    for (int s = 1; s < NG; s <<= 1) /* strides 16, 32, 64, lower index keeps a + b */
      for (int j = 0; j < NG; ++j)
        if (!(j & s))
          for (int h = 0; h < 2; ++h)
            for (int e = 0; e < 4; ++e) {
              const double a = y[lane][j][h][e], b = y[lane][j + s][h][e];
              y[lane][j][h][e] = a + b;
              y[lane][j + s][h][e] = a - b;
            }
  }
}

static void test_rotation(uint64_t seed) {
  double x[ROWS][D], ref[ROWS][D];
  uint64_t s = seed;
  for (int r = 0; r < ROWS; ++r) {
    float f[D];
    for (int i = 0; i < D; ++i) {
      x[r][i] = (double)((int)(km_test_rng_next(&s) % 201) - 100); /* integers: every sum exact */
      f[i] = (float)(km_ref_tq_negative(i) ? -x[r][i] : x[r][i]);
    }
    km_ref_fwht(f, D);
    for (int i = 0; i < D; ++i) ref[r][i] = f[i];
  }
  rotate_by_lanes(x);
  size_t bad = 0, n = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (int rh = 0; rh < 2; ++rh)
      for (int p = 0; p < NG / 2; ++p)
        for (int k = 0; k < 8; ++k) { /* the kernel's register of code k of word p */
          const double v = y[lane][2 * p + (k >> 2)][(k >> 1) & 1][2 * rh + (k & 1)];
          const int row = (lane >> 2) + 8 * rh, e = km_tq3_mma_code_element(p, k, lane & 3);
          n++;
          if (v != ref[row][e] && bad++ < 5)
            fprintf(stderr, "  lane %d row %d code %d of word %d: %g, element %d of the reference is %g\n", lane, row, k,
                    p, v, e, ref[row][e]);
        }
  if (bad || n != ROWS * D) {
    fprintf(stderr, "FAIL rotation by lanes: %zu of %zu differ\n", bad, n);
    failures++;
  }
}

static void test_gram(uint64_t seed) {
  double x[ROWS][D];
  uint64_t s = seed;
  for (int r = 0; r < ROWS; ++r)
    for (int i = 0; i < D; ++i) x[r][i] = (double)((int)(km_test_rng_next(&s) % 61) - 30);
  /* G_lo = sum_j X_j X_j[0:8]^T, G_hi = sum_j X_j X_j[8:16]^T, 16 x 8 each */
  double lo[ROWS][8], hi[ROWS][8];
  for (int m = 0; m < ROWS; ++m)
    for (int n = 0; n < 8; ++n) {
      lo[m][n] = hi[m][n] = 0.0;
      for (int i = 0; i < D; ++i) lo[m][n] += x[m][i] * x[n][i], hi[m][n] += x[m][i] * x[8 + n][i];
    }
  for (int r = 0; r < ROWS; ++r) {
    const int lane = km_tq3_mma_gram_lane(r), g = lane >> 2, c = lane & 3;
    /* what the kernel reads there: G_lo's c[g & 1] for rows 0-7, G_hi's c[2 + (g & 1)] for rows 8-15 */
    const double got = r < 8 ? lo[g][2 * c + (g & 1)] : hi[g + 8][2 * c + (g & 1)];
    double want = 0.0;
    for (int i = 0; i < D; ++i) want += x[r][i] * x[r][i];
    if (got != want) {
      fprintf(stderr, "FAIL gram lane of row %d (lane %d): %g, the sum of squares is %g\n", r, lane, got, want);
      failures++;
    }
  }
}

static void test_packing(uint64_t seed) {
  uint8_t codes[ROWS][D], want[ROWS][3 * D / 8], got[ROWS][3 * D / 8];
  uint64_t s = seed;
  for (int r = 0; r < ROWS; ++r) {
    for (int i = 0; i < D; ++i) codes[r][i] = (uint8_t)(km_test_rng_next(&s) & 7);
    km_ref_pack3(codes[r], D, want[r]);
  }
  memset(got, 0xA5, sizeof got);
  uint32_t word[ROWS][NG / 2][4]; /* row r's word for destination lane p from source lane c */
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < 4; ++c)
      for (int p = 0; p < NG / 2; ++p) {
        uint32_t w = 0;
        for (int k = 0; k < 8; ++k) w |= (uint32_t)codes[r][km_tq3_mma_code_element(p, k, c)] << (3 * k);
        word[r][p][c] = w;
      }
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < 4; ++c) {
      uint32_t w[3];
      km_tq3_mma_assemble(word[r][c][0], word[r][c][1], word[r][c][2], word[r][c][3], &w[0], &w[1], &w[2]);
      for (int i = 0; i < 12; ++i) got[r][12 * c + i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
    }
  if (memcmp(got, want, sizeof got)) {
    fprintf(stderr, "FAIL packing by lanes: the assembled rows differ from km_ref_pack3's\n");
    failures++;
  }
}

int main(void) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    test_rotation(seed);
    test_gram(100 + seed);
    test_packing(200 + seed);
  }
  if (failures) return 1;
  printf("ok: tq3 mma layout (rotation, gram lanes, packing)\n");
  return 0;
}
