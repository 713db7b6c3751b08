/* A small typed table printed as text, markdown, CSV or JSON. The byte table and the latency table
 * are both built as km_table so every output format carries the same rows. */
#ifndef KM_TABLE_H
#define KM_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

typedef enum km_format { KM_FORMAT_TEXT = 0, KM_FORMAT_MARKDOWN, KM_FORMAT_CSV, KM_FORMAT_JSON, KM_FORMAT_COUNT } km_format;

int km_format_parse(const char *s, km_format *out); /* 0 ok, -1 unknown */
const char *km_format_name(km_format f);

typedef enum km_cell_kind { KM_CELL_EMPTY = 0, KM_CELL_TEXT, KM_CELL_NUMBER, KM_CELL_INTEGER } km_cell_kind;

typedef struct km_cell {
  km_cell_kind kind;
  char *text;      /* KM_CELL_TEXT */
  double number;   /* KM_CELL_NUMBER / KM_CELL_INTEGER */
  int decimals;    /* digits after the point for text output of numbers */
} km_cell;

/* How the text format shows a column (markdown, CSV and JSON always carry it whole). */
typedef enum km_text_mode {
  KM_TEXT_SHOW = 0, /* a column */
  KM_TEXT_HIDE,     /* left out (e.g. what the group heading already says) */
  KM_TEXT_NOTE,     /* a reference [n] in the column, the text as a numbered note under the table */
} km_text_mode;

typedef struct km_column {
  const char *key;    /* JSON / CSV key, snake_case */
  const char *title;  /* header in text and markdown */
  int right_align;
} km_column;

typedef struct km_table {
  char *title;
  size_t ncols;
  km_column *cols;
  km_text_mode *text_mode; /* per column (KM_TEXT_SHOW unless set) */
  size_t nrows, cap;
  km_cell *cells;      /* nrows * ncols */
  char **group;        /* per row: group heading (e.g. mechanism) or NULL */
  char **caption;      /* lines printed under the title (text and markdown), "caption" in JSON */
  size_t ncaption;
} km_table;

km_table *km_table_new(const char *title, const km_column *cols, size_t ncols);
void km_table_free(km_table *t);
/* Append a row; returns its index. Cells start empty. */
size_t km_table_add_row(km_table *t, const char *group);
void km_table_set_text(km_table *t, size_t row, size_t col, const char *text);
void km_table_set_number(km_table *t, size_t row, size_t col, double v, int decimals);
void km_table_set_integer(km_table *t, size_t row, size_t col, double v);
/* How the text format shows column col. */
void km_table_set_text_mode(km_table *t, size_t col, km_text_mode mode);
/* Append a caption line (copied). */
void km_table_add_caption(km_table *t, const char *line);
/* The caption lines as a JSON array of strings. */
cJSON *km_table_caption_json(const km_table *t);

/* Print in the format; text groups rows under their heading, thousands separated by ','. */
void km_table_print(const km_table *t, km_format f, FILE *out);
/* The text format fits this many columns (harness/table_text.c). */
enum { KM_TABLE_TEXT_WIDTH = 120 };
/* Text within `width` columns where it can be: the caption wrapped; KM_TEXT_HIDE columns, and a column
 * that only repeats the row's group heading, left out; titles on several lines; a KM_TEXT_NOTE column's
 * cells, and text cells too long for their column (the last text column, the explanations, first),
 * end in a reference [n] to a numbered note (one per distinct text) printed in full under the table. */
void km_table_print_text(const km_table *t, size_t width, FILE *out);
/* A cell as printed: numbers with thousands separators when grouped (147,456), "-" for an empty cell
 * when grouped, "" otherwise. */
void km_table_cell_text(const km_table *t, size_t row, size_t col, int grouped, char *buf, size_t len);
/* Rows as a JSON array of objects keyed by column key (numbers as numbers). */
cJSON *km_table_rows_json(const km_table *t);
/* Print doc (indented, one trailing newline) and delete it. 0, or -1 when it could not be printed. */
int km_json_print_delete(cJSON *doc, FILE *out);

#endif
