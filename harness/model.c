/* Embedded model shapes (the presets), the layer-pattern helper shared with config.json parsing,
 * K+V bytes per token, and the model as JSON. The presets' values are the models' own config.json
 * values; tests/fixtures/models/ holds the same configs and tests/cpu_model_config.c checks they agree. */
#include <stdio.h>
#include <string.h>

#include "bytes_table.h"
#include "model.h"

typedef struct preset_spec {
  const char *name;
  int layers, q_heads, kv_heads, head_dim, hidden, dtype_bytes, window;
  const char *pattern; /* repeated over the layers, see km_model_set_layer_pattern */
  int kv_lora_rank, qk_rope_head_dim;
  int mamba_d_inner, mamba_d_state, mamba_d_conv, mamba_n_groups;
  int max_pos;
} preset_spec;

/* deepseek-v3: MLA with q/k head 128 (nope) + 64 (rope) = 192 and v head 128; head_dim 160 is their
 * mean, so 2*H*d counts the decompressed K+V exactly (used only by the MHA-equivalent rows). */
static const preset_spec presets[] = {
    {"qwen3-8b", 36, 32, 8, 128, 4096, 2, 0, "*", 0, 0, 0, 0, 0, 0, 40960},
    {"llama-3.1-8b", 32, 32, 8, 128, 4096, 2, 0, "*", 0, 0, 0, 0, 0, 0, 131072},
    {"qwen3-32b", 64, 64, 8, 128, 5120, 2, 0, "*", 0, 0, 0, 0, 0, 0, 40960},
    {"mistral-7b-v0.1", 32, 32, 8, 128, 4096, 2, 4096, "L", 0, 0, 0, 0, 0, 0, 32768},
    /* sliding_window_pattern 6: five local layers, then one global */
    {"gemma-3-27b", 62, 32, 16, 128, 5376, 2, 1024, "LLLLL*", 0, 0, 0, 0, 0, 0, 131072},
    {"deepseek-v3", 61, 128, 128, 160, 7168, 2, 0, "*", 512, 64, 0, 0, 0, 0, 163840},
    /* hybrid_override_pattern of Nemotron-H-8B: 24 Mamba-2, 4 attention, 24 MLP layers;
     * Mamba d_inner = mamba_num_heads 128 x mamba_head_dim 64 */
    {"nemotron-h-8b", 52, 32, 8, 128, 4096, 2, 0, "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", 0, 0,
     8192, 128, 4, 8, 8192},
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

static void model_from_spec(const preset_spec *s, km_model *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", s->name);
  m->num_layers = s->layers;
  m->num_attention_heads = s->q_heads;
  m->num_kv_heads = s->kv_heads;
  m->head_dim = s->head_dim;
  m->hidden_size = s->hidden;
  m->dtype_bytes = s->dtype_bytes;
  m->sliding_window = s->window;
  m->kv_lora_rank = s->kv_lora_rank;
  m->qk_rope_head_dim = s->qk_rope_head_dim;
  m->mamba_d_inner = s->mamba_d_inner;
  m->mamba_d_state = s->mamba_d_state;
  m->mamba_d_conv = s->mamba_d_conv;
  m->mamba_n_groups = s->mamba_n_groups;
  m->max_position_embeddings = s->max_pos;
  km_model_set_layer_pattern(m, s->pattern);
}

int km_model_preset(const char *name, km_model *out) {
  for (size_t i = 0; name && i < PRESET_COUNT; i++) {
    if (strcmp(presets[i].name, name) == 0) {
      model_from_spec(&presets[i], out);
      return 0;
    }
  }
  return -1;
}

/* Every attention layer (full or windowed) stores one entry per token; Mamba and MLP layers none.
 * An MLA model stores its latent (kv_lora_rank + qk_rope_head_dim), not per-head K and V. */
double km_model_kv_bytes_per_token(const km_model *m, int elem_bytes) {
  int b = elem_bytes > 0 ? elem_bytes : m->dtype_bytes;
  double per_layer = m->kv_lora_rank > 0 ? (double)m->kv_lora_rank + m->qk_rope_head_dim
                                         : 2.0 * m->num_kv_heads * m->head_dim;
  int attn = 0;
  for (int i = 0; i < m->num_layers && i < KM_MODEL_MAX_LAYERS; i++)
    attn += m->layer_kind[i] == KM_LAYER_GLOBAL || m->layer_kind[i] == KM_LAYER_LOCAL;
  return per_layer * attn * b;
}

static void add_layers_json(cJSON *o, const km_model *m) {
  static const char letters[KM_LAYER_KIND_COUNT] = {'G', 'L', 'M', '-'};
  static const char *const keys[KM_LAYER_KIND_COUNT] = {"global", "local", "mamba", "mlp"};
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
  /* one letter per layer: G full attention, L sliding window, M Mamba, - no attention */
  cJSON_AddStringToObject(o, "layers", pattern);
}

cJSON *km_model_json(const km_model *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", m->name);
  cJSON_AddNumberToObject(o, "num_layers", m->num_layers);
  cJSON_AddNumberToObject(o, "num_attention_heads", m->num_attention_heads);
  cJSON_AddNumberToObject(o, "num_kv_heads", m->num_kv_heads);
  cJSON_AddNumberToObject(o, "head_dim", m->head_dim);
  cJSON_AddNumberToObject(o, "hidden_size", m->hidden_size);
  cJSON_AddNumberToObject(o, "dtype_bytes", m->dtype_bytes);
  cJSON_AddNumberToObject(o, "sliding_window", m->sliding_window);
  cJSON_AddNumberToObject(o, "kv_lora_rank", m->kv_lora_rank);
  cJSON_AddNumberToObject(o, "qk_rope_head_dim", m->qk_rope_head_dim);
  cJSON_AddNumberToObject(o, "mamba_d_inner", m->mamba_d_inner);
  cJSON_AddNumberToObject(o, "mamba_d_state", m->mamba_d_state);
  cJSON_AddNumberToObject(o, "mamba_d_conv", m->mamba_d_conv);
  cJSON_AddNumberToObject(o, "mamba_n_groups", m->mamba_n_groups);
  cJSON_AddNumberToObject(o, "max_position_embeddings", m->max_position_embeddings);
  cJSON_AddNumberToObject(o, "kv_bytes_per_token", km_model_kv_bytes_per_token(m, 0));
  add_layers_json(o, m);
  return o;
}
