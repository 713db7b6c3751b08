/* Printing a recorded run's tables. Stored rows are turned back into a km_table so every --format
 * prints them the way the run did; the table keeps its own copies of the column keys and titles. */
#include "run_tables.h"

#include "techniques.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { KM_ROWS_MAX_COLS = 64, KM_ROWS_TITLE_MAX = 64 }; /* the byte table has a dozen columns */

/* Whole numbers (byte counts) print as integers; a column with any fraction prints all its numbers
 * with two decimals, so 1 and 0.25 in one column read 1.00 and 0.25. */
static int column_is_integral(const cJSON *rows, const char *key) {
  for (const cJSON *row = rows->child; row; row = row->next) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    if (cJSON_IsNumber(v) && !(v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)) return 0;
  }
  return 1;
}

static int cell_from_json(km_table *t, size_t k, size_t c, const cJSON *v, int integral) {
  if (!v || cJSON_IsNull(v)) return 0;
  if (cJSON_IsString(v)) {
    km_table_set_text(t, k, c, v->valuestring);
  } else if (cJSON_IsBool(v)) {
    km_table_set_text(t, k, c, cJSON_IsTrue(v) ? "true" : "false");
  } else if (cJSON_IsNumber(v)) {
    if (integral)
      km_table_set_integer(t, k, c, v->valuedouble);
    else
      km_table_set_number(t, k, c, v->valuedouble, 2);
  } else {
    return -1;
  }
  return 0;
}

/* Titles are the keys with spaces for '_', so a text table can put a long one on two lines. */
static size_t count_columns(const cJSON *first, km_column *cols, char titles[][KM_ROWS_TITLE_MAX], size_t max) {
  size_t n = 0;
  for (const cJSON *v = first->child; v && n < max; v = v->next) {
    if (strcmp(v->string, "group") == 0) continue;
    snprintf(titles[n], KM_ROWS_TITLE_MAX, "%s", v->string);
    for (char *p = titles[n]; *p; p++)
      if (*p == '_') *p = ' ';
    cols[n].key = v->string;
    cols[n].title = titles[n];
    cols[n].right_align = cJSON_IsNumber(v);
    n++;
  }
  return n;
}

static int fill_rows(km_table *t, const cJSON *rows, char *err, size_t errlen) {
  int integral[KM_ROWS_MAX_COLS];
  for (size_t c = 0; c < t->ncols; c++) integral[c] = column_is_integral(rows, t->cols[c].key);
  size_t i = 0;
  for (const cJSON *row = rows->child; row; row = row->next, i++) {
    if (!cJSON_IsObject(row)) {
      snprintf(err, errlen, "rows[%zu] is not an object", i);
      return -1;
    }
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(row, "group");
    size_t k = km_table_add_row(t, cJSON_IsString(g) ? g->valuestring : NULL);
    for (size_t c = 0; c < t->ncols; c++)
      if (cell_from_json(t, k, c, cJSON_GetObjectItemCaseSensitive(row, t->cols[c].key), integral[c])) {
        snprintf(err, errlen, "rows[%zu].\"%s\" is not a string, number, bool or null", i, t->cols[c].key);
        return -1;
      }
  }
  return 0;
}

km_table *km_table_from_rows_json(const char *title, const cJSON *rows, char *err, size_t errlen) {
  km_column cols[KM_ROWS_MAX_COLS];
  char titles[KM_ROWS_MAX_COLS][KM_ROWS_TITLE_MAX];
  if (!cJSON_IsArray(rows) || (rows->child && !cJSON_IsObject(rows->child))) {
    snprintf(err, errlen, "\"rows\" must be an array of objects");
    return NULL;
  }
  size_t n = rows->child ? count_columns(rows->child, cols, titles, KM_ROWS_MAX_COLS) : 0;
  if (n == 0) {
    cols[0] = (km_column){"case", "case", 0};
    n = 1;
  }
  km_table *t = km_table_new(title, cols, n);
  if (t && fill_rows(t, rows, err, errlen)) {
    km_table_free(t);
    return NULL;
  }
  return t;
}

static void bytes_title(const cJSON *bytes, char *buf, size_t len) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(bytes, "model");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(model, "name");
  const cJSON *budget = cJSON_GetObjectItemCaseSensitive(bytes, "kv_budget_bytes");
  snprintf(buf, len, "Per-token bytes and capacity (as stored): model %s", cJSON_IsString(name) ? name->valuestring : "?");
  if (cJSON_IsNumber(budget)) {
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, ", KV budget %.0f bytes", budget->valuedouble);
  }
}

/* tables.bytes as a km_table, NULL without error when the file has none. */
static int stored_bytes_table(const km_run_file *f, const cJSON **obj, km_table **out, char *err, size_t errlen) {
  const cJSON *tables = cJSON_GetObjectItemCaseSensitive(f->doc, "tables");
  const cJSON *bytes = cJSON_IsObject(tables) ? cJSON_GetObjectItemCaseSensitive(tables, "bytes") : NULL;
  *obj = bytes;
  *out = NULL;
  char inner[200], title[256];
  if (tables && !cJSON_IsObject(tables)) {
    snprintf(err, errlen, "%s: \"tables\" must be an object", f->path);
    return -1;
  }
  if (!bytes) return 0;
  if (!cJSON_IsObject(bytes)) {
    snprintf(err, errlen, "%s: \"tables.bytes\" must be an object", f->path);
    return -1;
  }
  bytes_title(bytes, title, sizeof title);
  *out = km_table_from_rows_json(title, cJSON_GetObjectItemCaseSensitive(bytes, "rows"), inner, sizeof inner);
  if (!*out) snprintf(err, errlen, "%s: tables.bytes: %s", f->path, inner);
  return *out ? 0 : -1;
}

static void print_json(const km_table *lat, const cJSON *bytes, FILE *out) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddItemToObject(doc, "latency", lat ? km_table_rows_json(lat) : cJSON_CreateArray());
  cJSON_AddItemToObject(doc, "bytes", bytes ? cJSON_Duplicate(bytes, 1) : cJSON_CreateNull());
  km_json_print_delete(doc, out);
}

int km_run_tables_print(const km_run_file *f, km_format fmt, FILE *out, char *err, size_t errlen) {
  const cJSON *bytes_obj = NULL;
  km_table *bytes = NULL;
  if (stored_bytes_table(f, &bytes_obj, &bytes, err, errlen)) return -1;
  km_table *lat = f->results.count ? km_latency_table(&f->results) : NULL;
  if (fmt == KM_FORMAT_JSON) {
    print_json(lat, bytes_obj, out);
  } else {
    if (lat) km_table_print(lat, fmt, out);
    if (lat && bytes) fputc('\n', out);
    if (bytes) km_table_print(bytes, fmt, out);
    if (!lat && !bytes) fprintf(out, "%s: no benchmarks and no tables.bytes: nothing to print\n", f->path);
  }
  km_table_free(lat);
  km_table_free(bytes);
  return 0;
}

int km_run_techniques_print(const km_run_file *f, km_format fmt, FILE *out, char *err, size_t errlen) {
  const cJSON *bytes_obj = NULL;
  km_table *bytes = NULL;
  if (stored_bytes_table(f, &bytes_obj, &bytes, err, errlen)) return -1;
  km_table_free(bytes);
  /* the table the run stored (with its derived figures, which need the case tables), else rebuilt */
  const cJSON *tables = cJSON_GetObjectItemCaseSensitive(f->doc, "tables");
  const cJSON *stored = cJSON_IsObject(tables) ? cJSON_GetObjectItemCaseSensitive(tables, "techniques") : NULL;
  km_table *t = NULL;
  if (cJSON_IsArray(stored)) {
    km_table *fresh = km_techniques_table(bytes_obj, &f->results, NULL, 0); /* its title */
    char inner[200];
    t = km_table_from_rows_json(fresh ? fresh->title : "Techniques side by side", stored, inner, sizeof inner);
    km_table_free(fresh);
    if (!t) {
      snprintf(err, errlen, "%s: tables.techniques: %s", f->path, inner);
      return -1;
    }
  } else {
    t = km_techniques_table(bytes_obj, &f->results, NULL, 0);
  }
  if (!t) {
    snprintf(err, errlen, "out of memory building the technique table");
    return -1;
  }
  km_table_print(t, fmt, out);
  km_table_free(t);
  return 0;
}
