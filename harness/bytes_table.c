/* The per-token byte table: the columns, the inputs checked the way vLLM checks them, each row sized by
 * vLLM v1's rules (harness/vllm_kv.c), the two lines vLLM logs for the model as configured, and the JSON.
 * The techniques themselves are in bytes_rows.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_rows.h"

/* The source rig (seed/SUMMARY.md): vLLM's 54.94 GiB KV cache for Qwen3-8B, 40,960-token requests. */
#define KM_DEFAULT_KV_BUDGET 58987118592.0
/* Budgets beyond 2^53 B (8 PiB) are not GPUs, and every byte count below stays exact in a double. */
#define KM_MAX_BUDGET 9007199254740992.0
/* vllm serve's --max-num-batched-tokens with chunked prefill (the default on GPUs); --block-size 16. */
enum { KM_DEFAULT_BATCHED_TOKENS = 8192, KM_DEFAULT_BLOCK_SIZE = 16 };

const char *const KM_MECH_STORE = "store fewer bytes";
const char *const KM_MECH_COMPUTE = "compute less";
const char *const KM_MECH_READ = "read less";
const char *const KM_MECH_MOVE = "move bytes";

enum {
  COL_TECH, COL_MECH, COL_VARIANT, COL_BYTES, COL_READ, COL_KEPT, COL_REQUEST, COL_SLOTS, COL_CONC, COL_IDEAL, COL_X,
  COL_NOTE, COL_COUNT
};

static const km_column columns[COL_COUNT] = {
    {"technique", "technique", 0},
    {"mechanism", "mechanism", 0},
    {"variant", "variant", 0},
    {"bytes_per_token", "B/token", 1},
    {"read_per_step", "B read/tok", 1},
    {"kept_tokens_per_request", "kept/req", 1},
    {"per_request", "per request (cap, vLLM reservation, state)", 0},
    {"kv_cache_tokens", "token slots", 1},
    {"max_concurrency", "conc (vLLM)", 1},
    {"ideal_concurrency", "conc ideal", 1},
    {"capacity_x", "vs cfg", 1},
    {"note", "note", 0},
};

/* Text shows what fits 120 columns: the mechanism is the group heading, the request text and the note are
 * in full in markdown, CSV and JSON (the note as a numbered note under the text table). */
static void set_text_modes(km_table *t) {
  km_table_set_text_mode(t, COL_MECH, KM_TEXT_HIDE);
  km_table_set_text_mode(t, COL_REQUEST, KM_TEXT_HIDE);
  km_table_set_text_mode(t, COL_NOTE, KM_TEXT_NOTE);
}

/* ---- dtype names: vLLM's --kv-cache-dtype and --mamba-ssm-cache-dtype */

static const char *const kv_dtype_names[KM_KV_DTYPE_COUNT] = {
    "auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_per_token_head", "turboquant_3bit_nc"};
static const char *const ssm_dtype_names[KM_SSM_DTYPE_COUNT] = {"auto", "float32", "bfloat16", "float16"};

static int name_index(const char *const *names, int count, const char *s) {
  for (int i = 0; s && i < count; i++)
    if (strcmp(names[i], s) == 0) return i;
  return -1;
}

int km_kv_dtype_parse(const char *s, km_kv_dtype *out) {
  int i = name_index(kv_dtype_names, KM_KV_DTYPE_COUNT, s);
  if (i < 0) return -1;
  *out = (km_kv_dtype)i;
  return 0;
}

const char *km_kv_dtype_name(km_kv_dtype d) { return d >= 0 && d < KM_KV_DTYPE_COUNT ? kv_dtype_names[d] : "?"; }

int km_ssm_dtype_parse(const char *s, km_ssm_dtype *out) {
  int i = name_index(ssm_dtype_names, KM_SSM_DTYPE_COUNT, s);
  if (i < 0) return -1;
  *out = (km_ssm_dtype)i;
  return 0;
}

const char *km_ssm_dtype_name(km_ssm_dtype d) { return d >= 0 && d < KM_SSM_DTYPE_COUNT ? ssm_dtype_names[d] : "?"; }

void km_bytes_params_default(km_bytes_params *p) {
  memset(p, 0, sizeof *p);
  p->kv_budget = KM_DEFAULT_KV_BUDGET;
  p->max_num_batched_tokens = KM_DEFAULT_BATCHED_TOKENS;
  p->block_size = KM_DEFAULT_BLOCK_SIZE;
}

/* ---- text helpers */

void km_bt_fmt_count(double v, char *buf, size_t len) {
  char raw[48];
  snprintf(raw, sizeof raw, "%.0f", v);
  size_t digits = strlen(raw), o = 0;
  for (size_t i = 0; i < digits && o + 2 < len; i++) {
    buf[o++] = raw[i];
    size_t left = digits - i - 1;
    if (left > 0 && left % 3 == 0 && raw[i] != '-') buf[o++] = ',';
  }
  buf[o] = '\0';
}

void km_bt_fmt_bytes(double v, char *buf, size_t len) {
  if (v >= 1024.0 * 1024 * 1024) snprintf(buf, len, "%.2f GiB", v / (1024.0 * 1024 * 1024));
  else if (v >= 1024.0 * 1024) snprintf(buf, len, "%.1f MiB", v / (1024.0 * 1024));
  else if (v >= 1024.0) snprintf(buf, len, "%.1f KiB", v / 1024.0);
  else snprintf(buf, len, "%.0f B", v);
}

/* ---- the layers of the model under --kv-dtype */

double km_bt_tq_slot(int d) {
  long long codes = (3LL * d + 7) / 8, slot = (codes + 2) + (codes + 4);
  return (double)(slot + (slot & 1));
}

double km_bt_token_bytes(const bt_ctx *x, int heads, int kv_index, int kv_count) {
  const km_model *m = x->m;
  int boundary = kv_index < KM_TQ_BOUNDARY || kv_index >= kv_count - KM_TQ_BOUNDARY;
  if (heads == 0) return km_layout_latent_bytes((double)m->kv_lora_rank + m->qk_rope_head_dim, x->elem, x->scales);
  if (x->p->kv_dtype == KM_KV_DTYPE_TURBOQUANT_3BIT_NC && !boundary) return heads * km_bt_tq_slot(m->head_dim);
  if (x->p->kv_dtype == KM_KV_DTYPE_TURBOQUANT_3BIT_NC) return km_layout_heads_bytes(m, heads, m->dtype_bytes, 0);
  return km_layout_heads_bytes(m, heads, x->elem, x->scales);
}

void km_bt_layout(const bt_ctx *x, km_layout *o, int heads) {
  km_layout_model(o, x->m, 0, &x->st);
  int kv = km_layout_kv_layers(o), i = 0;
  o->mla = heads == 0;
  for (int l = 0; l < o->n; l++)
    if (o->layer[l].kind != KM_KV_STATE) o->layer[l].token_bytes = km_bt_token_bytes(x, heads, i++, kv);
}

/* ---- rows */

void km_bt_plan(const bt_ctx *x, const km_layout *o, double budget, km_kv_plan *plan) {
  km_kv_config c = x->cfg;
  c.available_memory = budget;
  c.mla = o->mla;
  km_kv_plan_build(o->layer, o->n, &c, plan);
}

/* The fewest tokens any attention layer keeps for a max_model_len request (NAN: no attention). */
static double kept_tokens(const bt_ctx *x, const km_layout *o) {
  double kept = NAN;
  for (int i = 0; i < o->n; i++) {
    const km_kv_layer *l = &o->layer[i];
    if (l->kind == KM_KV_STATE) continue;
    double k = l->kept > 0 && l->kept < x->max_model_len ? (double)l->kept : (double)x->max_model_len;
    if (isnan(kept) || k < kept) kept = k;
  }
  return kept;
}

/* "keeps 4,096 tok on 32 of 32 KV layers, vLLM reserves 12,304; state 97.4 MiB (24 layers); 1,040-tok blocks" */
static void describe_request(const bt_ctx *x, const km_layout *o, const km_kv_plan *p, char *buf, size_t n) {
  long long cap = 0, reserve = 0;
  int capped = 0, kv = 0, states = 0;
  double state = 0;
  for (int i = 0; i < o->n; i++) {
    const km_kv_layer *l = &o->layer[i];
    if (l->kind == KM_KV_STATE) {
      states++;
      state += l->state_bytes;
      continue;
    }
    kv++;
    if (l->kept <= 0 || l->kept >= x->max_model_len) continue;
    capped++;
    cap = l->kept > cap ? l->kept : cap;
    if (l->kind == KM_KV_WINDOW && p->attn_block_size > 0) {
      long long t = l->window - 1 + x->cfg.max_num_batched_tokens;
      t = t < x->max_model_len ? t : x->max_model_len;
      reserve = ((t + p->attn_block_size - 1) / p->attn_block_size + 1) * p->attn_block_size;
    }
  }
  char a[32], b[32], c[32];
  size_t u = 0;
  buf[0] = '\0';
  if (capped) {
    km_bt_fmt_count((double)cap, a, sizeof a);
    km_bt_fmt_count((double)reserve, b, sizeof b);
    u += (size_t)snprintf(buf, n, "keeps %s tok on %d of %d KV layers", a, capped, kv);
    if (reserve && u < n) u += (size_t)snprintf(buf + u, n - u, ", vLLM reserves %s", b);
  } else if (kv) {
    km_bt_fmt_count((double)x->max_model_len, a, sizeof a);
    u += (size_t)snprintf(buf, n, "all %s tok on %d KV layers", a, kv);
  }
  if (states && u < n) {
    km_bt_fmt_bytes(state, c, sizeof c);
    u += (size_t)snprintf(buf + u, n - u, "%sstate %s (%d layers)", u ? "; " : "", c, states);
  }
  if (kv && states && u < n) {
    km_bt_fmt_count((double)p->attn_block_size, a, sizeof a);
    snprintf(buf + u, n - u, "; %s-tok attention blocks", a);
  }
  if (!buf[0]) snprintf(buf, n, "-");
}

static size_t row_start(bt_ctx *x, const char *tech, const char *mech, const char *variant) {
  size_t r = km_table_add_row(x->t, mech);
  km_table_set_text(x->t, r, COL_TECH, tech);
  km_table_set_text(x->t, r, COL_MECH, mech);
  km_table_set_text(x->t, r, COL_VARIANT, variant);
  return r;
}

static void set_decimal(km_table *t, size_t r, size_t c, double v) {
  km_table_set_number(t, r, c, v, floor(v) == v ? 0 : 1);
}

void km_bt_emit_figures(bt_ctx *x, const char *tech, const char *mech, const char *variant, const km_layout *o,
                        const km_kv_plan *plan, const char *note) {
  char text[1024], req[256], need[32];
  size_t r = row_start(x, tech, mech, variant);
  set_decimal(x->t, r, COL_BYTES, km_layout_bytes_per_token(o));
  set_decimal(x->t, r, COL_READ, km_layout_read_per_step(o, x->max_model_len));
  km_table_set_integer(x->t, r, COL_KEPT, kept_tokens(x, o));
  describe_request(x, o, plan, req, sizeof req);
  km_table_set_text(x->t, r, COL_REQUEST, req);
  size_t u = (size_t)snprintf(text, sizeof text, "%s", note);
  if (plan->ok) {
    km_table_set_integer(x->t, r, COL_SLOTS, plan->kv_cache_tokens);
    km_table_set_number(x->t, r, COL_CONC, plan->max_concurrency, 2);
    km_table_set_number(x->t, r, COL_X, plan->max_concurrency / x->base.max_concurrency, 2);
    if (plan->max_concurrency < 1 && u < sizeof text) {
      km_bt_fmt_bytes(plan->request_bytes, need, sizeof need);
      snprintf(text + u, sizeof text - u, "; vLLM would refuse to start: one request needs %s", need);
    }
  } else if (u < sizeof text) {
    snprintf(text + u, sizeof text - u, "; %s", plan->reason);
  }
  km_table_set_number(x->t, r, COL_IDEAL, plan->ideal_concurrency, 2);
  km_table_set_text(x->t, r, COL_NOTE, text);
}

void km_bt_set_read(bt_ctx *x, double read_per_step) {
  if (x->t->nrows) set_decimal(x->t, x->t->nrows - 1, COL_READ, read_per_step);
}

void km_bt_emit(bt_ctx *x, const char *tech, const char *mech, const char *variant, const km_layout *o,
                const char *note) {
  km_kv_plan plan;
  km_bt_plan(x, o, x->p->kv_budget, &plan);
  km_bt_emit_figures(x, tech, mech, variant, o, &plan, note);
}

void km_bt_emit_na(bt_ctx *x, const char *tech, const char *mech, const char *variant, const char *note) {
  size_t r = row_start(x, tech, mech, variant);
  km_table_set_text(x->t, r, COL_REQUEST, "-");
  km_table_set_text(x->t, r, COL_NOTE, note);
}

/* ---- validation: one line naming the flag, the way vLLM refuses */

long long km_bytes_max_model_len(const km_model *m, const km_bytes_params *p, char *err, size_t errlen) {
  if (p->max_model_len <= 0) return m->max_model_len;
  if (p->max_model_len > m->max_model_len && !p->allow_long_max_model_len && m->max_len_key[0]) {
    /* vLLM _get_and_verify_max_len: "User-specified max_model_len (...) is greater than the derived
     * max_model_len (...)", overridable with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 */
    snprintf(err, errlen, "--max-model-len %lld is greater than %s's max_model_len %lld (%s in its config); "
             "pass --allow-long-max-model-len to override, as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 does",
             p->max_model_len, m->name, m->max_model_len, m->max_len_key);
    return -1;
  }
  return p->max_model_len;
}

static int check_inputs(const km_model *m, const km_bytes_params *p, char *err, size_t errlen) {
  int kv = 0;
  for (int i = 0; i < m->num_layers && i < KM_MODEL_MAX_LAYERS; i++) kv += km_layer_has_kv(m->layer_kind[i]);
  if (m->num_layers <= 0 || m->num_layers > KM_MODEL_MAX_LAYERS || m->dtype_bytes <= 0 ||
      (kv && (m->num_attention_heads <= 0 || m->num_kv_heads <= 0 || m->head_dim <= 0))) {
    snprintf(err, errlen, "model %s: layers, heads, KV heads, head_dim and dtype must be positive", m->name);
    return -1;
  }
  if (!(p->kv_budget > 0) || !(p->kv_budget + p->host_budget <= KM_MAX_BUDGET)) {
    snprintf(err, errlen, "--kv-budget %g%s: need a positive number of bytes, with --host-budget at most 2^53 "
             "(8 PiB)", p->kv_budget, p->host_budget > 0 ? " (with --host-budget)" : "");
    return -1;
  }
  if (p->max_model_len < 0 || p->block_size <= 0 || p->max_num_batched_tokens <= 0) {
    const char *flag = p->max_model_len < 0 ? "--max-model-len" : p->block_size <= 0 ? "--block-size"
                                                                                    : "--max-num-batched-tokens";
    long long v = p->max_model_len < 0 ? p->max_model_len : p->block_size <= 0 ? p->block_size
                                                                              : p->max_num_batched_tokens;
    snprintf(err, errlen, "%s %lld: need a positive integer", flag, v);
    return -1;
  }
  if (p->host_budget < 0 || p->h2d_gbps < 0 || p->kv_dtype < 0 || p->kv_dtype >= KM_KV_DTYPE_COUNT ||
      p->mamba_ssm_dtype < 0 || p->mamba_ssm_dtype >= KM_SSM_DTYPE_COUNT) {
    snprintf(err, errlen, "%s: out of range", p->host_budget < 0 ? "--host-budget" : p->h2d_gbps < 0 ? "h2d rate"
                                              : p->kv_dtype < 0 || p->kv_dtype >= KM_KV_DTYPE_COUNT ? "--kv-dtype"
                                                                                                  : "--mamba-ssm-dtype");
    return -1;
  }
  if (p->kv_dtype == KM_KV_DTYPE_TURBOQUANT_3BIT_NC && m->kv_lora_rank > 0) {
    snprintf(err, errlen, "--kv-dtype turboquant_3bit_nc: its per-head K/V layout is not defined for %s's MLA "
             "latent cache (need auto, fp8 or fp8_per_token_head)", m->name);
    return -1;
  }
  return 0;
}

/* What vLLM does with the model as configured before it logs: plan the cache (or fail to), and refuse to
 * start when one max_model_len request does not fit (check_enough_kv_cache_memory). */
static int check_base(const bt_ctx *x, char *err, size_t errlen) {
  const km_kv_plan *b = &x->base;
  if (!b->ok) {
    snprintf(err, errlen, "model %s: %s", x->m->name, b->reason);
    return -1;
  }
  if (b->request_bytes <= x->p->kv_budget) return 0;
  char a[32], n[32], l[32];
  km_bt_fmt_count(x->p->kv_budget, a, sizeof a);
  km_bt_fmt_count(b->request_bytes, n, sizeof n);
  long long fit = km_kv_max_fit_len(x->configured->layer, x->configured->n, &x->cfg);
  km_bt_fmt_count((double)fit, l, sizeof l);
  snprintf(err, errlen, "--kv-budget %s B cannot hold one request of --max-model-len %lld: it needs %s B (vLLM "
           "refuses to start); the longest request that fits is %s tokens", a, x->max_model_len, n, l);
  return -1;
}

/* ---- the caption: the shape, and the two lines vLLM logs */

/* One state layer's bytes per request. */
static double first_state(const km_layout *o) {
  for (int i = 0; i < o->n; i++)
    if (o->layer[i].kind == KM_KV_STATE) return o->layer[i].state_bytes;
  return 0;
}

static void caption_shape(const bt_ctx *x, char *buf, size_t n) {
  const km_model *m = x->m;
  int kv = km_layout_kv_layers(x->configured), local = km_model_count_layers(m, KM_LAYER_LOCAL);
  int states = x->configured->n - kv;
  char budget[32];
  size_t u;
  if (m->kv_lora_rank > 0)
    u = (size_t)snprintf(buf, n, "%s: %d KV layers x (%d latent + %d rope) x %g B", m->name, kv, m->kv_lora_rank,
                         m->qk_rope_head_dim, x->elem);
  else if (kv)
    u = (size_t)snprintf(buf, n, "%s: %d KV layers x %d KV heads x %d head_dim x 2 (K, V) x %g B", m->name, kv,
                         m->num_kv_heads, m->head_dim, x->elem);
  else
    u = (size_t)snprintf(buf, n, "%s: no KV layers", m->name);
  if (u < n && local) u += (size_t)snprintf(buf + u, n - u, ", %d windowed at %d", local, m->sliding_window);
  if (u < n && states) {
    char s[32];
    km_bt_fmt_bytes(first_state(x->configured), s, sizeof s);
    u += (size_t)snprintf(buf + u, n - u, "; %d state layers (%s per request each, SSM state %d B)", states, s,
                          x->st.ssm_bytes);
  }
  km_bt_fmt_count(x->p->kv_budget, budget, sizeof budget);
  if (u < n)
    snprintf(buf + u, n - u, "; KV budget %s B; --kv-dtype %s%s%s", budget, km_kv_dtype_name(x->p->kv_dtype),
             m->config_dtype[0] ? ", config dtype " : "", m->config_dtype);
}

static void add_caption(bt_ctx *x) {
  char line[640], tok[32], len[32], blocks[32], batched[32];
  caption_shape(x, line, sizeof line);
  km_table_add_caption(x->t, line);
  km_bt_fmt_count(x->base.kv_cache_tokens, tok, sizeof tok);
  km_bt_fmt_count((double)x->max_model_len, len, sizeof len);
  snprintf(line, sizeof line, "%s rules: GPU KV cache size: %s tokens; Maximum concurrency for %s tokens per "
           "request: %.2fx", KM_VLLM_RULES, tok, len, x->base.max_concurrency);
  km_table_add_caption(x->t, line);
  km_bt_fmt_count((double)x->base.num_blocks, blocks, sizeof blocks);
  km_bt_fmt_count((double)x->cfg.max_num_batched_tokens, batched, sizeof batched);
  const km_kv_plan *b = &x->base;
  size_t u = (size_t)snprintf(line, sizeof line, "(%s blocks of %lld tokens in %d KV cache group%s of %d layers", blocks,
                              b->min_block_size, b->num_groups, b->num_groups == 1 ? "" : "s", b->group_size);
  if (b->padding_layers && u < sizeof line)
    u += (size_t)snprintf(line + u, sizeof line - u, ", %d padding layers", b->padding_layers);
  if (u < sizeof line) snprintf(line + u, sizeof line - u, "; max_num_batched_tokens %s)", batched);
  km_table_add_caption(x->t, line);
  km_table_add_caption(x->t, "token slots = physical token slots, vLLM's GPU KV cache size; conc (vLLM) = its "
                             "Maximum concurrency for max_model_len requests (a window layer reserves "
                             "cdiv(W - 1 + max_num_batched_tokens, block) + 1 blocks, a state layer one page); "
                             "conc ideal = budget / what a request keeps (whole blocks + state); kept/req = tokens "
                             "a max_model_len request keeps on its most-capped layer; vs cfg = conc (vLLM) / the "
                             "model as configured's");
}

/* ---- assembly */

static int context_init(bt_ctx *x, const km_model *m, const km_bytes_params *p, char *err, size_t errlen) {
  static const double elem_of[KM_KV_DTYPE_COUNT] = {0, 2, 2, 1, 1, 1, 1, 0};
  memset(x, 0, sizeof *x);
  x->m = m;
  x->p = p;
  x->max_model_len = km_bytes_max_model_len(m, p, err, errlen);
  if (x->max_model_len < 0) return -1;
  x->elem = elem_of[p->kv_dtype] > 0 ? elem_of[p->kv_dtype] : m->dtype_bytes;
  x->scales = p->kv_dtype == KM_KV_DTYPE_FP8_PER_TOKEN_HEAD;
  x->st = km_layout_states(m, p->mamba_ssm_dtype);
  x->cfg.block_size = p->block_size;
  x->cfg.max_model_len = x->max_model_len;
  x->cfg.max_num_batched_tokens = p->max_num_batched_tokens;
  x->cfg.available_memory = p->kv_budget;
  return 0;
}

int km_bytes_table_build(const km_model *m, const km_bytes_params *p, km_table **out, char *err, size_t errlen) {
  *out = NULL;
  bt_ctx x;
  if (check_inputs(m, p, err, errlen) || context_init(&x, m, p, err, errlen)) return -1;
  km_layout *layouts = malloc(2 * sizeof *layouts); /* [0] the model as configured, [1] scratch */
  if (!layouts) {
    snprintf(err, errlen, "byte table: out of memory");
    return -1;
  }
  x.configured = &layouts[0];
  x.scratch = &layouts[1];
  km_bt_layout(&x, x.configured, m->kv_lora_rank > 0 ? 0 : m->num_kv_heads);
  km_bt_plan(&x, x.configured, p->kv_budget, &x.base);
  x.cfg.mla = x.configured->mla;
  int rc = check_base(&x, err, errlen);
  if (rc == 0) {
    char title[128];
    snprintf(title, sizeof title, "KV bytes per token: %s", m->name);
    x.t = km_table_new(title, columns, COL_COUNT);
    if (x.t) {
      set_text_modes(x.t);
      add_caption(&x);
      km_bt_rows(&x);
    } else {
      rc = -1;
      snprintf(err, errlen, "byte table: out of memory");
    }
  }
  free(layouts);
  *out = x.t;
  return rc;
}

/* The model as configured laid out in *l and planned by vLLM's rules into x->base. 0 ok; -1 with err. */
static int plan_configured(bt_ctx *x, km_layout *l, const km_model *m, const km_bytes_params *p, char *err,
                           size_t errlen) {
  if (context_init(x, m, p, err, errlen)) return -1;
  x->configured = l;
  km_bt_layout(x, l, m->kv_lora_rank > 0 ? 0 : m->num_kv_heads);
  km_bt_plan(x, l, p->kv_budget, &x->base);
  return 0;
}

int km_bytes_vllm_plan(const km_model *m, const km_bytes_params *p, km_kv_plan *out, char *err, size_t errlen) {
  bt_ctx x;
  km_layout *l = malloc(sizeof *l);
  if (!l) {
    snprintf(err, errlen, "out of host memory");
    return -1;
  }
  int rc = plan_configured(&x, l, m, p, err, errlen);
  if (rc == 0) rc = check_base(&x, err, errlen);
  if (rc == 0) *out = x.base;
  free(l);
  return rc;
}

/* vLLM's view of the model as configured, recomputed (the table holds only rows). */
static cJSON *vllm_json(const km_model *m, const km_bytes_params *p) {
  cJSON *o = cJSON_CreateObject();
  bt_ctx x;
  char err[256];
  km_layout *l = malloc(sizeof *l);
  if (!o || !l || plan_configured(&x, l, m, p, err, sizeof err)) {
    free(l);
    return o;
  }
  const km_kv_plan *b = &x.base;
  cJSON_AddStringToObject(o, "rules", KM_VLLM_RULES);
  cJSON_AddNumberToObject(o, "max_model_len", (double)x.max_model_len);
  cJSON_AddNumberToObject(o, "max_num_batched_tokens", (double)p->max_num_batched_tokens);
  cJSON_AddNumberToObject(o, "block_size", (double)(b->attn_block_size ? b->attn_block_size : p->block_size));
  cJSON_AddNumberToObject(o, "page_size_bytes", b->page_bytes);
  cJSON_AddNumberToObject(o, "kv_cache_groups", b->num_groups);
  cJSON_AddNumberToObject(o, "layers_per_group", b->group_size);
  cJSON_AddNumberToObject(o, "padding_layers", b->padding_layers);
  cJSON_AddNumberToObject(o, "num_blocks", (double)b->num_blocks);
  cJSON_AddNumberToObject(o, "gpu_kv_cache_tokens", b->kv_cache_tokens);
  cJSON_AddNumberToObject(o, "max_concurrency", b->max_concurrency);
  cJSON_AddNumberToObject(o, "kv_dtype_bytes", x.elem);
  cJSON_AddNumberToObject(o, "ssm_state_dtype_bytes", x.st.ssm_bytes);
  free(l);
  return o;
}

cJSON *km_bytes_table_json(const km_model *m, const km_bytes_params *p, const km_table *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "model", km_model_json(m));
  cJSON_AddNumberToObject(o, "kv_budget_bytes", p->kv_budget);
  cJSON_AddNumberToObject(o, "max_model_len", (double)(p->max_model_len > 0 ? p->max_model_len : m->max_model_len));
  cJSON_AddNumberToObject(o, "block_size", (double)p->block_size);
  cJSON_AddNumberToObject(o, "host_budget_bytes", p->host_budget);
  cJSON_AddStringToObject(o, "kv_dtype", km_kv_dtype_name(p->kv_dtype));
  cJSON_AddStringToObject(o, "mamba_ssm_dtype", km_ssm_dtype_name(p->mamba_ssm_dtype));
  if (p->h2d_gbps > 0) cJSON_AddNumberToObject(o, "h2d_gbps", p->h2d_gbps);
  cJSON_AddItemToObject(o, "vllm", vllm_json(m, p));
  cJSON_AddItemToObject(o, "caption", km_table_caption_json(t));
  cJSON_AddItemToObject(o, "rows", km_table_rows_json(t));
  return o;
}
