/* The technique table of a recorded run for another model (see techniques_model.h). */
#include "techniques_model.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "techniques.h"

/* The run's stored byte-table settings (tables.bytes) over the defaults; the run's max_model_len was its
 * model's, so M gets its own (0). */
static int stored_params(const km_run_file *f, km_bytes_params *p, const char **run_model, char *err, size_t errlen) {
  km_bytes_params_default(p);
  *run_model = "unknown";
  const cJSON *tables = cJSON_GetObjectItemCaseSensitive(f->doc, "tables");
  const cJSON *bytes = cJSON_IsObject(tables) ? cJSON_GetObjectItemCaseSensitive(tables, "bytes") : NULL;
  if (!cJSON_IsObject(bytes)) return 0;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(bytes, "model"), "name");
  if (cJSON_IsString(name)) *run_model = name->valuestring;
  static const struct { const char *key; size_t offset; int count; } numbers[] = {
      {"kv_budget_bytes", offsetof(km_bytes_params, kv_budget), 0},
      {"host_budget_bytes", offsetof(km_bytes_params, host_budget), 0},
      {"h2d_gbps", offsetof(km_bytes_params, h2d_gbps), 0},
      {"block_size", offsetof(km_bytes_params, block_size), 1}};
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(bytes, numbers[i].key);
    if (!v) continue;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0) {
      snprintf(err, errlen, "%s: tables.bytes.%s must be a number >= 0", f->path, numbers[i].key);
      return -1;
    }
    if (numbers[i].count)
      *(long long *)((char *)p + numbers[i].offset) = (long long)v->valuedouble;
    else
      *(double *)((char *)p + numbers[i].offset) = v->valuedouble;
  }
  const cJSON *kv = cJSON_GetObjectItemCaseSensitive(bytes, "kv_dtype");
  const cJSON *ssm = cJSON_GetObjectItemCaseSensitive(bytes, "mamba_ssm_dtype");
  if ((kv && (!cJSON_IsString(kv) || km_kv_dtype_parse(kv->valuestring, &p->kv_dtype))) ||
      (ssm && (!cJSON_IsString(ssm) || km_ssm_dtype_parse(ssm->valuestring, &p->mamba_ssm_dtype)))) {
    snprintf(err, errlen, "%s: tables.bytes.kv_dtype / mamba_ssm_dtype is not a dtype micro knows", f->path);
    return -1;
  }
  return 0;
}

int km_techniques_for_model_print(const km_run_file *f, const char *model, km_format fmt, FILE *out, char *err,
                                  size_t errlen) {
  km_bytes_params p;
  const char *run_model = NULL;
  km_model *m = malloc(sizeof *m); /* a few KiB: off the stack */
  km_table *bt = NULL, *t = NULL;
  cJSON *bytes = NULL;
  char inner[512];
  int rc = -1;
  if (!m) {
    snprintf(err, errlen, "out of memory");
  } else if (stored_params(f, &p, &run_model, err, errlen) == 0) {
    if (km_model_resolve(model, m, inner, sizeof inner) || km_bytes_table_build(m, &p, &bt, inner, sizeof inner)) {
      snprintf(err, errlen, "--model %s: %s", model, inner);
    } else if (!(bytes = km_bytes_table_json(m, &p, bt)) || !(t = km_techniques_table(bytes, &f->results, NULL, 0))) {
      snprintf(err, errlen, "out of memory building the technique table");
    } else {
      char line[512];
      snprintf(line, sizeof line, "Capacity computed for %s with the run's KV budget (%.0f bytes) and block size; "
               "measured rows from %s as run (model %s, %s): a case on the run's model shape keeps that shape.",
               m->name, p.kv_budget, f->path, run_model, f->gpu_name);
      km_table_add_caption(t, line);
      km_table_print(t, fmt, out);
      rc = 0;
    }
  }
  km_table_free(t);
  km_table_free(bt);
  cJSON_Delete(bytes);
  free(m);
  return rc;
}
