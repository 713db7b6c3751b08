/* Row state from the counters micro writes (gpu_sm_mhz, gpu_mem_mhz, gpu_temp_c, gpu_power_w,
 * throttle_reasons, throttled, cv, noisy). A file without them (no NVML, or an older run) says so. The
 * texts hold no commas, so they stay one field in a CSV that a plain split on ',' reads. */
#include "row_state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nvml.h"

/* One more difference, "; "-separated. */
static void add_difference(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_difference(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used && used + 2 < len) used += (size_t)snprintf(buf + used, len - used, "; ");
  if (used + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

static int has_state(const km_result *r) { return isfinite(km_result_counter(r, "gpu_sm_mhz")); }

static void throttle_text(const km_result *r, char *buf, size_t len) {
  double t = km_result_counter(r, "throttle_reasons");
  km_clock_reason_names(isfinite(t) ? (unsigned long long)t : 0, buf, len);
}

void km_row_state_text(const km_result *row, char *buf, size_t len) {
  double cv = 100.0 * km_result_counter(row, "cv");
  if (!has_state(row)) {
    snprintf(buf, len, "CV %.1f%%; no GPU state recorded", cv);
    return;
  }
  char thr[128];
  throttle_text(row, thr, sizeof thr);
  snprintf(buf, len, "%.0f/%.0f MHz; %.0f C; %.0f W; CV %.1f%%; throttle: %s", km_result_counter(row, "gpu_sm_mhz"),
           km_result_counter(row, "gpu_mem_mhz"), km_result_counter(row, "gpu_temp_c"),
           km_result_counter(row, "gpu_power_w"), cv, thr);
}

static int apart(double a, double b, double rel) { return isfinite(a) && isfinite(b) && fabs(b - a) > rel * fmax(a, b); }

static int side_flags(const km_result *r, const char *side, char *buf, size_t len) {
  int n = 0;
  if (km_result_counter(r, "noisy") == 1.0) {
    add_difference(buf, len, "%s noisy (CV %.1f%%)", side, 100.0 * km_result_counter(r, "cv"));
    n++;
  }
  if (km_result_counter(r, "throttled") == 1.0) {
    char thr[128];
    throttle_text(r, thr, sizeof thr);
    add_difference(buf, len, "%s throttled (%s)", side, thr);
    n++;
  }
  return n;
}

int km_row_state_differences(const km_result *a, const km_result *b, char *buf, size_t len) {
  static const struct { const char *counter, *what, *unit; double rel; } measures[] = {
      {"gpu_sm_mhz", "SM clock", "MHz", KM_STATE_CLOCK_REL},
      {"gpu_mem_mhz", "memory clock", "MHz", KM_STATE_CLOCK_REL},
      {"gpu_power_w", "power", "W", KM_STATE_POWER_REL},
  };
  int n = 0;
  buf[0] = '\0';
  n += side_flags(a, "A", buf, len);
  n += side_flags(b, "B", buf, len);
  const int both = has_state(a) && has_state(b);
  for (size_t i = 0; both && i < sizeof measures / sizeof measures[0]; i++) {
    double x = km_result_counter(a, measures[i].counter), y = km_result_counter(b, measures[i].counter);
    if (!apart(x, y, measures[i].rel)) continue;
    add_difference(buf, len, "%s %.0f -> %.0f %s", measures[i].what, x, y, measures[i].unit);
    n++;
  }
  double ta = km_result_counter(a, "gpu_temp_c"), tb = km_result_counter(b, "gpu_temp_c");
  if (both && fabs(tb - ta) >= KM_STATE_TEMP_C) {
    add_difference(buf, len, "temperature %.0f -> %.0f C", ta, tb);
    n++;
  }
  if (n == 0)
    snprintf(buf, len, "%s", both ? "no measured difference: same clocks and temperature and power; no throttling; CV <= 5%"
                                  : "no GPU state recorded on both sides (NVML unavailable or an older file): no evidence");
  return n;
}
