/* What a timed row reports besides its time: GB/s, its traffic class, its share of that class's
 * ceiling and of the theoretical peak (HBM rows), of the link and of the contiguous host copy (host
 * rows), the L2 check, and the per-token figures. Pure arithmetic over the case's km_work, the median
 * and the start-up ceilings (tests/cpu_shares.c). */
#ifndef KM_ROW_FIGURES_H
#define KM_ROW_FIGURES_H

#include <stddef.h>

#include "bench.h"
#include "shares.h"

/* A row whose working set is under this many times L2 may be served by L2: it is flagged l2_resident
 * and kept out of the HBM shares and the fits (DESIGN.md, timing rules). */
#define KM_L2_RESIDENT_FACTOR 4.0

typedef struct km_row_figures {
  double seconds;                       /* median per instance */
  double bytes, bytes_read, bytes_written, gbps;
  km_traffic traffic;
  int host_link, link_dir;              /* from km_work */
  double working_set_bytes;
  int l2_resident;
  /* percent; NaN where not given: HBM shares for device rows that are not l2_resident, link shares for
   * host rows, none under --smoke */
  double pct_of_ceiling, pct_of_peak, pct_of_link, pct_of_host_copy;
  double tokens_per_second, ns_per_token_layer, bytes_per_token; /* NaN without tokens */
} km_row_figures;

/* rotated_bytes: what km_bench_rotation handed the case (0 none); shares: 0 under --smoke. */
void km_row_figures_compute(const km_work *w, double seconds, double rotated_bytes, const km_ceilings *c,
                            size_t l2_bytes, int shares, km_row_figures *out);
/* emit(user, counter name, value) for every finite figure, under the counter names of the result file. */
void km_row_figures_emit(const km_row_figures *f, void (*emit)(void *user, const char *name, double value),
                         void *user);

#endif
