/* Prefill layer shapes: the MLP widths by model name, and the GEMMs and FLOPs of one layer. */
#include "prefill_shapes.h"

#include <stdio.h>
#include <string.h>

/* Values from each model's config.json (tests/fixtures/models/ holds the dense ones; tests check them).
 * qwen3-30b-a3b is not a --model preset: it is the MoE row's shape, Qwen/Qwen3-30B-A3B's config.json
 * (hidden_size 2048, 48 layers, 32 heads over 4 KV heads of 128, 128 experts, 8 per token, 768 wide). */
typedef struct mlp_entry {
  const char *name;
  int intermediate, experts, experts_active, moe_intermediate;
} mlp_entry;

static const mlp_entry mlp_table[] = {
    {"qwen3-8b", 12288, 0, 0, 0},    {"llama-3.1-8b", 14336, 0, 0, 0}, {"qwen3-32b", 25600, 0, 0, 0},
    {"mistral-7b-v0.1", 14336, 0, 0, 0}, {"gemma-3-27b", 21504, 0, 0, 0},
};

static const km_prefill_shape named_shapes[] = {
    {"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 0, 0, 0, 128, 8, 768},
};

static int from_model(const km_model *m, km_prefill_shape *s, char *err, size_t errlen) {
  const mlp_entry *e = NULL;
  for (size_t i = 0; i < sizeof mlp_table / sizeof mlp_table[0]; i++)
    if (strcmp(mlp_table[i].name, m->name) == 0) e = &mlp_table[i];
  if (m->kv_lora_rank > 0) {
    snprintf(err, errlen, "model %s uses MLA: its low-rank projections are not modelled here", m->name);
    return -1;
  }
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", m->name);
  s->layers = m->num_layers;
  s->hidden = m->hidden_size;
  s->q_heads = m->num_attention_heads;
  s->kv_heads = m->num_kv_heads;
  s->head_dim = m->head_dim;
  s->window = m->sliding_window;
  for (int l = 0; l < m->num_layers && l < KM_MODEL_MAX_LAYERS; l++) {
    if (m->layer_kind[l] != KM_LAYER_GLOBAL && m->layer_kind[l] != KM_LAYER_LOCAL) {
      snprintf(err, errlen, "model %s has layers without attention (Mamba or MLP-only): not modelled here", m->name);
      return -1;
    }
    s->windowed_layers += m->layer_kind[l] == KM_LAYER_LOCAL;
  }
  if (!e) {
    snprintf(err, errlen, "model %s: no MLP width known (the prefill rows know the presets' widths only)", m->name);
    return -1;
  }
  s->intermediate = e->intermediate;
  s->experts = e->experts;
  s->experts_active = e->experts_active;
  s->moe_intermediate = e->moe_intermediate;
  return 0;
}

int km_prefill_shape_resolve(const km_model *m, const char *named, km_prefill_shape *out, char *err, size_t errlen) {
  if (!named) return from_model(m, out, err, errlen);
  for (size_t i = 0; i < sizeof named_shapes / sizeof named_shapes[0]; i++)
    if (strcmp(named_shapes[i].name, named) == 0) {
      *out = named_shapes[i];
      return 0;
    }
  snprintf(err, errlen, "no prefill shape named %s", named);
  return -1;
}

int km_prefill_layer_gemms(const km_prefill_shape *s, int chunk, km_prefill_gemm *out) {
  const int qkv = (s->q_heads + 2 * s->kv_heads) * s->head_dim, attn_out = s->q_heads * s->head_dim;
  out[0] = (km_prefill_gemm){"qkv", chunk, qkv, s->hidden, 1};
  out[1] = (km_prefill_gemm){"o", chunk, s->hidden, attn_out, 1};
  if (s->experts == 0) {
    out[2] = (km_prefill_gemm){"gate_up", chunk, 2 * s->intermediate, s->hidden, 1};
    out[3] = (km_prefill_gemm){"down", chunk, s->hidden, s->intermediate, 1};
    return 4;
  }
  /* the active experts, routing spread evenly: each expert gets chunk x top-k / experts tokens */
  const long long routed = (long long)chunk * s->experts_active;
  if (routed % s->experts) return 0;
  const int per_expert = (int)(routed / s->experts);
  out[2] = (km_prefill_gemm){"gate_up", per_expert, 2 * s->moe_intermediate, s->hidden, s->experts};
  out[3] = (km_prefill_gemm){"down", per_expert, s->hidden, s->moe_intermediate, s->experts};
  return 4;
}

double km_prefill_linear_flops(const km_prefill_shape *s, int chunk) {
  km_prefill_gemm g[KM_PREFILL_MAX_GEMMS];
  int n = km_prefill_layer_gemms(s, chunk, g);
  double flops = 0;
  for (int i = 0; i < n; i++) flops += 2.0 * g[i].tokens * (double)g[i].n * g[i].k * g[i].batch;
  return flops;
}

/* Sum over the chunk's tokens of the context each attends to: prefix + i + 1, at most cap (0: none). */
static double context_sum(int chunk, long long prefix, long long cap) {
  double sum = 0;
  for (int i = 0; i < chunk; i++) {
    long long ctx = prefix + i + 1;
    sum += (double)(cap > 0 && ctx > cap ? cap : ctx);
  }
  return sum;
}

double km_prefill_attention_flops(const km_prefill_shape *s, int chunk, long long prefix) {
  const double per_ctx = 4.0 * s->q_heads * s->head_dim; /* QK^T and PV: 2 FLOPs per multiply-add each */
  const double full = context_sum(chunk, prefix, 0), windowed = context_sum(chunk, prefix, s->window);
  const int wl = s->window > 0 ? s->windowed_layers : 0;
  return per_ctx * (full * (s->layers - wl) + windowed * wl) / s->layers;
}
