/* km_model_resolve: a preset name, or a Hugging Face config.json (or the folder holding one), read the way
 * transformers builds its config (nested language configs, the class defaults for absent fields, layer
 * patterns the class derives) and the way vLLM then reads it (dtype, max_model_len, sliding windows).
 * Every bad input becomes one line naming the file and the field, so main can exit 2 with it. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes_table.h"
#include "config_json.h"
#include "model.h"
#include "model_arch.h"

/* config.json files are a few KiB; anything far larger is not one. */
enum { CONFIG_MAX_BYTES = 16 << 20 };
/* --max-model-len's own ceiling (cli.c): a derived length beyond it is not a real context */
#define MAX_MODEL_LEN_LIMIT 1099511627776.0

typedef struct cfg_ctx {
  const char *path;     /* for messages */
  const cJSON *obj;     /* the text model's fields (text_config / llm_config / language_config of a wrapper) */
  const cJSON *root;    /* the whole file, for fields kept at the top (torch_dtype) */
  const cJSON *defaults; /* transformers' class defaults for the model_type, or NULL */
  const km_arch *arch;  /* kvmicro's entry for the model_type, or NULL */
  char *err;
  size_t errlen;
} cfg_ctx;

static int fail(const cfg_ctx *c, const char *fmt, ...) {
  int n = snprintf(c->err, c->errlen, "%s: ", c->path);
  if (n >= 0 && (size_t)n < c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* The value config.json gives key (JSON null included: that is None), else the class default, else NULL. */
static const cJSON *field(const cfg_ctx *c, const char *key) {
  const cJSON *v = km_json_get(c->obj, key);
  return v ? v : km_json_get(c->defaults, key);
}

static int is_none(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* The first of the keys (aliases across model families) with a value other than None, or NULL. */
static const cJSON *field_any(const cfg_ctx *c, const char *const *keys, const char **used) {
  for (; *keys; keys++) {
    const cJSON *v = field(c, *keys);
    if (!is_none(v)) {
      *used = *keys;
      return v;
    }
  }
  return NULL;
}

/* An integer field >= min. Absent or None: -1 with a message when required, else 1 and *out untouched. */
static int get_int(const cfg_ctx *c, const char *const *keys, int min, int required, const char *why, int *out) {
  const char *key = keys[0];
  const char *want = min > 0 ? "a positive integer" : "an integer >= 0";
  const cJSON *v = field_any(c, keys, &key);
  if (!v) return required ? fail(c, "field %s missing (need %s%s)", keys[0], want, why) : 1;
  if (!cJSON_IsNumber(v)) return fail(c, "field %s is not a number (need %s%s)", key, want, why);
  double d = v->valuedouble;
  if (d != floor(d) || d < min || d > INT_MAX) return fail(c, "field %s is %g (need %s%s)", key, d, want, why);
  *out = (int)d;
  return 0;
}

static int get_one(const cfg_ctx *c, const char *key, int required, const char *why, int *out) {
  const char *keys[] = {key, NULL};
  return get_int(c, keys, 1, required, why, out);
}

/* ---- dtype: vLLM's --dtype auto (config/model.py _get_and_verify_dtype, v0.11) takes the top-level
 * torch_dtype, else the text config's; a float32 (or absent) checkpoint is served in the platform's first
 * supported dtype, bfloat16 on the GPUs this suite targets. Every auto dtype is 2 bytes. */
static int parse_dtype(const cfg_ctx *c, km_model *m) {
  static const char *const keys[] = {"torch_dtype", "dtype", NULL};
  static const char *const known[] = {"bfloat16", "float16", "bf16", "fp16", "half", "float32", "float", "fp32"};
  const char *key = keys[0];
  cfg_ctx top = *c;
  top.obj = c->root;
  top.defaults = NULL;
  const cJSON *v = field_any(&top, keys, &key);
  if (!v) v = field_any(c, keys, &key);
  m->dtype_bytes = 2;
  if (!v) return 0;
  const char *s = cJSON_GetStringValue(v);
  for (size_t i = 0; s && i < sizeof known / sizeof known[0]; i++) {
    if (strcmp(s, known[i]) == 0) {
      snprintf(m->config_dtype, sizeof m->config_dtype, "%s", s);
      return 0;
    }
  }
  return fail(c, "field %s is %s%s%s (need bfloat16, float16 or float32)", key, s ? "\"" : "",
              s ? s : "not a string", s ? "\"" : "");
}

/* ---- attention shape */

/* num_attention_heads, num_key_value_heads (None: multi-head), hidden_size; GQA needs whole groups. */
static int parse_heads(const cfg_ctx *c, km_model *m) {
  if (get_one(c, "num_attention_heads", 1, "", &m->num_attention_heads)) return -1;
  m->num_kv_heads = m->num_attention_heads;
  if (get_one(c, "num_key_value_heads", 0, "", &m->num_kv_heads) < 0) return -1;
  if (m->num_attention_heads % m->num_kv_heads != 0)
    return fail(c, "field num_key_value_heads is %d (need a divisor of num_attention_heads %d)", m->num_kv_heads,
                m->num_attention_heads);
  return 0;
}

/* No attention head is wider than this; a wider one is a malformed config, not a model. */
enum { MAX_HEAD_WIDTH = 65536 };

static int check_width(const cfg_ctx *c, const char *key, int v) {
  if (v <= MAX_HEAD_WIDTH) return 0;
  return fail(c, "field %s is %d (need at most %d: no attention head is that wide)", key, v, MAX_HEAD_WIDTH);
}

/* MLA (DeepSeek): the cache holds kv_lora_rank + qk_rope_head_dim per token per layer. Its per-head K is
 * qk_nope + qk_rope wide and V is v_head_dim wide; head_dim is their mean so 2*H*d stays exact. */
static int parse_mla(const cfg_ctx *c, km_model *m, int *head_dim_set) {
  if (get_one(c, "kv_lora_rank", 0, "", &m->kv_lora_rank) < 0) return -1;
  if (m->kv_lora_rank == 0) return 0;
  if (get_one(c, "qk_rope_head_dim", 1, " with kv_lora_rank", &m->qk_rope_head_dim)) return -1;
  int nope = 0, v = 0;
  if (get_one(c, "qk_nope_head_dim", 0, "", &nope) < 0 || get_one(c, "v_head_dim", 0, "", &v) < 0) return -1;
  if (check_width(c, "kv_lora_rank", m->kv_lora_rank) || check_width(c, "qk_rope_head_dim", m->qk_rope_head_dim) ||
      check_width(c, "qk_nope_head_dim", nope) || check_width(c, "v_head_dim", v))
    return -1;
  if (nope > 0 && v > 0) {
    long long hd = ((long long)nope + m->qk_rope_head_dim + v + 1) / 2; /* each part fits int, the sum may not */
    if (hd > INT_MAX) return fail(c, "fields qk_nope_head_dim + qk_rope_head_dim + v_head_dim are too large");
    m->head_dim = (int)hd;
    *head_dim_set = 1;
  }
  return 0;
}

/* vLLM ModelConfig.get_head_size: head_dim when set, else hidden_size / num_attention_heads. */
static int parse_head_dim(const cfg_ctx *c, km_model *m) {
  static const char *const keys[] = {"head_dim", "attention_head_dim", NULL};
  int set = 0;
  if (parse_mla(c, m, &set)) return -1;
  if (set) return 0;
  int r = get_int(c, keys, 1, 0, "", &m->head_dim);
  if (r <= 0) return r;
  if (m->hidden_size == 0) return fail(c, "field hidden_size missing (need a positive integer, or head_dim)");
  if (m->hidden_size % m->num_attention_heads != 0)
    return fail(c, "field head_dim missing and hidden_size %d is not a multiple of num_attention_heads %d",
                m->hidden_size, m->num_attention_heads);
  m->head_dim = m->hidden_size / m->num_attention_heads;
  return 0;
}

/* Head widths a real model can have, and K+V of one token over every layer within the byte table's
 * arithmetic (exact in a double). */
static int check_kv_size(const cfg_ctx *c, const km_model *m) {
  if (check_width(c, "head_dim", m->head_dim)) return -1;
  double per_layer = 2.0 * m->num_kv_heads * m->head_dim;
  if (per_layer * m->num_layers * 4 > 1e15)
    return fail(c, "fields num_key_value_heads %d x head_dim %d do not fit: one token would take over 1e15 B",
                m->num_kv_heads, m->head_dim);
  return 0;
}

/* Qwen2/3 configs carry sliding_window with use_sliding_window false: the config class then sets it None. */
static int parse_window(const cfg_ctx *c, km_model *m) {
  const cJSON *use = field(c, "use_sliding_window");
  if (use && cJSON_IsFalse(use)) return 0;
  return get_one(c, "sliding_window", 0, "", &m->sliding_window) < 0 ? -1 : 0;
}

/* ---- layer patterns */

static int layer_letter(const char *type, char *out) {
  static const struct { const char *name; char letter; } names[] = {
      {"full_attention", '*'}, {"attention", '*'}, {"global", '*'},   {"sliding_attention", 'L'},
      {"sliding_window", 'L'}, {"local", 'L'},     {"mamba", 'M'},    {"mlp", '-'},
      {"moe", '-'},            {"linear_attention", 'D'}, {"hybrid", 'P'},
  };
  for (size_t i = 0; type && i < sizeof names / sizeof names[0]; i++) {
    if (!strcmp(type, names[i].name)) {
      *out = names[i].letter;
      return 0;
    }
  }
  return -1;
}

/* layer_types (transformers >= 4.53) or layers_block_type (Jamba / Nemotron-H): one string per layer. */
static int pattern_from_array(const cfg_ctx *c, const char *key, const cJSON *arr, int layers, char *pat) {
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != layers)
    return fail(c, "field %s has %d entries (need an array of num_hidden_layers = %d strings)", key,
                cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0, layers);
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const char *s = cJSON_GetStringValue(e);
    if (layer_letter(s, &pat[i]) != 0)
      return fail(c, "field %s[%d] is %s (need full_attention, sliding_attention, linear_attention, mamba, hybrid, "
                  "mlp or moe)", key, i, s ? s : "not a string");
    i++;
  }
  pat[i] = '\0';
  return 0;
}

static int pattern_from_string(const cfg_ctx *c, const char *s, int layers, char *pat) {
  size_t n = strlen(s);
  if (n != (size_t)layers)
    return fail(c, "field hybrid_override_pattern has %zu characters (need num_hidden_layers = %d)", n, layers);
  for (size_t i = 0; i < n; i++) {
    if (!strchr("M*-E", s[i]))
      return fail(c, "field hybrid_override_pattern has '%c' at %zu (need M, *, - or E)", s[i], i);
    pat[i] = s[i];
  }
  pat[n] = '\0';
  return 0;
}

static void fill(char *pat, int layers, char letter) {
  memset(pat, letter, (size_t)layers);
  pat[layers] = '\0';
}

/* JambaConfig.layers_block_type: attention where i % attn_layer_period == attn_layer_offset. */
static int pattern_from_period(const cfg_ctx *c, int layers, char *pat) {
  static const char *const period_key[] = {"attn_layer_period", NULL}, *const offset_key[] = {"attn_layer_offset", NULL};
  int period = 0, offset = 0;
  if (get_int(c, period_key, 1, 1, "", &period) || get_int(c, offset_key, 0, 1, " with attn_layer_period", &offset))
    return -1;
  if (offset >= period)
    return fail(c, "field attn_layer_offset is %d (need less than attn_layer_period %d)", offset, period);
  for (int i = 0; i < layers; i++) pat[i] = i % period == offset ? '*' : 'M';
  pat[layers] = '\0';
  return 0;
}

/* Qwen3NextConfig.layer_types: full attention on every full_attention_interval-th layer, delta net elsewhere. */
static int pattern_from_interval(const cfg_ctx *c, int layers, char *pat) {
  int every = 0;
  if (get_one(c, "full_attention_interval", 1, "", &every)) return -1;
  for (int i = 0; i < layers; i++) pat[i] = (i + 1) % every == 0 ? '*' : 'D';
  pat[layers] = '\0';
  return 0;
}

/* Windowed layers when the config lists none: the class's own rule (Gemma 2 / gpt-oss alternate, Gemma 3
 * sliding_window_pattern), or Qwen2's max_window_layers (layers from it on slide). */
static int pattern_from_window(const cfg_ctx *c, const km_model *m, char *pat) {
  int period = c->arch && c->arch->layout == KM_ARCH_LAYOUT_ALTERNATE ? 2 : 0, max_window_layers = -1;
  if (get_one(c, "sliding_window_pattern", 0, "", &period) < 0) return -1;
  const char *const mwl[] = {"max_window_layers", NULL};
  if (period == 0 && get_int(c, mwl, 0, 0, "", &max_window_layers) < 0) return -1;
  for (int i = 0; i < m->num_layers; i++) {
    int sliding = period > 0 ? (i + 1) % period != 0 : (max_window_layers >= 0 && i >= max_window_layers);
    pat[i] = sliding ? 'L' : '*';
  }
  pat[m->num_layers] = '\0';
  return 0;
}

static int base_pattern(const cfg_ctx *c, const km_model *m, char *pat) {
  const cJSON *types = field(c, "layer_types"), *blocks = field(c, "layers_block_type");
  const cJSON *hybrid = field(c, "hybrid_override_pattern");
  km_arch_layout layout = c->arch ? c->arch->layout : KM_ARCH_LAYOUT_GENERIC;
  int n = m->num_layers;
  if (!is_none(types)) return pattern_from_array(c, "layer_types", types, n, pat);
  if (cJSON_IsString(hybrid)) return pattern_from_string(c, hybrid->valuestring, n, pat);
  if (!is_none(blocks)) return pattern_from_array(c, "layers_block_type", blocks, n, pat);
  if (layout == KM_ARCH_LAYOUT_ALL_MAMBA) return fill(pat, n, 'M'), 0;
  if (layout == KM_ARCH_LAYOUT_ALL_PARALLEL) return fill(pat, n, 'P'), 0;
  if (!is_none(field(c, "attn_layer_period"))) return pattern_from_period(c, n, pat);
  if (!is_none(field(c, "full_attention_interval"))) return pattern_from_interval(c, n, pat);
  if (m->sliding_window > 0) return pattern_from_window(c, m, pat);
  return fill(pat, n, '*'), 0;
}

/* vLLM applies a per-layer window only to models whose layer types interleave full and sliding attention
 * (transformers_utils/config.py is_interleaved, v0.11); otherwise the config's sliding_window is the model's
 * window (CacheConfig.sliding_window) and every attention layer slides (Mistral-7B-v0.1, Phi-3). */
static int parse_layers(const cfg_ctx *c, km_model *m) {
  char pat[KM_MODEL_MAX_LAYERS + 1];
  if (base_pattern(c, m, pat)) return -1;
  int interleaved = strchr(pat, '*') && strchr(pat, 'L');
  for (int i = 0; !interleaved && m->sliding_window > 0 && i < m->num_layers; i++)
    if (pat[i] == '*') pat[i] = 'L';
  km_model_set_layer_pattern(m, pat);
  if (strchr(pat, 'L') && m->sliding_window == 0)
    return fail(c, "field sliding_window missing (need a positive integer: the model has sliding-window layers)");
  return 0;
}

/* ---- state layers: the fields vLLM's MambaStateShapeCalculator reads (model_executor/layers/mamba/mamba_utils.py) */

static int parse_mamba_dims(const cfg_ctx *c, km_model *m, long long *d_inner) {
  static const char *const head_keys[] = {"mamba_num_heads", "mamba_n_heads", NULL};
  static const char *const head_dim_keys[] = {"mamba_head_dim", "mamba_d_head", NULL};
  static const char *const expand_keys[] = {"mamba_expand", "expand", NULL};
  const char *why = " for the Mamba layers";
  const char *inner_key = c->arch ? c->arch->mamba_inner_key : NULL;
  int inner = 0, expand = 0, hd_auto = 0;
  const char *used = head_dim_keys[0];
  const cJSON *hd = field_any(c, head_dim_keys, &used);
  if (cJSON_IsString(hd) && strcmp(hd->valuestring, "auto") == 0) hd_auto = 1; /* FalconH1Config: d_ssm / n_heads */
  if (get_int(c, head_keys, 1, 0, "", &m->mamba_num_heads) < 0) return -1;
  if (!hd_auto && get_int(c, head_dim_keys, 1, 0, "", &m->mamba_head_dim) < 0) return -1;
  if (inner_key && get_one(c, inner_key, 0, "", &inner) < 0) return -1;
  if (inner > 0) {
    *d_inner = inner;
  } else if (m->mamba_num_heads > 0 && m->mamba_head_dim > 0) {
    *d_inner = (long long)m->mamba_num_heads * m->mamba_head_dim; /* a product of two ints: checked below */
  } else {
    if (get_int(c, expand_keys, 1, 0, "", &expand) < 0) return -1;
    if (expand == 0 || m->hidden_size == 0)
      return fail(c, "field mamba_num_heads missing (need it with mamba_head_dim, or expand with hidden_size%s)", why);
    *d_inner = (long long)expand * m->hidden_size;
  }
  if (*d_inner > INT_MAX) return fail(c, "Mamba d_inner %lld is too large (need at most %d)", *d_inner, INT_MAX);
  if (hd_auto && m->mamba_num_heads > 0) {
    if (*d_inner % m->mamba_num_heads != 0)
      return fail(c, "field mamba_n_heads is %d (need a divisor of the Mamba width %lld)", m->mamba_num_heads, *d_inner);
    m->mamba_head_dim = (int)(*d_inner / m->mamba_num_heads);
  }
  return 0;
}

/* Mamba-2 (mamba2_state_shape): conv (d_conv - 1, d_inner + 2 groups d_state), SSM (heads, head_dim, d_state).
 * Mamba-1 (mamba1_state_shape): conv (d_inner, d_conv - 1), SSM (d_inner, d_state). */
static int parse_mamba(const cfg_ctx *c, km_model *m) {
  static const char *const state_keys[] = {"ssm_state_size", "mamba_d_state", "state_size", NULL};
  static const char *const conv_keys[] = {"conv_kernel", "mamba_d_conv", "d_conv", NULL};
  static const char *const group_keys[] = {"n_groups", "mamba_n_groups", "ngroups", NULL};
  const char *why = " for the Mamba layers";
  if (!km_model_count_layers(m, KM_LAYER_MAMBA) && !km_model_count_layers(m, KM_LAYER_PARALLEL)) return 0;
  long long d_inner = 0;
  if (parse_mamba_dims(c, m, &d_inner)) return -1;
  m->mamba_d_inner = (int)d_inner;
  if (get_int(c, state_keys, 1, 1, why, &m->mamba_d_state)) return -1;
  if (get_int(c, conv_keys, 1, 1, why, &m->mamba_d_conv)) return -1;
  if (get_int(c, group_keys, 1, 0, "", &m->mamba_n_groups) < 0) return -1;
  m->mamba_version = (m->mamba_num_heads > 0 || m->mamba_n_groups > 0) ? 2 : 1;
  if (m->mamba_version == 2 && m->mamba_num_heads == 0) {
    m->mamba_num_heads = 1; /* groups without heads: one head over the whole width */
    m->mamba_head_dim = m->mamba_d_inner;
  }
  if (m->mamba_version == 2 && m->mamba_head_dim == 0)
    return fail(c, "field mamba_head_dim missing (need a positive integer with mamba_num_heads%s)", why);
  double conv = ((double)m->mamba_d_inner + 2.0 * m->mamba_n_groups * m->mamba_d_state) * (m->mamba_d_conv - 1);
  double ssm = (m->mamba_version == 2 ? (double)m->mamba_num_heads * m->mamba_head_dim : m->mamba_d_inner) *
               (double)m->mamba_d_state;
  if (conv + ssm > 1e12)
    return fail(c, "fields ssm_state_size x the Mamba width describe a state over 1e12 elements per layer (need a "
                "real shape)");
  return 0;
}

/* The SSM state dtype vLLM uses when --mamba-ssm-dtype is auto: the model's hook (NemotronH) reads the
 * config's mamba_ssm_cache_dtype, else its own default; other models keep the model dtype. */
static int parse_ssm_dtype(const cfg_ctx *c, km_model *m) {
  if (!c->arch || c->arch->ssm_state_bytes == 0) return 0;
  m->mamba_ssm_dtype_bytes = c->arch->ssm_state_bytes;
  const cJSON *v = field(c, "mamba_ssm_cache_dtype");
  if (is_none(v)) return 0;
  const char *s = cJSON_GetStringValue(v);
  if (s && strcmp(s, "float32") == 0) m->mamba_ssm_dtype_bytes = 4;
  else if (s && (strcmp(s, "bfloat16") == 0 || strcmp(s, "float16") == 0)) m->mamba_ssm_dtype_bytes = 2;
  else return fail(c, "field mamba_ssm_cache_dtype is %s (need float32, bfloat16 or float16)", s ? s : "not a string");
  return 0;
}

/* Gated delta net (gated_delta_net_state_shape): conv (d_conv - 1, 2 k_heads k_dim + v_heads v_dim),
 * recurrent state (v_heads, v_dim, k_dim). */
static int parse_linear(const cfg_ctx *c, km_model *m) {
  const char *why = " for the linear_attention layers";
  if (!km_model_count_layers(m, KM_LAYER_LINEAR)) return 0;
  if (get_one(c, "linear_num_key_heads", 1, why, &m->linear_num_key_heads) ||
      get_one(c, "linear_num_value_heads", 1, why, &m->linear_num_value_heads) ||
      get_one(c, "linear_key_head_dim", 1, why, &m->linear_key_head_dim) ||
      get_one(c, "linear_value_head_dim", 1, why, &m->linear_value_head_dim) ||
      get_one(c, "linear_conv_kernel_dim", 1, why, &m->linear_conv_kernel))
    return -1;
  double conv = (double)m->linear_num_key_heads * m->linear_key_head_dim * 2 +
                (double)m->linear_num_value_heads * m->linear_value_head_dim;
  if (conv * m->linear_conv_kernel > 1e12 || (double)m->linear_num_value_heads * m->linear_value_head_dim *
                                                     m->linear_key_head_dim > 1e12)
    return fail(c, "fields linear_* describe a state over 1e12 elements per layer (need a real shape)");
  return 0;
}

/* ---- max_model_len: vLLM's _get_and_verify_max_len (config/model.py, v0.11) */

static int rope_factor(const cfg_ctx *c, const cJSON *rope, const char *type, double *len) {
  if (!strcmp(type, "su") || !strcmp(type, "longrope") || !strcmp(type, "llama3")) return 0;
  const cJSON *f = km_json_get(rope, "factor");
  double factor = 1.0; /* rope_type default defines no factor */
  if (f && !cJSON_IsNumber(f)) return fail(c, "field rope_scaling.factor is not a number");
  if (f) factor = f->valuedouble;
  if (!(factor > 0) || !isfinite(factor)) return fail(c, "field rope_scaling.factor is %g (need a positive number)", factor);
  if (!strcmp(type, "yarn")) {
    const cJSON *o = km_json_get(rope, "original_max_position_embeddings");
    if (!cJSON_IsNumber(o) || !(o->valuedouble >= 1))
      return fail(c, "field rope_scaling.original_max_position_embeddings missing (need a positive number for yarn)");
    *len = o->valuedouble;
  }
  *len *= factor;
  return 0;
}

/* The smallest of the length fields (model_max_length wins when present), 2048 when there is none, then
 * rope scaling: yarn is original_max_position_embeddings x factor, other types but su / longrope / llama3
 * multiply by factor; Gemma 3's length is already scaled. */
static int derive_max_len(const cfg_ctx *c, km_model *m, const char *model_type) {
  static const char *const keys[] = {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                                     "model_max_length", "max_target_positions", "max_sequence_length",
                                     "max_seq_length", "seq_len"};
  double len = INFINITY;
  const char *key = ""; /* none: vLLM assumes 2048 and takes any --max-model-len */
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const cJSON *v = field(c, keys[i]);
    if (!cJSON_IsNumber(v) || !(v->valuedouble < len)) continue;
    key = keys[i];
    len = v->valuedouble;
  }
  const cJSON *mml = field(c, "model_max_length"); /* Command-R style: overrides the smallest */
  if (cJSON_IsNumber(mml)) {
    key = "model_max_length";
    len = mml->valuedouble;
  }
  if (isinf(len) && len > 0) len = 2048;
  const cJSON *rope = field(c, "rope_scaling");
  if (cJSON_IsObject(rope) && !(model_type && strstr(model_type, "gemma3"))) {
    const cJSON *t = km_json_get(rope, "rope_type");
    if (!cJSON_IsString(t)) t = km_json_get(rope, "type");
    if (!cJSON_IsString(t)) return fail(c, "field rope_scaling has no rope_type (need a string such as yarn)");
    const char *type = !strcmp(t->valuestring, "mrope") ? "default" : t->valuestring;
    if (rope_factor(c, rope, type, &len)) return -1;
  }
  if (!(len >= 1) || len > MAX_MODEL_LEN_LIMIT)
    return fail(c, "field %s gives a max_model_len of %g (need 1 to 2^40)", key[0] ? key : "rope_scaling", len);
  m->max_model_len = (long long)len;
  snprintf(m->max_len_key, sizeof m->max_len_key, "%s", key);
  return 0;
}

/* ---- the whole config */

/* The language model's fields: a wrapper's text_config / llm_config / language_config, unless the top
 * level carries them itself. */
static const cJSON *text_object(const cJSON *root) {
  static const char *const keys[] = {"text_config", "llm_config", "language_config"};
  if (km_json_get(root, "num_hidden_layers")) return root;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const cJSON *t = km_json_get(root, keys[i]);
    if (cJSON_IsObject(t)) return t;
  }
  return root;
}

static int parse_attention(const cfg_ctx *c, km_model *m) {
  if (km_model_count_layers(m, KM_LAYER_GLOBAL) + km_model_count_layers(m, KM_LAYER_LOCAL) +
          km_model_count_layers(m, KM_LAYER_PARALLEL) ==
      0)
    return 0; /* a pure state-space model: no attention shape to read */
  if (parse_heads(c, m) || parse_head_dim(c, m)) return -1;
  return check_kv_size(c, m);
}

static int parse_fields(const cfg_ctx *c, km_model *m, const char *model_type) {
  if (get_one(c, "num_hidden_layers", 1, "", &m->num_layers)) return -1;
  if (m->num_layers > KM_MODEL_MAX_LAYERS)
    return fail(c, "field num_hidden_layers is %d (need at most %d)", m->num_layers, KM_MODEL_MAX_LAYERS);
  if (get_one(c, "hidden_size", 0, "", &m->hidden_size) < 0) return -1;
  if (get_one(c, "max_position_embeddings", 0, "", &m->max_position_embeddings) < 0) return -1;
  if (parse_dtype(c, m) || parse_window(c, m) || parse_layers(c, m) || parse_attention(c, m)) return -1;
  if (parse_mamba(c, m) || parse_ssm_dtype(c, m) || parse_linear(c, m)) return -1;
  return derive_max_len(c, m, model_type);
}

static int parse_config(cfg_ctx *c, km_model *m) {
  c->obj = text_object(c->root);
  const char *top_type = cJSON_GetStringValue(km_json_get(c->root, "model_type"));
  const char *text_type = cJSON_GetStringValue(km_json_get(c->obj, "model_type"));
  if (!text_type) text_type = km_arch_text_type(top_type);
  const km_arch *wrapper = c->obj != c->root ? km_arch_find(top_type) : NULL;
  c->arch = km_arch_find(text_type);
  const km_arch *checked[] = {c->arch, wrapper};
  for (size_t i = 0; i < 2; i++)
    if (checked[i] && checked[i]->unsupported)
      return fail(c, "model_type %s: %s by the byte table", checked[i]->model_type, checked[i]->unsupported);
  snprintf(m->model_type, sizeof m->model_type, "%s", text_type ? text_type : "");
  cJSON *defaults = NULL;
  if (c->arch && c->arch->defaults_json) {
    defaults = cJSON_Parse(c->arch->defaults_json);
    if (!defaults) return fail(c, "out of memory");
  }
  c->defaults = defaults;
  int r = parse_fields(c, m, text_type);
  cJSON_Delete(defaults);
  c->defaults = NULL;
  return r;
}

/* "/models/Qwen3-8B/config.json" -> "Qwen3-8B"; "qwen3-8b.json" -> "qwen3-8b". */
static void name_from_path(const char *path, char *name, size_t len) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (!strcmp(base, "config.json") && base != path) {
    const char *end = base - 1, *start = end;
    while (start > path && start[-1] != '/') start--;
    if (end > start) {
      snprintf(name, len, "%.*s", (int)(end - start), start);
      return;
    }
  }
  size_t n = strlen(base);
  if (n > 5 && !strcmp(base + n - 5, ".json")) n -= 5;
  snprintf(name, len, "%.*s", (int)n, base);
}

int km_model_from_json(const char *text, size_t len, const char *label, km_model *out, char *err, size_t errlen) {
  long off = 0;
  cJSON *root = km_config_json_parse(text, len, &off);
  if (!cJSON_IsObject(root)) {
    if (root) snprintf(err, errlen, "%s: not a JSON object (need a Hugging Face config.json object)", label);
    else snprintf(err, errlen, "%s: malformed JSON near byte %ld (need a Hugging Face config.json object)", label, off);
    cJSON_Delete(root);
    return -1;
  }
  cfg_ctx c = {label, root, root, NULL, NULL, err, errlen};
  memset(out, 0, sizeof *out);
  int r = parse_config(&c, out);
  if (r == 0) name_from_path(label, out->name, sizeof out->name);
  cJSON_Delete(root);
  return r;
}

static char *read_file(const char *path, size_t *len, char *why, size_t whylen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(why, whylen, "%s", strerror(errno));
    return NULL;
  }
  char *buf = malloc(CONFIG_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, CONFIG_MAX_BYTES + 1, f) : 0;
  int bad = !buf || ferror(f) || n > CONFIG_MAX_BYTES;
  fclose(f);
  if (bad) {
    snprintf(why, whylen, "%s", buf ? "unreadable or larger than 16 MiB" : "out of memory");
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static void preset_list(char *out, size_t len) {
  size_t count = 0, used = 0;
  const char *const *names = km_model_preset_names(&count);
  out[0] = '\0';
  for (size_t i = 0; i < count && used < len; i++) {
    int n = snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);
    if (n < 0) break;
    used += (size_t)n;
  }
}

static int load_json(const char *path, km_model *out, char *err, size_t errlen) {
  char why[128], presets[256];
  size_t len = 0;
  char *text = read_file(path, &len, why, sizeof why);
  if (!text) {
    preset_list(presets, sizeof presets);
    snprintf(err, errlen, "%s: cannot read config.json (%s); not a preset either (%s)", path, why, presets);
    return -1;
  }
  int r = km_model_from_json(text, len, path, out, err, errlen);
  free(text);
  return r;
}

int km_model_resolve(const char *preset_or_path, km_model *out, char *err, size_t errlen) {
  if (!preset_or_path || !*preset_or_path) {
    snprintf(err, errlen, "--model: empty (need a preset name or a path to config.json)");
    return -1;
  }
  if (km_model_preset(preset_or_path, out) == 0) return 0;
  struct stat st;
  if (stat(preset_or_path, &st) == 0 && S_ISDIR(st.st_mode)) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", preset_or_path);
    return load_json(path, out, err, errlen);
  }
  return load_json(preset_or_path, out, err, errlen);
}
