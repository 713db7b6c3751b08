/* km_model_resolve: a preset name, or a Hugging Face config.json (or the folder holding one) read with
 * cJSON. Every bad input becomes one line naming the file and the field, so main can exit 2 with it. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bytes_table.h"
#include "model.h"

/* config.json files are a few KiB; anything far larger is not one. */
enum { CONFIG_MAX_BYTES = 16 << 20 };

typedef struct cfg_ctx {
  const char *path;  /* for messages */
  const cJSON *obj;  /* the text model's fields (text_config for multimodal configs) */
  const cJSON *root; /* the whole file, for fields kept at the top (torch_dtype) */
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

static const cJSON *field(const cfg_ctx *c, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->obj, key);
  return cJSON_IsNull(v) ? NULL : v;
}

/* The first of the keys present (aliases across model families), or NULL. *used names it. */
static const cJSON *field_any(const cfg_ctx *c, const char *const *keys, const char **used) {
  for (; *keys; keys++) {
    const cJSON *v = field(c, *keys);
    if (v) {
      *used = *keys;
      return v;
    }
  }
  return NULL;
}

/* A positive integer field. Absent: -1 with a message when required, else 1 and *out untouched. */
static int get_positive(const cfg_ctx *c, const char *const *keys, int required, const char *why, int *out) {
  const char *key = keys[0];
  const cJSON *v = field_any(c, keys, &key);
  if (!v) return required ? fail(c, "field %s missing (need a positive integer%s)", keys[0], why) : 1;
  if (!cJSON_IsNumber(v)) return fail(c, "field %s is not a number (need a positive integer%s)", key, why);
  double d = v->valuedouble;
  if (d != floor(d) || d <= 0 || d > INT_MAX)
    return fail(c, "field %s is %g (need a positive integer%s)", key, d, why);
  *out = (int)d;
  return 0;
}

static int get_one(const cfg_ctx *c, const char *key, int required, const char *why, int *out) {
  const char *keys[] = {key, NULL};
  return get_positive(c, keys, required, why, out);
}

static int parse_dtype(const cfg_ctx *c, km_model *m) {
  static const char *const keys[] = {"torch_dtype", "dtype", NULL};
  const char *key = keys[0];
  const cJSON *v = field_any(c, keys, &key);
  if (!v) {
    cfg_ctx top = *c;
    top.obj = c->root;
    v = field_any(&top, keys, &key);
  }
  m->dtype_bytes = 2; /* absent: bf16, what engines load these models in */
  if (!v) return 0;
  const char *s = cJSON_GetStringValue(v);
  if (s && (!strcmp(s, "bfloat16") || !strcmp(s, "float16") || !strcmp(s, "bf16") || !strcmp(s, "fp16") ||
            !strcmp(s, "half")))
    return 0;
  if (s && (!strcmp(s, "float32") || !strcmp(s, "float") || !strcmp(s, "fp32"))) {
    m->dtype_bytes = 4;
    return 0;
  }
  return fail(c, "field %s is %s%s%s (need bfloat16, float16 or float32)", key, s ? "\"" : "",
              s ? s : "not a string", s ? "\"" : "");
}

static int parse_heads(const cfg_ctx *c, km_model *m) {
  if (get_one(c, "num_hidden_layers", 1, "", &m->num_layers)) return -1;
  if (m->num_layers > KM_MODEL_MAX_LAYERS)
    return fail(c, "field num_hidden_layers is %d (need at most %d)", m->num_layers, KM_MODEL_MAX_LAYERS);
  if (get_one(c, "num_attention_heads", 1, "", &m->num_attention_heads)) return -1;
  m->num_kv_heads = m->num_attention_heads; /* no GQA field: multi-head attention */
  if (get_one(c, "num_key_value_heads", 0, "", &m->num_kv_heads) < 0) return -1;
  if (get_one(c, "hidden_size", 0, "", &m->hidden_size) < 0) return -1;
  if (get_one(c, "max_position_embeddings", 0, "", &m->max_position_embeddings) < 0) return -1;
  return 0;
}

/* MLA (DeepSeek): the cache holds kv_lora_rank + qk_rope_head_dim per token per layer. Its per-head K is
 * qk_nope + qk_rope wide and V is v_head_dim wide; head_dim is their mean so 2*H*d stays exact. */
static int parse_mla(const cfg_ctx *c, km_model *m, int *head_dim_set) {
  if (get_one(c, "kv_lora_rank", 0, "", &m->kv_lora_rank) < 0) return -1;
  if (m->kv_lora_rank == 0) return 0;
  if (get_one(c, "qk_rope_head_dim", 1, " with kv_lora_rank", &m->qk_rope_head_dim)) return -1;
  int nope = 0, v = 0;
  if (get_one(c, "qk_nope_head_dim", 0, "", &nope) < 0 || get_one(c, "v_head_dim", 0, "", &v) < 0) return -1;
  if (nope > 0 && v > 0) {
    long long hd = ((long long)nope + m->qk_rope_head_dim + v + 1) / 2; /* each part fits int, the sum may not */
    if (hd > INT_MAX) return fail(c, "fields qk_nope_head_dim + qk_rope_head_dim + v_head_dim are too large");
    m->head_dim = (int)hd;
    *head_dim_set = 1;
  }
  return 0;
}

static int parse_head_dim(const cfg_ctx *c, km_model *m) {
  int set = 0;
  if (parse_mla(c, m, &set)) return -1;
  if (set) return 0;
  static const char *const keys[] = {"head_dim", "attention_head_dim", NULL};
  int r = get_positive(c, keys, 0, "", &m->head_dim);
  if (r <= 0) return r;
  if (m->hidden_size == 0)
    return fail(c, "field hidden_size missing (need a positive integer, or head_dim)");
  if (m->hidden_size % m->num_attention_heads != 0)
    return fail(c, "field head_dim missing and hidden_size %d is not a multiple of num_attention_heads %d",
                m->hidden_size, m->num_attention_heads);
  m->head_dim = m->hidden_size / m->num_attention_heads;
  return 0;
}

/* Qwen2/3 configs carry sliding_window with use_sliding_window false: no window then. */
static int parse_window(const cfg_ctx *c, km_model *m) {
  const cJSON *use = field(c, "use_sliding_window");
  if (use && cJSON_IsFalse(use)) return 0;
  return get_one(c, "sliding_window", 0, "", &m->sliding_window) < 0 ? -1 : 0;
}

static int layer_letter(const char *type, char *out) {
  static const struct { const char *name; char letter; } names[] = {
      {"full_attention", '*'}, {"attention", '*'}, {"global", '*'}, {"sliding_attention", 'L'},
      {"sliding_window", 'L'}, {"local", 'L'},     {"mamba", 'M'},  {"mlp", '-'}, {"moe", '-'},
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
      return fail(c, "field %s[%d] is %s (need full_attention, sliding_attention, mamba, mlp or moe)", key, i,
                  s ? s : "not a string");
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

/* Gemma 2 alternates local/global; Gemma 3 defaults to five local then one global. */
static int local_period(const cfg_ctx *c, int *period) {
  const char *type = cJSON_GetStringValue(field(c, "model_type"));
  *period = 0;
  if (type && !strcmp(type, "gemma2")) *period = 2;
  if (type && !strncmp(type, "gemma3", 6)) *period = 6;
  return get_one(c, "sliding_window_pattern", 0, "", period) < 0 ? -1 : 0;
}

/* Pattern when no per-layer list is given: from the window fields alone. */
static int pattern_from_window(const cfg_ctx *c, const km_model *m, char *pat) {
  int period = 0, max_window_layers = 0;
  if (m->sliding_window == 0) return snprintf(pat, 2, "*") < 0 ? -1 : 0;
  if (local_period(c, &period)) return -1;
  if (get_one(c, "max_window_layers", 0, "", &max_window_layers) < 0) return -1;
  for (int i = 0; i < m->num_layers; i++) {
    int global = period > 1 ? (i + 1) % period == 0 : (max_window_layers > 0 && i < max_window_layers);
    pat[i] = global ? '*' : 'L';
  }
  pat[m->num_layers] = '\0';
  return 0;
}

static int parse_layers(const cfg_ctx *c, km_model *m) {
  char pat[KM_MODEL_MAX_LAYERS + 1];
  const cJSON *types = field(c, "layer_types"), *blocks = field(c, "layers_block_type");
  const cJSON *hybrid = field(c, "hybrid_override_pattern");
  int r;
  if (types) r = pattern_from_array(c, "layer_types", types, m->num_layers, pat);
  else if (cJSON_IsString(hybrid)) r = pattern_from_string(c, hybrid->valuestring, m->num_layers, pat);
  else if (blocks) r = pattern_from_array(c, "layers_block_type", blocks, m->num_layers, pat);
  else r = pattern_from_window(c, m, pat);
  if (r) return -1;
  km_model_set_layer_pattern(m, pat);
  if (strchr(pat, 'L') && m->sliding_window == 0)
    return fail(c, "field sliding_window missing (need a positive integer: the model has sliding-window layers)");
  return 0;
}

static int has_mamba(const km_model *m) {
  for (int i = 0; i < m->num_layers; i++)
    if (m->layer_kind[i] == KM_LAYER_MAMBA) return 1;
  return 0;
}

/* Mamba-2 state per layer: SSM d_inner x d_state, conv (d_conv - 1) x (d_inner + 2 n_groups d_state). */
static int parse_mamba(const cfg_ctx *c, km_model *m) {
  static const char *const state_keys[] = {"ssm_state_size", "mamba_d_state", "state_size", NULL};
  static const char *const conv_keys[] = {"conv_kernel", "mamba_d_conv", "d_conv", NULL};
  static const char *const group_keys[] = {"n_groups", "mamba_n_groups", "ngroups", NULL};
  static const char *const expand_keys[] = {"expand", "mamba_expand", NULL};
  const char *why = " for the Mamba layers";
  if (!has_mamba(m)) return 0;
  int heads = 0, head_dim = 0, expand = 0;
  if (get_one(c, "mamba_num_heads", 0, "", &heads) < 0 || get_one(c, "mamba_head_dim", 0, "", &head_dim) < 0)
    return -1;
  long long d_inner; /* a product of two ints: checked before it becomes one */
  if (heads > 0 && head_dim > 0) {
    d_inner = (long long)heads * head_dim;
  } else {
    if (get_positive(c, expand_keys, 0, "", &expand) < 0) return -1;
    if (expand == 0 || m->hidden_size == 0)
      return fail(c, "field mamba_num_heads missing (need it with mamba_head_dim, or expand with hidden_size%s)",
                  why);
    d_inner = (long long)expand * m->hidden_size;
  }
  if (d_inner > INT_MAX) return fail(c, "Mamba d_inner %lld is too large (need at most %d)", d_inner, INT_MAX);
  m->mamba_d_inner = (int)d_inner;
  if (get_positive(c, state_keys, 1, why, &m->mamba_d_state)) return -1;
  if (get_positive(c, conv_keys, 1, why, &m->mamba_d_conv)) return -1;
  return get_positive(c, group_keys, 0, "", &m->mamba_n_groups) < 0 ? -1 : 0; /* absent: Mamba-1, 0 */
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

static int parse_config(const cfg_ctx *top, km_model *m) {
  cfg_ctx c = *top;
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(top->root, "text_config");
  if (!cJSON_GetObjectItemCaseSensitive(top->root, "num_hidden_layers") && cJSON_IsObject(text)) c.obj = text;
  if (parse_heads(&c, m) || parse_head_dim(&c, m) || parse_dtype(&c, m) || parse_window(&c, m)) return -1;
  if (parse_layers(&c, m) || parse_mamba(&c, m)) return -1;
  return 0;
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
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    long off = (at && at >= text && at <= text + len) ? (long)(at - text) : 0;
    if (root) snprintf(err, errlen, "%s: not a JSON object (need a Hugging Face config.json object)", path);
    else snprintf(err, errlen, "%s: malformed JSON near byte %ld (need a Hugging Face config.json object)", path, off);
    cJSON_Delete(root);
    free(text);
    return -1;
  }
  cfg_ctx c = {path, root, root, err, errlen};
  memset(out, 0, sizeof *out);
  int r = parse_config(&c, out);
  if (r == 0) name_from_path(path, out->name, sizeof out->name);
  cJSON_Delete(root);
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
