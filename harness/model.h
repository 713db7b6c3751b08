/* A model's attention shape: what the per-token byte table and the micro cases' per-token figures need.
 * Filled from an embedded preset or a Hugging Face config.json. */
#ifndef KM_MODEL_H
#define KM_MODEL_H

#include <stddef.h>

enum { KM_MODEL_MAX_LAYERS = 1024 };

typedef enum km_layer_kind {
  KM_LAYER_GLOBAL = 0,  /* full attention */
  KM_LAYER_LOCAL,       /* sliding-window attention */
  KM_LAYER_MAMBA,       /* state-space layer, no KV cache */
  KM_LAYER_MLP,         /* no attention, no state (hybrid models' MLP-only layers) */
  KM_LAYER_KIND_COUNT
} km_layer_kind;

typedef struct km_model {
  char name[64];
  int num_layers;            /* num_hidden_layers */
  int num_attention_heads;   /* query heads */
  int num_kv_heads;          /* num_key_value_heads (== query heads when absent) */
  int head_dim;              /* head_dim, or hidden_size / num_attention_heads */
  int hidden_size;
  int dtype_bytes;           /* torch_dtype: bf16/fp16 = 2, fp32 = 4 */
  int sliding_window;        /* 0: none */
  int kv_lora_rank;          /* MLA; 0: none */
  int qk_rope_head_dim;      /* MLA rope part */
  /* hybrid Mamba state per sequence, per Mamba layer */
  int mamba_d_inner;         /* expand * hidden_size (or mamba_num_heads * mamba_head_dim) */
  int mamba_d_state;         /* ssm_state_size */
  int mamba_d_conv;          /* conv_kernel */
  int mamba_n_groups;        /* n_groups (B and C go through the conv too) */
  int max_position_embeddings;
  km_layer_kind layer_kind[KM_MODEL_MAX_LAYERS]; /* per layer */
} km_model;

/* Fill m->layer_kind from a pattern repeated over m->num_layers: '*' or 'G' full attention, 'L' sliding
 * window, 'M' Mamba, '-' or 'E' no attention (MLP / MoE). Shared by the presets and config.json parsing.
 * 0 ok; -1 on an empty pattern or an unknown character. */
int km_model_set_layer_pattern(km_model *m, const char *pattern);

#endif
