/* libFuzzer target for the config.json loader (harness/model_config.c). km_model_resolve reads a path, so
 * each input goes to a per-process file under /dev/shm; a parsed model is then turned into bytes per token
 * and JSON so UBSan also sees the arithmetic on the fields the loader accepted. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes_table.h"
#include "model.h"

/* A loader that accepts a model must leave every field it fills positive and in range. */
static void check_model(const km_model *m) {
  if (m->num_layers <= 0 || m->num_layers > KM_MODEL_MAX_LAYERS || m->num_attention_heads <= 0 ||
      m->num_kv_heads <= 0 || m->head_dim <= 0 || (m->dtype_bytes != 2 && m->dtype_bytes != 4))
    abort();
  for (int i = 0; i < m->num_layers; i++)
    if (m->layer_kind[i] < 0 || m->layer_kind[i] >= KM_LAYER_KIND_COUNT) abort();
  if (memchr(m->name, '\0', sizeof m->name) == NULL) abort();
}

/* A rejected input must leave one non-empty line. */
static void check_error(const char *err) {
  if (err[0] == '\0' || strchr(err, '\n') != NULL) abort();
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
    volatile double b = km_model_kv_bytes_per_token(m, 0);
    (void)b;
    cJSON *j = km_model_json(m);
    char *s = cJSON_PrintUnformatted(j);
    free(s);
    cJSON_Delete(j);
  } else {
    check_error(err);
  }
  free(m);
  unlink(path);
  return 0;
}
