/* The stamped decode kernel's stamps summarised on the host: warps written by hand at a 2,000 MHz SM clock,
 * whose phases, medians, clock rate, span and last warp are known, and the stamps the summary refuses. */
#include <stdint.h>
#include <string.h>

#include "attn_decode.h"
#include "attn_stamps.h"
#include "test_util.h"

enum { MHZ = 2000 };

/* A warp starting at start_ns (global timer) and clock c0, with phases in us (metadata, Q, first tile, other
 * tiles, partial, counted in, merge) at MHZ cycles per us. */
static void warp(uint64_t *w, uint64_t start_ns, uint64_t c0, const double ph[7], int tiles, int sm, int last) {
  memset(w, 0, KM_ATTN_STAMPS * sizeof *w);
  static const int points[] = {KM_ATTN_STAMP_METADATA, KM_ATTN_STAMP_Q,       KM_ATTN_STAMP_FIRST_TILE,
                               KM_ATTN_STAMP_LOOP,     KM_ATTN_STAMP_WRITTEN, KM_ATTN_STAMP_COUNTED,
                               KM_ATTN_STAMP_END};
  w[KM_ATTN_STAMP_START_NS] = start_ns;
  w[KM_ATTN_STAMP_START] = c0;
  double t = 0;
  for (int i = 0; i < 7; ++i) {
    t += ph[i];
    w[points[i]] = c0 + (uint64_t)(t * MHZ + 0.5);
  }
  w[KM_ATTN_STAMP_END_NS] = start_ns + (uint64_t)(t * 1e3 + 0.5);
  w[KM_ATTN_STAMP_SM] = (uint64_t)sm | (last ? 1u << 16 : 0u);
  w[KM_ATTN_STAMP_TILES] = (uint64_t)tiles;
}

int main(void) {
  uint64_t st[3 * KM_ATTN_STAMPS];
  const double a[7] = {1.0, 0.5, 3.0, 28.5, 0.25, 1.0, 0.0}, b[7] = {1.2, 0.4, 2.5, 30.0, 0.5, 1.5, 0.5},
               c[7] = {0.8, 0.6, 2.0, 25.0, 0.25, 2.5, 5.5};
  /* clocks of different SMs start anywhere: only differences within a warp count */
  warp(st, 1000000, 5000, a, 16, 3, 0);
  warp(st + KM_ATTN_STAMPS, 1000500, 900000, b, 16, 7, 0);
  warp(st + 2 * KM_ATTN_STAMPS, 1002000, 123, c, 11, 9, 1); /* ends last: 2.0 + 36.65 us after the first start */
  km_attn_stamp_summary s;
  char err[200];
  KM_EXPECT(km_attn_stamps_summarize(st, 3, &s, err, sizeof err) == 0);
  KM_EXPECT(s.warps == 3);
  KM_EXPECT_NEAR(s.cycles_per_us, MHZ, 1.0);
  KM_EXPECT_NEAR(s.span_us, 2.0 + 36.65, 1e-3);
  KM_EXPECT_NEAR(s.start_spread_us, 2.0, 1e-9);
  KM_EXPECT_NEAR(s.median.metadata, 1.0, 1e-3);
  KM_EXPECT_NEAR(s.median.q, 0.5, 1e-3);
  KM_EXPECT_NEAR(s.median.first_tile, 2.5, 1e-3);
  KM_EXPECT_NEAR(s.median.other_tiles, 28.5, 1e-3);
  KM_EXPECT_NEAR(s.median.write, 0.25, 1e-3);
  KM_EXPECT_NEAR(s.median.count, 1.5, 1e-3);
  KM_EXPECT_NEAR(s.median.merge, 0.5, 1e-3);
  KM_EXPECT_NEAR(s.median.start, 0.5, 1e-9);
  KM_EXPECT(s.median.tiles == 16);
  KM_EXPECT_NEAR(s.per_tile_us, 2.0, 1e-3); /* 28.5 / 15, 30 / 15, 25 / 10: median 2.0 */
  /* their spread over the warps (nearest rank of 1.9, 2.0, 2.5) and over the SMs (one warp each) */
  KM_EXPECT_NEAR(s.per_tile_p10_us, 1.9, 1e-3);
  KM_EXPECT_NEAR(s.per_tile_p90_us, 2.5, 1e-3);
  KM_EXPECT_NEAR(s.per_tile_max_us, 2.5, 1e-3);
  KM_EXPECT(s.sms == 3);
  KM_EXPECT_NEAR(s.sm_median_per_tile_us, 2.0, 1e-3);
  KM_EXPECT_NEAR(s.sm_slowest_per_tile_us, 2.5, 1e-3);
  /* the last warp's phases add up to the span */
  const km_attn_phases *l = &s.last;
  KM_EXPECT(l->tiles == 11 && l->wrote_output);
  KM_EXPECT_NEAR(l->start + l->metadata + l->q + l->first_tile + l->other_tiles + l->write + l->count + l->merge,
                 s.span_us, 1e-3);
  KM_EXPECT_NEAR(l->count, 2.5, 1e-3);
  KM_EXPECT_NEAR(l->merge, 5.5, 1e-3);
  char line[800];
  km_attn_stamps_format(&s, line, sizeof line);
  KM_EXPECT(strstr(line, "3 warps") && strstr(line, "kernel span 38.65 us") && strstr(line, "counted in 2.50, merge 5.50") &&
            strstr(line, "its CTA wrote the output") && strstr(line, "p90 2.500") && strstr(line, "3 SMs"));
  /* two warps on one SM: the SM's mean is theirs (1.9 and 2.0 on SM 3 -> 1.95; SM 9 2.5) */
  st[KM_ATTN_STAMPS + KM_ATTN_STAMP_SM] = 3;
  KM_EXPECT(km_attn_stamps_summarize(st, 3, &s, err, sizeof err) == 0);
  KM_EXPECT(s.sms == 2);
  KM_EXPECT_NEAR(s.sm_median_per_tile_us, (1.95 + 2.5) / 2, 1e-3);
  KM_EXPECT_NEAR(s.sm_slowest_per_tile_us, 2.5, 1e-3);
  /* refused: no warps, a point before the one it follows, a zero global-timer span */
  KM_EXPECT(km_attn_stamps_summarize(st, 0, &s, err, sizeof err) == -1 && strstr(err, "no warps"));
  uint64_t bad[KM_ATTN_STAMPS];
  memcpy(bad, st, sizeof bad);
  bad[KM_ATTN_STAMP_Q] = bad[KM_ATTN_STAMP_METADATA] - 1;
  KM_EXPECT(km_attn_stamps_summarize(bad, 1, &s, err, sizeof err) == -1 && strstr(err, "before"));
  memcpy(bad, st, sizeof bad);
  bad[KM_ATTN_STAMP_COUNTED] = bad[KM_ATTN_STAMP_WRITTEN] - 1;
  KM_EXPECT(km_attn_stamps_summarize(bad, 1, &s, err, sizeof err) == -1 && strstr(err, "before"));
  memcpy(bad, st, sizeof bad);
  bad[KM_ATTN_STAMP_END_NS] = bad[KM_ATTN_STAMP_START_NS];
  KM_EXPECT(km_attn_stamps_summarize(bad, 1, &s, err, sizeof err) == -1 && strstr(err, "global-timer span"));
  return km_test_finish("cpu_attn_stamps");
}
