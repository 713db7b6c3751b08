/* Case selection: POSIX extended regular expressions searched in the case name, as Google Benchmark's
 * --benchmark_filter does; a leading '-' keeps the cases that do not match. */
#include "registry.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct km_filter {
  regex_t re;
  int negate;
};

int km_filter_compile(const char *pattern, km_filter **out, char *err, size_t errlen) {
  *out = NULL;
  km_filter *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(err, errlen, "out of memory compiling the filter");
    return -1;
  }
  f->negate = pattern[0] == '-';
  const char *p = f->negate ? pattern + 1 : pattern;
  int rc = regcomp(&f->re, p, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char msg[128];
    regerror(rc, &f->re, msg, sizeof msg);
    snprintf(err, errlen, "--filter '%s': bad regular expression (%s)", pattern, msg);
    free(f);
    return -1;
  }
  *out = f;
  return 0;
}

int km_filter_match(const km_filter *f, const char *name) {
  if (!f) return 1;
  int hit = regexec(&f->re, name, 0, NULL, 0) == 0;
  return f->negate ? !hit : hit;
}

void km_filter_free(km_filter *f) {
  if (!f) return;
  regfree(&f->re);
  free(f);
}

int km_select(const km_case_table *const *tables, size_t ntables, const km_filter *filter, int quick,
              km_selection *out) {
  size_t total = 0;
  for (size_t t = 0; t < ntables; t++) total += tables[t]->count;
  out->cases = calloc(total ? total : 1, sizeof *out->cases);
  out->count = 0;
  if (!out->cases) return -1;
  for (size_t t = 0; t < ntables; t++)
    for (size_t i = 0; i < tables[t]->count; i++) {
      const km_case *c = &tables[t]->cases[i];
      if (quick && !(c->flags & KM_CASE_QUICK)) continue;
      if (km_filter_match(filter, c->name)) out->cases[out->count++] = c;
    }
  return 0;
}

void km_selection_free(km_selection *s) {
  free(s->cases);
  s->cases = NULL;
  s->count = 0;
}

const km_case *km_find_case(const km_case_table *const *tables, size_t ntables, const char *name) {
  for (size_t t = 0; t < ntables; t++)
    for (size_t i = 0; i < tables[t]->count; i++)
      if (strcmp(tables[t]->cases[i].name, name) == 0) return &tables[t]->cases[i];
  return NULL;
}
