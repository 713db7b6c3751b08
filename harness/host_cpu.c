/* Host CPU description (see host_cpu.h). */
#include "host_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of a "key<tabs>: value" line of /proc/cpuinfo, trimmed; NULL when the line has another key. */
static char *cpuinfo_value(char *line, const char *key) {
  const size_t n = strlen(key);
  if (strncmp(line, key, n) != 0) return NULL;
  char *p = line + n;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p != ':') return NULL;
  ++p;
  while (*p == ' ' || *p == '\t') ++p;
  char *end = p + strlen(p);
  while (end > p && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
  return p;
}

void km_host_cpu_read(km_host_cpu *c, const char *cpuinfo_path, const char *loadavg_path) {
  memset(c, 0, sizeof *c);
  snprintf(c->model, sizeof c->model, "unknown");
  c->load_1m = -1;
  FILE *f = cpuinfo_path ? fopen(cpuinfo_path, "r") : NULL;
  if (f) {
    char line[512];
    int have_model = 0, have_mhz = 0;
    while ((!have_model || !have_mhz) && fgets(line, sizeof line, f)) {
      char *v;
      if (!have_model && (v = cpuinfo_value(line, "model name")) && *v) {
        snprintf(c->model, sizeof c->model, "%s", v);
        have_model = 1;
      } else if (!have_mhz && (v = cpuinfo_value(line, "cpu MHz"))) {
        char *end;
        const double mhz = strtod(v, &end);
        if (end != v && mhz > 0) c->mhz = mhz;
        have_mhz = 1;
      }
    }
    fclose(f);
  }
  f = loadavg_path ? fopen(loadavg_path, "r") : NULL;
  if (f) {
    double l;
    if (fscanf(f, "%lf", &l) == 1 && l >= 0) c->load_1m = l;
    fclose(f);
  }
}

void km_host_cpu_query(km_host_cpu *c) { km_host_cpu_read(c, "/proc/cpuinfo", "/proc/loadavg"); }
