/* The console lines printed while benchmarks run: one line per run with what a reader scans for (name,
 * time, GB/s, share of the ceiling, status), at most KM_CONSOLE_WIDTH columns; every counter stays in
 * the JSON file. Colour codes only when asked (a terminal). */
#ifndef KM_CONSOLE_LINE_H
#define KM_CONSOLE_LINE_H

#include <stddef.h>

#include "gbench_shim.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  KM_CONSOLE_WIDTH = 160,     /* visible columns of every line */
  KM_CONSOLE_NAME_WIDTH = 62, /* the longest case name today is 61: columns line up for all of them */
};

/* The column titles and a rule under them, two lines each ending in '\n'. Returns strlen(buf). */
size_t km_console_header(int color, char *buf, size_t len);
/* One run as a line ending in '\n' (len >= 4 * KM_CONSOLE_WIDTH holds any line with colour codes).
 * Returns its visible width (escape codes and the newline not counted). */
size_t km_console_run_line(const gb_run *run, int color, char *buf, size_t len);
/* Visible columns of s: escape sequences and a trailing newline not counted, UTF-8 counted per character. */
size_t km_console_visible_width(const char *s);

#ifdef __cplusplus
}
#endif

#endif
