/* The shapes of a layer's linear GEMMs in prefill, for the prefix family's compute-saved rows. The
 * attention part (heads, KV heads, head_dim, hidden, layers) is the --model's own (harness/model.h);
 * the MLP width, which the byte table has no use for, comes from the table below, keyed by the model's
 * name, with each value copied from the model's published config.json. */
#ifndef KM_PREFILL_SHAPES_H
#define KM_PREFILL_SHAPES_H

#include <stddef.h>

#include "model.h"

typedef struct km_prefill_shape {
  char name[64];
  int layers;               /* decoder layers, each with attention and an MLP */
  int hidden, q_heads, kv_heads, head_dim;
  int window;               /* sliding window of the windowed layers, 0 none */
  int windowed_layers;      /* how many of the layers attend within the window */
  int intermediate;         /* dense MLP: gate and up are each this wide */
  int experts, experts_active, moe_intermediate; /* MoE MLP (experts > 0): routed experts, top-k, width */
} km_prefill_shape;

/* One GEMM of a layer: out[tokens][n] = in[tokens][k] x weight[n][k]^T, `batch` times (MoE: per expert,
 * with `tokens` routed to each). */
typedef struct km_prefill_gemm {
  const char *what; /* qkv, o, gate_up, down */
  int tokens, n, k, batch;
} km_prefill_gemm;

enum { KM_PREFILL_MAX_GEMMS = 4 };

/* The shape of a named entry (NULL: the --model's, its MLP from the table). 0 ok; -1 with one line in err
 * saying why it cannot be modelled (no MLP width known, MLA, Mamba layers). */
int km_prefill_shape_resolve(const km_model *m, const char *named, km_prefill_shape *out, char *err, size_t errlen);

/* The GEMMs of one layer on a chunk of `chunk` tokens; returns how many (<= KM_PREFILL_MAX_GEMMS), 0 when
 * the MoE routing does not split the chunk evenly (chunk x experts_active not a multiple of experts). */
int km_prefill_layer_gemms(const km_prefill_shape *s, int chunk, km_prefill_gemm *out);

/* FLOPs of one layer's linear GEMMs for a chunk, and of its attention for a chunk after `prefix` tokens:
 * QK^T and PV, 4 x q_heads x head_dim x (context each token sees), averaged over the layers (a windowed
 * layer sees at most `window` tokens). */
double km_prefill_linear_flops(const km_prefill_shape *s, int chunk);
double km_prefill_attention_flops(const km_prefill_shape *s, int chunk, long long prefix);

#endif
