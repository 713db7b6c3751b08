/* vLLM v1's KV cache sizing, rule for rule (v0.11): per-layer cache specs in, the numbers vLLM logs out
 * (the block count, "GPU KV cache size: N tokens", "Maximum concurrency for L tokens per request: X.XXx"),
 * or the reason vLLM would not plan the cache. Pure arithmetic, no model knowledge: the byte table turns
 * a model (or a technique applied to it) into the layer list. */
#ifndef KM_VLLM_KV_H
#define KM_VLLM_KV_H

#include "model.h"

/* Which vLLM the rules follow, printed beside the numbers. */
#define KM_VLLM_RULES "vLLM v0.11"

typedef enum km_kv_spec_kind {
  KM_KV_FULL = 0,  /* FullAttentionSpec (MLAAttentionSpec too: one "head" of the latent) */
  KM_KV_WINDOW,    /* SlidingWindowSpec */
  KM_KV_STATE,     /* MambaSpec (Mamba-1, Mamba-2, gated delta net) */
  KM_KV_SPEC_KIND_COUNT
} km_kv_spec_kind;

typedef struct km_kv_layer {
  km_kv_spec_kind kind;
  double token_bytes; /* FULL / WINDOW: bytes one token takes (a page is block_size x this) */
  long long window;   /* WINDOW: sliding_window in tokens */
  long long kept;     /* FULL / WINDOW: tokens a request really needs here (0: all); only for the ideal */
  double state_bytes; /* STATE: the state of one request before any padding */
} km_kv_layer;

enum { KM_KV_MAX_LAYERS = 2 * KM_MODEL_MAX_LAYERS }; /* a parallel hybrid layer is an attention and a state layer */

typedef struct km_kv_config {
  long long block_size;             /* cache_config.block_size (--block-size) */
  long long max_model_len;          /* model_config.max_model_len */
  long long max_num_batched_tokens; /* scheduler_config.max_num_batched_tokens */
  double available_memory;          /* bytes vLLM gives the KV cache (--kv-budget) */
  int mla;                          /* attention is MLA: the hybrid block size aligns to 64 tokens */
} km_kv_config;

typedef struct km_kv_plan {
  int ok;                      /* 0: vLLM would not plan this cache; reason says why */
  char reason[192];
  int attn_layers, state_layers;
  long long attn_block_size;   /* tokens per attention block, after the hybrid adjustment */
  double attn_page_bytes;      /* the largest attention page (attn_block_size tokens) */
  double state_bytes;          /* one request's state per state layer, unpadded */
  double page_bytes;           /* the page every group shares (one UniformTypeKVCacheSpecs group: all layers) */
  int uniform_type;            /* 1: one group of layers of one type with different page sizes */
  int num_groups, group_size, padding_layers;
  long long num_blocks;
  long long min_block_size;    /* the smallest block of any group (a state layer's is max_model_len) */
  double kv_cache_tokens;      /* "GPU KV cache size: N tokens" = num_blocks / groups x min_block_size (a
                                  double: a pure state model's count is blocks x max_model_len, past 2^63) */
  long long blocks_per_request;
  double max_concurrency;      /* "Maximum concurrency for max_model_len tokens per request" */
  double request_bytes;        /* one max_model_len request (check_enough_kv_cache_memory) */
  double ideal_concurrency;    /* budget / (what a request keeps, in whole blocks, + its state) */
} km_kv_plan;

/* Plan n layers (n <= KM_KV_MAX_LAYERS). Always fills *out; out->ok says whether vLLM would. */
void km_kv_plan_build(const km_kv_layer *layers, int n, const km_kv_config *cfg, km_kv_plan *out);

/* vLLM's estimate_max_model_len: the longest request of the same layers that fits available_memory
 * (0: not even one token). */
long long km_kv_max_fit_len(const km_kv_layer *layers, int n, const km_kv_config *cfg);

#endif
