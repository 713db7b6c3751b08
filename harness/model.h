/* A model's cache shape: what the per-token byte table and the micro cases' per-token figures need.
 * Filled from an embedded preset or a Hugging Face config.json, the way transformers and vLLM read it. */
#ifndef KM_MODEL_H
#define KM_MODEL_H

#include <stddef.h>

enum { KM_MODEL_MAX_LAYERS = 1024 };

typedef enum km_layer_kind {
  KM_LAYER_GLOBAL = 0,  /* full attention */
  KM_LAYER_LOCAL,       /* sliding-window attention */
  KM_LAYER_MAMBA,       /* Mamba-1 or Mamba-2 mixer: a state per request, no KV */
  KM_LAYER_MLP,         /* no attention, no state (hybrid models' MLP-only layers) */
  KM_LAYER_LINEAR,      /* gated delta net (linear attention): a state per request, no KV */
  KM_LAYER_PARALLEL,    /* full attention and a Mamba-2 mixer side by side (Falcon-H1) */
  KM_LAYER_KIND_COUNT
} km_layer_kind;

typedef struct km_model {
  char name[64];
  char model_type[32];       /* the text model's model_type ("" when the config has none) */
  char config_dtype[16];     /* torch_dtype as written ("" when absent) */
  int num_layers;            /* num_hidden_layers */
  int num_attention_heads;   /* query heads */
  int num_kv_heads;          /* num_key_value_heads (== query heads when absent) */
  int head_dim;              /* head_dim, or hidden_size / num_attention_heads */
  int hidden_size;
  int dtype_bytes;           /* as vLLM serves it with --dtype auto: 2 (float32 checkpoints run in bf16) */
  int sliding_window;        /* 0: none */
  int kv_lora_rank;          /* MLA; 0: none */
  int qk_rope_head_dim;      /* MLA rope part */
  /* Mamba state per request per Mamba layer (vLLM's MambaStateShapeCalculator) */
  int mamba_version;         /* 1 (conv + SSM over d_inner) or 2 (heads x head_dim, groups); 0: no Mamba */
  int mamba_d_inner;         /* intermediate size the conv runs over */
  int mamba_d_state;         /* ssm_state_size */
  int mamba_d_conv;          /* conv_kernel */
  int mamba_n_groups;        /* Mamba-2: B and C groups */
  int mamba_num_heads;       /* Mamba-2 SSM state (heads, head_dim, d_state) */
  int mamba_head_dim;
  int mamba_ssm_dtype_bytes; /* vLLM's default SSM state dtype for the model (mamba_ssm_cache_dtype auto);
                                0: the model dtype */
  /* gated delta net state (Qwen3-Next linear_attention layers) */
  int linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim;
  int linear_conv_kernel;
  int max_position_embeddings;
  long long max_model_len;   /* what vLLM derives from the config (rope scaling applied) */
  char max_len_key[40];      /* the field it came from, named when a longer --max-model-len is refused;
                                "" when the config has none (vLLM then assumes 2048 and accepts any length) */
  km_layer_kind layer_kind[KM_MODEL_MAX_LAYERS]; /* per layer */
} km_model;

/* Fill m->layer_kind from a pattern repeated over m->num_layers: '*' or 'G' full attention, 'L' sliding
 * window, 'M' Mamba, '-' or 'E' no attention (MLP / MoE), 'D' gated delta net, 'P' attention + Mamba in
 * parallel. Shared by the presets and config.json parsing. 0 ok; -1 on an empty pattern or an unknown
 * character. */
int km_model_set_layer_pattern(km_model *m, const char *pattern);
/* Layers of one kind. */
int km_model_count_layers(const km_model *m, km_layer_kind kind);
/* 1 when the layer stores K/V per token (full, windowed or parallel attention). */
int km_layer_has_kv(km_layer_kind kind);

#endif
