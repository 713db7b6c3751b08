/* The per-token byte table: for a model shape and a KV budget, one row per technique and variant
 * (twelve techniques, grouped by mechanism), each figure in its own unit. No GPU needed. */
#ifndef KM_BYTES_TABLE_H
#define KM_BYTES_TABLE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "model.h"
#include "table.h"

typedef struct km_bytes_params {
  double kv_budget;         /* bytes of KV cache on the GPU (default 58,987,118,592) */
  long long max_model_len;  /* tokens per request (default 40,960) */
  long long block_size;     /* tokens per block (default 16) */
  double host_budget;       /* bytes of host memory for offloading (0: none) */
  int kv_dtype_bytes;       /* KV element bytes (0: the model's dtype) */
  double h2d_gbps;          /* measured host-to-device rate for the reload cost (0: not measured) */
} km_bytes_params;

void km_bytes_params_default(km_bytes_params *p);

/* Model shapes: an embedded preset name (qwen3-8b, llama-3.1-8b, ...) or a path to a Hugging Face
 * config.json. 0 ok; -1 with one line in err naming the file or field. */
int km_model_resolve(const char *preset_or_path, km_model *out, char *err, size_t errlen);
int km_model_preset(const char *name, km_model *out); /* 0 ok, -1 unknown */
const char *const *km_model_preset_names(size_t *count);
/* Bytes of K+V for one token across all layers at the given element size. */
double km_model_kv_bytes_per_token(const km_model *m, int elem_bytes);
cJSON *km_model_json(const km_model *m);

/* Build the table. 0 ok; -1 with one line in err (e.g. a budget below one block). */
int km_bytes_table_build(const km_model *m, const km_bytes_params *p, km_table **out, char *err, size_t errlen);
/* The whole JSON object: {"model":..., "kv_budget_bytes":..., "max_model_len":..., "block_size":..., "rows":[...]} */
cJSON *km_bytes_table_json(const km_model *m, const km_bytes_params *p, const km_table *t);

#endif
