/* CPU test of tables printed as text: within the width asked for, the first column (the row's name)
 * and numbers always whole, a column that only repeats the group heading left out, long titles on
 * several lines, and long text cells cut at a word with a reference to a numbered note that holds the
 * whole text (one note for equal texts); a table that fits is printed as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console_line.h"
#include "table.h"
#include "test_util.h"

static char *print_to_text(const km_table *t, size_t width) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return NULL;
  km_table_print_text(t, width, m);
  fclose(m);
  return buf;
}

static size_t widest_line(const char *text, int *trailing) {
  size_t widest = 0;
  *trailing = 0;
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n");
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    size_t w = km_console_visible_width(line);
    if (w > widest) widest = w;
    if (n && line[n - 1] == ' ') *trailing = 1;
    p += n + (p[n] == '\n');
  }
  return widest;
}

static const km_column cols[] = {
    {"name", "name", 0},          {"kind", "kind", 0},
    {"bytes", "bytes per token stored", 1}, {"rate", "GB/s read + written", 1},
    {"detail", "per-sequence cap or state", 0}, {"note", "note", 0},
};

static km_table *sample(void) {
  km_table *t = km_table_new("sample", cols, sizeof cols / sizeof cols[0]);
  static const char *const long_note = "a long explanation of how this figure was counted, which says more than any "
                                       "column could hold and so belongs under the table";
  for (int i = 0; i < 6; i++) {
    char name[64];
    snprintf(name, sizeof name, "family/variant_with_a_long_name_%d/d128/h8/bf16/random", i);
    size_t r = km_table_add_row(t, i < 3 ? "store fewer bytes" : "read less");
    km_table_set_text(t, r, 0, name);
    km_table_set_text(t, r, 1, i < 3 ? "store fewer bytes" : "read less");
    km_table_set_integer(t, r, 2, 147456.0 * (i + 1));
    km_table_set_number(t, r, 3, 4219.9 - i, 1);
    km_table_set_text(t, r, 4, i % 2 ? "4,096 tok/seq on 36 of 36 KV layers" : "-");
    km_table_set_text(t, r, 5, i == 5 ? "short" : long_note);
  }
  return t;
}

static void check_fitted(void) {
  km_table *t = sample();
  char *text = print_to_text(t, 100);
  int trailing = 0;
  KM_EXPECT(text != NULL);
  if (!text) return;
  KM_EXPECT_MSG(widest_line(text, &trailing) <= 100, "wider than 100:\n%s", text);
  KM_EXPECT_MSG(!trailing, "trailing spaces:\n%s", text);
  for (int i = 0; i < 6; i++) {
    char name[64];
    snprintf(name, sizeof name, "family/variant_with_a_long_name_%d/d128/h8/bf16/random", i);
    KM_EXPECT_MSG(strstr(text, name) != NULL, "the name %s was cut:\n%s", name, text);
  }
  KM_EXPECT_MSG(strstr(text, "884,736") && strstr(text, "4,214.9"), "numbers cut:\n%s", text);
  KM_EXPECT_MSG(strstr(text, "[store fewer bytes]") && !strstr(text, "  store fewer bytes"),
                "the kind column repeats the group heading:\n%s", text);
  KM_EXPECT_MSG(strstr(text, "\nnotes:\n[1] a long explanation of how this figure was counted"), "no note 1:\n%s", text);
  KM_EXPECT_MSG(strstr(text, "belongs under the table"), "the note is not whole:\n%s", text);
  KM_EXPECT_MSG(!strstr(text, "[4]"), "equal texts got separate notes:\n%s", text); /* one explanation, one detail */
  KM_EXPECT_MSG(strstr(text, "short"), "a cell that fits was noted:\n%s", text);
  free(text);
  km_table_free(t);
}

static void check_fits_unchanged(void) {
  km_table *t = sample();
  char *text = print_to_text(t, 1000);
  int trailing = 0;
  KM_EXPECT(text && !strstr(text, "notes:") && strstr(text, "bytes per token stored") &&
            strstr(text, "  store fewer bytes"));
  KM_EXPECT(text && widest_line(text, &trailing) > 100 && !trailing);
  free(text);
  km_table_free(t);
}

/* A row shorter than the one before it is printed alone: nothing of the longer row's tail after it. */
static void check_shorter_row(void) {
  static const km_column cols[] = {{"name", "name", 0}, {"ref", "ref", 0}};
  km_table *t = km_table_new("rows", cols, 2);
  size_t a = km_table_add_row(t, NULL), b = km_table_add_row(t, NULL);
  km_table_set_text(t, a, 0, "x");
  km_table_set_text(t, a, 1, "[10]");
  km_table_set_text(t, b, 0, "x");
  km_table_set_text(t, b, 1, "[1]");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  km_table_print_text(t, 120, f);
  fclose(f);
  KM_EXPECT_MSG(strstr(buf, "[1]]") == NULL && strstr(buf, "[1]\n") != NULL, "printed:\n%s", buf);
  free(buf);
  km_table_free(t);
}

int main(void) {
  check_shorter_row();
  check_fitted();
  check_fits_unchanged();
  return km_test_finish("cpu_table_text");
}
