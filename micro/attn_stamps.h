/* What one decode step spends where, from the stamped kernel's per-warp stamps (km_attn_args.stamps,
 * kernels/attn_decode.h's KM_ATTN_STAMP_* slots): the SM clock at each point, converted to microseconds
 * with the clock rate the warps' own global-timer spans give. Host code only (tests/cpu_attn_stamps.c). */
#ifndef KM_MICRO_ATTN_STAMPS_H
#define KM_MICRO_ATTN_STAMPS_H

#include <stddef.h>
#include <stdint.h>

/* A warp's phases, microseconds: from its start to its metadata (chunk, tile range, context length),
 * then to its query fragments, its first tile (loads, scores, softmax, P V), its other tiles, its partial
 * written, its CTA counted in (with the plan's merge in the kernel: the CTA merge's partial, the fence and the
 * count; else 0), and its end (for the last CTA of each (sequence, KV head): the merge of the others' partials
 * into the output; else about 0). */
typedef struct km_attn_phases {
  double start, metadata, q, first_tile, other_tiles, write, count, merge; /* start: after the first warp's */
  int tiles;
  int wrote_output; /* its CTA was its (sequence, KV head)'s last */
} km_attn_phases;

typedef struct km_attn_stamp_summary {
  int warps;
  double cycles_per_us;  /* SM clock: the median over warps of their clock span / global-timer span */
  double span_us;        /* global timer: the first warp's start to the last warp's end */
  double start_spread_us;
  km_attn_phases median; /* each phase's median over the warps (tiles: the median chunk) */
  double per_tile_us;    /* median over warps of other_tiles / (tiles - 1), warps of >= 2 tiles */
  double per_tile_p10_us, per_tile_p90_us, per_tile_max_us; /* the same per-tile times' spread over the warps */
  int sms;                      /* SMs with such warps */
  double sm_median_per_tile_us; /* each SM's mean per-tile time over its warps: the median SM's */
  double sm_slowest_per_tile_us; /* ... and the slowest SM's: an imbalance the SMs share shows here */
  km_attn_phases last;   /* the warp that ended last: its phases sum to span_us (within the clock's rate) */
} km_attn_stamp_summary;

/* Summarise `items` warps' stamps (KM_ATTN_STAMPS each). 0, or -1 with the reason in err: no warps, a
 * warp's points out of order, a zero global-timer span. */
int km_attn_stamps_summarize(const uint64_t *stamps, int items, km_attn_stamp_summary *out, char *err,
                             size_t errlen);

/* One line for a row's label. */
void km_attn_stamps_format(const km_attn_stamp_summary *s, char *buf, size_t len);

#endif
