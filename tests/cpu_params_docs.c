/* The series that reports/PARAMS.md and `report --help` name are series that a case table declares, and
 * every declared series is listed in PARAMS.md: a reader never looks up a series that does not exist.
 * Every declared model parses over its axes, and the cases of a series agree on axes and model. */
#include <stdlib.h>
#include <string.h>

#include "../reports/report_usage.h"
#include "micro_tables.h"
#include "sweep_fit.h"
#include "test_util.h"

static const km_sweep *declared(const char *series) {
  for (size_t t = 0; t < km_all_table_count; t++)
    for (size_t i = 0; i < km_all_tables[t]->count; i++) {
      const km_sweep *s = km_all_tables[t]->cases[i].sweep;
      if (s && strcmp(s->series, series) == 0) return s;
    }
  return NULL;
}

static int is_case(const char *name) {
  for (size_t t = 0; t < km_all_table_count; t++)
    for (size_t i = 0; i < km_all_tables[t]->count; i++)
      if (strcmp(km_all_tables[t]->cases[i].name, name) == 0) return 1;
  return 0;
}

static size_t naxes(const km_sweep *s) {
  size_t n = 0;
  while (n < KM_SWEEP_MAX_AXES && s->axes[n]) n++;
  return n;
}

/* Every declared model parses; every case of a series declares what its first case does. */
static void test_declarations(void) {
  const char *bytes_axis[] = {"bytes"};
  for (size_t t = 0; t < km_all_table_count; t++)
    for (size_t i = 0; i < km_all_tables[t]->count; i++) {
      const km_case *c = &km_all_tables[t]->cases[i];
      if (!c->sweep) continue;
      const km_sweep *first = declared(c->sweep->series);
      km_model_terms m;
      char err[200];
      size_t n = naxes(c->sweep);
      KM_EXPECT_MSG(km_model_parse(c->sweep->model, n ? c->sweep->axes : bytes_axis, n ? n : 1, &m, err, sizeof err) == 0,
                    "%s: %s", c->name, err);
      int same = naxes(first) == n && !first->model == !c->sweep->model &&
                 (!first->model || strcmp(first->model, c->sweep->model) == 0) && !first->stages == !c->sweep->stages;
      for (size_t a = 0; same && a < n; a++) same = strcmp(first->axes[a], c->sweep->axes[a]) == 0;
      KM_EXPECT_MSG(same, "%s declares other axes or model than the first case of %s", c->name, c->sweep->series);
    }
}

/* Backticked words that look like series or case names (two or more '/'-separated parts of
 * [a-z0-9_]): each must be a declared series or a case. */
static void check_names_in(const char *text, const char *where) {
  int found = 0;
  for (const char *p = strchr(text, '`'); p; p = strchr(p + 1, '`')) {
    const char *e = strchr(p + 1, '`');
    if (!e) break;
    size_t n = (size_t)(e - p - 1);
    char word[160];
    int ok = n > 0 && n < sizeof word;
    int slashes = 0;
    for (size_t i = 0; ok && i < n; i++) {
      char ch = p[1 + i];
      slashes += ch == '/';
      ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '/';
    }
    if (ok && slashes >= 1 && strncmp(p + 1, "reports/", 8) && strncmp(p + 1, "harness/", 8) &&
        strncmp(p + 1, "tests/", 6) && strncmp(p + 1, "micro/", 6)) {
      memcpy(word, p + 1, n);
      word[n] = '\0';
      KM_EXPECT_MSG(declared(word) || is_case(word), "%s names `%s`, which is neither a declared series nor a case",
                    where, word);
      found++;
    }
    p = e;
  }
  KM_EXPECT_MSG(found > 0, "%s names no series", where);
}

/* `report predict FILE SERIES ...` lines of the usage: the SERIES word. */
static void check_usage(void) {
  int found = 0;
  for (const char *p = strstr(km_report_usage_text, "params.json "); p; p = strstr(p + 1, "params.json ")) {
    const char *s = p + strlen("params.json ");
    size_t n = strcspn(s, " \n");
    char word[160];
    if (n == 0 || n >= sizeof word || s[0] < 'a' || s[0] > 'z') continue;
    memcpy(word, s, n);
    word[n] = '\0';
    KM_EXPECT_MSG(declared(word) != NULL, "report --help predicts from `%s`, which no case table declares", word);
    found++;
  }
  KM_EXPECT_MSG(found >= 2, "report --help shows %d predict examples", found);
}

int main(void) {
  test_declarations();
  char *doc = km_test_read_text("../../reports/PARAMS.md");
  KM_EXPECT(doc != NULL);
  if (doc) {
    check_names_in(doc, "reports/PARAMS.md");
    for (size_t t = 0; t < km_all_table_count; t++) /* and every declared series is documented */
      for (size_t i = 0; i < km_all_tables[t]->count; i++) {
        const km_sweep *s = km_all_tables[t]->cases[i].sweep;
        char quoted[200];
        snprintf(quoted, sizeof quoted, "`%s`", s ? s->series : "");
        KM_EXPECT_MSG(!s || strstr(doc, quoted), "reports/PARAMS.md does not list the series %s", quoted);
      }
    free(doc);
  }
  check_usage();
  return km_test_finish("cpu_params_docs");
}
