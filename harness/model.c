/* Embedded model shapes (the presets), the layer-pattern helper shared with config.json parsing,
 * K+V bytes per token, and the model as JSON. Each preset is its model's published config.json, cut to
 * the fields that shape the cache and read by the same loader as a file; tests/fixtures/models/ holds
 * the whole configs and tests/cpu_model_config.c checks the two agree. */
#include <stdio.h>
#include <string.h>

#include "bytes_table.h"
#include "model.h"

typedef struct preset_spec {
  const char *name;
  const char *config_json;
} preset_spec;

static const preset_spec presets[] = {
    {"qwen3-8b", "{\"model_type\": \"qwen3\", \"head_dim\": 128, \"hidden_size\": 4096, \"max_position_embeddings\": "
                 "40960, \"max_window_layers\": 36, \"num_attention_heads\": 32, \"num_hidden_layers\": 36, "
                 "\"num_key_value_heads\": 8, \"rope_scaling\": null, \"sliding_window\": null, \"torch_dtype\": "
                 "\"bfloat16\", \"use_sliding_window\": false}"},
    {"llama-3.1-8b", "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"max_position_embeddings\": 131072, "
                     "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
                     "\"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                     "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}, \"torch_dtype\": "
                     "\"bfloat16\"}"},
    {"qwen3-32b", "{\"model_type\": \"qwen3\", \"head_dim\": 128, \"hidden_size\": 5120, \"max_position_embeddings\": "
                  "40960, \"max_window_layers\": 64, \"num_attention_heads\": 64, \"num_hidden_layers\": 64, "
                  "\"num_key_value_heads\": 8, \"sliding_window\": null, \"torch_dtype\": \"bfloat16\", "
                  "\"use_sliding_window\": false}"},
    {"mistral-7b-v0.1", "{\"model_type\": \"mistral\", \"hidden_size\": 4096, \"max_position_embeddings\": 32768, "
                        "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
                        "\"sliding_window\": 4096, \"torch_dtype\": \"bfloat16\"}"},
    {"gemma-3-27b", "{\"model_type\": \"gemma3\", \"text_config\": {\"head_dim\": 128, \"hidden_size\": 5376, "
                    "\"max_position_embeddings\": 131072, \"model_type\": \"gemma3_text\", \"num_attention_heads\": 32, "
                    "\"num_hidden_layers\": 62, \"num_key_value_heads\": 16, \"rope_scaling\": {\"factor\": 8.0, "
                    "\"rope_type\": \"linear\"}, \"sliding_window\": 1024}, \"torch_dtype\": \"bfloat16\"}"},
    {"deepseek-v3", "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 7168, \"kv_lora_rank\": 512, "
                    "\"max_position_embeddings\": 163840, \"num_attention_heads\": 128, \"num_hidden_layers\": 61, "
                    "\"num_key_value_heads\": 128, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, "
                    "\"rope_scaling\": {\"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 40, \"mscale\": 1.0, "
                    "\"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"}, "
                    "\"torch_dtype\": \"bfloat16\", \"v_head_dim\": 128}"},
    {"nemotron-h-8b", "{\"model_type\": \"nemotron_h\", \"attention_head_dim\": 128, \"chunk_size\": 128, "
                      "\"conv_kernel\": 4, \"expand\": 2, \"hidden_size\": 4096, \"hybrid_override_pattern\": "
                      "\"M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-\", \"mamba_head_dim\": 64, "
                      "\"mamba_num_heads\": 128, \"max_position_embeddings\": 8192, \"n_groups\": 8, "
                      "\"num_attention_heads\": 32, \"num_hidden_layers\": 52, \"num_key_value_heads\": 8, "
                      "\"ssm_state_size\": 128, \"time_step_limit\": [0.0, Infinity], \"torch_dtype\": \"bfloat16\"}"},
};
enum { PRESET_COUNT = sizeof presets / sizeof presets[0] };

static const char *const preset_names[PRESET_COUNT] = {
    "qwen3-8b", "llama-3.1-8b", "qwen3-32b", "mistral-7b-v0.1", "gemma-3-27b", "deepseek-v3", "nemotron-h-8b",
};

const char *const *km_model_preset_names(size_t *count) {
  if (count) *count = PRESET_COUNT;
  return preset_names;
}

static int layer_kind_of(char c, km_layer_kind *out) {
  switch (c) {
  case '*': case 'G': *out = KM_LAYER_GLOBAL; return 0;
  case 'L': *out = KM_LAYER_LOCAL; return 0;
  case 'M': *out = KM_LAYER_MAMBA; return 0;
  case '-': case 'E': *out = KM_LAYER_MLP; return 0;
  case 'D': *out = KM_LAYER_LINEAR; return 0;
  case 'P': *out = KM_LAYER_PARALLEL; return 0;
  default: return -1;
  }
}

int km_model_set_layer_pattern(km_model *m, const char *pattern) {
  size_t n = pattern ? strlen(pattern) : 0;
  if (n == 0 || m->num_layers <= 0 || m->num_layers > KM_MODEL_MAX_LAYERS) return -1;
  for (int i = 0; i < m->num_layers; i++)
    if (layer_kind_of(pattern[(size_t)i % n], &m->layer_kind[i]) != 0) return -1;
  return 0;
}

int km_model_count_layers(const km_model *m, km_layer_kind kind) {
  int n = 0;
  for (int i = 0; i < m->num_layers && i < KM_MODEL_MAX_LAYERS; i++) n += m->layer_kind[i] == kind;
  return n;
}

int km_layer_has_kv(km_layer_kind kind) {
  return kind == KM_LAYER_GLOBAL || kind == KM_LAYER_LOCAL || kind == KM_LAYER_PARALLEL;
}

int km_model_preset(const char *name, km_model *out) {
  for (size_t i = 0; name && i < PRESET_COUNT; i++) {
    if (strcmp(presets[i].name, name) != 0) continue;
    char err[256];
    const char *json = presets[i].config_json;
    if (km_model_from_json(json, strlen(json), name, out, err, sizeof err) != 0) return -1;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
  }
  return -1;
}

/* Every attention layer (full or windowed) stores one entry per token; state and MLP layers none.
 * An MLA model stores its latent (kv_lora_rank + qk_rope_head_dim), not per-head K and V. */
double km_model_kv_bytes_per_token(const km_model *m, int elem_bytes) {
  int b = elem_bytes > 0 ? elem_bytes : m->dtype_bytes;
  double per_layer = m->kv_lora_rank > 0 ? (double)m->kv_lora_rank + m->qk_rope_head_dim
                                         : 2.0 * m->num_kv_heads * m->head_dim;
  int attn = 0;
  for (int i = 0; i < m->num_layers && i < KM_MODEL_MAX_LAYERS; i++) attn += km_layer_has_kv(m->layer_kind[i]);
  return per_layer * attn * b;
}

static void add_layers_json(cJSON *o, const km_model *m) {
  static const char letters[KM_LAYER_KIND_COUNT] = {'G', 'L', 'M', '-', 'D', 'P'};
  static const char *const keys[KM_LAYER_KIND_COUNT] = {"global", "local", "mamba", "mlp", "linear", "parallel"};
  char pattern[KM_MODEL_MAX_LAYERS + 1];
  int counts[KM_LAYER_KIND_COUNT] = {0};
  int n = m->num_layers < KM_MODEL_MAX_LAYERS ? m->num_layers : KM_MODEL_MAX_LAYERS;
  for (int i = 0; i < n; i++) {
    km_layer_kind k = m->layer_kind[i];
    pattern[i] = (k >= 0 && k < KM_LAYER_KIND_COUNT) ? letters[k] : '?';
    if (k >= 0 && k < KM_LAYER_KIND_COUNT) counts[k]++;
  }
  pattern[n > 0 ? n : 0] = '\0';
  cJSON *c = cJSON_AddObjectToObject(o, "layer_counts");
  for (int k = 0; k < KM_LAYER_KIND_COUNT; k++) cJSON_AddNumberToObject(c, keys[k], counts[k]);
  /* one letter per layer: G full attention, L sliding window, M Mamba, - none, D delta net, P parallel */
  cJSON_AddStringToObject(o, "layers", pattern);
}

cJSON *km_model_json(const km_model *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", m->name);
  cJSON_AddStringToObject(o, "model_type", m->model_type);
  cJSON_AddStringToObject(o, "config_dtype", m->config_dtype);
  cJSON_AddNumberToObject(o, "num_layers", m->num_layers);
  cJSON_AddNumberToObject(o, "num_attention_heads", m->num_attention_heads);
  cJSON_AddNumberToObject(o, "num_kv_heads", m->num_kv_heads);
  cJSON_AddNumberToObject(o, "head_dim", m->head_dim);
  cJSON_AddNumberToObject(o, "hidden_size", m->hidden_size);
  cJSON_AddNumberToObject(o, "dtype_bytes", m->dtype_bytes);
  cJSON_AddNumberToObject(o, "sliding_window", m->sliding_window);
  cJSON_AddNumberToObject(o, "kv_lora_rank", m->kv_lora_rank);
  cJSON_AddNumberToObject(o, "qk_rope_head_dim", m->qk_rope_head_dim);
  cJSON_AddNumberToObject(o, "mamba_version", m->mamba_version);
  cJSON_AddNumberToObject(o, "mamba_d_inner", m->mamba_d_inner);
  cJSON_AddNumberToObject(o, "mamba_d_state", m->mamba_d_state);
  cJSON_AddNumberToObject(o, "mamba_d_conv", m->mamba_d_conv);
  cJSON_AddNumberToObject(o, "mamba_n_groups", m->mamba_n_groups);
  cJSON_AddNumberToObject(o, "mamba_num_heads", m->mamba_num_heads);
  cJSON_AddNumberToObject(o, "mamba_head_dim", m->mamba_head_dim);
  cJSON_AddNumberToObject(o, "mamba_ssm_dtype_bytes", m->mamba_ssm_dtype_bytes);
  cJSON_AddNumberToObject(o, "linear_num_key_heads", m->linear_num_key_heads);
  cJSON_AddNumberToObject(o, "linear_num_value_heads", m->linear_num_value_heads);
  cJSON_AddNumberToObject(o, "linear_key_head_dim", m->linear_key_head_dim);
  cJSON_AddNumberToObject(o, "linear_value_head_dim", m->linear_value_head_dim);
  cJSON_AddNumberToObject(o, "linear_conv_kernel", m->linear_conv_kernel);
  cJSON_AddNumberToObject(o, "max_position_embeddings", m->max_position_embeddings);
  cJSON_AddNumberToObject(o, "max_model_len", (double)m->max_model_len);
  cJSON_AddNumberToObject(o, "kv_bytes_per_token", km_model_kv_bytes_per_token(m, 0));
  add_layers_json(o, m);
  return o;
}
