/* Models as per-layer cache specs. State sizes follow vLLM's
 * model_executor/layers/mamba/mamba_utils.py (v0.11): MambaStateShapeCalculator for the shapes,
 * MambaStateDtypeCalculator for the dtypes (conv in mamba_cache_dtype, auto = the model dtype; SSM /
 * recurrent state in mamba_ssm_cache_dtype, auto = the conv dtype). */
#include "kv_layout.h"

#include <string.h>

/* Nemotron-H-8B's Mamba-2 mixer, the template for the hypothetical hybrid rows. */
enum { DEFAULT_EXPAND = 2, DEFAULT_D_STATE = 128, DEFAULT_D_CONV = 4, DEFAULT_GROUPS = 8 };

/* mamba2_state_shape: conv (d_conv - 1, d_inner + 2 groups d_state), temporal (heads, head_dim, d_state).
 * mamba1_state_shape: conv (d_inner, d_conv - 1), temporal (d_inner, d_state); no groups. */
static double mamba_state(double d_inner, double heads_x_dim, int d_state, int d_conv, int groups, int conv_b,
                          int ssm_b) {
  double conv = (double)(d_conv - 1) * (d_inner + 2.0 * groups * d_state);
  return conv * conv_b + heads_x_dim * d_state * ssm_b;
}

/* gated_delta_net_state_shape: conv (d_conv - 1, 2 k_heads k_dim + v_heads v_dim), recurrent
 * (v_heads, v_dim, k_dim). */
static double gdn_state(const km_model *m, int conv_b, int ssm_b) {
  double conv_dim = 2.0 * m->linear_num_key_heads * m->linear_key_head_dim +
                    (double)m->linear_num_value_heads * m->linear_value_head_dim;
  double rec = (double)m->linear_num_value_heads * m->linear_value_head_dim * m->linear_key_head_dim;
  return (double)(m->linear_conv_kernel - 1) * conv_dim * conv_b + rec * ssm_b;
}

km_state_sizes km_layout_states(const km_model *m, km_ssm_dtype ssm) {
  static const int ssm_bytes[KM_SSM_DTYPE_COUNT] = {0, 4, 2, 2};
  km_state_sizes s;
  s.conv_bytes = m->dtype_bytes;
  s.ssm_bytes = ssm_bytes[ssm] ? ssm_bytes[ssm] : m->mamba_ssm_dtype_bytes ? m->mamba_ssm_dtype_bytes : s.conv_bytes;
  double heads_x_dim = m->mamba_version == 2 ? (double)m->mamba_num_heads * m->mamba_head_dim : m->mamba_d_inner;
  int groups = m->mamba_version == 2 ? m->mamba_n_groups : 0;
  s.mamba = m->mamba_version ? mamba_state(m->mamba_d_inner, heads_x_dim, m->mamba_d_state, m->mamba_d_conv, groups,
                                           s.conv_bytes, s.ssm_bytes)
                             : 0;
  s.linear = m->linear_conv_kernel ? gdn_state(m, s.conv_bytes, s.ssm_bytes) : 0;
  return s;
}

double km_layout_default_mamba_state(const km_model *m, int conv_bytes, int ssm_bytes) {
  double hidden = m->hidden_size > 0 ? m->hidden_size : (double)m->num_attention_heads * m->head_dim;
  double d_inner = DEFAULT_EXPAND * hidden;
  return mamba_state(d_inner, d_inner /* heads x head_dim */, DEFAULT_D_STATE, DEFAULT_D_CONV, DEFAULT_GROUPS, conv_bytes, ssm_bytes);
}

double km_layout_heads_bytes(const km_model *m, int heads, double elem_bytes, int scales) {
  return 2.0 * heads * m->head_dim * elem_bytes + (scales ? 2.0 * heads * 4 : 0);
}

double km_layout_latent_bytes(double latent, double elem_bytes, int scales) {
  return latent * elem_bytes + (scales ? 2.0 * 4 : 0); /* MLAAttentionSpec: num_kv_heads 1 */
}

static void push(km_layout *o, km_kv_spec_kind kind, int model_layer) {
  if (o->n >= KM_KV_MAX_LAYERS) return;
  km_kv_layer *l = &o->layer[o->n];
  memset(l, 0, sizeof *l);
  l->kind = kind;
  o->model_layer[o->n++] = model_layer;
}

void km_layout_model(km_layout *o, const km_model *m, double token_bytes, const km_state_sizes *st) {
  o->n = 0;
  o->mla = m->kv_lora_rank > 0;
  for (int i = 0; i < m->num_layers && i < KM_MODEL_MAX_LAYERS; i++) {
    km_layer_kind k = m->layer_kind[i];
    if (km_layer_has_kv(k)) {
      push(o, k == KM_LAYER_LOCAL ? KM_KV_WINDOW : KM_KV_FULL, i);
      o->layer[o->n - 1].token_bytes = token_bytes;
      if (k == KM_LAYER_LOCAL) o->layer[o->n - 1].window = o->layer[o->n - 1].kept = m->sliding_window;
    }
    if (k == KM_LAYER_MAMBA || k == KM_LAYER_PARALLEL || k == KM_LAYER_LINEAR) {
      push(o, KM_KV_STATE, i);
      o->layer[o->n - 1].state_bytes = k == KM_LAYER_LINEAR ? st->linear : st->mamba;
    }
  }
}

static int is_attn(const km_kv_layer *l) { return l->kind != KM_KV_STATE; }

int km_layout_kv_layers(const km_layout *o) {
  int n = 0;
  for (int i = 0; i < o->n; i++) n += is_attn(&o->layer[i]);
  return n;
}

void km_layout_cap(km_layout *o, long long cap, int period) {
  int seen = 0;
  for (int i = 0; i < o->n; i++) {
    km_kv_layer *l = &o->layer[i];
    if (!is_attn(l)) continue;
    int keep_full = period > 1 && seen % period == period - 1;
    seen++;
    if (keep_full || (l->kind == KM_KV_WINDOW && l->window <= cap)) continue;
    l->kind = KM_KV_WINDOW;
    l->window = l->kept = cap;
  }
}

void km_layout_uncap(km_layout *o) {
  for (int i = 0; i < o->n; i++) {
    if (!is_attn(&o->layer[i])) continue;
    o->layer[i].kind = KM_KV_FULL;
    o->layer[i].window = o->layer[i].kept = 0;
  }
}

void km_layout_thin(km_layout *o, int every, double state_each) {
  int seen[2] = {0, 0}, out = 0;
  for (int i = 0; i < o->n; i++) {
    km_kv_layer l = o->layer[i];
    int model_layer = o->model_layer[i];
    if (is_attn(&l) && seen[l.kind == KM_KV_WINDOW]++ % every != 0) {
      if (state_each <= 0) continue; /* shares another layer's KV: nothing of its own */
      memset(&l, 0, sizeof l);
      l.kind = KM_KV_STATE;
      l.state_bytes = state_each;
    }
    o->layer[out] = l;
    o->model_layer[out++] = model_layer;
  }
  o->n = out;
}

double km_layout_bytes_per_token(const km_layout *o) {
  double b = 0;
  for (int i = 0; i < o->n; i++) b += is_attn(&o->layer[i]) ? o->layer[i].token_bytes : 0;
  return b;
}

double km_layout_read_per_step(const km_layout *o, long long max_model_len) {
  double read = 0;
  for (int i = 0; i < o->n; i++) {
    const km_kv_layer *l = &o->layer[i];
    long long kept = l->kept > 0 && l->kept < max_model_len ? l->kept : max_model_len;
    read += is_attn(l) ? l->token_bytes * (double)kept : l->state_bytes;
  }
  return read / (double)max_model_len;
}
