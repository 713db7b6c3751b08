/* Model shapes: every preset agrees field by field with its Hugging Face config.json fixture, K+V bytes
 * per token are checked against hand arithmetic, and each bad input fails with one line naming the file
 * and the field (or the flag, for the byte table's budget checks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "test_util.h"
#include "model.h"

/* KM_EXPECT with a formatted reason: these checks compare many rows, so say which one failed. */
#define EXPECT KM_EXPECT_MSG

static int resolve_fixture(const char *rel, km_model *m, char *err, size_t errlen) {
  char path[1024];
  return km_model_resolve(km_test_fixture(rel, path, sizeof path), m, err, errlen);
}

/* ---- presets == their fixtures */

static void expect_same_model(const km_model *a, const km_model *b, const char *what) {
  EXPECT(a->num_layers == b->num_layers, "%s num_layers %d vs %d", what, a->num_layers, b->num_layers);
  EXPECT(a->num_attention_heads == b->num_attention_heads, "%s heads", what);
  EXPECT(a->num_kv_heads == b->num_kv_heads, "%s kv heads %d vs %d", what, a->num_kv_heads, b->num_kv_heads);
  EXPECT(a->head_dim == b->head_dim, "%s head_dim %d vs %d", what, a->head_dim, b->head_dim);
  EXPECT(a->hidden_size == b->hidden_size, "%s hidden_size", what);
  EXPECT(a->dtype_bytes == b->dtype_bytes, "%s dtype_bytes", what);
  EXPECT(a->sliding_window == b->sliding_window, "%s window %d vs %d", what, a->sliding_window, b->sliding_window);
  EXPECT(a->kv_lora_rank == b->kv_lora_rank && a->qk_rope_head_dim == b->qk_rope_head_dim, "%s MLA", what);
  EXPECT(a->mamba_d_inner == b->mamba_d_inner && a->mamba_d_state == b->mamba_d_state &&
             a->mamba_d_conv == b->mamba_d_conv && a->mamba_n_groups == b->mamba_n_groups,
         "%s Mamba fields", what);
  EXPECT(a->max_position_embeddings == b->max_position_embeddings, "%s max_position_embeddings", what);
  int same = 1;
  for (int l = 0; l < a->num_layers && l < KM_MODEL_MAX_LAYERS; l++) same &= a->layer_kind[l] == b->layer_kind[l];
  EXPECT(same, "%s layer kinds differ", what);
}

static void count_kinds(const km_model *m, int counts[KM_LAYER_KIND_COUNT]) {
  memset(counts, 0, KM_LAYER_KIND_COUNT * sizeof counts[0]);
  for (int l = 0; l < m->num_layers; l++) counts[m->layer_kind[l]]++;
}

typedef struct preset_expect {
  const char *name;
  double kv_bytes;        /* km_model_kv_bytes_per_token(m, 0), worked out in the comment */
  int global, local, mamba, mlp;
} preset_expect;

static const preset_expect expected[] = {
    /* 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 147,456 */
    {"qwen3-8b", 147456, 36, 0, 0, 0},
    /* 32 x 8 x (4096 / 32 = 128) x 2 x 2 = 131,072 */
    {"llama-3.1-8b", 131072, 32, 0, 0, 0},
    /* 64 x 8 x 128 x 2 x 2 = 262,144 */
    {"qwen3-32b", 262144, 64, 0, 0, 0},
    /* 32 x 8 x 128 x 2 x 2 = 131,072; every layer windowed at 4096 */
    {"mistral-7b-v0.1", 131072, 0, 32, 0, 0},
    /* 62 x 16 x 128 x 2 x 2 = 507,904; period 6: layers 5, 11, ..., 59 global = 10, the other 52 local */
    {"gemma-3-27b", 507904, 10, 52, 0, 0},
    /* MLA: 61 x (512 + 64) x 2 = 70,272 */
    {"deepseek-v3", 70272, 61, 0, 0, 0},
    /* only the 4 '*' layers store KV: 4 x 8 x 128 x 2 x 2 = 16,384; 24 'M', 24 '-' */
    {"nemotron-h-8b", 16384, 4, 0, 24, 24},
};

static void test_presets(void) {
  size_t count = 0;
  const char *const *names = km_model_preset_names(&count);
  EXPECT(count == sizeof expected / sizeof expected[0], "preset count %zu", count);
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
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    const preset_expect *e = &expected[i];
    km_model m;
    int counts[KM_LAYER_KIND_COUNT];
    EXPECT(km_model_preset(e->name, &m) == 0, "preset %s missing", e->name);
    count_kinds(&m, counts);
    EXPECT(km_model_kv_bytes_per_token(&m, 0) == e->kv_bytes, "%s: %.0f B/token, want %.0f", e->name,
           km_model_kv_bytes_per_token(&m, 0), e->kv_bytes);
    EXPECT(counts[KM_LAYER_GLOBAL] == e->global && counts[KM_LAYER_LOCAL] == e->local &&
               counts[KM_LAYER_MAMBA] == e->mamba && counts[KM_LAYER_MLP] == e->mlp,
           "%s layers G%d L%d M%d -%d", e->name, counts[0], counts[1], counts[2], counts[3]);
  }
  km_model m;
  EXPECT(km_model_preset("qwen3-9b", &m) == -1, "unknown preset accepted");
  /* element size override: fp8 halves Qwen3-8B: 147,456 / 2 = 73,728 */
  km_model_preset("qwen3-8b", &m);
  EXPECT(km_model_kv_bytes_per_token(&m, 1) == 73728, "fp8 bytes %.0f", km_model_kv_bytes_per_token(&m, 1));
  /* Gemma 3: layer index 5 is the first global one (5 local : 1 global) */
  km_model_preset("gemma-3-27b", &m);
  EXPECT(m.layer_kind[4] == KM_LAYER_LOCAL && m.layer_kind[5] == KM_LAYER_GLOBAL && m.layer_kind[6] == KM_LAYER_LOCAL,
         "gemma pattern");
  /* Nemotron-H: attention at 7, 18, 29, 40 of M-M-M-M*-... */
  km_model_preset("nemotron-h-8b", &m);
  EXPECT(m.layer_kind[7] == KM_LAYER_GLOBAL && m.layer_kind[40] == KM_LAYER_GLOBAL &&
             m.layer_kind[0] == KM_LAYER_MAMBA && m.layer_kind[1] == KM_LAYER_MLP,
         "nemotron pattern");
}

/* ---- defaults and other config shapes */

static void test_config_defaults(void) {
  km_model m;
  char err[512];
  /* a folder holding config.json; no num_key_value_heads (MHA), head_dim = 256 / 4 = 64, float32 = 4 B:
   * 2 layers x 4 heads x 64 x 2 x 4 B = 4,096 */
  int rc = resolve_fixture("models/tiny-mha", &m, err, sizeof err);
  EXPECT(rc == 0, "tiny-mha: %s", err);
  EXPECT(m.num_kv_heads == 4 && m.head_dim == 64 && m.dtype_bytes == 4, "tiny-mha kv %d d %d b %d", m.num_kv_heads,
         m.head_dim, m.dtype_bytes);
  EXPECT(km_model_kv_bytes_per_token(&m, 0) == 4096, "tiny-mha bytes %.0f", km_model_kv_bytes_per_token(&m, 0));
  EXPECT(strcmp(m.name, "tiny-mha") == 0, "tiny-mha name %s", m.name);
  /* use_sliding_window false wins over sliding_window 131072; head_dim 3584 / 28 = 128 */
  rc = resolve_fixture("models/qwen2-window-off.json", &m, err, sizeof err);
  EXPECT(rc == 0 && m.sliding_window == 0 && m.layer_kind[27] == KM_LAYER_GLOBAL && m.head_dim == 128,
         "qwen2 window off: %s", err);
  /* layer_types, "dtype" key: 2 local at 128, 2 global; 4 x 8 x 64 x 2 x 2 = 8,192 */
  rc = resolve_fixture("models/layer-types.json", &m, err, sizeof err);
  EXPECT(rc == 0, "layer-types: %s", err);
  EXPECT(m.sliding_window == 128 && m.layer_kind[0] == KM_LAYER_LOCAL && m.layer_kind[1] == KM_LAYER_GLOBAL,
         "layer-types kinds");
  EXPECT(km_model_kv_bytes_per_token(&m, 0) == 8192, "layer-types bytes %.0f", km_model_kv_bytes_per_token(&m, 0));
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
  /* one block = 16 tokens x 147,456 B = 2,359,296 B; one byte less must fail */
  p.kv_budget = 2359295;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && t == NULL, "budget below one block accepted");
  EXPECT(strstr(err, "--kv-budget") && strstr(err, "below one block") && strstr(err, "2,359,296"), "msg: %s", err);
  p.kv_budget = 2359296; /* exactly one block: 16 tokens */
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == 0, "one block rejected: %s", err);
  km_table_free(t);
  km_bytes_params_default(&p);
  p.kv_budget = -1;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--kv-budget"), "neg budget: %s", err);
  km_bytes_params_default(&p);
  p.max_model_len = 0;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--max-model-len"), "len 0: %s", err);
  km_bytes_params_default(&p);
  p.block_size = -16;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--block-size"), "bs: %s", err);
  km_bytes_params_default(&p);
  p.host_budget = -1;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "--host-budget"), "host: %s", err);
  km_bytes_params_default(&p);
  m.num_kv_heads = 0;
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == -1 && strstr(err, "qwen3-8b"), "kv heads 0: %s", err);
}

int main(void) {
  test_presets();
  test_config_defaults();
  test_errors();
  test_budget_errors();
  return km_test_finish("cpu_model_config");
}
