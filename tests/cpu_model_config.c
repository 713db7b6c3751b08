/* Model shapes: every preset agrees field by field with its Hugging Face config.json fixture; each
 * fixture (the models' published config.json files) reads as transformers and vLLM read it (layer
 * pattern, class defaults for absent fields, dtype, the max_model_len vLLM derives); Python-json
 * semantics (Infinity, NaN, last duplicate key); and each bad input fails with one line naming the file
 * and the field (or the flag, for the byte table's budget checks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "model.h"
#include "test_util.h"

/* KM_EXPECT with a formatted reason: these checks compare many rows, so say which one failed. */
#define EXPECT KM_EXPECT_MSG

static int resolve_fixture(const char *rel, km_model *m, char *err, size_t errlen) {
  char path[1024];
  return km_model_resolve(km_test_fixture(rel, path, sizeof path), m, err, errlen);
}

static int from_text(const char *json, km_model *m, char *err, size_t errlen) {
  return km_model_from_json(json, strlen(json), "inline.json", m, err, errlen);
}

/* ---- presets == their fixtures */

static void expect_same_model(const km_model *a, const km_model *b, const char *what) {
  EXPECT(!strcmp(a->model_type, b->model_type), "%s model_type %s vs %s", what, a->model_type, b->model_type);
  EXPECT(a->num_layers == b->num_layers, "%s num_layers %d vs %d", what, a->num_layers, b->num_layers);
  EXPECT(a->num_attention_heads == b->num_attention_heads, "%s heads", what);
  EXPECT(a->num_kv_heads == b->num_kv_heads, "%s kv heads %d vs %d", what, a->num_kv_heads, b->num_kv_heads);
  EXPECT(a->head_dim == b->head_dim, "%s head_dim %d vs %d", what, a->head_dim, b->head_dim);
  EXPECT(a->hidden_size == b->hidden_size, "%s hidden_size", what);
  EXPECT(a->dtype_bytes == b->dtype_bytes, "%s dtype_bytes", what);
  EXPECT(a->sliding_window == b->sliding_window, "%s window %d vs %d", what, a->sliding_window, b->sliding_window);
  EXPECT(a->kv_lora_rank == b->kv_lora_rank && a->qk_rope_head_dim == b->qk_rope_head_dim, "%s MLA", what);
  EXPECT(a->mamba_version == b->mamba_version && a->mamba_d_inner == b->mamba_d_inner &&
             a->mamba_d_state == b->mamba_d_state && a->mamba_d_conv == b->mamba_d_conv &&
             a->mamba_n_groups == b->mamba_n_groups && a->mamba_num_heads == b->mamba_num_heads &&
             a->mamba_head_dim == b->mamba_head_dim && a->mamba_ssm_dtype_bytes == b->mamba_ssm_dtype_bytes,
         "%s Mamba fields", what);
  EXPECT(a->max_position_embeddings == b->max_position_embeddings, "%s max_position_embeddings", what);
  EXPECT(a->max_model_len == b->max_model_len, "%s max_model_len %lld vs %lld", what, a->max_model_len,
         b->max_model_len);
  int same = 1;
  for (int l = 0; l < a->num_layers && l < KM_MODEL_MAX_LAYERS; l++) same &= a->layer_kind[l] == b->layer_kind[l];
  EXPECT(same, "%s layer kinds differ", what);
}

static void test_presets(void) {
  size_t count = 0;
  const char *const *names = km_model_preset_names(&count);
  EXPECT(count == 7, "preset count %zu", count);
  for (size_t i = 0; i < count; i++) {
    km_model p, f;
    char err[512], rel[128];
    EXPECT(km_model_preset(names[i], &p) == 0, "preset %s", names[i]);
    EXPECT(strcmp(p.name, names[i]) == 0, "preset name %s", p.name);
    snprintf(rel, sizeof rel, "models/%s.json", names[i]);
    int rc = resolve_fixture(rel, &f, err, sizeof err);
    EXPECT(rc == 0, "fixture %s: %s", rel, err);
    if (rc == 0) {
      expect_same_model(&p, &f, names[i]);
      EXPECT(strcmp(f.name, names[i]) == 0, "fixture name %s", f.name);
    }
  }
  km_model m;
  EXPECT(km_model_preset("qwen3-9b", &m) == -1, "unknown preset accepted");
  /* element size override: fp8 halves Qwen3-8B: 147,456 / 2 = 73,728 */
  km_model_preset("qwen3-8b", &m);
  EXPECT(km_model_kv_bytes_per_token(&m, 1) == 73728, "fp8 bytes %.0f", km_model_kv_bytes_per_token(&m, 1));
}

/* ---- every fixture: what transformers' config class and vLLM make of it */

typedef struct shape_expect {
  const char *file;
  const char *model_type;
  int layers, kv_heads, head_dim, window;
  int global, local, mamba, mlp, linear;
  double kv_bytes;          /* km_model_kv_bytes_per_token(m, 0): attention layers x K+V (or latent) x 2 B */
  long long max_model_len;  /* vLLM's _get_and_verify_max_len */
  const char *max_len_key;
} shape_expect;

static const shape_expect shapes[] = {
    /* 32 x 8 x 128 x 2 x 2 = 131,072; rope llama3 is not applied: max_position_embeddings 131,072 */
    {"llama-3.1-8b.json", "llama", 32, 8, 128, 0, 32, 0, 0, 0, 0, 131072, 131072, "max_position_embeddings"},
    /* MistralConfig has no layer_types: vLLM's model-level sliding_window 4,096 slides every layer */
    {"mistral-7b-v0.1.json", "mistral", 32, 8, 128, 4096, 0, 32, 0, 0, 0, 131072, 32768, "max_position_embeddings"},
    /* sliding_window null stays None (MixtralConfig's default is None too) */
    {"mixtral-8x7b-v0.1.json", "mixtral", 32, 8, 128, 0, 32, 0, 0, 0, 0, 131072, 32768, "max_position_embeddings"},
    /* 36 x 8 x 128 x 4 = 147,456; use_sliding_window false */
    {"qwen3-8b.json", "qwen3", 36, 8, 128, 0, 36, 0, 0, 0, 0, 147456, 40960, "max_position_embeddings"},
    {"qwen3-32b.json", "qwen3", 64, 8, 128, 0, 64, 0, 0, 0, 0, 262144, 40960, "max_position_embeddings"},
    /* 48 x 4 x 128 x 4 = 98,304 */
    {"qwen3-30b-a3b.json", "qwen3_moe", 48, 4, 128, 0, 48, 0, 0, 0, 0, 98304, 40960, "max_position_embeddings"},
    /* full_attention_interval 4: layers 3, 7, ..., 47 attention (12), 36 delta-net; 12 x 2 x 256 x 4 = 24,576 */
    {"qwen3-next-80b-a3b-instruct.json", "qwen3_next", 48, 2, 256, 0, 12, 0, 0, 0, 36, 24576, 262144,
     "max_position_embeddings"},
    /* Gemma2Config alternates sliding (layer 0) and full: 21 + 21; 42 x 8 x 256 x 4 = 344,064 */
    {"gemma-2-9b.json", "gemma2", 42, 8, 256, 4096, 21, 21, 0, 0, 0, 344064, 8192, "max_position_embeddings"},
    /* text_config without head_dim: Gemma3TextConfig's 256 (not 3840 / 16 = 240); 40 sliding + 8 full;
     * max_position_embeddings the class default 131,072, rope scaling not applied to gemma3;
     * 48 x 8 x 256 x 4 = 393,216 */
    {"gemma-3-12b-it.json", "gemma3_text", 48, 8, 256, 1024, 8, 40, 0, 0, 0, 393216, 131072,
     "max_position_embeddings"},
    /* 62 x 16 x 128 x 4 = 507,904; period 6: layers 5, 11, ..., 59 global = 10, the other 52 local */
    {"gemma-3-27b.json", "gemma3_text", 62, 16, 128, 1024, 10, 52, 0, 0, 0, 507904, 131072, "max_position_embeddings"},
    /* layer_types alternate from sliding; yarn: original 4,096 x factor 32 = 131,072; 24 x 8 x 64 x 4 = 49,152 */
    {"gpt-oss-20b.json", "gpt_oss", 24, 8, 64, 128, 12, 12, 0, 0, 0, 49152, 131072, "max_position_embeddings"},
    /* MLA: 27 x (512 + 64) x 2 = 31,104; head_dim (128 + 64 + 128 + 1) / 2 = 160; yarn 4,096 x 40 = 163,840 */
    {"deepseek-v2-lite.json", "deepseek_v2", 27, 16, 160, 0, 27, 0, 0, 0, 0, 31104, 163840, "max_position_embeddings"},
    /* 61 x 576 x 2 = 70,272 */
    {"deepseek-v3.json", "deepseek_v3", 61, 128, 160, 0, 61, 0, 0, 0, 0, 70272, 163840, "max_position_embeddings"},
    /* Phi3Config has no layer_types: sliding_window 2,047 slides every layer; head_dim 3,072 / 32 = 96;
     * 32 x 32 x 96 x 4 = 393,216 */
    {"phi-3-mini-4k-instruct.json", "phi3", 32, 32, 96, 2047, 0, 32, 0, 0, 0, 393216, 4096, "max_position_embeddings"},
    /* longrope is not applied: 131,072 */
    {"phi-3.5-mini-instruct.json", "phi3", 32, 32, 96, 262144, 0, 32, 0, 0, 0, 393216, 131072,
     "max_position_embeddings"},
    /* attention where i % 8 == 4: layers 4, 12, 20, 28; 28 Mamba-1; 4 x 8 x 128 x 4 = 16,384 */
    {"jamba-v0.1.json", "jamba", 32, 8, 128, 0, 4, 0, 28, 0, 0, 16384, 262144, "max_position_embeddings"},
    /* the real config (time_step_limit [0.0, Infinity]): 4 '*', 24 'M', 24 '-'; 4 x 8 x 128 x 4 = 16,384 */
    {"nemotron-h-8b.json", "nemotron_h", 52, 8, 128, 0, 4, 0, 24, 24, 0, 16384, 8192, "max_position_embeddings"},
    /* pure Mamba-1: no attention shape, no length field (vLLM assumes 2,048) */
    {"falcon-mamba-7b.json", "falcon_mamba", 64, 0, 0, 0, 0, 0, 64, 0, 0, 0, 2048, ""},
    /* a folder holding config.json; no num_key_value_heads (MHA), head_dim = 256 / 4 = 64; float32 served in
     * 16 bits: 2 x 4 x 64 x 4 = 2,048; no length field */
    {"tiny-mha", "gpt2-like", 2, 4, 64, 0, 2, 0, 0, 0, 0, 2048, 2048, ""},
    /* layer_types, "dtype" key: 2 local at 128, 2 global; 4 x 8 x 64 x 4 = 8,192; GptOssConfig's defaults give
     * max_position_embeddings 131,072 and yarn 4,096 x 32 */
    {"layer-types.json", "gpt_oss", 4, 8, 64, 128, 2, 2, 0, 0, 0, 8192, 131072, "max_position_embeddings"},
    /* use_sliding_window false wins over sliding_window 131,072; head_dim 3,584 / 28 = 128; Qwen2Config's
     * max_position_embeddings 32,768; 28 x 4 x 128 x 4 = 57,344 */
    {"qwen2-window-off.json", "qwen2", 28, 4, 128, 0, 28, 0, 0, 0, 0, 57344, 32768, "max_position_embeddings"},
};

static void test_shapes(void) {
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const shape_expect *e = &shapes[i];
    km_model m;
    char err[512] = "", rel[128];
    snprintf(rel, sizeof rel, "models/%s", e->file);
    int rc = resolve_fixture(rel, &m, err, sizeof err);
    EXPECT(rc == 0, "%s: %s", e->file, err);
    if (rc) continue;
    EXPECT(!strcmp(m.model_type, e->model_type), "%s model_type %s", e->file, m.model_type);
    EXPECT(m.num_layers == e->layers && m.num_kv_heads == e->kv_heads && m.head_dim == e->head_dim,
           "%s layers %d kv %d d %d", e->file, m.num_layers, m.num_kv_heads, m.head_dim);
    EXPECT(m.sliding_window == e->window, "%s window %d", e->file, m.sliding_window);
    EXPECT(km_model_count_layers(&m, KM_LAYER_GLOBAL) == e->global && km_model_count_layers(&m, KM_LAYER_LOCAL) == e->local &&
               km_model_count_layers(&m, KM_LAYER_MAMBA) == e->mamba && km_model_count_layers(&m, KM_LAYER_MLP) == e->mlp &&
               km_model_count_layers(&m, KM_LAYER_LINEAR) == e->linear,
           "%s layers G%d L%d M%d -%d D%d", e->file, km_model_count_layers(&m, KM_LAYER_GLOBAL),
           km_model_count_layers(&m, KM_LAYER_LOCAL), km_model_count_layers(&m, KM_LAYER_MAMBA),
           km_model_count_layers(&m, KM_LAYER_MLP), km_model_count_layers(&m, KM_LAYER_LINEAR));
    EXPECT(m.dtype_bytes == 2, "%s dtype %d", e->file, m.dtype_bytes);
    EXPECT(km_model_kv_bytes_per_token(&m, 0) == e->kv_bytes, "%s: %.0f B/token, want %.0f", e->file,
           km_model_kv_bytes_per_token(&m, 0), e->kv_bytes);
    EXPECT(m.max_model_len == e->max_model_len && !strcmp(m.max_len_key, e->max_len_key), "%s max_model_len %lld (%s)",
           e->file, m.max_model_len, m.max_len_key);
  }
}

/* The state fields each state-space fixture carries, as vLLM's MambaStateShapeCalculator reads them. */
static void test_state_fields(void) {
  km_model m;
  char err[512] = "";
  /* Jamba: Mamba-1 over mamba_expand x hidden = 8,192, d_state 16, d_conv 4 */
  EXPECT(resolve_fixture("models/jamba-v0.1.json", &m, err, sizeof err) == 0, "jamba: %s", err);
  EXPECT(m.mamba_version == 1 && m.mamba_d_inner == 8192 && m.mamba_d_state == 16 && m.mamba_d_conv == 4 &&
             m.mamba_n_groups == 0,
         "jamba mamba v%d %d %d %d %d", m.mamba_version, m.mamba_d_inner, m.mamba_d_state, m.mamba_d_conv,
         m.mamba_n_groups);
  EXPECT(m.layer_kind[4] == KM_LAYER_GLOBAL && m.layer_kind[28] == KM_LAYER_GLOBAL && m.layer_kind[5] == KM_LAYER_MAMBA,
         "jamba pattern");
  /* Falcon-Mamba: config.json's intermediate_size 8,192 is set over expand (16) x hidden */
  EXPECT(resolve_fixture("models/falcon-mamba-7b.json", &m, err, sizeof err) == 0, "falcon: %s", err);
  EXPECT(m.mamba_version == 1 && m.mamba_d_inner == 8192 && m.mamba_d_state == 16 && m.mamba_d_conv == 4,
         "falcon mamba %d %d", m.mamba_d_inner, m.mamba_d_state);
  /* Nemotron-H: Mamba-2, 128 heads x 64 = 8,192, 8 groups, d_state 128; vLLM's NemotronH hook: float32 SSM */
  EXPECT(resolve_fixture("models/nemotron-h-8b.json", &m, err, sizeof err) == 0, "nemotron: %s", err);
  EXPECT(m.mamba_version == 2 && m.mamba_d_inner == 8192 && m.mamba_num_heads == 128 && m.mamba_head_dim == 64 &&
             m.mamba_n_groups == 8 && m.mamba_d_state == 128 && m.mamba_ssm_dtype_bytes == 4,
         "nemotron mamba");
  EXPECT(m.layer_kind[7] == KM_LAYER_GLOBAL && m.layer_kind[0] == KM_LAYER_MAMBA && m.layer_kind[1] == KM_LAYER_MLP,
         "nemotron pattern");
  /* Qwen3-Next: gated delta net 16 key heads x 128, 32 value heads x 128, conv 4; layer 3 full attention */
  EXPECT(resolve_fixture("models/qwen3-next-80b-a3b-instruct.json", &m, err, sizeof err) == 0, "qwen3-next: %s", err);
  EXPECT(m.linear_num_key_heads == 16 && m.linear_num_value_heads == 32 && m.linear_key_head_dim == 128 &&
             m.linear_value_head_dim == 128 && m.linear_conv_kernel == 4,
         "qwen3-next gdn fields");
  EXPECT(m.layer_kind[2] == KM_LAYER_LINEAR && m.layer_kind[3] == KM_LAYER_GLOBAL, "qwen3-next pattern");
  /* Gemma 3: layer 5 is the first global one (5 local : 1 global) */
  EXPECT(resolve_fixture("models/gemma-3-12b-it.json", &m, err, sizeof err) == 0, "gemma3: %s", err);
  EXPECT(m.layer_kind[4] == KM_LAYER_LOCAL && m.layer_kind[5] == KM_LAYER_GLOBAL && m.layer_kind[6] == KM_LAYER_LOCAL,
         "gemma pattern");
  /* gemma-2's float32 checkpoint: config dtype kept for the note, served in 2 bytes */
  EXPECT(resolve_fixture("models/gemma-2-9b.json", &m, err, sizeof err) == 0, "gemma2: %s", err);
  EXPECT(!strcmp(m.config_dtype, "float32") && m.dtype_bytes == 2 && m.layer_kind[0] == KM_LAYER_LOCAL, "gemma2 dtype");
}

/* ---- config reading rules on small inline configs */

static void test_json_rules(void) {
  km_model m;
  char err[512] = "";
  /* Python's dict keeps the last of duplicate keys: 36 layers, not 2; Infinity and NaN in fields not read */
  EXPECT(from_text("{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"num_hidden_layers\": 36, "
                   "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"x\": [Infinity, -Infinity, NaN]}",
                   &m, err, sizeof err) == 0 && m.num_layers == 36 && m.head_dim == 128,
         "duplicate keys: %s layers %d", err, m.num_layers);
  /* "Infinity" inside a string stays a string */
  EXPECT(from_text("{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 256, "
                   "\"torch_dtype\": \"Infinity\"}", &m, err, sizeof err) == -1 && strstr(err, "\"Infinity\""),
         "string Infinity: %s", err);
  /* an explicit null is None, not the class default: MistralConfig's sliding_window 4,096 applies only when absent */
  EXPECT(from_text("{\"model_type\": \"mistral\", \"num_hidden_layers\": 4, \"num_attention_heads\": 32, "
                   "\"hidden_size\": 4096, \"sliding_window\": null}", &m, err, sizeof err) == 0 &&
             m.sliding_window == 0 && m.num_kv_heads == 8 && m.max_model_len == 131072,
         "mistral null window %d kv %d len %lld", m.sliding_window, m.num_kv_heads, m.max_model_len);
  EXPECT(from_text("{\"model_type\": \"mistral\", \"num_hidden_layers\": 4, \"num_attention_heads\": 32, "
                   "\"hidden_size\": 4096}", &m, err, sizeof err) == 0 && m.sliding_window == 4096 &&
             m.layer_kind[0] == KM_LAYER_LOCAL,
         "mistral default window %d", m.sliding_window);
  /* a wrapper's llm_config (InternVL style) holds the language model */
  EXPECT(from_text("{\"model_type\": \"internvl_chat\", \"llm_config\": {\"model_type\": \"qwen2\", "
                   "\"num_hidden_layers\": 28, \"num_attention_heads\": 28, \"num_key_value_heads\": 4, "
                   "\"hidden_size\": 3584, \"max_position_embeddings\": 32768}, \"torch_dtype\": \"bfloat16\"}",
                   &m, err, sizeof err) == 0 && m.num_layers == 28 && m.num_kv_heads == 4 && m.head_dim == 128,
         "llm_config: %s", err);
  /* layer_types with only full_attention and a window: not interleaved, so vLLM's model-level window slides all */
  EXPECT(from_text("{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 256, \"sliding_window\": "
                   "512, \"layer_types\": [\"full_attention\", \"full_attention\"]}", &m, err, sizeof err) == 0 &&
             m.layer_kind[0] == KM_LAYER_LOCAL && m.layer_kind[1] == KM_LAYER_LOCAL,
         "model-level window: %s", err);
  /* Falcon-H1 (FalconH1Config defaults): every layer attention + Mamba-2, mamba_d_head auto = 1,536 / 24 = 64,
   * d_state 256, d_conv 4, 1 group */
  EXPECT(from_text("{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
                   "\"num_key_value_heads\": 2, \"head_dim\": 64, \"hidden_size\": 1024, \"mamba_d_ssm\": 1536, "
                   "\"mamba_n_heads\": 24}", &m, err, sizeof err) == 0 &&
             km_model_count_layers(&m, KM_LAYER_PARALLEL) == 4 && m.mamba_version == 2 && m.mamba_d_inner == 1536 &&
             m.mamba_head_dim == 64 && m.mamba_d_state == 256 && m.mamba_d_conv == 4 && m.mamba_n_groups == 1,
         "falcon_h1: %s d %d hd %d", err, m.mamba_d_inner, m.mamba_head_dim);
}

/* vLLM's _get_and_verify_max_len on the length fields and rope_scaling. */
static void test_max_len(void) {
  static const struct {
    const char *extra;
    long long want;
    const char *key;
  } cases[] = {
      /* yarn: original_max_position_embeddings 32,768 x factor 4 */
      {"\"max_position_embeddings\": 32768, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
       "\"original_max_position_embeddings\": 32768}", 131072, "max_position_embeddings"},
      /* dynamic (the old "type" key): 4,096 x 2 */
      {"\"max_position_embeddings\": 4096, \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}", 8192,
       "max_position_embeddings"},
      /* su is longrope: not applied */
      {"\"max_position_embeddings\": 131072, \"rope_scaling\": {\"type\": \"su\", \"factor\": 32.0}", 131072,
       "max_position_embeddings"},
      /* mrope is patched to default: no factor */
      {"\"max_position_embeddings\": 128000, \"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [16, 24, 24]}",
       128000, "max_position_embeddings"},
      /* the smallest length field wins; model_max_length overrides them all */
      {"\"max_position_embeddings\": 2048, \"n_positions\": 1024", 1024, "n_positions"},
      {"\"max_position_embeddings\": 8192, \"model_max_length\": 16384", 16384, "model_max_length"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char json[512], err[512] = "";
    km_model m;
    snprintf(json, sizeof json, "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"hidden_size\": 256, %s}",
             cases[i].extra);
    int rc = from_text(json, &m, err, sizeof err);
    EXPECT(rc == 0 && m.max_model_len == cases[i].want && !strcmp(m.max_len_key, cases[i].key),
           "case %zu: %s len %lld key %s", i, err, m.max_model_len, m.max_len_key);
  }
}

/* ---- errors: one line, naming the file and the field */

typedef struct bad_case {
  const char *file;
  const char *must_contain; /* besides the file's path */
} bad_case;

static const bad_case bad_cases[] = {
    {"bad/truncated.json", "malformed JSON"},
    {"bad/not_object.json", "not a JSON object"},
    {"bad/missing_layers.json", "field num_hidden_layers missing"},
    {"bad/zero_heads.json", "field num_attention_heads is 0"},
    {"bad/negative_kv_heads.json", "field num_key_value_heads is -8"},
    {"bad/fractional_layers.json", "field num_hidden_layers is 36.5"},
    {"bad/string_layers.json", "field num_hidden_layers is not a number"},
    {"bad/no_head_dim.json", "field hidden_size missing"},
    {"bad/bad_dtype.json", "field torch_dtype is \"int4\""},
    {"bad/layer_types_count.json", "field layer_types has 2 entries"},
    {"bad/sliding_no_window.json", "field sliding_window missing"},
    {"bad/hybrid_bad_char.json", "field hybrid_override_pattern has 'X'"},
    {"bad/mamba_no_state.json", "field ssm_state_size missing"},
    {"bad/mla_no_rope.json", "field qk_rope_head_dim missing"},
    {"bad/too_many_layers.json", "field num_hidden_layers is 2000"},
    {"bad/kv_heads_not_divisor.json", "field num_key_value_heads is 5 (need a divisor of num_attention_heads 32)"},
    {"bad/unsupported_llama4.json", "model_type llama4: chunked local attention"},
    {"bad/linear_no_fields.json", "field linear_num_key_heads missing"},
    {"bad/nan_layers.json", "field num_hidden_layers is not a number"},
    {"bad/infinite_kv_heads.json", "field num_key_value_heads is inf"},
    {"bad/rope_no_type.json", "field rope_scaling has no rope_type"},
    {"bad/jamba_offset_past_period.json", "field attn_layer_offset is 8"},
    {"bad/max_len_overflow.json", "gives a max_model_len of"},
    {"bad/does_not_exist.json", "cannot read config.json"},
};

static void test_errors(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    km_model m;
    char err[512] = "", path[1024];
    km_test_fixture(bad_cases[i].file, path, sizeof path);
    int rc = km_model_resolve(path, &m, err, sizeof err);
    EXPECT(rc == -1, "%s accepted", bad_cases[i].file);
    EXPECT(strstr(err, path) == err, "%s: message does not start with the path: %s", bad_cases[i].file, err);
    EXPECT(strstr(err, bad_cases[i].must_contain) != NULL, "%s: want \"%s\" in: %s", bad_cases[i].file,
           bad_cases[i].must_contain, err);
    EXPECT(strchr(err, '\n') == NULL && strlen(err) > 0, "%s: not one line: %s", bad_cases[i].file, err);
  }
  km_model m;
  char err[512] = "";
  EXPECT(km_model_resolve("", &m, err, sizeof err) == -1 && strstr(err, "--model"), "empty name: %s", err);
  /* an unknown name that is not a file lists the presets */
  EXPECT(km_model_resolve("qwen3-9b", &m, err, sizeof err) == -1 && strstr(err, "qwen3-8b"), "unknown: %s", err);
}

static void test_budget_errors(void) {
  km_model m;
  km_bytes_params p;
  km_table *t = NULL;
  char err[512] = "";
  km_model_preset("qwen3-8b", &m);
  km_bytes_params_default(&p);
  /* one 40,960-token request: 2,560 blocks x 36 layers x 65,536 B = 6,039,797,760 B (vLLM's
   * check_enough_kv_cache_memory); one byte less must fail, naming the longest request that fits:
   * 2,559 blocks = 40,944 tokens */
  p.kv_budget = 6039797759;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && t == NULL, "budget below one request accepted");
  EXPECT(strstr(err, "--kv-budget") && strstr(err, "--max-model-len 40960") && strstr(err, "6,039,797,760") &&
             strstr(err, "40,944 tokens"),
         "msg: %s", err);
  p.kv_budget = 6039797760; /* exactly one request */
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == 0, "one request rejected: %s", err);
  km_table_free(t);
  km_bytes_params_default(&p);
  p.kv_budget = -1;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--kv-budget"), "neg budget: %s", err);
  km_bytes_params_default(&p);
  p.max_model_len = -5;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--max-model-len"), "len: %s", err);
  km_bytes_params_default(&p);
  p.block_size = -16;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--block-size"), "bs: %s", err);
  km_bytes_params_default(&p);
  p.max_num_batched_tokens = 0;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--max-num-batched-tokens"),
         "batched: %s", err);
  km_bytes_params_default(&p);
  p.host_budget = -1;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--host-budget"), "host: %s", err);
  km_bytes_params_default(&p);
  m.num_kv_heads = 0;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "qwen3-8b"), "kv heads 0: %s", err);
}

int main(void) {
  test_presets();
  test_shapes();
  test_state_fields();
  test_json_rules();
  test_max_len();
  test_errors();
  test_budget_errors();
  return km_test_finish("cpu_model_config");
}
