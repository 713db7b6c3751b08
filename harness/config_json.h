/* config.json read the way Python's json module reads it (transformers loads configs with json.loads):
 * Infinity, -Infinity and NaN are values, and of duplicate keys the last one wins. cJSON does neither, so
 * the text is rewritten before cJSON parses it and objects are looked up through km_json_get. */
#ifndef KM_CONFIG_JSON_H
#define KM_CONFIG_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Parse text (len bytes, need not end in NUL). NULL when malformed, with *err_offset the byte offset in the
 * original text where parsing stopped. Infinity becomes a number that reads as +inf; NaN an empty array, so
 * a NaN where a number is needed is "not a number" (every field kvmicro reads is invalid as NaN). The
 * rewrite keeps every byte offset. */
cJSON *km_config_json_parse(const char *text, size_t len, long *err_offset);

/* The value of key in obj, the last one when the key repeats (Python's dict keeps the last); NULL when
 * absent or obj is not an object. A JSON null is returned as the null item: present, and None. */
const cJSON *km_json_get(const cJSON *obj, const char *key);

#endif
