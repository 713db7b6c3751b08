/* A model as vLLM's per-layer cache specs (harness/vllm_kv.h): bytes per token of each attention layer
 * under a KV cache dtype, the state of each Mamba / delta-net layer under the state dtypes, and the edits
 * the byte table's techniques make to that list (caps, fewer KV layers, state in place of attention). */
#ifndef KM_KV_LAYOUT_H
#define KM_KV_LAYOUT_H

#include "bytes_table.h"
#include "vllm_kv.h"

typedef struct km_layout {
  int n;
  int mla;                                /* the attention layers hold an MLA latent */
  km_kv_layer layer[KM_KV_MAX_LAYERS];
  int model_layer[KM_KV_MAX_LAYERS];      /* the model layer each entry comes from */
} km_layout;

/* The state bytes each kind of state layer holds per request. */
typedef struct km_state_sizes {
  double mamba;  /* MambaStateShapeCalculator.mamba1/mamba2_state_shape x MambaStateDtypeCalculator */
  double linear; /* gated_delta_net_state_shape x gated_delta_net_state_dtype */
  int conv_bytes, ssm_bytes;
} km_state_sizes;

/* Conv state in the model dtype (mamba_cache_dtype auto); SSM state per --mamba-ssm-dtype, whose auto is
 * the model's vLLM default (NemotronH: float32) or the conv dtype. */
km_state_sizes km_layout_states(const km_model *m, km_ssm_dtype ssm);

/* Mamba-2 state of a model that has none, for the hypothetical hybrid rows: Nemotron-H-8B's mixer
 * (d_inner = 2 x hidden, d_state 128, d_conv 4, 8 groups, 64-wide heads) in the model's dtypes. */
double km_layout_default_mamba_state(const km_model *m, int conv_bytes, int ssm_bytes);

/* One token of one attention layer: K+V of `heads` heads at elem_bytes, or an MLA latent of `latent`
 * elements (one KV head), plus per-token-head scales (2 x heads x 4 B, vLLM AttentionSpec.page_size_bytes)
 * when scales is set. */
double km_layout_heads_bytes(const km_model *m, int heads, double elem_bytes, int scales);
double km_layout_latent_bytes(double latent, double elem_bytes, int scales);

/* The model's layers: token_bytes on every attention layer, its window on windowed ones, a state on every
 * Mamba / delta-net layer (a parallel layer gets both). */
void km_layout_model(km_layout *o, const km_model *m, double token_bytes, const km_state_sizes *st);

int km_layout_kv_layers(const km_layout *o);
/* Cap every attention layer at `cap` tokens (window, or an eviction budget) except each period-th
 * (period <= 1: all); an existing smaller window stays. */
void km_layout_cap(km_layout *o, long long cap, int period);
/* Every attention layer full again. */
void km_layout_uncap(km_layout *o);
/* Keep KV on every `every`-th attention layer of each kind (windowed and full counted apart); the others
 * become a state layer of state_each bytes, or disappear when state_each is 0. */
void km_layout_thin(km_layout *o, int every, double state_each);
/* Sum of token_bytes over the attention layers: B stored per token. */
double km_layout_bytes_per_token(const km_layout *o);
/* Bytes a decode step reads per context token at max_model_len (kept tokens of each layer + state). */
double km_layout_read_per_step(const km_layout *o, long long max_model_len);

#endif
