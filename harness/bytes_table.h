/* The per-token byte table: for a model shape and a KV budget, one row per technique and variant
 * (twelve techniques, grouped by mechanism), each figure in its own unit, each row sized by vLLM v1's
 * rules (harness/vllm_kv.h). No GPU needed. */
#ifndef KM_BYTES_TABLE_H
#define KM_BYTES_TABLE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "model.h"
#include "table.h"
#include "vllm_kv.h"

/* vLLM's --kv-cache-dtype values the table models. */
typedef enum km_kv_dtype {
  KM_KV_DTYPE_AUTO = 0,             /* the model dtype */
  KM_KV_DTYPE_BFLOAT16,
  KM_KV_DTYPE_FLOAT16,
  KM_KV_DTYPE_FP8,                  /* = fp8_e4m3 */
  KM_KV_DTYPE_FP8_E4M3,
  KM_KV_DTYPE_FP8_E5M2,
  KM_KV_DTYPE_FP8_PER_TOKEN_HEAD,   /* fp8 with a float32 scale per token per head for K and for V */
  KM_KV_DTYPE_TURBOQUANT_3BIT_NC,   /* the first and last two KV layers kept in the model dtype */
  KM_KV_DTYPE_COUNT
} km_kv_dtype;

/* vLLM's --mamba-ssm-cache-dtype values. */
typedef enum km_ssm_dtype {
  KM_SSM_DTYPE_AUTO = 0, /* the model's vLLM default (NemotronH: float32), else the model dtype */
  KM_SSM_DTYPE_FLOAT32,
  KM_SSM_DTYPE_BFLOAT16,
  KM_SSM_DTYPE_FLOAT16,
  KM_SSM_DTYPE_COUNT
} km_ssm_dtype;

int km_kv_dtype_parse(const char *s, km_kv_dtype *out);   /* 0 ok, -1 unknown */
const char *km_kv_dtype_name(km_kv_dtype d);
int km_ssm_dtype_parse(const char *s, km_ssm_dtype *out); /* 0 ok, -1 unknown */
const char *km_ssm_dtype_name(km_ssm_dtype d);

typedef struct km_bytes_params {
  double kv_budget;                  /* bytes of KV cache on the GPU (default 58,987,118,592) */
  long long max_model_len;           /* tokens per request (0: what vLLM derives from the config) */
  int allow_long_max_model_len;      /* accept a max_model_len above the model's (VLLM_ALLOW_LONG_MAX_MODEL_LEN) */
  long long max_num_batched_tokens;  /* scheduler token budget per step (default 8,192, as vllm serve) */
  long long block_size;              /* tokens per block (default 16) */
  double host_budget;                /* bytes of host memory for offloading (0: none) */
  km_kv_dtype kv_dtype;              /* --kv-dtype (default auto) */
  km_ssm_dtype mamba_ssm_dtype;      /* --mamba-ssm-dtype (default auto) */
  double h2d_gbps;                   /* measured host-to-device rate for the reload cost (0: not measured) */
} km_bytes_params;

void km_bytes_params_default(km_bytes_params *p);

/* Model shapes: an embedded preset name (qwen3-8b, llama-3.1-8b, ...) or a path to a Hugging Face
 * config.json. 0 ok; -1 with one line in err naming the file or field. */
int km_model_resolve(const char *preset_or_path, km_model *out, char *err, size_t errlen);
/* A config.json's text (len bytes); label names it in messages and gives the model its name. */
int km_model_from_json(const char *text, size_t len, const char *label, km_model *out, char *err, size_t errlen);
int km_model_preset(const char *name, km_model *out); /* 0 ok, -1 unknown */
const char *const *km_model_preset_names(size_t *count);
/* Bytes of K+V for one token across all layers at the given element size. */
double km_model_kv_bytes_per_token(const km_model *m, int elem_bytes);
cJSON *km_model_json(const km_model *m);

/* The max_model_len the table sizes for: p->max_model_len, or the model's when 0. -1 with one line in err
 * when it is above the model's and p->allow_long_max_model_len is not set (vLLM refuses it the same way). */
long long km_bytes_max_model_len(const km_model *m, const km_bytes_params *p, char *err, size_t errlen);

/* Build the table. 0 ok; -1 with one line in err (e.g. a budget that cannot hold one request). */
int km_bytes_table_build(const km_model *m, const km_bytes_params *p, km_table **out, char *err, size_t errlen);
/* vLLM's plan of the cache for the model as configured (what it logs: num_blocks, kv_cache_tokens, the
 * block size, the groups). 0 ok; -1 with one line in err where vLLM would not start (as the table). */
int km_bytes_vllm_plan(const km_model *m, const km_bytes_params *p, km_kv_plan *out, char *err, size_t errlen);
/* The whole JSON object: {"model":..., "kv_budget_bytes":..., "max_model_len":..., "block_size":...,
 * "vllm": {what vLLM logs for the model as configured}, "caption": [...], "rows":[...]} */
cJSON *km_bytes_table_json(const km_model *m, const km_bytes_params *p, const km_table *t);

#endif
