/* Capacity from the byte table's rules: vLLM's plan of the cache for the model as configured. */
#include "prefix_capacity.h"

#include <stdio.h>

/* The simulator replays one full-attention KV cache group; windowed and state layers are other groups
 * with other eviction rules in vLLM. */
static int full_attention_only(const km_model *m, char *err, size_t errlen) {
  for (int l = 0; l < m->num_layers && l < KM_MODEL_MAX_LAYERS; l++)
    if (m->layer_kind[l] != KM_LAYER_GLOBAL && m->layer_kind[l] != KM_LAYER_MLP) {
      snprintf(err, errlen, "--model %s: layer %d is %s; the prefix-cache simulator models full-attention layers only",
               m->name, l, m->layer_kind[l] == KM_LAYER_LOCAL ? "sliding-window attention" : "a layer with a state (Mamba or linear attention)");
      return -1;
    }
  return 0;
}

int km_prefix_pool(const km_model *m, const km_bytes_params *p, long long *tokens, long long *blocks, char *err,
                   size_t errlen) {
  if (full_attention_only(m, err, errlen)) return -1;
  km_kv_plan plan;
  if (km_bytes_vllm_plan(m, p, &plan, err, errlen)) return -1;
  *tokens = (long long)plan.kv_cache_tokens;
  *blocks = plan.num_blocks;
  if (*blocks < 2) {
    snprintf(err, errlen, "--kv-budget: %lld blocks of %lld tokens, and vLLM keeps block 0 as its null block: need at "
             "least 2", *blocks, p->block_size);
    return -1;
  }
  return 0;
}
