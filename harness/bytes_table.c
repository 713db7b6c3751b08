/* The per-token byte table: each of the twelve techniques applied to one model shape, as a per-layer
 * layout of stored bytes and per-sequence caps, then sized against the KV budget the way vLLM does
 * (whole blocks of block_size tokens). Each row keeps its own unit; nothing is ranked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"

/* The source rig (seed/SUMMARY.md): vLLM's 54.94 GiB KV cache for Qwen3-8B, 40,960-token requests. */
#define KM_DEFAULT_KV_BUDGET 58987118592.0
enum { KM_DEFAULT_MAX_MODEL_LEN = 40960, KM_DEFAULT_BLOCK_SIZE = 16 };

/* The techniques' own defaults (DESIGN.md "The per-token byte table"). */
enum {
  SHARE_LAYERS = 2,          /* cross-layer sharing: layers per stored KV */
  MLA_RANK = 512,            /* MLA latent for models without one: DeepSeek-V3's */
  MLA_ROPE = 64,
  DEFAULT_WINDOW = 4096,     /* sliding window for models without one */
  LOCAL_PERIOD = 6,          /* 5 local : 1 global, Gemma 3's pattern */
  EVICT_KEEP = 2048,         /* tokens kept per sequence by eviction */
  COMPRESS_RATIO = 4,        /* tokens per stored entry, compressed attention */
  QUEST_PAGE = 16,           /* tokens per page of min/max metadata */
  QUEST_BUDGET = 2048,       /* tokens read per step */
  TQ_BOUNDARY = 2,           /* TurboQuant keeps this many first and last KV layers unquantized */
  INT3_GROUP = 32,           /* uniform 3-bit: elements per fp16 scale + zero */
  FP8_SCALE_BYTES = 4,       /* one fp32 scale per token per head, for K and for V */
  /* Mamba-2 state for models without Mamba layers (Nemotron-H's values; d_inner = 2 x hidden) */
  MAMBA_EXPAND = 2, MAMBA_D_STATE = 128, MAMBA_D_CONV = 4, MAMBA_N_GROUPS = 8,
};

static const char *const MECH_STORE = "store fewer bytes";
static const char *const MECH_COMPUTE = "compute less";
static const char *const MECH_READ = "read less";
static const char *const MECH_MOVE = "move bytes";

enum {
  COL_TECH, COL_MECH, COL_VARIANT, COL_BYTES, COL_READ, COL_CAP, COL_TOKENS, COL_CONC, COL_X, COL_NOTE, COL_COUNT
};

static const km_column columns[COL_COUNT] = {
    {"technique", "technique", 0},
    {"mechanism", "mechanism", 0},
    {"variant", "variant", 0},
    {"bytes_per_token", "B/token stored", 1},
    {"read_per_step", "B read/step/ctx token", 1},
    {"per_seq_cap", "per-seq cap or state", 0},
    {"capacity_tokens", "capacity tokens", 1},
    {"max_concurrency", "max concurrency", 1},
    {"capacity_x", "capacity x", 1},
    {"note", "note", 0},
};

void km_bytes_params_default(km_bytes_params *p) {
  memset(p, 0, sizeof *p);
  p->kv_budget = KM_DEFAULT_KV_BUDGET;
  p->max_model_len = KM_DEFAULT_MAX_MODEL_LEN;
  p->block_size = KM_DEFAULT_BLOCK_SIZE;
}

/* ---- layouts: what each layer stores per token and how many tokens per sequence it keeps */

typedef struct kv_layout {
  int n;                               /* layers */
  double bytes[KM_MODEL_MAX_LAYERS];   /* bytes per stored entry of layer l; 0: no KV */
  long long cap[KM_MODEL_MAX_LAYERS];  /* tokens kept per sequence by layer l; 0: all */
  double state;                        /* bytes per sequence whatever its length (Mamba state) */
  int tokens_per_entry;                /* compressed attention: tokens sharing one stored entry */
} kv_layout;

typedef struct kv_eval {
  double bytes_per_token;   /* stored per token with every KV layer holding it */
  double read_per_step;     /* bytes read per decode step at max_model_len, per context token */
  double pool_tokens;       /* tokens in the block pool (NAN: no KV, unbounded) */
  double concurrency;       /* sequences of max_model_len */
  double capacity_tokens;   /* context tokens served: the pool, or concurrency x max_model_len when capped */
  double footprint;         /* bytes one sequence of max_model_len takes (whole blocks + state) */
  int capped;               /* a per-sequence cap or state shapes concurrency */
} kv_eval;

typedef struct bt_ctx {
  const km_model *m;
  const km_bytes_params *p;
  km_table *t;
  int b;           /* KV element bytes */
  kv_eval base;    /* the model as configured */
  kv_layout *scratch; /* one layout reused by every row (a layout is ~24 KiB) */
  char *err;
  size_t errlen;
} bt_ctx;

static int is_kv_kind(km_layer_kind k) { return k == KM_LAYER_GLOBAL || k == KM_LAYER_LOCAL; }
static long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
static int is_mla(const km_model *m) { return m->kv_lora_rank > 0; }

static double mamba_state(double d_inner, int d_state, int d_conv, int groups, int bytes) {
  double ssm = (double)d_inner * d_state;
  double conv = (double)(d_conv - 1) * ((double)d_inner + 2.0 * groups * d_state);
  return (ssm + conv) * bytes;
}

static double model_mamba_state(const km_model *m) {
  return mamba_state(m->mamba_d_inner, m->mamba_d_state, m->mamba_d_conv, m->mamba_n_groups, m->dtype_bytes);
}

/* K+V of H heads, or the MLA latent, per token per layer. */
static double heads_bytes(const km_model *m, int heads, double b) { return 2.0 * heads * m->head_dim * b; }
static double native_bytes(const km_model *m, double b) {
  return is_mla(m) ? ((double)m->kv_lora_rank + m->qk_rope_head_dim) * b : heads_bytes(m, m->num_kv_heads, b);
}

/* The model's own layers with per_layer bytes on each attention layer, its window, its Mamba state. */
static void layout_model(kv_layout *o, const km_model *m, double per_layer) {
  memset(o, 0, sizeof *o);
  o->n = m->num_layers;
  o->tokens_per_entry = 1;
  for (int l = 0; l < o->n; l++) {
    km_layer_kind k = m->layer_kind[l];
    o->bytes[l] = is_kv_kind(k) ? per_layer : 0;
    o->cap[l] = k == KM_LAYER_LOCAL ? m->sliding_window : 0;
    if (k == KM_LAYER_MAMBA) o->state += model_mamba_state(m);
  }
}

static int kv_layers(const kv_layout *o) {
  int n = 0;
  for (int l = 0; l < o->n; l++) n += o->bytes[l] > 0;
  return n;
}

/* Cap every KV layer whose index among KV layers has (i % period != period - 1) at `cap` tokens;
 * period 1 caps them all. An existing smaller cap stays. */
static void layout_cap(kv_layout *o, long long cap, int period) {
  int i = 0;
  for (int l = 0; l < o->n; l++) {
    if (o->bytes[l] <= 0) continue;
    int keep_full = period > 1 && i % period == period - 1;
    i++;
    if (keep_full) continue;
    if (o->cap[l] == 0 || o->cap[l] > cap) o->cap[l] = cap;
  }
}

static void layout_uncap(kv_layout *o) {
  for (int l = 0; l < o->n; l++) o->cap[l] = 0;
}

/* Keep KV on every `every`-th KV layer of each kind (windowed and full counted apart, so a local layer
 * never stands in for a global one); the others store nothing and gain `state_each` bytes of
 * per-sequence state (0 for cross-layer sharing, Mamba state for hybrids). */
static void layout_thin(kv_layout *o, int every, double state_each) {
  int seen[2] = {0, 0};
  for (int l = 0; l < o->n; l++) {
    if (o->bytes[l] <= 0) continue;
    if (seen[o->cap[l] > 0]++ % every == 0) continue;
    o->bytes[l] = 0;
    o->cap[l] = 0;
    o->state += state_each;
  }
}

static double pool_bytes_of(const kv_layout *o, double budget, long long bs, double *entries) {
  double entry = 0;
  for (int l = 0; l < o->n; l++) entry += o->bytes[l];
  *entries = entry > 0 ? floor(budget / ((double)bs * entry)) * (double)bs : NAN;
  return entry;
}

static kv_eval layout_eval(const kv_layout *o, double budget, const km_bytes_params *p) {
  kv_eval e = {0};
  long long len = p->max_model_len, bs = p->block_size, c = o->tokens_per_entry;
  double entries, entry = pool_bytes_of(o, budget, bs, &entries);
  double foot = o->state, read = o->state;
  e.capped = o->state > 0;
  for (int l = 0; l < o->n; l++) {
    if (o->bytes[l] <= 0) continue;
    long long held = (o->cap[l] > 0 && o->cap[l] < len) ? o->cap[l] : len;
    e.capped |= held < len;
    /* vLLM allocates whole blocks: a sequence holding `held` tokens takes ceil(held / bs) blocks */
    foot += o->bytes[l] * (double)(ceil_div(ceil_div(held, c), bs) * bs);
    read += o->bytes[l] * (double)held / (double)c;
  }
  e.bytes_per_token = entry / (double)c;
  e.read_per_step = read / (double)len;
  e.pool_tokens = entries * (double)c;
  double pool = entry > 0 ? entries * entry : budget;
  e.footprint = foot;
  e.concurrency = foot > 0 ? pool / foot : NAN;
  e.capacity_tokens = e.pool_tokens;
  if (e.capped && entry > 0) e.capacity_tokens = (double)floorl((long double)pool * len / foot);
  return e;
}

/* ---- text helpers */

static void fmt_count(double v, char *buf, size_t len) {
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

static void fmt_bytes(double v, char *buf, size_t len) {
  if (v >= 1024.0 * 1024 * 1024) snprintf(buf, len, "%.2f GiB", v / (1024.0 * 1024 * 1024));
  else if (v >= 1024.0 * 1024) snprintf(buf, len, "%.1f MiB", v / (1024.0 * 1024));
  else if (v >= 1024.0) snprintf(buf, len, "%.1f KiB", v / 1024.0);
  else snprintf(buf, len, "%.0f B", v);
}

/* "1,024 tok/seq on 52 of 62 KV layers; state 49.4 MiB/seq", or "-". */
static void describe_cap(const kv_layout *o, long long len, char *buf, size_t n) {
  long long cap = 0;
  int capped = 0, kv = kv_layers(o);
  for (int l = 0; l < o->n; l++) {
    if (o->bytes[l] <= 0 || o->cap[l] <= 0 || o->cap[l] >= len) continue;
    capped++;
    if (o->cap[l] > cap) cap = o->cap[l];
  }
  char a[48] = "", s[48] = "";
  size_t used = 0;
  buf[0] = '\0';
  if (capped) {
    fmt_count((double)cap, a, sizeof a);
    used = (size_t)snprintf(buf, n, "%s tok/seq on %d of %d KV layers", a, capped, kv);
  }
  if (o->state > 0 && used < n) {
    fmt_bytes(o->state, s, sizeof s);
    snprintf(buf + used, n - used, "%sstate %s/seq", capped ? "; " : "", s);
  }
  if (!buf[0]) snprintf(buf, n, "-");
}

/* How capped rows are sized; appended to their note so the table explains itself. */
static const char *const CAPPED_RULE =
    "concurrency = pool bytes / per-seq footprint (min(cap, max_model_len) tokens per capped layer, "
    "max_model_len per other layer, + state); capacity tokens = concurrency x max_model_len";

/* ---- rows */

static size_t row_start(bt_ctx *x, const char *tech, const char *mech, const char *variant) {
  size_t r = km_table_add_row(x->t, mech);
  km_table_set_text(x->t, r, COL_TECH, tech);
  km_table_set_text(x->t, r, COL_MECH, mech);
  km_table_set_text(x->t, r, COL_VARIANT, variant);
  return r;
}

static void set_figures(bt_ctx *x, size_t r, const kv_eval *e) {
  double whole = floor(e->bytes_per_token);
  km_table_set_number(x->t, r, COL_BYTES, e->bytes_per_token, whole == e->bytes_per_token ? 0 : 1);
  km_table_set_number(x->t, r, COL_READ, e->read_per_step, floor(e->read_per_step) == e->read_per_step ? 0 : 1);
  km_table_set_integer(x->t, r, COL_TOKENS, e->capacity_tokens);
  km_table_set_number(x->t, r, COL_CONC, e->concurrency, 2);
  km_table_set_number(x->t, r, COL_X, e->capacity_tokens / x->base.capacity_tokens, 2);
}

/* A row with numbers; the note gets the capped-concurrency rule appended when it applies. */
static void emit(bt_ctx *x, const char *tech, const char *mech, const char *variant, const kv_eval *e,
                 const char *cap, const char *note) {
  size_t r = row_start(x, tech, mech, variant);
  set_figures(x, r, e);
  km_table_set_text(x->t, r, COL_CAP, cap);
  char buf[1024];
  snprintf(buf, sizeof buf, "%s%s%s", note, e->capped ? "; " : "", e->capped ? CAPPED_RULE : "");
  km_table_set_text(x->t, r, COL_NOTE, buf);
}

static void emit_layout(bt_ctx *x, const char *tech, const char *mech, const char *variant, const kv_layout *o,
                        const char *note) {
  char cap[160];
  kv_eval e = layout_eval(o, x->p->kv_budget, x->p);
  describe_cap(o, x->p->max_model_len, cap, sizeof cap);
  emit(x, tech, mech, variant, &e, cap, note);
}

/* A technique this shape makes meaningless: the row is there, its numbers are not. */
static void emit_na(bt_ctx *x, const char *tech, const char *mech, const char *variant, const char *note) {
  size_t r = row_start(x, tech, mech, variant);
  km_table_set_text(x->t, r, COL_CAP, "-");
  km_table_set_text(x->t, r, COL_NOTE, note);
}

static void shape_note(const bt_ctx *x, char *buf, size_t n) {
  const km_model *m = x->m;
  int counts[KM_LAYER_KIND_COUNT] = {0};
  for (int l = 0; l < m->num_layers; l++) counts[m->layer_kind[l]]++;
  int kv = counts[KM_LAYER_GLOBAL] + counts[KM_LAYER_LOCAL];
  size_t u;
  if (is_mla(m))
    u = (size_t)snprintf(buf, n, "%s: %d KV layers x (%d latent + %d rope) x %d B", m->name, kv, m->kv_lora_rank,
                         m->qk_rope_head_dim, x->b);
  else
    u = (size_t)snprintf(buf, n, "%s: %d KV layers x %d KV heads x %d head_dim x 2 (K, V) x %d B", m->name, kv,
                         m->num_kv_heads, m->head_dim, x->b);
  if (u < n && counts[KM_LAYER_LOCAL])
    u += (size_t)snprintf(buf + u, n - u, "; %d of them windowed at %d tokens", counts[KM_LAYER_LOCAL],
                          m->sliding_window);
  if (u < n && (counts[KM_LAYER_MAMBA] || counts[KM_LAYER_MLP]))
    u += (size_t)snprintf(buf + u, n - u, "; %d Mamba and %d MLP layers store no KV", counts[KM_LAYER_MAMBA],
                          counts[KM_LAYER_MLP]);
  if (u < n && m->max_position_embeddings > 0 && x->p->max_model_len > m->max_position_embeddings)
    snprintf(buf + u, n - u, "; max_model_len exceeds the model's max_position_embeddings %d",
             m->max_position_embeddings);
}

static void rows_gqa(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  char note[512];
  shape_note(x, note, sizeof note);
  layout_model(o, m, native_bytes(m, x->b));
  emit_layout(x, "gqa", MECH_STORE, "as_configured", o, note);

  layout_model(o, m, heads_bytes(m, m->num_attention_heads, x->b));
  if (is_mla(m))
    snprintf(note, sizeof note, "MLA decompressed: %d heads x (K+V)/2 = %d wide", m->num_attention_heads, m->head_dim);
  else if (m->num_kv_heads == m->num_attention_heads)
    snprintf(note, sizeof note, "the model is MHA already (%d KV heads)", m->num_kv_heads);
  else
    snprintf(note, sizeof note, "%d KV heads, one per query head: the %d:1 grouping undone", m->num_attention_heads,
             m->num_attention_heads / m->num_kv_heads);
  emit_layout(x, "gqa", MECH_STORE, "mha", o, note);

  layout_model(o, m, heads_bytes(m, 1, x->b));
  snprintf(note, sizeof note, m->num_kv_heads == 1 && !is_mla(m) ? "the model is MQA already"
                                                                   : "1 KV head shared by all %d query heads",
           m->num_attention_heads);
  emit_layout(x, "gqa", MECH_STORE, "mqa", o, note);
}

static void rows_cross_layer(bt_ctx *x) {
  kv_layout *o = x->scratch;
  char note[256], variant[32];
  layout_model(o, x->m, native_bytes(x->m, x->b));
  int kv = kv_layers(o);
  layout_thin(o, SHARE_LAYERS, 0);
  snprintf(variant, sizeof variant, "share_%d", SHARE_LAYERS);
  snprintf(note, sizeof note, "%d of %d KV layers store KV (the first of every %d of each kind), the others reuse "
           "it (needs a model trained for it)", kv_layers(o), kv, SHARE_LAYERS);
  if (kv == 0) emit_na(x, "cross_layer", MECH_STORE, variant, "no KV layers: nothing to share");
  else emit_layout(x, "cross_layer", MECH_STORE, variant, o, note);
}

static void rows_mla(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  char note[256], variant[32];
  layout_model(o, m, native_bytes(m, x->b));
  int has_state = o->state > 0;
  if (kv_layers(o) == 0) {
    emit_na(x, "mla", MECH_STORE, "latent", "no attention layers: MLA is meaningless for Mamba/MLP layers");
  } else if (is_mla(m)) {
    snprintf(note, sizeof note, "the model's own latent: %d + %d per KV layer; per-head K/V rebuilt on the fly "
             "(decompressed: gqa/mha)", m->kv_lora_rank, m->qk_rope_head_dim);
    emit_layout(x, "mla", MECH_STORE, "native", o, note);
  } else {
    layout_model(o, m, (double)(MLA_RANK + MLA_ROPE) * x->b);
    snprintf(variant, sizeof variant, "latent_%d_%d", MLA_RANK, MLA_ROPE);
    snprintf(note, sizeof note, "hypothetical: the model has no MLA projections; rank %d + rope %d as DeepSeek-V3%s",
             MLA_RANK, MLA_ROPE, has_state ? "; Mamba layers keep their state (MLA does not apply to them)" : "");
    emit_layout(x, "mla", MECH_STORE, variant, o, note);
  }
}

static void window_row(bt_ctx *x, kv_layout *o, long long w, int period, const char *variant, int as_configured) {
  char note[384];
  const km_model *m = x->m;
  layout_model(o, m, native_bytes(m, x->b));
  layout_uncap(o);
  if (w > 0) layout_cap(o, w, period);
  size_t u = (size_t)snprintf(note, sizeof note, "%s", as_configured ? "= the model as configured" : "");
  if (w == 0 && !as_configured) snprintf(note, sizeof note, "the model's window removed: every layer full attention");
  if (w > 0 && !as_configured && period > 1)
    u += (size_t)snprintf(note + u, sizeof note - u, "%d local : 1 global per %d KV layers", period - 1, period);
  if (w > 0 && !as_configured && period <= 1) u += (size_t)snprintf(note + u, sizeof note - u, "every KV layer local");
  if (w >= x->p->max_model_len && u < sizeof note)
    snprintf(note + u, sizeof note - u, "%swindow %lld >= max_model_len %lld: no saving", u ? "; " : "", w,
             x->p->max_model_len);
  emit_layout(x, "sliding_window", MECH_STORE, variant, o, note);
}

/* Whether the model's own layers are exactly `period`-patterned windows (period 1: all local). */
static int model_has_pattern(const km_model *m, int period) {
  int i = 0, any = 0;
  for (int l = 0; l < m->num_layers; l++) {
    km_layer_kind k = m->layer_kind[l];
    if (!is_kv_kind(k)) continue;
    int want_local = period <= 1 || i % period != period - 1;
    i++;
    any = 1;
    if ((k == KM_LAYER_LOCAL) != want_local) return 0;
  }
  return any && m->sliding_window > 0;
}

static void rows_window(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  long long w = m->sliding_window > 0 ? m->sliding_window : DEFAULT_WINDOW;
  char variant[48];
  layout_model(o, m, native_bytes(m, x->b));
  if (kv_layers(o) == 0) {
    emit_na(x, "sliding_window", MECH_STORE, "none", "no attention layers: no window to apply");
    return;
  }
  int has_local = 0;
  for (int l = 0; l < m->num_layers; l++) has_local |= m->layer_kind[l] == KM_LAYER_LOCAL;
  window_row(x, o, 0, 1, "none", !has_local);
  snprintf(variant, sizeof variant, "w%lld_all", w);
  window_row(x, o, w, 1, variant, model_has_pattern(m, 1));
  snprintf(variant, sizeof variant, "w%lld_%dto1", w, LOCAL_PERIOD - 1);
  window_row(x, o, w, LOCAL_PERIOD, variant, model_has_pattern(m, LOCAL_PERIOD));
}

static void rows_mamba(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  char note[320], variant[32], st[32];
  layout_model(o, m, native_bytes(m, x->b));
  if (o->state > 0) {
    fmt_bytes(model_mamba_state(m), st, sizeof st);
    snprintf(note, sizeof note, "= the model as configured; Mamba state %s per layer per sequence "
             "(SSM d_inner x d_state + conv (d_conv-1) x (d_inner + 2 groups d_state), %d B)", st, m->dtype_bytes);
    emit_layout(x, "hybrid_mamba", MECH_STORE, "as_configured", o, note);
    for (int l = 0; l < o->n; l++)
      if (m->layer_kind[l] == KM_LAYER_MAMBA) o->bytes[l] = native_bytes(m, x->b);
    o->state = 0;
    emit_layout(x, "hybrid_mamba", MECH_STORE, "all_attention", o,
                "hypothetical: every Mamba layer replaced by attention (MLP layers stay KV-free)");
    return;
  }
  double hidden = m->hidden_size > 0 ? m->hidden_size : (double)m->num_attention_heads * m->head_dim;
  double state = mamba_state(MAMBA_EXPAND * hidden, MAMBA_D_STATE, MAMBA_D_CONV, MAMBA_N_GROUPS, m->dtype_bytes);
  fmt_bytes(state, st, sizeof st);
  static const int every[] = {4, 8};
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++) {
    layout_model(o, m, native_bytes(m, x->b));
    layout_thin(o, every[i], state);
    snprintf(variant, sizeof variant, "attn_1_in_%d", every[i]);
    snprintf(note, sizeof note, "hypothetical: %d KV layers kept, the rest Mamba-2 (d_inner %.0f, d_state %d, d_conv %d, "
             "%d groups: %s state per layer per sequence)", kv_layers(o), MAMBA_EXPAND * hidden, MAMBA_D_STATE,
             MAMBA_D_CONV, MAMBA_N_GROUPS, st);
    emit_layout(x, "hybrid_mamba", MECH_STORE, variant, o, note);
  }
}

/* ---- KV quantization */

static double int3_vector(long long n) { /* codes, then an fp16 scale + fp16 zero point per group */
  return (double)ceil_div(3LL * n, 8) + 4.0 * (double)ceil_div(n, INT3_GROUP);
}

/* turboquant_3bit_nc: K codes + fp16 norm, V codes + fp16 scale and zero; the slot is rounded to even. */
static double tq_slot(int d) {
  long long codes = ceil_div(3LL * d, 8), slot = (codes + 2) + (codes + 4);
  return (double)(slot + (slot & 1));
}

static void row_tq(bt_ctx *x, kv_layout *o, int boundary, const char *variant) {
  const km_model *m = x->m;
  char note[384];
  layout_model(o, m, (double)m->num_kv_heads * tq_slot(m->head_dim));
  int kv = kv_layers(o), i = 0;
  for (int l = 0; l < o->n && boundary; l++) {
    if (o->bytes[l] <= 0) continue;
    if (i < TQ_BOUNDARY || i >= kv - TQ_BOUNDARY) o->bytes[l] = native_bytes(m, x->b);
    i++;
  }
  size_t u = (size_t)snprintf(note, sizeof note, "K: ceil(3x%d/8)+2 B, V: ceil(3x%d/8)+4 B per head, slot %.0f B",
                              m->head_dim, m->head_dim, tq_slot(m->head_dim));
  if (boundary)
    u += (size_t)snprintf(note + u, sizeof note - u, "; first %d and last %d KV layers kept at %d B", TQ_BOUNDARY,
                          TQ_BOUNDARY, x->b);
  if (boundary && kv <= 2 * TQ_BOUNDARY && u < sizeof note)
    snprintf(note + u, sizeof note - u, "; all %d KV layers are boundary layers: nothing quantized", kv);
  emit_layout(x, "kv_quant", MECH_STORE, variant, o, note);
}

static void rows_quant(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  int heads = is_mla(m) ? 1 : m->num_kv_heads;
  long long vec = is_mla(m) ? (long long)m->kv_lora_rank + m->qk_rope_head_dim : m->head_dim;
  int parts = is_mla(m) ? 1 : 2; /* K and V, or the one latent */
  char note[256];
  layout_model(o, m, native_bytes(m, 1));
  emit_layout(x, "kv_quant", MECH_STORE, "fp8_e4m3", o, "1 B per element, one scale per tensor");
  layout_model(o, m, native_bytes(m, 1) + (double)parts * heads * FP8_SCALE_BYTES);
  snprintf(note, sizeof note, "1 B per element + a %d B scale per token per head for %s", FP8_SCALE_BYTES,
           is_mla(m) ? "the latent" : "K and for V");
  emit_layout(x, "kv_quant", MECH_STORE, "fp8_e4m3_per_token_head", o, note);
  layout_model(o, m, (double)parts * heads * int3_vector(vec));
  snprintf(note, sizeof note, "uniform asymmetric, group %d: ceil(3x%lld/8) + 4 x ceil(%lld/%d) = %.0f B per vector",
           INT3_GROUP, vec, vec, INT3_GROUP, int3_vector(vec));
  emit_layout(x, "kv_quant", MECH_STORE, "int3_g32", o, note);
  if (is_mla(m)) {
    emit_na(x, "kv_quant", MECH_STORE, "turboquant_3bit_nc",
            "per-head K/V layout: not defined for an MLA latent cache");
  } else {
    row_tq(x, o, 1, "turboquant_3bit_nc");
    row_tq(x, o, 0, "turboquant_3bit_nc_all_layers");
  }
}

static void rows_store_rest(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  char note[256], variant[32];
  layout_model(o, m, native_bytes(m, x->b));
  layout_cap(o, EVICT_KEEP, 1);
  snprintf(variant, sizeof variant, "keep_%d", EVICT_KEEP);
  size_t u = (size_t)snprintf(note, sizeof note, "keeps %d high-scoring tokens per sequence per layer "
                              "(H2O/SnapKV style); accuracy cost not modelled", EVICT_KEEP);
  if (EVICT_KEEP >= x->p->max_model_len)
    snprintf(note + u, sizeof note - u, "; keep %d >= max_model_len %lld: nothing evicted", EVICT_KEEP,
             x->p->max_model_len);
  if (kv_layers(o) == 0) emit_na(x, "eviction", MECH_STORE, variant, "no KV layers: nothing to evict");
  else emit_layout(x, "eviction", MECH_STORE, variant, o, note);

  layout_model(o, m, native_bytes(m, x->b));
  o->tokens_per_entry = COMPRESS_RATIO;
  snprintf(variant, sizeof variant, "ratio_%d", COMPRESS_RATIO);
  snprintf(note, sizeof note, "1 stored entry per %d tokens (pooled/compressed KV); quality cost not modelled",
           COMPRESS_RATIO);
  if (kv_layers(o) == 0) emit_na(x, "compressed", MECH_STORE, variant, "no KV layers: nothing to compress");
  else emit_layout(x, "compressed", MECH_STORE, variant, o, note);
}

/* ---- compute less, read less, move bytes */

static void rows_prefix(bt_ctx *x, const kv_layout *base) {
  char note[320], tok[32];
  fmt_count(x->base.capacity_tokens, tok, sizeof tok);
  snprintf(note, sizeof note, "bytes unchanged; prefill compute saved = shared / total prompt tokens (16,384 of "
           "16,640 saves 98.5%%); reuse holds only while the working set fits the %s-token cache", tok);
  emit_layout(x, "prefix_reuse", MECH_COMPUTE, "shared_prefix", base, note);
}

/* Quest: min and max of K per page per layer are stored too; a step reads all of them to score pages,
 * then K and V of the top QUEST_BUDGET tokens. */
static void rows_sparse(bt_ctx *x) {
  const km_model *m = x->m;
  kv_layout *o = x->scratch;
  char note[384], variant[48];
  double k_width = is_mla(m) ? (double)m->kv_lora_rank + m->qk_rope_head_dim : (double)m->num_kv_heads * m->head_dim;
  double meta = 2.0 * k_width * x->b / QUEST_PAGE;
  long long len = x->p->max_model_len;
  layout_model(o, m, native_bytes(m, x->b) + meta);
  kv_eval e = layout_eval(o, x->p->kv_budget, x->p);
  double read = 0;
  for (int l = 0; l < o->n; l++) {
    if (o->bytes[l] <= 0) continue;
    long long held = (o->cap[l] > 0 && o->cap[l] < len) ? o->cap[l] : len;
    read += native_bytes(m, x->b) * (double)(held < QUEST_BUDGET ? held : QUEST_BUDGET) + meta * (double)held;
  }
  e.read_per_step = (read + o->state) / (double)len;
  snprintf(variant, sizeof variant, "quest_p%d_k%d", QUEST_PAGE, QUEST_BUDGET);
  size_t u = (size_t)snprintf(note, sizeof note, "stores min+max of K per %d-token page (+%.6g B/token); a step "
                              "reads all metadata, then K+V of the top %d tokens", QUEST_PAGE, meta * kv_layers(o),
                              QUEST_BUDGET);
  if (QUEST_BUDGET >= len) snprintf(note + u, sizeof note - u, "; budget >= max_model_len: reads every page");
  char cap[160];
  describe_cap(o, len, cap, sizeof cap);
  if (kv_layers(o) == 0) emit_na(x, "sparse_read", MECH_READ, variant, "no KV layers: nothing to read sparsely");
  else emit(x, "sparse_read", MECH_READ, variant, &e, cap, note);
}

static void rows_paged(bt_ctx *x, const kv_layout *base) {
  char cap[96], note[320], variant[32], waste[32];
  long long bs = x->p->block_size;
  fmt_bytes((double)(bs - 1) * x->base.bytes_per_token, waste, sizeof waste);
  snprintf(variant, sizeof variant, "block_%lld", bs);
  snprintf(cap, sizeof cap, "waste <= %lld tok/seq (%s)", bs - 1, waste);
  emit(x, "paged", MECH_MOVE, variant, &x->base, cap,
       "bytes unchanged; blocks let sequences grow without reserving max_model_len (block size moved throughput "
       "< 1% in the source article)");
  /* Without paging each sequence reserves its whole max_model_len up front: whole sequences only. */
  kv_eval e = layout_eval(base, x->p->kv_budget, x->p);
  e.concurrency = floor(x->p->kv_budget / e.footprint);
  e.capacity_tokens = e.concurrency * (double)x->p->max_model_len;
  e.capped = 0;
  fmt_bytes(e.footprint, waste, sizeof waste);
  snprintf(note, sizeof note, "no paging: each sequence reserves its max_model_len footprint (%s) up front, so "
           "concurrency = floor(budget / footprint); short requests waste the rest", waste);
  emit(x, "paged", MECH_MOVE, "contiguous", &e, "reserves max_model_len/seq", note);
}

static void rows_offload(bt_ctx *x, const kv_layout *base) {
  const km_bytes_params *p = x->p;
  char note[384], reload[160], host[32];
  if (p->h2d_gbps > 0)
    snprintf(reload, sizeof reload, "reload %.2f us per token (%.0f B at a measured %.1f GB/s H2D)",
             x->base.bytes_per_token / (p->h2d_gbps * 1e3), x->base.bytes_per_token, p->h2d_gbps);
  else
    snprintf(reload, sizeof reload, "reload cost per token: not measured (run offload/ benchmarks)");
  if (p->host_budget <= 0) {
    snprintf(note, sizeof note, "--host-budget not given: no host capacity added; %s", reload);
    emit(x, "offload", MECH_MOVE, "no_host_budget", &x->base, "-", note);
    return;
  }
  kv_eval e = layout_eval(base, p->kv_budget + p->host_budget, p);
  fmt_bytes(p->host_budget, host, sizeof host);
  snprintf(note, sizeof note, "GPU bytes unchanged; %s of host memory pooled with the GPU budget (tokens wait "
           "there, attention reads them on the GPU); %s", host, reload);
  emit(x, "offload", MECH_MOVE, "host_budget", &e, "-", note);
}

/* ---- validation and assembly */

static int check_inputs(const km_model *m, const km_bytes_params *p, char *err, size_t errlen) {
  if (m->num_layers <= 0 || m->num_layers > KM_MODEL_MAX_LAYERS || m->num_attention_heads <= 0 ||
      m->num_kv_heads <= 0 || m->head_dim <= 0 || m->dtype_bytes <= 0) {
    snprintf(err, errlen, "model %s: layers, heads, KV heads, head_dim and dtype must be positive", m->name);
    return -1;
  }
  if (!(p->kv_budget > 0) || !isfinite(p->kv_budget)) {
    snprintf(err, errlen, "--kv-budget %g: need a positive number of bytes", p->kv_budget);
    return -1;
  }
  if (p->max_model_len <= 0 || p->block_size <= 0) {
    snprintf(err, errlen, "--%s %lld: need a positive integer", p->max_model_len <= 0 ? "max-model-len" : "block-size",
             p->max_model_len <= 0 ? p->max_model_len : p->block_size);
    return -1;
  }
  if (p->host_budget < 0 || p->kv_dtype_bytes < 0 || p->kv_dtype_bytes > 8 || p->h2d_gbps < 0) {
    snprintf(err, errlen, "%s: must not be negative",
             p->host_budget < 0 ? "--host-budget" : p->kv_dtype_bytes < 0 ? "--kv-dtype" : "h2d rate");
    return -1;
  }
  return 0;
}

static int check_block(const bt_ctx *x, char *err, size_t errlen) {
  double block = (double)x->p->block_size * x->base.bytes_per_token;
  if (x->base.bytes_per_token > 0 && x->p->kv_budget < block) {
    char a[32], b[32], c[32];
    fmt_count(x->p->kv_budget, a, sizeof a);
    fmt_count(x->base.bytes_per_token, b, sizeof b);
    fmt_count(block, c, sizeof c);
    snprintf(err, errlen, "--kv-budget %s B is below one block (%lld tokens x %s B/token = %s B)", a,
             x->p->block_size, b, c);
    return -1;
  }
  return 0;
}

static void build_rows(bt_ctx *x, const kv_layout *base) {
  rows_gqa(x);
  rows_cross_layer(x);
  rows_mla(x);
  rows_window(x);
  rows_mamba(x);
  rows_quant(x);
  rows_store_rest(x);
  rows_prefix(x, base);
  rows_sparse(x);
  rows_paged(x, base);
  rows_offload(x, base);
}

int km_bytes_table_build(const km_model *m, const km_bytes_params *p, km_table **out, char *err, size_t errlen) {
  *out = NULL;
  if (check_inputs(m, p, err, errlen)) return -1;
  bt_ctx x = {.m = m, .p = p, .b = p->kv_dtype_bytes > 0 ? p->kv_dtype_bytes : m->dtype_bytes, .err = err,
              .errlen = errlen};
  kv_layout *layouts = malloc(2 * sizeof *layouts); /* [0] the model as configured, [1] scratch */
  if (!layouts) {
    snprintf(err, errlen, "byte table: out of memory");
    return -1;
  }
  x.scratch = &layouts[1];
  layout_model(&layouts[0], m, native_bytes(m, x.b));
  x.base = layout_eval(&layouts[0], p->kv_budget, p);
  int rc = check_block(&x, err, errlen);
  if (rc == 0) {
    char title[128];
    snprintf(title, sizeof title, "KV bytes per token: %s", m->name);
    x.t = km_table_new(title, columns, COL_COUNT);
    if (x.t) {
      build_rows(&x, &layouts[0]);
    } else {
      rc = -1;
      snprintf(err, errlen, "byte table: out of memory");
    }
  }
  free(layouts);
  *out = x.t;
  return rc;
}

cJSON *km_bytes_table_json(const km_model *m, const km_bytes_params *p, const km_table *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "model", km_model_json(m));
  cJSON_AddNumberToObject(o, "kv_budget_bytes", p->kv_budget);
  cJSON_AddNumberToObject(o, "max_model_len", (double)p->max_model_len);
  cJSON_AddNumberToObject(o, "block_size", (double)p->block_size);
  cJSON_AddNumberToObject(o, "host_budget_bytes", p->host_budget);
  cJSON_AddNumberToObject(o, "kv_dtype_bytes", p->kv_dtype_bytes > 0 ? p->kv_dtype_bytes : m->dtype_bytes);
  if (p->h2d_gbps > 0) cJSON_AddNumberToObject(o, "h2d_gbps", p->h2d_gbps);
  cJSON_AddItemToObject(o, "rows", km_table_rows_json(t));
  return o;
}
