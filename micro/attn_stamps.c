/* The stamped decode kernel's per-warp stamps summarised (micro/attn_stamps.h). */
#include "attn_stamps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_decode.h"
#include "stats.h"

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Per-tile time (other tiles / (tiles - 1)) of each warp of >= 2 tiles: its spread over the warps, and each
 * SM's mean over its warps (the SM id is the low 16 bits of KM_ATTN_STAMP_SM): the median SM's and the slowest. */
static int per_tile_spread(const uint64_t *st, const km_attn_phases *all, int items, km_attn_stamp_summary *out) {
  double *v = malloc((size_t)items * sizeof *v), *sum = calloc(65536, sizeof *sum);
  int *cnt = calloc(65536, sizeof *cnt);
  if (!v || !sum || !cnt) {
    free(v), free(sum), free(cnt);
    return -1;
  }
  int n = 0;
  for (int i = 0; i < items; ++i) {
    if (all[i].tiles < 2) continue;
    const double t = all[i].other_tiles / (all[i].tiles - 1);
    const unsigned sm = (unsigned)(st[(size_t)i * KM_ATTN_STAMPS + KM_ATTN_STAMP_SM] & 0xFFFFu);
    v[n++] = t;
    sum[sm] += t, cnt[sm] += 1;
  }
  if (n > 0) {
    const double q[3] = {0.1, 0.9, 1.0};
    double at[3];
    km_quantiles_of(v, (size_t)n, q, 3, at);
    out->per_tile_p10_us = at[0], out->per_tile_p90_us = at[1], out->per_tile_max_us = at[2];
  }
  int m = 0;
  for (int sm = 0; sm < 65536; ++sm)
    if (cnt[sm]) v[m++] = sum[sm] / cnt[sm];
  out->sms = m;
  out->sm_median_per_tile_us = median_of(v, m); /* sorts v */
  out->sm_slowest_per_tile_us = m > 0 ? v[m - 1] : 0;
  free(v), free(sum), free(cnt);
  return 0;
}

/* The clock points of one warp, in order (a phase is the difference of two neighbours). */
static const int POINTS[] = {KM_ATTN_STAMP_START, KM_ATTN_STAMP_METADATA, KM_ATTN_STAMP_Q,       KM_ATTN_STAMP_FIRST_TILE,
                             KM_ATTN_STAMP_LOOP,  KM_ATTN_STAMP_WRITTEN,  KM_ATTN_STAMP_COUNTED, KM_ATTN_STAMP_END};
enum { NPOINTS = sizeof POINTS / sizeof POINTS[0], NPHASES = NPOINTS - 1 };

static void phases_of(const uint64_t *w, double cyc_per_us, double start_us, km_attn_phases *ph) {
  double d[NPHASES];
  for (int i = 0; i < NPHASES; ++i) d[i] = (double)(w[POINTS[i + 1]] - w[POINTS[i]]) / cyc_per_us;
  ph->start = start_us;
  ph->metadata = d[0], ph->q = d[1], ph->first_tile = d[2], ph->other_tiles = d[3], ph->write = d[4];
  ph->count = d[5], ph->merge = d[6];
  ph->tiles = (int)w[KM_ATTN_STAMP_TILES];
  ph->wrote_output = (int)((w[KM_ATTN_STAMP_SM] >> 16) & 1);
}

int km_attn_stamps_summarize(const uint64_t *st, int items, km_attn_stamp_summary *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (items < 1) {
    snprintf(err, errlen, "no warps stamped");
    return -1;
  }
  double *rate = malloc((size_t)items * sizeof *rate), *col = malloc((size_t)items * sizeof *col);
  if (!rate || !col) {
    free(rate), free(col);
    snprintf(err, errlen, "no host memory for the stamps");
    return -1;
  }
  uint64_t t0 = UINT64_MAX, t1 = 0;
  int last = 0;
  for (int i = 0; i < items; ++i) {
    const uint64_t *w = st + (size_t)i * KM_ATTN_STAMPS;
    for (int k = 1; k < NPOINTS; ++k)
      if (w[POINTS[k]] < w[POINTS[k - 1]]) {
        snprintf(err, errlen, "warp %d: stamp %d is before stamp %d", i, POINTS[k], POINTS[k - 1]);
        free(rate), free(col);
        return -1;
      }
    const uint64_t ns0 = w[KM_ATTN_STAMP_START_NS], ns1 = w[KM_ATTN_STAMP_END_NS];
    if (ns1 <= ns0) {
      snprintf(err, errlen, "warp %d: its global-timer span is %lld ns", i, (long long)(ns1 - ns0));
      free(rate), free(col);
      return -1;
    }
    rate[i] = (double)(w[KM_ATTN_STAMP_END] - w[KM_ATTN_STAMP_START]) / ((double)(ns1 - ns0) / 1e3);
    if (ns0 < t0) t0 = ns0;
    if (ns1 > t1) t1 = ns1, last = i;
  }
  out->warps = items;
  out->cycles_per_us = median_of(rate, items);
  out->span_us = (double)(t1 - t0) / 1e3;
  uint64_t s1 = 0;
  for (int i = 0; i < items; ++i) {
    const uint64_t ns0 = st[(size_t)i * KM_ATTN_STAMPS + KM_ATTN_STAMP_START_NS];
    if (ns0 > s1) s1 = ns0;
  }
  out->start_spread_us = (double)(s1 - t0) / 1e3;
  /* each phase's median: phases_of per warp, one column at a time */
  km_attn_phases *all = malloc((size_t)items * sizeof *all);
  if (!all) {
    free(rate), free(col);
    snprintf(err, errlen, "no host memory for the stamps");
    return -1;
  }
  for (int i = 0; i < items; ++i) {
    const uint64_t *w = st + (size_t)i * KM_ATTN_STAMPS;
    phases_of(w, out->cycles_per_us, (double)(w[KM_ATTN_STAMP_START_NS] - t0) / 1e3, &all[i]);
  }
#define KM_MEDIAN_OF(field)                                       \
  do {                                                            \
    for (int i = 0; i < items; ++i) col[i] = (double)all[i].field; \
    out->median.field = median_of(col, items);                    \
  } while (0)
  KM_MEDIAN_OF(start);
  KM_MEDIAN_OF(metadata);
  KM_MEDIAN_OF(q);
  KM_MEDIAN_OF(first_tile);
  KM_MEDIAN_OF(other_tiles);
  KM_MEDIAN_OF(write);
  KM_MEDIAN_OF(count);
  KM_MEDIAN_OF(merge);
#undef KM_MEDIAN_OF
  for (int i = 0; i < items; ++i) col[i] = all[i].tiles;
  out->median.tiles = (int)median_of(col, items);
  int n = 0;
  for (int i = 0; i < items; ++i)
    if (all[i].tiles >= 2) col[n++] = all[i].other_tiles / (all[i].tiles - 1);
  out->per_tile_us = median_of(col, n);
  out->last = all[last];
  const int spread = per_tile_spread(st, all, items, out);
  free(rate), free(col), free(all);
  if (spread != 0) {
    snprintf(err, errlen, "no host memory for the stamps");
    return -1;
  }
  return 0;
}

void km_attn_stamps_format(const km_attn_stamp_summary *s, char *buf, size_t len) {
  const km_attn_phases *l = &s->last;
  snprintf(buf, len,
           "stamps of the last launch, %d warps, SM clock %.0f MHz: kernel span %.2f us (warp starts spread over "
           "%.2f); median warp: metadata %.2f, Q %.2f, first tile %.2f, %.3f per further tile, partial %.2f, "
           "counted in %.2f, merge %.2f; the last warp to end (%d tiles%s): start +%.2f, metadata %.2f, Q %.2f, "
           "first tile %.2f, other tiles %.2f, partial %.2f, counted in %.2f, merge %.2f; per further tile over the "
           "warps p10 %.3f, p90 %.3f, max %.3f, over the %d SMs (each its warps' mean) median %.3f, slowest %.3f",
           s->warps, s->cycles_per_us, s->span_us, s->start_spread_us, s->median.metadata, s->median.q,
           s->median.first_tile, s->per_tile_us, s->median.write, s->median.count, s->median.merge, l->tiles,
           l->wrote_output ? ", its CTA wrote the output" : "", l->start, l->metadata, l->q, l->first_tile,
           l->other_tiles, l->write, l->count, l->merge, s->per_tile_p10_us, s->per_tile_p90_us, s->per_tile_max_us, s->sms,
           s->sm_median_per_tile_us, s->sm_slowest_per_tile_us);
}
