/* The twelve techniques, each as an edit of the model's per-layer cache specs, sized by the same vLLM
 * rules as the model as configured (so the comparison is like with like). Where a technique's ideal
 * differs from what vLLM reserves (a window keeps W tokens, vLLM reserves W - 1 + max_num_batched_tokens),
 * the row shows both: conc (vLLM) and conc ideal. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bytes_rows.h"
#include "model_arch.h"

/* The techniques' own defaults (DESIGN.md "The per-token byte table"). */
enum {
  SHARE_LAYERS = 2,     /* cross-layer sharing: layers per stored KV */
  MLA_RANK = 512,       /* MLA latent for models without one: DeepSeek-V3's */
  MLA_ROPE = 64,
  DEFAULT_WINDOW = 4096,/* sliding window for models without one */
  LOCAL_PERIOD = 6,     /* 5 local : 1 global, Gemma 3's pattern */
  EVICT_KEEP = 2048,    /* tokens kept per sequence by eviction */
  COMPRESS_RATIO = 4,   /* tokens per stored entry, compressed attention */
  QUEST_PAGE = 16,      /* tokens per page of min/max metadata */
  QUEST_BUDGET = 2048,  /* tokens read per step */
  INT3_GROUP = 32,      /* uniform 3-bit: elements per fp16 scale + zero */
};

static int is_mla(const km_model *m) { return m->kv_lora_rank > 0; }
static int native_heads(const km_model *m) { return is_mla(m) ? 0 : m->num_kv_heads; }

/* ---- store fewer bytes: GQA / MQA, cross-layer sharing, MLA */

static void shape_note(const bt_ctx *x, char *buf, size_t n) {
  const km_model *m = x->m;
  size_t u = (size_t)snprintf(buf, n, "= the model as configured");
  if (u < n && m->config_dtype[0] && strcmp(m->config_dtype, "float32") == 0)
    u += (size_t)snprintf(buf + u, n - u, "; its float32 checkpoint is served in bf16 by vLLM's --dtype auto");
  if (u < n && !km_arch_find(m->model_type))
    u += (size_t)snprintf(buf + u, n - u, "; model_type %s%s%s is not in kvmicro's table: fields read by their "
                          "generic names, no per-architecture defaults", m->model_type[0] ? "\"" : "(none)",
                          m->model_type, m->model_type[0] ? "\"" : "");
  if (u < n && m->max_len_key[0] == '\0')
    snprintf(buf + u, n - u, "; the config has no length field: vLLM assumes 2048 and takes any --max-model-len");
}

static void rows_gqa(bt_ctx *x) {
  const km_model *m = x->m;
  km_layout *o = x->scratch;
  char note[512];
  shape_note(x, note, sizeof note);
  km_bt_emit(x, "gqa", KM_MECH_STORE, "as_configured", x->configured, note);
  if (km_layout_kv_layers(x->configured) == 0) {
    km_bt_emit_na(x, "gqa", KM_MECH_STORE, "mha", "no attention layers: no KV heads to regroup");
    return;
  }
  km_bt_layout(x, o, m->num_attention_heads);
  if (is_mla(m))
    snprintf(note, sizeof note, "MLA decompressed: %d heads x (K+V)/2 = %d wide", m->num_attention_heads, m->head_dim);
  else if (m->num_kv_heads == m->num_attention_heads)
    snprintf(note, sizeof note, "the model is MHA already (%d KV heads)", m->num_kv_heads);
  else
    snprintf(note, sizeof note, "%d KV heads, one per query head: the %d:1 grouping undone", m->num_attention_heads,
             m->num_attention_heads / m->num_kv_heads);
  km_bt_emit(x, "gqa", KM_MECH_STORE, "mha", o, note);
  km_bt_layout(x, o, 1);
  snprintf(note, sizeof note, m->num_kv_heads == 1 && !is_mla(m) ? "the model is MQA already"
                                                                   : "1 KV head shared by all %d query heads",
           m->num_attention_heads);
  km_bt_emit(x, "gqa", KM_MECH_STORE, "mqa", o, note);
}

static void rows_cross_layer(bt_ctx *x) {
  km_layout *o = x->scratch;
  char note[256], variant[32];
  *o = *x->configured;
  int kv = km_layout_kv_layers(o);
  km_layout_thin(o, SHARE_LAYERS, 0);
  snprintf(variant, sizeof variant, "share_%d", SHARE_LAYERS);
  snprintf(note, sizeof note, "%d of %d KV layers store KV (the first of every %d of each kind), the others reuse "
           "it (needs a model trained for it)", km_layout_kv_layers(o), kv, SHARE_LAYERS);
  if (kv == 0) km_bt_emit_na(x, "cross_layer", KM_MECH_STORE, variant, "no KV layers: nothing to share");
  else km_bt_emit(x, "cross_layer", KM_MECH_STORE, variant, o, note);
}

static void rows_mla(bt_ctx *x) {
  const km_model *m = x->m;
  km_layout *o = x->scratch;
  char note[320], variant[32];
  if (km_layout_kv_layers(x->configured) == 0) {
    km_bt_emit_na(x, "mla", KM_MECH_STORE, "latent", "no attention layers: MLA is meaningless for state/MLP layers");
    return;
  }
  if (is_mla(m)) {
    snprintf(note, sizeof note, "the model's own latent: %d + %d per KV layer (vLLM MLAAttentionSpec, one KV head); "
             "per-head K/V rebuilt on the fly (decompressed: gqa/mha); vLLM's FlashMLA backend (Hopper) takes "
             "64-token blocks: --block-size 64", m->kv_lora_rank, m->qk_rope_head_dim);
    km_bt_emit(x, "mla", KM_MECH_STORE, "native", x->configured, note);
    return;
  }
  *o = *x->configured;
  o->mla = 1;
  for (int l = 0; l < o->n; l++)
    if (o->layer[l].kind != KM_KV_STATE)
      o->layer[l].token_bytes = km_layout_latent_bytes(MLA_RANK + MLA_ROPE, x->elem, x->scales);
  snprintf(variant, sizeof variant, "latent_%d_%d", MLA_RANK, MLA_ROPE);
  snprintf(note, sizeof note, "hypothetical: the model has no MLA projections; rank %d + rope %d as DeepSeek-V3%s",
           MLA_RANK, MLA_ROPE, o->n > km_layout_kv_layers(o) ? "; state layers keep their state" : "");
  km_bt_emit(x, "mla", KM_MECH_STORE, variant, o, note);
}

/* ---- sliding windows */

/* Whether the model's own attention layers are exactly `period`-patterned windows (period 1: all windowed). */
static int model_has_pattern(const km_model *m, int period) {
  int i = 0, any = 0;
  for (int l = 0; l < m->num_layers; l++) {
    km_layer_kind k = m->layer_kind[l];
    if (!km_layer_has_kv(k)) continue;
    int want_local = period <= 1 || i % period != period - 1;
    i++;
    any = 1;
    if ((k == KM_LAYER_LOCAL) != want_local) return 0;
  }
  return any && m->sliding_window > 0;
}

static void window_row(bt_ctx *x, long long w, int period, const char *variant, int as_configured) {
  km_layout *o = x->scratch;
  char note[384];
  *o = *x->configured;
  km_layout_uncap(o);
  if (w > 0) km_layout_cap(o, w, period);
  size_t u = (size_t)snprintf(note, sizeof note, "%s", as_configured ? "= the model as configured" : "");
  if (w == 0 && !as_configured) u = (size_t)snprintf(note, sizeof note, "the model's window removed: every layer "
                                                     "full attention");
  if (w > 0 && !as_configured && period > 1)
    u += (size_t)snprintf(note + u, sizeof note - u, "%d local : 1 global per %d KV layers", period - 1, period);
  if (w > 0 && !as_configured && period <= 1) u += (size_t)snprintf(note + u, sizeof note - u, "every KV layer local");
  if (w > 0 && u < sizeof note)
    u += (size_t)snprintf(note + u, sizeof note - u, "; vLLM reserves W - 1 + max_num_batched_tokens per window "
                          "layer (conc ideal: W kept)");
  if (w >= x->max_model_len && u < sizeof note)
    snprintf(note + u, sizeof note - u, "; window %lld >= max_model_len %lld: no saving", w, x->max_model_len);
  km_bt_emit(x, "sliding_window", KM_MECH_STORE, variant, o, note);
}

static void rows_window(bt_ctx *x) {
  const km_model *m = x->m;
  long long w = m->sliding_window > 0 ? m->sliding_window : DEFAULT_WINDOW;
  char variant[48];
  if (km_layout_kv_layers(x->configured) == 0) {
    km_bt_emit_na(x, "sliding_window", KM_MECH_STORE, "none", "no attention layers: no window to apply");
    return;
  }
  window_row(x, 0, 1, "none", km_model_count_layers(m, KM_LAYER_LOCAL) == 0);
  snprintf(variant, sizeof variant, "w%lld_all", w);
  window_row(x, w, 1, variant, model_has_pattern(m, 1));
  snprintf(variant, sizeof variant, "w%lld_%dto1", w, LOCAL_PERIOD - 1);
  window_row(x, w, LOCAL_PERIOD, variant, model_has_pattern(m, LOCAL_PERIOD));
}

/* ---- state layers */

static void rows_mamba(bt_ctx *x) {
  const km_model *m = x->m;
  km_layout *o = x->scratch;
  char note[384], variant[32], st[32];
  int states = x->configured->n - km_layout_kv_layers(x->configured);
  if (states > 0) {
    snprintf(note, sizeof note, "= the model as configured: %d state layers (vLLM MambaSpec, one page per request "
             "padded to the attention page), conv state %d B, SSM state %d B per element", states, x->st.conv_bytes,
             x->st.ssm_bytes);
    km_bt_emit(x, "hybrid_mamba", KM_MECH_STORE, "as_configured", x->configured, note);
    if (m->num_kv_heads <= 0) {
      km_bt_emit_na(x, "hybrid_mamba", KM_MECH_STORE, "all_attention", "no attention shape to put in their place");
      return;
    }
    km_bt_layout(x, o, native_heads(m));
    int out = 0;
    for (int l = 0; l < o->n; l++) { /* each state layer becomes (or, beside attention, leaves for) attention */
      int model_layer = o->model_layer[l];
      if (o->layer[l].kind == KM_KV_STATE && m->layer_kind[model_layer] == KM_LAYER_PARALLEL) continue;
      if (o->layer[l].kind == KM_KV_STATE) {
        memset(&o->layer[l], 0, sizeof o->layer[l]);
        o->layer[l].kind = KM_KV_FULL;
        o->layer[l].token_bytes = km_bt_token_bytes(x, native_heads(m), 0, 1);
      }
      o->layer[out] = o->layer[l];
      o->model_layer[out++] = model_layer;
    }
    o->n = out;
    km_bt_emit(x, "hybrid_mamba", KM_MECH_STORE, "all_attention", o,
               "hypothetical: every state layer replaced by attention (MLP layers stay KV-free)");
    return;
  }
  double state = km_layout_default_mamba_state(m, x->st.conv_bytes, x->st.ssm_bytes);
  km_bt_fmt_bytes(state, st, sizeof st);
  static const int every[] = {4, 8};
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++) {
    *o = *x->configured;
    km_layout_thin(o, every[i], state);
    snprintf(variant, sizeof variant, "attn_1_in_%d", every[i]);
    snprintf(note, sizeof note, "hypothetical: %d KV layers kept, the rest Mamba-2 as Nemotron-H-8B's (d_inner 2 x "
             "hidden, d_state 128, d_conv 4, 8 groups: %s state per layer per request)", km_layout_kv_layers(o), st);
    km_bt_emit(x, "hybrid_mamba", KM_MECH_STORE, variant, o, note);
  }
}

/* ---- KV quantization */

static double int3_vector(long long n) { /* codes, then an fp16 scale + fp16 zero point per group */
  return (double)((3 * n + 7) / 8) + 4.0 * (double)((n + INT3_GROUP - 1) / INT3_GROUP);
}

/* Every attention layer of the configured layout at token_bytes. */
static void set_attention_bytes(km_layout *o, double token_bytes) {
  for (int l = 0; l < o->n; l++)
    if (o->layer[l].kind != KM_KV_STATE) o->layer[l].token_bytes = token_bytes;
}

static void row_tq(bt_ctx *x, int boundary, const char *variant) {
  const km_model *m = x->m;
  km_layout *o = x->scratch;
  char note[384];
  *o = *x->configured;
  int kv = km_layout_kv_layers(o), i = 0;
  for (int l = 0; l < o->n; l++) {
    if (o->layer[l].kind == KM_KV_STATE) continue;
    int keep = boundary && (i < KM_TQ_BOUNDARY || i >= kv - KM_TQ_BOUNDARY);
    o->layer[l].token_bytes = keep ? km_layout_heads_bytes(m, m->num_kv_heads, m->dtype_bytes, 0)
                                   : m->num_kv_heads * km_bt_tq_slot(m->head_dim);
    i++;
  }
  size_t u = (size_t)snprintf(note, sizeof note, "K: ceil(3x%d/8)+2 B, V: ceil(3x%d/8)+4 B per head, slot %.0f B "
                              "(vLLM TQFullAttentionSpec)", m->head_dim, m->head_dim, km_bt_tq_slot(m->head_dim));
  if (boundary && u < sizeof note)
    u += (size_t)snprintf(note + u, sizeof note - u, "; first %d and last %d KV layers kept at %d B", KM_TQ_BOUNDARY,
                          KM_TQ_BOUNDARY, m->dtype_bytes);
  if (boundary && kv <= 2 * KM_TQ_BOUNDARY && u < sizeof note)
    snprintf(note + u, sizeof note - u, "; all %d KV layers are boundary layers: nothing quantized", kv);
  km_bt_emit(x, "kv_quant", KM_MECH_STORE, variant, o, note);
}

static void rows_quant(bt_ctx *x) {
  const km_model *m = x->m;
  km_layout *o = x->scratch;
  int heads = is_mla(m) ? 1 : m->num_kv_heads;
  long long vec = is_mla(m) ? (long long)m->kv_lora_rank + m->qk_rope_head_dim : m->head_dim;
  int parts = is_mla(m) ? 1 : 2; /* K and V, or the one latent */
  double latent = (double)vec;
  char note[256];
  if (km_layout_kv_layers(x->configured) == 0) {
    km_bt_emit_na(x, "kv_quant", KM_MECH_STORE, "fp8_e4m3", "no KV layers: nothing to quantize");
    return;
  }
  *o = *x->configured;
  set_attention_bytes(o, is_mla(m) ? km_layout_latent_bytes(latent, 1, 0) : km_layout_heads_bytes(m, heads, 1, 0));
  km_bt_emit(x, "kv_quant", KM_MECH_STORE, "fp8_e4m3", o, "1 B per element, one scale per tensor (--kv-dtype fp8)");
  set_attention_bytes(o, is_mla(m) ? km_layout_latent_bytes(latent, 1, 1) : km_layout_heads_bytes(m, heads, 1, 1));
  snprintf(note, sizeof note, "1 B per element + a float32 scale per token per head for %s (vLLM AttentionSpec "
           "page_size_bytes)", is_mla(m) ? "the latent's K and V" : "K and for V");
  km_bt_emit(x, "kv_quant", KM_MECH_STORE, "fp8_per_token_head", o, note);
  set_attention_bytes(o, (double)parts * heads * int3_vector(vec));
  snprintf(note, sizeof note, "uniform asymmetric, group %d: ceil(3x%lld/8) + 4 x ceil(%lld/%d) = %.0f B per vector",
           INT3_GROUP, vec, vec, INT3_GROUP, int3_vector(vec));
  km_bt_emit(x, "kv_quant", KM_MECH_STORE, "int3_g32", o, note);
  if (is_mla(m)) {
    km_bt_emit_na(x, "kv_quant", KM_MECH_STORE, "turboquant_3bit_nc",
                  "per-head K/V layout: not defined for an MLA latent cache");
  } else {
    row_tq(x, 1, "turboquant_3bit_nc");
    row_tq(x, 0, "tq3_nc_all_layers");
  }
}

/* ---- eviction, compression */

static void rows_store_rest(bt_ctx *x) {
  km_layout *o = x->scratch;
  char note[384], variant[32];
  int kv = km_layout_kv_layers(x->configured);
  *o = *x->configured;
  km_layout_cap(o, EVICT_KEEP, 1);
  snprintf(variant, sizeof variant, "keep_%d", EVICT_KEEP);
  size_t u = (size_t)snprintf(note, sizeof note, "keeps %d high-scoring tokens per request per layer (H2O/SnapKV "
                              "style; accuracy cost not modelled); vLLM has no eviction: sized as a %d-token window "
                              "(a prefill chunk lands before it is scored), conc ideal keeps %d", EVICT_KEEP,
                              EVICT_KEEP, EVICT_KEEP);
  if (EVICT_KEEP >= x->max_model_len && u < sizeof note)
    snprintf(note + u, sizeof note - u, "; keep %d >= max_model_len %lld: nothing evicted", EVICT_KEEP,
             x->max_model_len);
  if (kv == 0) km_bt_emit_na(x, "eviction", KM_MECH_STORE, variant, "no KV layers: nothing to evict");
  else km_bt_emit(x, "eviction", KM_MECH_STORE, variant, o, note);

  *o = *x->configured;
  for (int l = 0; l < o->n; l++)
    if (o->layer[l].kind != KM_KV_STATE) o->layer[l].token_bytes /= COMPRESS_RATIO;
  snprintf(variant, sizeof variant, "ratio_%d", COMPRESS_RATIO);
  snprintf(note, sizeof note, "1 stored entry per %d tokens (pooled/compressed KV); quality cost not modelled",
           COMPRESS_RATIO);
  if (kv == 0) km_bt_emit_na(x, "compressed", KM_MECH_STORE, variant, "no KV layers: nothing to compress");
  else km_bt_emit(x, "compressed", KM_MECH_STORE, variant, o, note);
}

/* ---- compute less, read less, move bytes */

static void rows_prefix(bt_ctx *x) {
  char note[320], tok[32];
  km_bt_fmt_count(x->base.kv_cache_tokens, tok, sizeof tok);
  snprintf(note, sizeof note, "bytes unchanged; prefill compute saved = shared / total prompt tokens (16,384 of "
           "16,640 saves 98.5%%); reuse holds only while the working set fits the %s token slots", tok);
  km_bt_emit(x, "prefix_reuse", KM_MECH_COMPUTE, "shared_prefix", x->configured, note);
}

/* Quest: min and max of K per page per layer are stored too; a step reads all of them to score pages,
 * then K and V of the top QUEST_BUDGET tokens. */
static void rows_sparse(bt_ctx *x) {
  const km_model *m = x->m;
  km_layout *o = x->scratch;
  char note[384], variant[48];
  double k_width = is_mla(m) ? (double)m->kv_lora_rank + m->qk_rope_head_dim : (double)m->num_kv_heads * m->head_dim;
  double meta = 2.0 * k_width * x->elem / QUEST_PAGE;
  long long len = x->max_model_len;
  snprintf(variant, sizeof variant, "quest_p%d_k%d", QUEST_PAGE, QUEST_BUDGET);
  if (km_layout_kv_layers(x->configured) == 0) {
    km_bt_emit_na(x, "sparse_read", KM_MECH_READ, variant, "no KV layers: nothing to read sparsely");
    return;
  }
  *o = *x->configured;
  double read = 0;
  for (int l = 0; l < o->n; l++) {
    km_kv_layer *k = &o->layer[l];
    if (k->kind == KM_KV_STATE) {
      read += k->state_bytes;
      continue;
    }
    long long held = k->kept > 0 && k->kept < len ? k->kept : len;
    read += k->token_bytes * (double)(held < QUEST_BUDGET ? held : QUEST_BUDGET) + meta * (double)held;
    k->token_bytes += meta;
  }
  size_t u = (size_t)snprintf(note, sizeof note, "stores min+max of K per %d-token page (+%.6g B/token); a step "
                              "reads all metadata, then K+V of the top %d tokens", QUEST_PAGE,
                              meta * km_layout_kv_layers(o), QUEST_BUDGET);
  if (QUEST_BUDGET >= len) snprintf(note + u, sizeof note - u, "; budget >= max_model_len: reads every page");
  km_kv_plan plan;
  km_bt_plan(x, o, x->p->kv_budget, &plan);
  km_bt_emit_figures(x, "sparse_read", KM_MECH_READ, variant, o, &plan, note);
  km_bt_set_read(x, read / (double)len); /* the sparse read, not the dense one */
}

static void rows_paged(bt_ctx *x) {
  char note[384], variant[32], waste[32], foot[32];
  long long bs = x->base.attn_block_size ? x->base.attn_block_size : x->p->block_size;
  km_bt_fmt_bytes((double)(bs - 1) * km_layout_bytes_per_token(x->configured), waste, sizeof waste);
  snprintf(variant, sizeof variant, "block_%lld", bs);
  snprintf(note, sizeof note, "bytes unchanged; blocks let requests grow without reserving max_model_len; waste "
           "<= %lld tokens (%s) per request per group (block size moved throughput < 1%% in the source article)",
           bs - 1, waste);
  km_bt_emit(x, "paged", KM_MECH_MOVE, variant, x->configured, note);
  /* Without paging each request reserves its whole max_model_len up front: whole requests only. */
  km_kv_plan plan = x->base;
  double footprint = km_layout_read_per_step(x->configured, x->max_model_len) * (double)x->max_model_len;
  plan.max_concurrency = plan.ideal_concurrency = floor(x->p->kv_budget / footprint);
  plan.kv_cache_tokens = plan.max_concurrency * (double)x->max_model_len;
  km_bt_fmt_bytes(footprint, foot, sizeof foot);
  snprintf(note, sizeof note, "no paging: each request reserves its max_model_len footprint (%s) up front, so "
           "concurrency = floor(budget / footprint) and slots = that x max_model_len; short requests waste the rest",
           foot);
  km_bt_emit_figures(x, "paged", KM_MECH_MOVE, "contiguous", x->configured, &plan, note);
}

static void rows_offload(bt_ctx *x) {
  const km_bytes_params *p = x->p;
  char note[384], reload[160], host[32];
  double bpt = km_layout_bytes_per_token(x->configured);
  if (p->h2d_gbps > 0)
    snprintf(reload, sizeof reload, "reload %.2f us per token (%.0f B at a measured %.1f GB/s H2D)",
             bpt / (p->h2d_gbps * 1e3), bpt, p->h2d_gbps);
  else
    snprintf(reload, sizeof reload, "reload cost per token: not measured (run offload/ benchmarks)");
  if (p->host_budget <= 0) {
    snprintf(note, sizeof note, "--host-budget not given: no host capacity added; %s", reload);
    km_bt_emit(x, "offload", KM_MECH_MOVE, "no_host_budget", x->configured, note);
    return;
  }
  km_kv_plan plan;
  km_bt_plan(x, x->configured, p->kv_budget + p->host_budget, &plan);
  km_bt_fmt_bytes(p->host_budget, host, sizeof host);
  snprintf(note, sizeof note, "GPU bytes unchanged; %s of host memory pooled with the GPU budget (tokens wait "
           "there, attention reads them on the GPU); %s", host, reload);
  km_bt_emit_figures(x, "offload", KM_MECH_MOVE, "host_budget", x->configured, &plan, note);
}

void km_bt_rows(bt_ctx *x) {
  rows_gqa(x);
  rows_cross_layer(x);
  rows_mla(x);
  rows_window(x);
  rows_mamba(x);
  rows_quant(x);
  rows_store_rest(x);
  rows_prefix(x);
  rows_sparse(x);
  rows_paged(x);
  rows_offload(x);
}
