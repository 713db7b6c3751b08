/* CPU tests of the split-KV merge's arithmetic (kernels/attn_merge.h, the decode kernel's CTA merge and last-CTA
 * merge): on random partials of log2-sum-exps spread over +-60 (2^120 apart, past what a naive sum of 2^lse holds
 * in fp32) with chunks of no token among them, the running merge taken in blocks of 1, 4, 16 and uneven sizes
 * (of 2, 4 and 8 output dims) equals a double-precision merge (output dims and the merged log2-sum-exp) to fp32
 * rounding; a block equals the
 * same partials taken one at a time; partials without a token add nothing and never make a NaN; no partial with a
 * token gives output 0 and lse -inf. */
#include <math.h>
#include <stdio.h>

#include "attn_merge.h"
#include "test_util.h"

#define MAXN 48

typedef struct {
  int n, dims;
  float lse[MAXN], o[MAXN * KM_ATTN_MERGE_DIMS];
} partials;

/* n partials of `dims` output dims; about one in five has no token (lse -inf, o 0) where `empty` is set */
static void draw(partials *p, int n, int dims, int empty, uint64_t *st) {
  p->n = n, p->dims = dims;
  for (int j = 0; j < n; ++j) {
    const double u = (double)(km_test_rng_next(st) >> 11) / 9007199254740992.0;
    p->lse[j] = (float)(120.0 * u - 60.0);
    if (empty && km_test_rng_next(st) % 5 == 0) p->lse[j] = -INFINITY;
    for (int k = 0; k < dims; ++k) p->o[dims * j + k] = p->lse[j] == -INFINITY ? 0.f : km_test_rng_normal(st);
  }
}

/* the merge in double precision: out = sum 2^(lse_j - M) o_j / sum 2^(lse_j - M), lse = M + log2(sum) */
static void merge_double(const partials *p, double *out, double *lse) {
  double m = -INFINITY, s = 0, acc[KM_ATTN_MERGE_DIMS] = {0};
  for (int j = 0; j < p->n; ++j) m = p->lse[j] > m ? p->lse[j] : m;
  if (m == -INFINITY) {
    for (int k = 0; k < p->dims; ++k) out[k] = 0;
    *lse = -INFINITY;
    return;
  }
  for (int j = 0; j < p->n; ++j) {
    const double b = exp2((double)p->lse[j] - m);
    s += b;
    for (int k = 0; k < p->dims; ++k) acc[k] += b * p->o[p->dims * j + k];
  }
  for (int k = 0; k < p->dims; ++k) out[k] = acc[k] / s;
  *lse = m + log2(s);
}

/* the running merge over the partials in blocks of the sizes `blocks` gives in turn (cycled) */
static km_attn_merge merge_blocks(const partials *p, const int *blocks, int nblocks) {
  km_attn_merge r = km_attn_merge_start();
  for (int j = 0, b = 0; j < p->n; b = (b + 1) % nblocks) {
    const int len = blocks[b] < p->n - j ? blocks[b] : p->n - j;
    km_attn_merge_block(&r, p->lse + j, p->o + p->dims * j, len, p->dims);
    j += len;
  }
  return r;
}

/* each output dim within fp32 rounding of the double merge, scaled by the largest |o| (the output is a convex
 * combination of the o_j, so its error is relative to them) */
static void expect_merged(const km_attn_merge *r, const partials *p, const char *what, int t) {
  double out[KM_ATTN_MERGE_DIMS], lse;
  merge_double(p, out, &lse);
  double big = 0;
  for (int j = 0; j < p->dims * p->n; ++j) big = fabs(p->o[j]) > big ? fabs(p->o[j]) : big;
  const float f = km_attn_merge_scale(r), l = km_attn_merge_lse(r);
  for (int k = 0; k < p->dims; ++k) {
    const double got = (double)r->acc[k] * f;
    KM_EXPECT_MSG(isfinite(got) && fabs(got - out[k]) <= 4e-6 * (big > 1 ? big : 1), "%s draw %d dim %d: %.9g, want %.9g",
                  what, t, k, got, out[k]);
  }
  if (lse == -INFINITY)
    KM_EXPECT_MSG(l == -INFINITY, "%s draw %d: lse %g, want -inf", what, t, (double)l);
  else
    KM_EXPECT_MSG(fabs((double)l - lse) <= 2e-5, "%s draw %d: lse %.9g, want %.9g", what, t, (double)l, lse);
}

int main(void) {
  uint64_t st = 0x6d3a91c4e2b75f08ull;
  static const int one[] = {1}, four[] = {4}, sixteen[] = {16}, uneven[] = {3, 16, 1, 7};
  static const int dims[] = {4, 2, 8}; /* the kernels' merges: 4 dims a thread; the combine pass D / 32 */
  for (int t = 0; t < 6000; ++t) {
    partials p;
    draw(&p, 1 + (int)(km_test_rng_next(&st) % MAXN), dims[t % 3], t % 2, &st);
    const km_attn_merge r1 = merge_blocks(&p, one, 1), r4 = merge_blocks(&p, four, 1);
    const km_attn_merge r16 = merge_blocks(&p, sixteen, 1), ru = merge_blocks(&p, uneven, 4);
    expect_merged(&r1, &p, "blocks of 1", t);
    expect_merged(&r4, &p, "blocks of 4", t);
    expect_merged(&r16, &p, "blocks of 16", t);
    expect_merged(&ru, &p, "blocks of 3, 16, 1, 7", t);
    /* a block against the same partials one at a time: the same sums in another order */
    const float f1 = km_attn_merge_scale(&r1), f16 = km_attn_merge_scale(&r16);
    for (int k = 0; k < p.dims; ++k)
      KM_EXPECT_MSG(fabsf(r16.acc[k] * f16 - r1.acc[k] * f1) <= 4e-6f * (1.f + fabsf(r1.acc[k] * f1)),
                    "draw %d dim %d: block %.9g, one at a time %.9g", t, k, (double)(r16.acc[k] * f16),
                    (double)(r1.acc[k] * f1));
  }
  /* no partial with a token: output 0, lse -inf, also after partials without one in several blocks */
  partials none = {3, 4, {-INFINITY, -INFINITY, -INFINITY}, {0}};
  km_attn_merge rn = merge_blocks(&none, one, 1);
  KM_EXPECT(rn.sum == 0.f && km_attn_merge_scale(&rn) == 0.f && km_attn_merge_lse(&rn) == -INFINITY);
  for (int k = 0; k < 4; ++k) KM_EXPECT(rn.acc[k] == 0.f);
  /* one partial with a token among empty ones, in the first block and in a later one: its own output and lse */
  partials lone = {5, 4, {-INFINITY, -INFINITY, -INFINITY, 7.5f, -INFINITY}, {0}};
  for (int k = 0; k < 4; ++k) lone.o[12 + k] = (float)(k + 1);
  static const int two[] = {2};
  for (int b = 0; b < 2; ++b) {
    const km_attn_merge r = b ? merge_blocks(&lone, two, 1) : merge_blocks(&lone, sixteen, 1);
    KM_EXPECT_NEAR(km_attn_merge_lse(&r), 7.5, 1e-6);
    for (int k = 0; k < 4; ++k) KM_EXPECT_NEAR(r.acc[k] * km_attn_merge_scale(&r), k + 1, 1e-6);
  }
  /* two equal partials: the same output, lse one higher */
  partials twin = {2, 4, {-3.25f, -3.25f}, {0.5f, -1.f, 2.f, 0.f, 0.5f, -1.f, 2.f, 0.f}};
  const km_attn_merge rt = merge_blocks(&twin, two, 1);
  KM_EXPECT_NEAR(km_attn_merge_lse(&rt), -2.25, 1e-6);
  KM_EXPECT_NEAR(rt.acc[2] * km_attn_merge_scale(&rt), 2.0, 1e-6);
  return km_test_finish("cpu_attn_merge");
}
