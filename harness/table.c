/* Typed tables printed four ways. Text pads columns and groups rows under headings; markdown and CSV
 * carry the same cells; JSON keeps numbers as numbers. */
#include "table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_names[KM_FORMAT_COUNT] = {"text", "markdown", "csv", "json"};

int km_format_parse(const char *s, km_format *out) {
  for (int i = 0; i < KM_FORMAT_COUNT; i++)
    if (strcmp(s, format_names[i]) == 0) {
      *out = (km_format)i;
      return 0;
    }
  return -1;
}

const char *km_format_name(km_format f) { return (f >= 0 && f < KM_FORMAT_COUNT) ? format_names[f] : "?"; }

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

km_table *km_table_new(const char *title, const km_column *cols, size_t ncols) {
  km_table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->title = dup_str(title ? title : "");
  t->ncols = ncols;
  t->cols = malloc(ncols * sizeof *cols);
  t->text_mode = calloc(ncols ? ncols : 1, sizeof *t->text_mode);
  if (!t->cols || !t->title || !t->text_mode) {
    km_table_free(t);
    return NULL;
  }
  for (size_t c = 0; c < ncols; c++) { /* the table keeps its own copies: callers may pass temporaries */
    t->cols[c] = cols[c];
    t->cols[c].key = dup_str(cols[c].key);
    t->cols[c].title = dup_str(cols[c].title);
    if (!t->cols[c].key || !t->cols[c].title) {
      t->ncols = c + 1;
      km_table_free(t);
      return NULL;
    }
  }
  return t;
}

static km_cell *cell_at(const km_table *t, size_t row, size_t col) { return &t->cells[row * t->ncols + col]; }

void km_table_free(km_table *t) {
  if (!t) return;
  for (size_t r = 0; r < t->nrows; r++) {
    for (size_t c = 0; c < t->ncols; c++) free(cell_at(t, r, c)->text);
    free(t->group[r]);
  }
  for (size_t i = 0; i < t->ncaption; i++) free(t->caption[i]);
  free(t->caption);
  free(t->cells);
  free(t->group);
  for (size_t c = 0; t->cols && c < t->ncols; c++) {
    free((char *)t->cols[c].key);
    free((char *)t->cols[c].title);
  }
  free(t->cols);
  free(t->text_mode);
  free(t->title);
  free(t);
}

size_t km_table_add_row(km_table *t, const char *group) {
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    km_cell *cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
    if (!cells) abort(); /* a table of a few hundred rows: failing here means the process is out of memory */
    t->cells = cells;
    char **group_arr = realloc(t->group, cap * sizeof *group_arr);
    if (!group_arr) abort();
    t->group = group_arr;
    t->cap = cap;
  }
  size_t r = t->nrows++;
  memset(cell_at(t, r, 0), 0, t->ncols * sizeof(km_cell));
  t->group[r] = dup_str(group);
  return r;
}

void km_table_set_text(km_table *t, size_t row, size_t col, const char *text) {
  km_cell *c = cell_at(t, row, col);
  free(c->text);
  c->kind = text ? KM_CELL_TEXT : KM_CELL_EMPTY;
  c->text = dup_str(text);
}

void km_table_set_number(km_table *t, size_t row, size_t col, double v, int decimals) {
  km_cell *c = cell_at(t, row, col);
  free(c->text);
  c->text = NULL;
  c->kind = isfinite(v) ? KM_CELL_NUMBER : KM_CELL_EMPTY;
  c->number = v;
  c->decimals = decimals;
}

void km_table_set_integer(km_table *t, size_t row, size_t col, double v) {
  km_table_set_number(t, row, col, v, 0);
  if (isfinite(v)) cell_at(t, row, col)->kind = KM_CELL_INTEGER;
}

void km_table_set_text_mode(km_table *t, size_t col, km_text_mode mode) {
  if (col < t->ncols) t->text_mode[col] = mode;
}

void km_table_add_caption(km_table *t, const char *line) {
  char **c = realloc(t->caption, (t->ncaption + 1) * sizeof *c);
  if (!c) abort(); /* a few lines: failing here means the process is out of memory */
  t->caption = c;
  t->caption[t->ncaption++] = dup_str(line ? line : "");
}

cJSON *km_table_caption_json(const km_table *t) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < t->ncaption; i++) cJSON_AddItemToArray(a, cJSON_CreateString(t->caption[i]));
  return a;
}

/* Numbers with thousands separators in text and markdown (147,456), plain in CSV and JSON. */
static void format_cell(const km_cell *c, int grouped, char *buf, size_t len) {
  if (c->kind == KM_CELL_EMPTY) {
    snprintf(buf, len, "%s", grouped ? "-" : "");
    return;
  }
  if (c->kind == KM_CELL_TEXT) {
    snprintf(buf, len, "%s", c->text);
    return;
  }
  char raw[64];
  snprintf(raw, sizeof raw, "%.*f", c->kind == KM_CELL_INTEGER ? 0 : c->decimals, c->number);
  if (!grouped) {
    snprintf(buf, len, "%s", raw);
    return;
  }
  const char *p = raw;
  size_t o = 0;
  if (*p == '-') buf[o++] = *p++;
  size_t digits = strcspn(p, ".");
  for (size_t i = 0; i < digits && o + 2 < len; i++) {
    buf[o++] = p[i];
    size_t left = digits - i - 1;
    if (left > 0 && left % 3 == 0) buf[o++] = ',';
  }
  snprintf(buf + o, len - o, "%s", p + digits);
}

void km_table_cell_text(const km_table *t, size_t row, size_t col, int grouped, char *buf, size_t len) {
  format_cell(cell_at(t, row, col), grouped, buf, len);
}

static int differs(const char *a, const char *b) {
  if (!a || !b) return a != b;
  return strcmp(a, b) != 0;
}

/* Markdown for documents: the caption, every cell in full, one header row. */
static void print_markdown(const km_table *t, FILE *out) {
  size_t *w = calloc(t->ncols, sizeof *w);
  char buf[1024];
  if (!w) return;
  for (size_t c = 0; c < t->ncols; c++) w[c] = strlen(t->cols[c].title);
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++) {
      format_cell(cell_at(t, r, c), 1, buf, sizeof buf);
      if (strlen(buf) > w[c]) w[c] = strlen(buf);
    }
  if (t->title[0]) fprintf(out, "### %s\n\n", t->title);
  for (size_t i = 0; i < t->ncaption; i++) fprintf(out, "%s  \n", t->caption[i]);
  if (t->ncaption) fputc('\n', out);
  fprintf(out, "| ");
  for (size_t c = 0; c < t->ncols; c++) fprintf(out, "%s%-*s", c ? " | " : "", (int)w[c], t->cols[c].title);
  fprintf(out, " |\n|");
  for (size_t c = 0; c < t->ncols; c++) {
    fprintf(out, " ");
    for (size_t i = 0; i < w[c] - (t->cols[c].right_align ? 1 : 0); i++) fputc('-', out);
    fprintf(out, "%s|", t->cols[c].right_align ? ": " : " ");
  }
  fputc('\n', out);
  for (size_t r = 0; r < t->nrows; r++) {
    if (t->group[r] && (r == 0 || differs(t->group[r], t->group[r - 1]))) fprintf(out, "| **%s** |\n", t->group[r]);
    fprintf(out, "| ");
    for (size_t c = 0; c < t->ncols; c++) {
      format_cell(cell_at(t, r, c), 1, buf, sizeof buf);
      fprintf(out, "%s%*s", c ? " | " : "", t->cols[c].right_align ? (int)w[c] : -(int)w[c], buf);
    }
    fprintf(out, " |\n");
  }
  free(w);
}

static void print_csv_field(FILE *out, const char *s) {
  if (strpbrk(s, ",\"\n")) {
    fputc('"', out);
    for (; *s; s++) {
      if (*s == '"') fputc('"', out);
      fputc(*s, out);
    }
    fputc('"', out);
  } else {
    fputs(s, out);
  }
}

static void print_csv(const km_table *t, FILE *out) {
  char buf[512];
  int has_group = 0;
  for (size_t r = 0; r < t->nrows; r++) has_group |= t->group[r] != NULL;
  if (has_group) fputs("group,", out);
  for (size_t c = 0; c < t->ncols; c++) fprintf(out, "%s%s", c ? "," : "", t->cols[c].key);
  fputc('\n', out);
  for (size_t r = 0; r < t->nrows; r++) {
    if (has_group) {
      print_csv_field(out, t->group[r] ? t->group[r] : "");
      fputc(',', out);
    }
    for (size_t c = 0; c < t->ncols; c++) {
      format_cell(cell_at(t, r, c), 0, buf, sizeof buf);
      if (c) fputc(',', out);
      print_csv_field(out, buf);
    }
    fputc('\n', out);
  }
}

int km_json_print_delete(cJSON *doc, FILE *out) {
  char *s = cJSON_Print(doc);
  if (s) fprintf(out, "%s\n", s);
  free(s);
  cJSON_Delete(doc);
  return s ? 0 : -1;
}

cJSON *km_table_rows_json(const km_table *t) {
  cJSON *rows = cJSON_CreateArray();
  for (size_t r = 0; rows && r < t->nrows; r++) {
    cJSON *o = cJSON_CreateObject();
    if (t->group[r]) cJSON_AddStringToObject(o, "group", t->group[r]);
    for (size_t c = 0; c < t->ncols; c++) {
      const km_cell *cell = cell_at(t, r, c);
      switch (cell->kind) {
        case KM_CELL_TEXT: cJSON_AddStringToObject(o, t->cols[c].key, cell->text); break;
        case KM_CELL_NUMBER:
        case KM_CELL_INTEGER: cJSON_AddNumberToObject(o, t->cols[c].key, cell->number); break;
        default: cJSON_AddNullToObject(o, t->cols[c].key); break;
      }
    }
    cJSON_AddItemToArray(rows, o);
  }
  return rows;
}

void km_table_print(const km_table *t, km_format f, FILE *out) {
  switch (f) {
    case KM_FORMAT_MARKDOWN: print_markdown(t, out); break;
    case KM_FORMAT_CSV: print_csv(t, out); break;
    case KM_FORMAT_JSON: {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "title", t->title);
      if (t->ncaption) cJSON_AddItemToObject(o, "caption", km_table_caption_json(t));
      cJSON_AddItemToObject(o, "rows", km_table_rows_json(t));
      char *s = cJSON_Print(o);
      if (s) fprintf(out, "%s\n", s);
      free(s);
      cJSON_Delete(o);
      break;
    }
    default: km_table_print_text(t, KM_TABLE_TEXT_WIDTH, out); break;
  }
}
