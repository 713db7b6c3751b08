/* Share arithmetic. A figure that depends on an unknown ceiling is NaN, never 0 or 100: the writer
 * leaves NaN counters out. */
#include "shares.h"

#include <math.h>

km_traffic km_traffic_of(double bytes_read, double bytes_written) {
  const int r = bytes_read > 0, w = bytes_written > 0;
  if (!r && !w) return KM_TRAFFIC_NONE;
  if (!w) return KM_TRAFFIC_READ;
  if (!r) return KM_TRAFFIC_WRITE;
  return bytes_read == bytes_written ? KM_TRAFFIC_COPY : KM_TRAFFIC_MIXED;
}

const char *km_traffic_name(km_traffic t) {
  static const char *const names[KM_TRAFFIC_COUNT] = {"copy", "read", "write", "mixed", "none"};
  return t >= 0 && t < KM_TRAFFIC_COUNT ? names[t] : "none";
}

/* bytes / rate, where no bytes need no rate and bytes with an unknown rate are NaN */
static double part(double bytes, double gbps) {
  if (!(bytes > 0)) return 0.0;
  return gbps > 0 ? bytes / (gbps * 1e9) : NAN;
}

double km_ceiling_seconds(const km_ceilings *c, double bytes_read, double bytes_written) {
  const double r = bytes_read > 0 ? bytes_read : 0.0, w = bytes_written > 0 ? bytes_written : 0.0;
  const double paired = r < w ? r : w;
  return part(2.0 * paired, c->copy_gbps) + part(r - paired, c->read_gbps) + part(w - paired, c->write_gbps);
}

static double percent(double ideal_seconds, double seconds) {
  if (!(seconds > 0) || !isfinite(ideal_seconds) || !(ideal_seconds > 0)) return NAN;
  return 100.0 * ideal_seconds / seconds;
}

double km_share_of_class(const km_ceilings *c, double bytes_read, double bytes_written, double seconds) {
  return percent(km_ceiling_seconds(c, bytes_read, bytes_written), seconds);
}

double km_share_of_peak(const km_ceilings *c, double bytes, double seconds) {
  return percent(part(bytes, c->peak_gbps), seconds);
}

double km_share_of_link(const km_ceilings *c, double bytes, double seconds) {
  return percent(part(bytes, c->link_gbps), seconds);
}

double km_host_copy_gbps(const km_ceilings *c, km_link_dir dir) {
  switch (dir) {
  case KM_LINK_H2D: return c->h2d_gbps;
  case KM_LINK_D2H: return c->d2h_gbps;
  case KM_LINK_BOTH: return c->h2d_gbps > 0 && c->d2h_gbps > 0 ? c->h2d_gbps + c->d2h_gbps : 0.0;
  default: return c->h2d_gbps > c->d2h_gbps ? c->h2d_gbps : c->d2h_gbps;
  }
}

double km_share_of_host_copy(const km_ceilings *c, km_link_dir dir, double bytes, double seconds) {
  return percent(part(bytes, km_host_copy_gbps(c, dir)), seconds);
}
