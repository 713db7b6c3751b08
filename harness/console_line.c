/* Console lines for finished runs, built column by column with the visible width counted as they grow,
 * so the status and label are cut (ending in "...") exactly where the line would pass 160 columns. */
#include "console_line.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Column widths after the name; two spaces between columns. A name longer than NAME_MAX is cut so the
 * figures still fit. */
enum { TIME_W = 13, GBPS_W = 9, SHARE_W = 11, GAP = 2, NAME_MAX = 100 };

static const char *const kReset = "\033[m";
static const char *const kName = "\033[32m";   /* green, as Google Benchmark's names */
static const char *const kTime = "\033[33m";   /* yellow */
static const char *const kNumber = "\033[36m"; /* cyan */
static const char *const kError = "\033[31m";  /* red */
static const char *const kWarn = "\033[33m";   /* skipped, noisy, unverified */

typedef struct line {
  char *buf;
  size_t len, n, visible;
  int color;
} line;

static void put_raw(line *l, const char *s, size_t n) {
  if (l->len == 0) return;
  if (l->n + n >= l->len) n = l->len - 1 - l->n;
  memcpy(l->buf + l->n, s, n);
  l->n += n;
  l->buf[l->n] = '\0';
}

/* Text of at most `max` visible columns (cut with "..." when longer), in `code` when colouring. */
static void put_text(line *l, const char *code, const char *s, size_t max) {
  size_t w = km_console_visible_width(s);
  if (l->color && code) put_raw(l, code, strlen(code));
  if (w <= max) {
    put_raw(l, s, strlen(s));
    l->visible += w;
  } else if (max >= 3) {
    size_t keep = 0, cols = 0; /* whole UTF-8 characters up to max - 3 columns */
    while (s[keep] && cols < max - 3) {
      keep++;
      while ((s[keep] & 0xC0) == 0x80) keep++;
      cols++;
    }
    put_raw(l, s, keep);
    put_raw(l, "...", 3);
    l->visible += cols + 3;
  }
  if (l->color && code) put_raw(l, kReset, strlen(kReset));
}

static void put_spaces(line *l, size_t n) {
  for (size_t i = 0; i < n; i++) put_raw(l, " ", 1);
  l->visible += n;
}

/* s right-aligned (right != 0) or left-aligned in `width` columns, preceded by the column gap. */
static void put_cell(line *l, const char *code, const char *s, size_t width, int right) {
  size_t w = km_console_visible_width(s);
  put_spaces(l, GAP);
  if (right && w < width) put_spaces(l, width - w);
  put_text(l, code, s, width > w ? w : width);
  if (!right && w < width) put_spaces(l, width - w);
}

static void put_name(line *l, const char *code, const char *s) {
  size_t w = km_console_visible_width(s);
  put_text(l, code, s, w < NAME_MAX ? w : NAME_MAX);
  if (w < KM_CONSOLE_NAME_WIDTH) put_spaces(l, KM_CONSOLE_NAME_WIDTH - w);
}

/* The rest of the line, up to KM_CONSOLE_WIDTH. */
static void put_tail(line *l, const char *code, const char *s) {
  put_spaces(l, GAP);
  size_t room = l->visible < KM_CONSOLE_WIDTH ? KM_CONSOLE_WIDTH - l->visible : 0;
  put_text(l, code, s, room);
}

size_t km_console_visible_width(const char *s) {
  size_t w = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    if (*p == 0x1b && p[1] == '[') { /* CSI ... final byte in @..~ */
      p += 2;
      while (*p && !(*p >= 0x40 && *p <= 0x7e)) p++;
      if (*p) p++;
      continue;
    }
    if (*p == '\n' && p[1] == '\0') break;
    if ((*p & 0xC0) != 0x80) w++;
    p++;
  }
  return w;
}

static double counter(const gb_run *r, const char *name) {
  for (size_t i = 0; i < r->ncounters; i++)
    if (strcmp(r->counter_names[i], name) == 0) return r->counter_values[i];
  return NAN;
}

static void fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t len, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, len, f, ap);
  va_end(ap);
}

size_t km_console_header(int color, char *buf, size_t len) {
  line l = {buf, len, 0, 0, color};
  if (len) buf[0] = '\0';
  put_name(&l, NULL, "case");
  put_cell(&l, NULL, "time", TIME_W, 1);
  put_cell(&l, NULL, "GB/s", GBPS_W, 1);
  put_cell(&l, NULL, "of ceiling", SHARE_W, 0);
  put_tail(&l, NULL, "status; label (every counter is in --json)");
  put_raw(&l, "\n", 1);
  size_t rule = l.visible;
  l.visible = 0;
  for (size_t i = 0; i < rule; i++) put_raw(&l, "-", 1);
  put_raw(&l, "\n", 1);
  return l.n;
}

/* Time per iteration in microseconds: the median of samples when the run has it. */
static double time_us(const gb_run *r) {
  double med = counter(r, "median_us");
  if (isfinite(med)) return med;
  static const struct { const char *unit; double to_us; } units[] = {{"ns", 1e-3}, {"us", 1.0}, {"ms", 1e3}, {"s", 1e6}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (r->time_unit && strcmp(r->time_unit, units[i].unit) == 0) return r->real_time * units[i].to_us;
  return r->real_time;
}

static void status_text(const gb_run *r, char *buf, size_t len, const char **code) {
  const char *label = r->label ? r->label : "";
  const char *sep = label[0] ? "; " : "";
  double noisy = counter(r, "noisy"), verified = counter(r, "verified"), cv = counter(r, "cv");
  *code = kWarn;
  if (r->error) {
    *code = kError;
    fmt(buf, len, "ERROR: %s", r->message ? r->message : "");
  } else if (r->skipped) {
    const char *m = r->message ? r->message : "";
    fmt(buf, len, "SKIPPED: %s", strncmp(m, "skipped: ", 9) == 0 ? m + 9 : m); /* the harness's own prefix */
  } else if (r->is_aggregate && r->aggregate_unit && strcmp(r->aggregate_unit, "percentage") == 0) {
    *code = NULL;
    fmt(buf, len, "%s of the repetitions", r->aggregate_name);
  } else if (verified == 0.0) {
    fmt(buf, len, "unverified%s%s%s", noisy == 1.0 ? ", noisy" : "", sep, label);
  } else if (noisy == 1.0) {
    fmt(buf, len, "noisy (CV %.1f%%)%s%s", 100.0 * cv, sep, label);
  } else {
    *code = NULL;
    fmt(buf, len, "ok%s%s", sep, label);
  }
}

size_t km_console_run_line(const gb_run *r, int color, char *buf, size_t len) {
  line l = {buf, len, 0, 0, color};
  char name[512], cell[64], status[1024];
  const char *code = NULL;
  if (len) buf[0] = '\0';
  fmt(name, sizeof name, "%s%s%s", r->name, r->is_aggregate ? "_" : "", r->is_aggregate ? r->aggregate_name : "");
  put_name(&l, kName, name);
  int ran = !r->error && !r->skipped;
  int percent = r->is_aggregate && r->aggregate_unit && strcmp(r->aggregate_unit, "percentage") == 0;
  double gbps = counter(r, "GB/s"), ceiling = counter(r, "pct_of_ceiling"), link = counter(r, "pct_of_link");
  if (!ran) {
    fmt(cell, sizeof cell, "-");
  } else if (percent) {
    fmt(cell, sizeof cell, "%.2f %%", 100.0 * r->real_time);
  } else {
    double us = time_us(r);
    fmt(cell, sizeof cell, us < 100 ? "%.2f us" : "%.1f us", us);
  }
  put_cell(&l, kTime, cell, TIME_W, 1);
  if (ran && !percent && isfinite(gbps))
    fmt(cell, sizeof cell, "%.1f", gbps);
  else
    fmt(cell, sizeof cell, "-");
  put_cell(&l, kNumber, cell, GBPS_W, 1);
  /* a row over PCIe is a share of the link; every other row of the copy ceiling */
  if (ran && !percent && isfinite(link))
    fmt(cell, sizeof cell, "%.1f%% link", link);
  else if (ran && !percent && isfinite(ceiling))
    fmt(cell, sizeof cell, "%.1f%%", ceiling);
  else
    fmt(cell, sizeof cell, "-");
  put_cell(&l, kNumber, cell, SHARE_W, 0);
  status_text(r, status, sizeof status, &code);
  put_tail(&l, code, status);
  size_t visible = l.visible;
  put_raw(&l, "\n", 1);
  return visible;
}
