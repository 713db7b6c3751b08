/* CPU checks of the prefill rows' shapes: each preset's MLP width against the model's config.json in
 * tests/fixtures/models/, the GEMMs of a dense and an MoE layer, their FLOPs, the attention FLOPs with and
 * without a sliding window, and the models the rows refuse (MLA, Mamba layers, no width known). */
#include <string.h>

#include <cjson/cJSON.h>

#include "bytes_table.h"
#include "prefill_shapes.h"
#include "test_util.h"

static int resolve(const char *preset, km_prefill_shape *s, char *err, size_t errlen) {
  km_model m;
  if (km_model_preset(preset, &m) != 0) return -2;
  return km_prefill_shape_resolve(&m, NULL, s, err, errlen);
}

static void test_widths_match_configs(void) {
  const char *const presets[] = {"qwen3-8b", "llama-3.1-8b", "qwen3-32b", "mistral-7b-v0.1", "gemma-3-27b"};
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
    char path[128], err[256];
    snprintf(path, sizeof path, "models/%s.json", presets[i]);
    cJSON *cfg = km_test_read_json(path);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    const cJSON *width = cJSON_GetObjectItemCaseSensitive(text ? text : cfg, "intermediate_size");
    km_prefill_shape s;
    KM_EXPECT_MSG(resolve(presets[i], &s, err, sizeof err) == 0, "%s: %s", presets[i], err);
    KM_EXPECT_MSG(cJSON_IsNumber(width) && s.intermediate == width->valueint, "%s: intermediate %d, config %d",
                  presets[i], s.intermediate, cJSON_IsNumber(width) ? width->valueint : -1);
    cJSON_Delete(cfg);
  }
}

static void test_dense_layer(void) {
  km_prefill_shape s;
  km_prefill_gemm g[KM_PREFILL_MAX_GEMMS];
  char err[256];
  KM_EXPECT(resolve("qwen3-8b", &s, err, sizeof err) == 0);
  KM_EXPECT(s.layers == 36 && s.hidden == 4096 && s.windowed_layers == 0);
  KM_EXPECT(km_prefill_layer_gemms(&s, 2048, g) == 4);
  /* QKV: (32 + 2 x 8) heads x 128 = 6144 out of 4096; O: 4096 of 4096; gate/up: 2 x 12288; down: 12288 in */
  KM_EXPECT(g[0].tokens == 2048 && g[0].n == 6144 && g[0].k == 4096 && g[0].batch == 1);
  KM_EXPECT(g[1].n == 4096 && g[1].k == 4096);
  KM_EXPECT(g[2].n == 24576 && g[2].k == 4096);
  KM_EXPECT(g[3].n == 4096 && g[3].k == 12288);
  /* 2 x 4096 x (6144 + 4096 + 24576 + 12288) FLOPs per token per layer */
  KM_EXPECT_NEAR(km_prefill_linear_flops(&s, 1), 385875968.0, 0);
  KM_EXPECT_NEAR(km_prefill_linear_flops(&s, 2048), 2048 * 385875968.0, 0);
  /* attention: 4 x 32 x 128 per token and context token; chunk 2048 after 16,384 sees 16,384 + (i + 1) */
  const double ctx = 2048.0 * 16384 + 2048.0 * 2049 / 2;
  KM_EXPECT_NEAR(km_prefill_attention_flops(&s, 2048, 16384), 4.0 * 32 * 128 * ctx, 1);
}

static void test_windowed(void) {
  km_prefill_shape s;
  char err[256];
  KM_EXPECT(resolve("mistral-7b-v0.1", &s, err, sizeof err) == 0);
  KM_EXPECT(s.window == 4096 && s.windowed_layers == 32);
  /* after 16,384 tokens every token of the chunk sees the 4,096 of its window */
  KM_EXPECT_NEAR(km_prefill_attention_flops(&s, 1024, 16384), 4.0 * 32 * 128 * 1024 * 4096, 1);
  /* gemma-3-27b: 52 of 62 layers windowed at 1,024; the rest see everything */
  KM_EXPECT(resolve("gemma-3-27b", &s, err, sizeof err) == 0);
  KM_EXPECT(s.windowed_layers == 52 && s.window == 1024);
  const double full = 512.0 * 8192 + 512.0 * 513 / 2, windowed = 512.0 * 1024;
  KM_EXPECT_NEAR(km_prefill_attention_flops(&s, 512, 8192), 4.0 * 32 * 128 * (full * 10 + windowed * 52) / 62, 1);
}

static void test_moe_layer(void) {
  km_prefill_shape s;
  km_prefill_gemm g[KM_PREFILL_MAX_GEMMS];
  char err[256];
  KM_EXPECT(km_prefill_shape_resolve(NULL, "qwen3-30b-a3b", &s, err, sizeof err) == 0);
  KM_EXPECT(s.experts == 128 && s.experts_active == 8 && s.moe_intermediate == 768 && s.layers == 48);
  KM_EXPECT(km_prefill_layer_gemms(&s, 512, g) == 4);
  /* 512 tokens x 8 experts each over 128 experts: 32 tokens per expert */
  KM_EXPECT(g[0].n == (32 + 8) * 128 && g[0].k == 2048);
  KM_EXPECT(g[2].tokens == 32 && g[2].n == 1536 && g[2].k == 2048 && g[2].batch == 128);
  KM_EXPECT(g[3].tokens == 32 && g[3].n == 2048 && g[3].k == 768 && g[3].batch == 128);
  const double want = 2.0 * 512 * (5120.0 * 2048 + 2048.0 * 4096) + 2.0 * 512 * 8 * (1536.0 * 2048 + 2048.0 * 768);
  KM_EXPECT_NEAR(km_prefill_linear_flops(&s, 512), want, 0);
  KM_EXPECT(km_prefill_layer_gemms(&s, 1, g) == 0); /* 8 routed tokens do not split over 128 experts */
}

static void test_refusals(void) {
  km_prefill_shape s;
  char err[256] = "";
  KM_EXPECT(resolve("deepseek-v3", &s, err, sizeof err) == -1 && strstr(err, "MLA"));
  KM_EXPECT(resolve("nemotron-h-8b", &s, err, sizeof err) == -1 && strstr(err, "Mamba"));
  km_model m;
  KM_EXPECT(km_model_preset("qwen3-8b", &m) == 0);
  snprintf(m.name, sizeof m.name, "some-config");
  KM_EXPECT(km_prefill_shape_resolve(&m, NULL, &s, err, sizeof err) == -1 && strstr(err, "no MLP width"));
  KM_EXPECT(km_prefill_shape_resolve(&m, "no-such-shape", &s, err, sizeof err) == -1);
}

int main(void) {
  test_widths_match_configs();
  test_dense_layer();
  test_windowed();
  test_moe_layer();
  test_refusals();
  return km_test_finish("cpu_prefix_prefill_shapes");
}
