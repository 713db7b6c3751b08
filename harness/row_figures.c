/* Row figures. A share that cannot be computed (an unknown ceiling, an L2-resident working set, a smoke
 * run) is NaN, and NaN counters are not written: an absent share never reads as 0% or 100%. */
#include "row_figures.h"

#include <math.h>
#include <string.h>

static double working_set(const km_work *w, double rotated_bytes) {
  if (w->working_set_bytes > 0) return w->working_set_bytes;
  double instance = w->bytes_read + w->bytes_written;
  return rotated_bytes > instance ? rotated_bytes : instance;
}

void km_row_figures_compute(const km_work *w, double seconds, double rotated_bytes, const km_ceilings *c,
                            size_t l2_bytes, int shares, km_row_figures *out) {
  memset(out, 0, sizeof *out);
  out->seconds = seconds;
  out->bytes_read = w->bytes_read;
  out->bytes_written = w->bytes_written;
  out->bytes = w->bytes_read + w->bytes_written;
  out->gbps = seconds > 0 ? out->bytes / seconds / 1e9 : NAN;
  out->traffic = km_traffic_of(w->bytes_read, w->bytes_written);
  out->host_link = w->host_link != 0;
  out->link_dir = w->host_link ? w->link_dir : 0;
  out->working_set_bytes = working_set(w, rotated_bytes);
  /* a host row is bound by the link, where its device side lives does not change its time */
  out->l2_resident = !w->host_link && l2_bytes > 0 && out->working_set_bytes < KM_L2_RESIDENT_FACTOR * (double)l2_bytes;
  out->pct_of_ceiling = out->pct_of_peak = out->pct_of_link = out->pct_of_host_copy = NAN;
  if (shares && w->host_link) {
    out->pct_of_link = km_share_of_link(c, out->bytes, seconds);
    out->pct_of_host_copy = km_share_of_host_copy(c, (km_link_dir)w->link_dir, out->bytes, seconds);
  } else if (shares && !out->l2_resident) {
    out->pct_of_ceiling = km_share_of_class(c, w->bytes_read, w->bytes_written, seconds);
    out->pct_of_peak = km_share_of_peak(c, out->bytes, seconds);
  }
  out->tokens_per_second = out->ns_per_token_layer = out->bytes_per_token = NAN;
  if (w->tokens > 0 && seconds > 0) {
    double layers = w->layers > 0 ? w->layers : 1.0;
    out->tokens_per_second = w->tokens / seconds;
    out->ns_per_token_layer = seconds * 1e9 / (w->tokens * layers);
    out->bytes_per_token = out->bytes / w->tokens;
  }
}

void km_row_figures_emit(const km_row_figures *f, void (*emit)(void *user, const char *name, double value),
                         void *user) {
  const struct { const char *name; double value; } all[] = {
      {"median_us", f->seconds * 1e6},
      {"bytes", f->bytes},
      {"bytes_read", f->bytes_read},
      {"bytes_written", f->bytes_written},
      {"GB/s", f->gbps},
      {"host_link", f->host_link ? 1.0 : NAN},
      {"link_dir", f->host_link ? (double)f->link_dir : NAN},
      {"working_set_bytes", f->working_set_bytes},
      {"l2_resident", f->l2_resident ? 1.0 : 0.0},
      {"pct_of_ceiling", f->pct_of_ceiling},
      {"pct_of_peak", f->pct_of_peak},
      {"pct_of_link", f->pct_of_link},
      {"pct_of_host_copy", f->pct_of_host_copy},
      {"tokens_per_second", f->tokens_per_second},
      {"ns_per_token_layer", f->ns_per_token_layer},
      {"bytes_per_token", f->bytes_per_token},
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (isfinite(all[i].value)) emit(user, all[i].name, all[i].value);
}
