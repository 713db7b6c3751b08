/* Python-json semantics over cJSON: the non-standard constants Python's json.loads accepts, rewritten in
 * place (same length) into JSON cJSON reads, and a last-wins object lookup. */
#include "config_json.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether text[i..] starts the bare word w (not part of a longer identifier). */
static int word_at(const char *text, size_t len, size_t i, const char *w) {
  size_t n = strlen(w);
  if (i + n > len || memcmp(text + i, w, n) != 0) return 0;
  if (i > 0 && ident_char(text[i - 1])) return 0;
  return i + n == len || !ident_char(text[i + n]);
}

/* Infinity (8 bytes) -> "1e999   " (strtod overflows to +inf; a leading '-' stays); NaN (3) -> "[] ". */
static void rewrite_constants(char *s, size_t len) {
  int in_string = 0;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (in_string) {
      if (ch == '\\') i++;
      else if (ch == '"') in_string = 0;
      continue;
    }
    if (ch == '"') {
      in_string = 1;
    } else if (word_at(s, len, i, "Infinity")) {
      memcpy(s + i, "1e999   ", 8);
      i += 7;
    } else if (word_at(s, len, i, "NaN")) {
      memcpy(s + i, "[] ", 3);
      i += 2;
    }
  }
}

cJSON *km_config_json_parse(const char *text, size_t len, long *err_offset) {
  char *copy = malloc(len + 1);
  if (!copy) {
    *err_offset = 0;
    return NULL;
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  rewrite_constants(copy, len);
  cJSON *root = cJSON_ParseWithLength(copy, len);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    *err_offset = (at && at >= copy && at <= copy + len) ? (long)(at - copy) : 0;
  }
  free(copy);
  return root;
}

const cJSON *km_json_get(const cJSON *obj, const char *key) {
  const cJSON *found = NULL, *e;
  if (!cJSON_IsObject(obj) || !key) return NULL;
  cJSON_ArrayForEach(e, obj) if (e->string && strcmp(e->string, key) == 0) found = e;
  return found;
}
