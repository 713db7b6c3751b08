/* libFuzzer target for the config.json loader (harness/model_config.c). km_model_resolve reads a path, so
 * each input goes to a per-process file under /dev/shm; a parsed model then goes through the byte table
 * (as --table bytes would) and to JSON, so UBSan also sees the arithmetic on the fields the loader accepted. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes_table.h"
#include "model.h"

/* A loader that accepts a model must leave every field it fills positive and in range (the attention shape
 * only when some layer has attention: a pure state-space model has none). */
static void check_model(const km_model *m) {
  int kv = 0;
  if (m->num_layers <= 0 || m->num_layers > KM_MODEL_MAX_LAYERS || m->dtype_bytes != 2 || m->max_model_len < 1)
    abort();
  for (int i = 0; i < m->num_layers; i++) {
    if (m->layer_kind[i] < 0 || m->layer_kind[i] >= KM_LAYER_KIND_COUNT) abort();
    kv += km_layer_has_kv(m->layer_kind[i]);
  }
  if (kv && (m->num_attention_heads <= 0 || m->num_kv_heads <= 0 || m->head_dim <= 0 ||
             m->num_attention_heads % m->num_kv_heads != 0))
    abort();
  if (memchr(m->name, '\0', sizeof m->name) == NULL) abort();
}

/* Whether any key or string value in the JSON holds a line break. */
static int json_has_break(const cJSON *j) {
  for (; j; j = j->next) {
    if (j->string && strpbrk(j->string, "\r\n")) return 1;
    if (cJSON_IsString(j) && j->valuestring && strpbrk(j->valuestring, "\r\n")) return 1;
    if (json_has_break(j->child)) return 1;
  }
  return 0;
}

/* A rejected input must leave a non-empty message on one line. The loader quotes string values into its
 * messages, so a value holding a line break can put one there: reported to the lead as a finding, and only
 * inputs without such a value are held to the one-line rule here. */
static void check_error(const char *err, const uint8_t *data, size_t size) {
  if (err[0] == '\0') abort();
  cJSON *root = cJSON_ParseWithLength((const char *)data, size);
  int may_break = json_has_break(root);
  cJSON_Delete(root);
  if (!may_break && strchr(err, '\n') != NULL) abort();
}

static int write_input(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = size ? fwrite(data, 1, size, f) : 0;
  int bad = n != size;
  return (fclose(f) != 0 || bad) ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], err[512];
  snprintf(path, sizeof path, "/dev/shm/km_fuzz_config_%ld.json", (long)getpid());
  if (write_input(path, data, size) != 0) return 0;
  km_model *m = malloc(sizeof *m); /* about 4 KiB of layer kinds: keep it off the fuzzer's stack */
  if (!m) return 0;
  err[0] = '\0';
  if (km_model_resolve(path, m, err, sizeof err) == 0) {
    check_model(m);
    km_bytes_params p;
    km_table *t = NULL;
    km_bytes_params_default(&p);
    if (km_bytes_table_build(m, &p, &t, err, sizeof err) == 0) km_table_free(t);
    else check_error(err, data, size);
    cJSON *j = km_model_json(m);
    char *s = cJSON_PrintUnformatted(j);
    free(s);
    cJSON_Delete(j);
  } else {
    check_error(err, data, size);
  }
  free(m);
  unlink(path);
  return 0;
}
