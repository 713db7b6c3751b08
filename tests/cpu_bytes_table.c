/* The per-token byte table against vLLM v1's sizing rules worked by hand (vLLM v0.11):
 *   page (kv_cache_interface.py AttentionSpec.page_size_bytes) = block x KV heads x 2 (K, V) x head_dim x B
 *   get_num_blocks (kv_cache_utils.py)                      = budget // page // layers per group
 *   "GPU KV cache size" (_report_kv_cache_config)           = num_blocks // groups x smallest block
 *   "Maximum concurrency" (get_max_concurrency_for_kv_cache_config) = num_blocks / blocks one request needs,
 *     FullAttentionSpec cdiv(max_model_len, block), SlidingWindowSpec cdiv(min(W - 1 + 8,192, len), block) + 1,
 *     MambaSpec 1 per group; hybrids group layers (_get_kv_cache_groups_uniform_page_size) and take the
 *     attention block HybridAttentionMambaModelConfig derives from the state page.
 * The source article's numbers for the default (Qwen3-8B, 58,987,118,592 B, 40,960-token requests, 16-token
 * blocks), the two numbers vLLM logs for each fixture model (the models' published config.json files), and
 * the flags that change them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "test_util.h"

/* KM_EXPECT with a formatted reason: these checks compare many rows, so say which one failed. */
#define EXPECT KM_EXPECT_MSG
#define NONE NAN /* a figure not checked */

static const char *const techniques[12] = {"gqa",          "cross_layer", "mla",        "sliding_window",
                                           "hybrid_mamba", "kv_quant",    "eviction",   "compressed",
                                           "prefix_reuse", "sparse_read", "paged",      "offload"};
static const char *const mechanisms[12] = {"store fewer bytes", "store fewer bytes", "store fewer bytes",
                                           "store fewer bytes", "store fewer bytes", "store fewer bytes",
                                           "store fewer bytes", "store fewer bytes", "compute less",
                                           "read less",         "move bytes",        "move bytes"};

static size_t col(const km_table *t, const char *key) {
  for (size_t c = 0; c < t->ncols; c++)
    if (strcmp(t->cols[c].key, key) == 0) return c;
  fprintf(stderr, "no column %s\n", key);
  exit(1);
}

static const km_cell *cell(const km_table *t, size_t r, const char *key) {
  return &t->cells[r * t->ncols + col(t, key)];
}

static const char *text(const km_table *t, size_t r, const char *key) {
  const km_cell *c = cell(t, r, key);
  return c->kind == KM_CELL_TEXT ? c->text : "";
}

static double num(const km_table *t, size_t r, const char *key) {
  const km_cell *c = cell(t, r, key);
  return (c->kind == KM_CELL_NUMBER || c->kind == KM_CELL_INTEGER) ? c->number : NAN;
}

static long find(const km_table *t, const char *tech, const char *variant) {
  for (size_t r = 0; r < t->nrows; r++)
    if (!strcmp(text(t, r, "technique"), tech) && !strcmp(text(t, r, "variant"), variant)) return (long)r;
  return -1;
}

static int near2(double got, double want) { return isnan(want) || fabs(got - want) <= 0.005; }

/* One row's figures; NONE skips a figure. Concurrencies and the ratio to the 2 decimals the table shows. */
static void expect_row(const km_table *t, const char *tech, const char *variant, double bytes, double slots,
                       double conc, double ideal, double x) {
  long r = find(t, tech, variant);
  EXPECT(r >= 0, "%s: no row %s/%s", t->title, tech, variant);
  if (r < 0) return;
  double b = num(t, r, "bytes_per_token"), n = num(t, r, "kv_cache_tokens"), c = num(t, r, "max_concurrency");
  double i = num(t, r, "ideal_concurrency"), cx = num(t, r, "capacity_x");
  EXPECT(isnan(bytes) || b == bytes, "%s %s/%s bytes %.1f want %.1f", t->title, tech, variant, b, bytes);
  EXPECT(isnan(slots) || n == slots, "%s %s/%s slots %.0f want %.0f", t->title, tech, variant, n, slots);
  EXPECT(near2(c, conc), "%s %s/%s concurrency %.4f want %.2f", t->title, tech, variant, c, conc);
  EXPECT(near2(i, ideal), "%s %s/%s ideal %.4f want %.2f", t->title, tech, variant, i, ideal);
  EXPECT(near2(cx, x), "%s %s/%s vs cfg %.4f want %.2f", t->title, tech, variant, cx, x);
}

/* The two lines vLLM logs, as the caption prints them (vLLM's f"{n:,}" and "%.2fx"). */
static void expect_logged(const km_table *t, const char *tokens, const char *len, const char *conc) {
  char a[96], b[128];
  snprintf(a, sizeof a, "GPU KV cache size: %s tokens", tokens);
  snprintf(b, sizeof b, "Maximum concurrency for %s tokens per request: %sx", len, conc);
  int ok = t->ncaption > 1 && strstr(t->caption[1], a) && strstr(t->caption[1], b) &&
           strstr(t->caption[1], "vLLM v0.11");
  EXPECT(ok, "%s: want \"%s\" and \"%s\" in: %s", t->title, a, b, t->ncaption > 1 ? t->caption[1] : "(none)");
}

static km_table *build_model(const km_model *m, const km_bytes_params *p) {
  km_table *t = NULL;
  char err[512] = "";
  if (km_bytes_table_build(m, p, &t, err, sizeof err) != 0) {
    fprintf(stderr, "%s: build failed: %s\n", m->name, err);
    exit(1);
  }
  return t;
}

/* A preset name or a fixture under models/; p NULL: the defaults (the model's own max_model_len). */
static km_table *build(const char *name, const km_bytes_params *p) {
  km_model m;
  km_bytes_params d;
  char err[512] = "", rel[128], path[1024];
  if (km_model_preset(name, &m) != 0) {
    snprintf(rel, sizeof rel, "models/%s", name);
    if (km_model_resolve(km_test_fixture(rel, path, sizeof path), &m, err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", name, err);
      exit(1);
    }
  }
  km_bytes_params_default(&d);
  return build_model(&m, p ? p : &d);
}

/* ---- the source article's figures */

static void test_default(void) {
  km_bytes_params p;
  km_bytes_params_default(&p);
  EXPECT(p.kv_budget == 58987118592.0 && p.max_model_len == 0 && p.block_size == 16 && p.max_num_batched_tokens == 8192,
         "defaults");
  km_table *t = build("qwen3-8b", NULL);
  /* 36 x 8 x 128 x 2 x 2 = 147,456 B; page 16 x 8 x 128 x 2 x 2 = 65,536 B; one group of 36 layers:
   * 58,987,118,592 // 65,536 // 36 = 900,072 // 36 = 25,002 blocks = 400,032 tokens; a request takes
   * cdiv(40,960, 16) = 2,560 blocks: 25,002 / 2,560 = 9.766 -> 9.77x */
  expect_row(t, "gqa", "as_configured", 147456, 400032, 9.77, 9.77, 1.0);
  expect_logged(t, "400,032", "40,960", "9.77");
  EXPECT(t->ncaption > 2 && strstr(t->caption[2], "(25,002 blocks of 16 tokens in 1 KV cache group of 36 layers;"),
         "blocks line: %s", t->ncaption > 2 ? t->caption[2] : "");
  /* MHA: 32 heads -> 589,824 B; page 262,144: 225,018 // 36 = 6,250 blocks = 100,000 tokens; 2.44x */
  expect_row(t, "gqa", "mha", 589824, 100000, 2.44, 2.44, 0.25);
  /* MQA: 1 head -> 18,432 B; page 8,192: 7,200,576 // 36 = 200,016 blocks = 3,200,256; 78.13; 8.0x */
  expect_row(t, "gqa", "mqa", 18432, 3200256, 78.13, 78.13, 8.0);
  /* fp8: 73,728 B; page 32,768: 1,800,144 // 36 = 50,004 blocks = 800,064 tokens; 19.53; 2.0x */
  expect_row(t, "kv_quant", "fp8_e4m3", 73728, 800064, 19.53, 19.53, 2.0);
  /* TurboQuant: slot (48+2)+(48+4) = 102 B per head: 32 layers x 816 + 4 bf16 layers x 4,096 = 42,496 B. Pages
   * differ, all full attention: one UniformTypeKVCacheSpecs group, 58,987,118,592 // (16 x 42,496) = 86,753
   * blocks = 1,388,048 tokens; 86,753 / 2,560 = 33.89; 86,753 / 25,002 = 3.47x */
  expect_row(t, "kv_quant", "turboquant_3bit_nc", 42496, 1388048, 33.89, 33.89, 3.47);
  /* every layer quantized: 36 x 816 = 29,376 B; page 13,056: 4,518,009 // 36 = 125,500 blocks = 2,008,000 */
  expect_row(t, "kv_quant", "tq3_nc_all_layers", 29376, 2008000, 49.02, 49.02, 5.02);
  /* per-token-head scales (vLLM AttentionSpec.page_size_bytes): + 2 x 8 heads x 4 B = 64 B per layer ->
   * 2,112 x 36 = 76,032 B; page 33,792: 1,745,594 // 36 = 48,488 blocks = 775,808 tokens; 18.94 */
  expect_row(t, "kv_quant", "fp8_per_token_head", 76032, 775808, 18.94, 18.94, 1.94);
  /* int3 group 32: 48 B codes + 4 groups x 4 B = 64 B per vector; 36 x 8 x 2 x 64 = 36,864 -> 4x */
  expect_row(t, "kv_quant", "int3_g32", 36864, 1600128, 39.07, 39.07, 4.0);
  /* cross-layer: 18 of 36 layers: page 65,536, 900,072 // 18 = 50,004 blocks = 800,064 tokens */
  expect_row(t, "cross_layer", "share_2", 73728, 800064, 19.53, 19.53, 2.0);
  /* MLA 512 + 64: 36 x 576 x 2 = 41,472 B; page 18,432: 3,200,256 // 36 = 88,896 blocks = 1,422,336; 3.56x */
  expect_row(t, "mla", "latent_512_64", 41472, 1422336, 34.73, 34.73, 3.56);
  /* window 4,096 on every layer: one group, 25,002 blocks = 400,032 slots as before; a request reserves
   * cdiv(min(4,095 + 8,192, 40,960), 16) + 1 = 769 blocks: 25,002 / 769 = 32.51; ideal: 4,096 tokens per layer,
   * budget / (36 x 4,096 x 4,096 B) = 97.66; 2,560 / 769 = 3.33x */
  expect_row(t, "sliding_window", "w4096_all", 147456, 400032, 32.51, 97.66, 3.33);
  /* 5 local : 1 global: 30 window + 6 full layers, group size 6: 5 window groups + 1 full = 6 groups;
   * 900,072 // 6 = 150,012 blocks; 150,012 // 6 x 16 = 400,032 tokens; a request: 5 x 769 + 2,560 = 6,405
   * blocks -> 23.42; ideal budget / (4,096 B x (30 x 4,096 + 6 x 40,960)) = 39.07 */
  expect_row(t, "sliding_window", "w4096_5to1", 147456, 400032, 23.42, 39.07, 2.40);
  expect_row(t, "sliding_window", "none", 147456, 400032, 9.77, 9.77, 1.0);
  /* eviction keep 2,048, sized as a 2,048 window: cdiv(2,047 + 8,192, 16) + 1 = 641 blocks: 25,002 / 641 = 39.00;
   * ideal budget / (36 x 2,048 x 4,096) = 195.33 */
  expect_row(t, "eviction", "keep_2048", 147456, 400032, 39.00, 195.33, 3.99);
  /* compressed 4:1: 1,024 B per layer, page 16,384: 3,600,288 // 36 = 100,008 blocks = 1,600,128 */
  expect_row(t, "compressed", "ratio_4", 36864, 1600128, 39.07, 39.07, 4.0);
  /* attn 1 in 4: 9 attention + 27 Mamba-2 layers of (3 x (8,192 + 2 x 8 x 128) + 8,192 x 128) x 2 B = 2,158,592 B.
   * Hybrid block: 16 x cdiv(2,158,592, 16 x 4,096) = 16 x 33 = 528 tokens; page 528 x 4,096 = 2,162,688 B (the
   * state padded to it); group size 9: 1 attention + 3 state groups; 58,987,118,592 // 2,162,688 = 27,274 // 9 =
   * 3,030 blocks; 3,030 // 4 x 528 = 399,696 tokens; a request: cdiv(40,960, 528) = 78 + 3 = 81 -> 37.41 */
  expect_row(t, "hybrid_mamba", "attn_1_in_4", 36864, 399696, 37.41, NONE, NONE);
  /* attn 1 in 8: 5 attention + 31 state layers, group size 5: 1 + 7 groups (4 padding layers); 27,274 // 5 =
   * 5,454 blocks; 5,454 // 8 x 528 = 359,568 tokens; a request 78 + 7 = 85 blocks -> 64.16 */
  expect_row(t, "hybrid_mamba", "attn_1_in_8", 20480, 359568, 64.16, NONE, NONE);
  expect_row(t, "prefix_reuse", "shared_prefix", 147456, 400032, 9.77, 9.77, 1.0);
  /* Quest: + 2 x 1,024 x 2 B / 16 = 256 B per layer -> 4,352 x 36 = 156,672 B; page 69,632: 847,126 // 36 =
   * 23,531 blocks = 376,496 tokens; read per step: 147,456 x 2,048 / 40,960 + 9,216 = 16,588.8 */
  expect_row(t, "sparse_read", "quest_p16_k2048", 156672, 376496, 9.19, 9.19, 0.94);
  long r = find(t, "sparse_read", "quest_p16_k2048");
  EXPECT(r >= 0 && fabs(num(t, r, "read_per_step") - 16588.8) < 1e-6, "quest read %.3f", num(t, r, "read_per_step"));
  r = find(t, "gqa", "as_configured");
  EXPECT(r >= 0 && num(t, r, "read_per_step") == 147456, "dense read");
  /* contiguous: floor(58,987,118,592 / (40,960 x 147,456 = 6,039,797,760)) = 9 requests = 368,640 tokens */
  expect_row(t, "paged", "contiguous", 147456, 368640, 9.0, 9.0, 0.92);
  expect_row(t, "paged", "block_16", 147456, 400032, 9.77, 9.77, 1.0);
  r = find(t, "offload", "no_host_budget");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "not measured (run offload/ benchmarks)"), "offload note");
  r = find(t, "sliding_window", "w4096_all");
  EXPECT(r >= 0 && !strcmp(text(t, r, "per_request"), "keeps 4,096 tok on 36 of 36 KV layers, vLLM reserves 12,304") &&
             num(t, r, "kept_tokens_per_request") == 4096,
         "window request: %s", r >= 0 ? text(t, r, "per_request") : "");
  km_table_free(t);
}

/* ---- every preset: all twelve techniques, grouped by mechanism */

static void test_structure(const char *preset) {
  km_table *t = build(preset, NULL);
  for (size_t i = 0; i < 12; i++) {
    int found = 0;
    for (size_t r = 0; r < t->nrows; r++) {
      if (strcmp(text(t, r, "technique"), techniques[i]) != 0) continue;
      found++;
      EXPECT(!strcmp(text(t, r, "mechanism"), mechanisms[i]), "%s %s mechanism %s", preset, techniques[i],
             text(t, r, "mechanism"));
      EXPECT(t->group[r] && !strcmp(t->group[r], mechanisms[i]), "%s %s group", preset, techniques[i]);
      EXPECT(strlen(text(t, r, "note")) > 0 && strlen(text(t, r, "variant")) > 0, "%s %s note", preset, techniques[i]);
    }
    EXPECT(found > 0, "%s: technique %s missing", preset, techniques[i]);
  }
  for (size_t r = 0; r < t->nrows; r++) {
    int known = 0;
    for (size_t i = 0; i < 12; i++) known |= !strcmp(text(t, r, "technique"), techniques[i]);
    EXPECT(known, "%s: unknown technique %s", preset, text(t, r, "technique"));
  }
  long r = find(t, "gqa", "as_configured");
  EXPECT(r >= 0 && num(t, r, "capacity_x") == 1.0, "%s as_configured capacity_x", preset);
  km_table_free(t);
}

static void test_presets(void) {
  size_t n = 0;
  const char *const *names = km_model_preset_names(&n);
  for (size_t i = 0; i < n; i++) test_structure(names[i]);

  km_table *t = build("llama-3.1-8b", NULL);
  /* 131,072 B; page 65,536: 900,072 // 32 = 28,127 blocks = 450,032 tokens; at its own 131,072:
   * 8,192 blocks per request -> 3.43 */
  expect_row(t, "gqa", "as_configured", 131072, 450032, 3.43, 3.43, 1.0);
  /* MHA 524,288 B; page 262,144: 225,018 // 32 = 7,031 blocks = 112,496 tokens; 7,031 / 8,192 = 0.86 */
  expect_row(t, "gqa", "mha", 524288, 112496, 0.86, NONE, 0.25);
  long r = find(t, "gqa", "mha");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "vLLM would refuse to start"), "llama mha refuse note");
  km_table_free(t);

  t = build("qwen3-32b", NULL);
  /* 262,144 B; 900,072 // 64 = 14,063 blocks = 225,008 tokens; 14,063 / 2,560 = 5.49; fp8: 1,800,144 // 64 =
   * 28,127 blocks = 450,032 tokens, 2.0x */
  expect_row(t, "gqa", "as_configured", 262144, 225008, 5.49, 5.49, 1.0);
  expect_row(t, "kv_quant", "fp8_e4m3", 131072, 450032, 10.99, 10.99, 2.0);
  km_table_free(t);

  t = build("mistral-7b-v0.1", NULL);
  /* every layer a 4,096 window (vLLM's model-level sliding_window): one group, 28,127 blocks = 450,032 tokens;
   * at 32,768 a request reserves cdiv(min(4,095 + 8,192, 32,768), 16) + 1 = 769 blocks: 36.58; ideal
   * budget / (32 x 4,096 x 4,096 B) = 109.87 */
  expect_row(t, "gqa", "as_configured", 131072, 450032, 36.58, 109.87, 1.0);
  expect_logged(t, "450,032", "32,768", "36.58");
  expect_row(t, "sliding_window", "w4096_all", 131072, 450032, 36.58, 109.87, 1.0);
  /* window removed: 2,048 blocks per request: 13.73; 13.73 / 36.58 = 0.38 */
  expect_row(t, "sliding_window", "none", 131072, 450032, 13.73, 13.73, 0.38);
  km_table_free(t);

  t = build("gemma-3-27b", NULL);
  /* page 16 x 16 x 128 x 4 = 131,072 B for both kinds; 52 window + 10 full, group size 10: 6 window groups
   * (8 padding layers) + 1 full = 7; 58,987,118,592 // 131,072 = 450,036 // 10 = 45,003 blocks; 45,003 // 7 x 16 =
   * 102,864 tokens; at its own 131,072 a request: 6 x (cdiv(1,023 + 8,192, 16) + 1 = 577) + 8,192 = 11,654 blocks
   * -> 3.86 */
  expect_row(t, "gqa", "as_configured", 507904, 102864, 3.86, NONE, 1.0);
  expect_logged(t, "102,864", "131,072", "3.86");
  EXPECT(t->ncaption > 2 && strstr(t->caption[2], "(45,003 blocks of 16 tokens in 7 KV cache groups of 10 layers, 8 "
                                                    "padding layers;"),
         "blocks line: %s", t->ncaption > 2 ? t->caption[2] : "");
  /* window removed: one group of 62: 450,036 // 62 = 7,258 blocks = 116,128 tokens; 7,258 / 8,192 = 0.89 */
  expect_row(t, "sliding_window", "none", 507904, 116128, 0.89, NONE, 0.23);
  /* TurboQuant pages (16 x 16 x 102 = 26,112 B) do not divide the bf16 boundary layers' 131,072 B: vLLM's
   * unify_kv_cache_spec_page_size cannot group them */
  r = find(t, "kv_quant", "turboquant_3bit_nc");
  EXPECT(r >= 0 && isnan(num(t, r, "kv_cache_tokens")) && strstr(text(t, r, "note"), "do not divide"),
         "gemma tq: %s", r >= 0 ? text(t, r, "note") : "");
  km_table_free(t);

  t = build("deepseek-v3", NULL);
  /* MLA: 61 x 576 x 2 = 70,272 B; page 18,432: 3,200,256 // 61 = 52,463 blocks = 839,408 tokens; at 163,840:
   * 10,240 blocks per request -> 5.12 */
  expect_row(t, "gqa", "as_configured", 70272, 839408, 5.12, 5.12, 1.0);
  expect_row(t, "mla", "native", 70272, 839408, 5.12, 5.12, 1.0);
  /* decompressed MHA: 128 heads x 2 x 160 x 2 = 81,920 B per layer, 4,997,120 B; page 1,310,720: 45,003 // 61 =
   * 737 blocks = 11,792 tokens; 737 / 10,240 = 0.07 */
  expect_row(t, "gqa", "mha", 4997120, 11792, 0.07, NONE, 0.01);
  /* fp8 latent: 35,136 B; page 9,216: 6,400,512 // 61 = 104,926 blocks = 1,678,816 tokens; 10.25; 2.0x */
  expect_row(t, "kv_quant", "fp8_e4m3", 35136, 1678816, 10.25, 10.25, 2.0);
  r = find(t, "kv_quant", "turboquant_3bit_nc");
  EXPECT(r >= 0 && isnan(num(t, r, "bytes_per_token")) && strstr(text(t, r, "note"), "MLA"),
         "deepseek turboquant must be a note, not a number");
  km_table_free(t);

  t = build("nemotron-h-8b", NULL);
  /* 4 attention layers (16,384 B/token) + 24 Mamba-2 layers: conv 3 x (8,192 + 2 x 8 x 128) x 2 B = 61,440 B,
   * SSM 128 x 64 x 128 x 4 B (float32, vLLM's NemotronH default) = 4,194,304 B: 4,255,744 B. Hybrid block:
   * 16 x cdiv(4,255,744, 16 x 4,096) = 16 x 65 = 1,040 tokens, page 4,259,840 B; group size 4: 1 attention +
   * 6 state groups; 58,987,118,592 // 4,259,840 = 13,847 // 4 = 3,461 blocks; 3,461 // 7 x 1,040 = 513,760
   * tokens; at its own 8,192: cdiv(8,192, 1,040) = 8 + 6 = 14 blocks -> 247.21 */
  expect_row(t, "gqa", "as_configured", 16384, 513760, 247.21, NONE, 1.0);
  expect_row(t, "hybrid_mamba", "as_configured", 16384, 513760, 247.21, NONE, 1.0);
  expect_logged(t, "513,760", "8,192", "247.21");
  EXPECT(t->ncaption > 2 && strstr(t->caption[2], "(3,461 blocks of 1040 tokens in 7 KV cache groups of 4 layers;"),
         "blocks line: %s", t->ncaption > 2 ? t->caption[2] : "");
  r = find(t, "hybrid_mamba", "as_configured");
  EXPECT(r >= 0 && strstr(text(t, r, "per_request"), "state 97.4 MiB (24 layers); 1,040-tok attention blocks"),
         "state text: %s", r >= 0 ? text(t, r, "per_request") : "");
  /* all 4 KV layers are TurboQuant boundary layers: nothing quantized */
  r = find(t, "kv_quant", "turboquant_3bit_nc");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "nothing quantized") && num(t, r, "kv_cache_tokens") == 513760,
         "nemotron tq note");
  km_table_free(t);
}

/* ---- the fixtures and the source rig's length: the two numbers vLLM logs for the model as
 * configured, worked from its config.json (bytes: B/token stored; slots: GPU KV cache size) */

typedef struct logged_case {
  const char *name;
  int at_40960;          /* 0: the model's own max_model_len; 1: 40,960 with the override */
  double bytes, slots, conc;
  const char *tokens, *len, *conc_text; /* as vLLM prints them */
} logged_case;

static const logged_case logged[] = {
    /* as llama-3.1-8b's KV: 28,127 blocks = 450,032 tokens; at 32,768: 2,048 blocks -> 13.73 */
    {"mixtral-8x7b-v0.1.json", 0, 131072, 450032, 13.73, "450,032", "32,768", "13.73"},
    /* 48 x 4 x 128 x 4 = 98,304 B; page 32,768: 1,800,144 // 48 = 37,503 blocks = 600,048; / 2,560 = 14.65 */
    {"qwen3-30b-a3b.json", 0, 98304, 600048, 14.65, "600,048", "40,960", "14.65"},
    /* 12 attention layers of 2 x 2 x 256 x 2 = 2,048 B/token; 36 delta-net layers of (3 x (2 x 16 x 128 + 32 x 128)
     * + 32 x 128 x 128) x 2 B = 1,097,728 B. Hybrid block 16 x cdiv(1,097,728, 16 x 2,048) = 16 x 34 = 544, page
     * 1,114,112 B; group size 12: 1 attention + 3 state groups; 58,987,118,592 // 1,114,112 = 52,945 // 12 = 4,412
     * blocks; 4,412 // 4 x 544 = 600,032 tokens; at 262,144: cdiv(262,144, 544) = 482 + 3 = 485 -> 9.10 */
    {"qwen3-next-80b-a3b-instruct.json", 0, 24576, 600032, 9.10, "600,032", "262,144", "9.10"},
    /* at 40,960: 76 + 3 = 79 blocks -> 4,412 / 79 = 55.85 */
    {"qwen3-next-80b-a3b-instruct.json", 1, 24576, 600032, 55.85, "600,032", "40,960", "55.85"},
    /* float32 served in bf16: page 16 x 8 x 256 x 4 = 131,072 B; 21 window + 21 full, 2 groups of 21: 450,036 // 21 =
     * 21,430 blocks; 21,430 // 2 x 16 = 171,440 tokens; at 8,192: (cdiv(min(12,287, 8,192), 16) + 1 = 513) + 512 =
     * 1,025 -> 20.91 */
    {"gemma-2-9b.json", 0, 344064, 171440, 20.91, "171,440", "8,192", "20.91"},
    /* at 40,960: 769 + 2,560 = 3,329 -> 6.44 */
    {"gemma-2-9b.json", 1, 344064, 171440, 6.44, "171,440", "40,960", "6.44"},
    /* head_dim 256: page 131,072 B; 40 window + 8 full, group size 8: 5 + 1 groups; 450,036 // 8 = 56,254 blocks;
     * 56,254 // 6 x 16 = 150,000 tokens; at 131,072: 5 x 577 + 8,192 = 11,077 -> 5.08 */
    {"gemma-3-12b-it.json", 0, 393216, 150000, 5.08, "150,000", "131,072", "5.08"},
    /* 45,003 blocks, 7 groups (see test_presets); at 40,960: 6 x 577 + 2,560 = 6,022 -> 7.47 */
    {"gemma-3-27b", 1, 507904, 102864, 7.47, "102,864", "40,960", "7.47"},
    /* page 16 x 8 x 64 x 4 = 32,768 B; 12 window (128) + 12 full, 2 groups of 12: 1,800,144 // 12 = 150,012 blocks;
     * 150,012 // 2 x 16 = 1,200,096 tokens; at 131,072: (cdiv(127 + 8,192, 16) + 1 = 521) + 8,192 = 8,713 -> 17.22 */
    {"gpt-oss-20b.json", 0, 49152, 1200096, 17.22, "1,200,096", "131,072", "17.22"},
    /* at 40,960: 521 + 2,560 = 3,081 -> 48.69 */
    {"gpt-oss-20b.json", 1, 49152, 1200096, 48.69, "1,200,096", "40,960", "48.69"},
    /* MLA 27 x 576 x 2 = 31,104 B; page 18,432: 3,200,256 // 27 = 118,528 blocks = 1,896,448 tokens; at 163,840:
     * 118,528 / 10,240 = 11.575, printed 11.57 (the double is just below) */
    {"deepseek-v2-lite.json", 0, 31104, 1896448, 11.575, "1,896,448", "163,840", "11.57"},
    /* every layer a 2,047 window; page 16 x 32 x 96 x 4 = 196,608 B: 300,024 // 32 = 9,375 blocks = 150,000 tokens;
     * at 4,096: cdiv(min(2,046 + 8,192, 4,096), 16) + 1 = 257 -> 36.48 */
    {"phi-3-mini-4k-instruct.json", 0, 393216, 150000, 36.48, "150,000", "4,096", "36.48"},
    /* window 262,144 >= the length: cdiv(131,072, 16) + 1 = 8,193 blocks -> 9,375 / 8,193 = 1.14 */
    {"phi-3.5-mini-instruct.json", 0, 393216, 150000, 1.14, "150,000", "131,072", "1.14"},
    /* 4 attention layers (4,096 B/token each) + 28 Mamba-1 layers of (8,192 x 3 + 8,192 x 16) x 2 B = 311,296 B.
     * Hybrid block 16 x cdiv(311,296, 65,536) = 80, page 327,680 B; group size 4: 1 + 7 groups; 58,987,118,592 //
     * 327,680 = 180,014 // 4 = 45,003 blocks; 45,003 // 8 x 80 = 450,000 tokens; at 262,144: cdiv(262,144, 80) =
     * 3,277 + 7 = 3,284 -> 13.70 */
    {"jamba-v0.1.json", 0, 16384, 450000, 13.70, "450,000", "262,144", "13.70"},
    /* 64 Mamba-1 layers of 311,296 B, one group (a state's block is max_model_len, 2,048: no length field):
     * 58,987,118,592 // 311,296 = 189,490 // 64 = 2,960 blocks; 2,960 x 2,048 = 6,062,080 tokens; one block per
     * request -> 2960.00x */
    {"falcon-mamba-7b.json", 0, 0, 6062080, 2960.0, "6,062,080", "2,048", "2960.00"},
    /* every layer a 4,096 window: 28,127 blocks; cdiv(4,095 + 8,192, 16) + 1 = 769 -> 36.58 at 32,768 or 40,960 */
    {"mistral-7b-v0.1", 1, 131072, 450032, 36.58, "450,032", "40,960", "36.58"},
    /* 3,461 blocks, 7 groups (see test_presets); at 40,960: cdiv(40,960, 1,040) = 40 + 6 = 46 -> 75.24 */
    {"nemotron-h-8b.json", 1, 16384, 513760, 75.24, "513,760", "40,960", "75.24"},
    {"qwen3-8b", 1, 147456, 400032, 9.77, "400,032", "40,960", "9.77"},
};

static void test_logged(void) {
  for (size_t i = 0; i < sizeof logged / sizeof logged[0]; i++) {
    const logged_case *c = &logged[i];
    km_bytes_params p;
    km_bytes_params_default(&p);
    if (c->at_40960) {
      p.max_model_len = 40960;
      p.allow_long_max_model_len = 1;
    }
    km_table *t = build(c->name, &p);
    expect_row(t, "gqa", "as_configured", c->bytes, c->slots, c->conc, NONE, 1.0);
    expect_logged(t, c->tokens, c->len, c->conc_text);
    km_table_free(t);
  }
}

/* ---- flags: max_model_len, batched tokens, block size, dtypes, host budget */

static void expect_build_error(const char *name, const km_bytes_params *p, const char *want) {
  km_model m;
  char err[512] = "", rel[128], path[1024];
  km_table *t = NULL;
  if (km_model_preset(name, &m) != 0) {
    snprintf(rel, sizeof rel, "models/%s", name);
    km_model_resolve(km_test_fixture(rel, path, sizeof path), &m, err, sizeof err);
  }
  int rc = km_bytes_table_build(&m, p, &t, err, sizeof err);
  EXPECT(rc == -1 && t == NULL && strstr(err, want) && !strchr(err, '\n'), "%s: want \"%s\" in: %s", name, want, err);
  km_table_free(t);
}

static void test_params(void) {
  km_bytes_params p;
  km_bytes_params_default(&p);
  /* above the model's own length: refused as vLLM refuses it, unless overridden */
  p.max_model_len = 40960;
  expect_build_error("mistral-7b-v0.1", &p, "--max-model-len 40960 is greater than mistral-7b-v0.1's max_model_len "
                                            "32768 (max_position_embeddings");
  /* no length field: vLLM takes any length; 2,960 blocks x 40,960 = 121,241,600 tokens */
  km_table *t = build("falcon-mamba-7b.json", &p);
  expect_logged(t, "121,241,600", "40,960", "2960.00");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.max_num_batched_tokens = 2048;
  t = build("mistral-7b-v0.1", &p);
  /* cdiv(min(4,095 + 2,048, 32,768), 16) + 1 = 385 blocks per request: 28,127 / 385 = 73.06 */
  expect_logged(t, "450,032", "32,768", "73.06");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.block_size = 2048;
  t = build("nemotron-h-8b", &p);
  /* a block above the hybrid minimum stays: page 2,048 x 4,096 = 8,388,608 B (the state padded to it);
   * 58,987,118,592 // 8,388,608 = 7,031 // 4 = 1,757 blocks; 1,757 // 7 x 2,048 = 514,048 tokens;
   * cdiv(8,192, 2,048) = 4 + 6 = 10 -> 175.70 */
  expect_logged(t, "514,048", "8,192", "175.70");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.kv_dtype = KM_KV_DTYPE_FP8;
  t = build("nemotron-h-8b", &p);
  /* fp8 attention: 2,048 B/token; block 16 x cdiv(4,255,744, 16 x 2,048) = 2,080, page 4,259,840 B again: 3,461
   * blocks; 3,461 // 7 x 2,080 = 1,027,520 tokens; cdiv(8,192, 2,080) = 4 + 6 = 10 -> 346.10 */
  expect_logged(t, "1,027,520", "8,192", "346.10");
  km_table_free(t);
  t = build("qwen3-8b", &p);
  expect_row(t, "gqa", "as_configured", 73728, 800064, 19.53, 19.53, 1.0);
  km_table_free(t);

  km_bytes_params_default(&p);
  p.mamba_ssm_dtype = KM_SSM_DTYPE_BFLOAT16;
  t = build("nemotron-h-8b", &p);
  /* bf16 SSM: 2,158,592 B; block 16 x 33 = 528, page 2,162,688 B; 27,274 // 4 = 6,818 blocks; 6,818 // 7 x 528 =
   * 514,272 tokens; cdiv(8,192, 528) = 16 + 6 = 22 -> 309.91 */
  expect_logged(t, "514,272", "8,192", "309.91");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.kv_dtype = KM_KV_DTYPE_TURBOQUANT_3BIT_NC;
  t = build("qwen3-8b", &p);
  expect_row(t, "gqa", "as_configured", 42496, 1388048, 33.89, 33.89, 1.0);
  km_table_free(t);
  expect_build_error("deepseek-v3", &p, "--kv-dtype turboquant_3bit_nc");

  km_bytes_params_default(&p);
  p.host_budget = 58987118592.0;
  p.h2d_gbps = 25.0;
  t = build("qwen3-8b", &p);
  /* host pool as large as the GPU's: 2 x 58,987,118,592 // 65,536 // 36 = 50,004 blocks = 800,064 tokens;
   * reload 147,456 B / 25 GB/s = 5.90 us per token */
  expect_row(t, "offload", "host_budget", 147456, 800064, 19.53, 19.53, 2.0);
  long r = find(t, "offload", "host_budget");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "5.90 us"), "reload: %s", r >= 0 ? text(t, r, "note") : "");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.block_size = 256;
  p.max_model_len = 40961;
  p.allow_long_max_model_len = 1;
  t = build("qwen3-8b", &p);
  /* page 256 x 4,096 = 1,048,576 B: 56,254 // 36 = 1,562 blocks = 399,872 tokens; a 40,961-token request takes
   * cdiv(40,961, 256) = 161 blocks: 9.70 */
  expect_row(t, "gqa", "as_configured", 147456, 399872, 9.70, NONE, 1.0);
  km_table_free(t);
}

/* A model with no KV layers at all: rows stay, numbers that would divide by zero do not appear. */
static void test_no_kv_layers(void) {
  km_model m;
  km_bytes_params p;
  km_table *t = NULL;
  char err[256];
  km_model_preset("nemotron-h-8b", &m);
  km_model_set_layer_pattern(&m, "M-");
  km_bytes_params_default(&p);
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == 0, "no-KV build: %s", err);
  if (!t) return;
  /* 26 Mamba layers of 4,255,744 B, one group: 58,987,118,592 // 4,255,744 = 13,860 // 26 = 533 blocks of 8,192
   * tokens (a state's block is max_model_len) = 4,366,336; one block per request: 533.00 */
  expect_row(t, "gqa", "as_configured", 0, 4366336, 533.0, NONE, 1.0);
  long r = find(t, "mla", "latent");
  EXPECT(r >= 0 && isnan(num(t, r, "bytes_per_token")) && strstr(text(t, r, "note"), "meaningless"), "no-KV mla");
  km_table_free(t);
}

/* Falcon-H1's parallel hybrid (every layer attention and a Mamba-2 mixer), with FalconH1Config's defaults
 * for what the config leaves out: an attention and a state spec per layer. */
static void test_parallel_hybrid(void) {
  static const char *const json =
      "{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
      "\"num_key_value_heads\": 2, \"head_dim\": 64, \"hidden_size\": 1024, \"mamba_d_ssm\": 1536, "
      "\"mamba_n_heads\": 24}";
  km_model m;
  km_bytes_params p;
  char err[256] = "";
  EXPECT(km_model_from_json(json, strlen(json), "falcon-h1.json", &m, err, sizeof err) == 0, "falcon-h1: %s", err);
  km_bytes_params_default(&p);
  km_table *t = build_model(&m, &p);
  /* attention 2 x 2 x 64 x 2 = 512 B/token per layer; state conv 3 x (1,536 + 2 x 1 x 256) + SSM 24 x 64 x 256,
   * x 2 B = 798,720 B. Block 16 x cdiv(798,720, 16 x 512) = 16 x 98 = 1,568, page 802,816 B; 4 full + 4 state
   * layers, 2 groups of 4: 58,987,118,592 // 802,816 = 73,475 // 4 = 18,368 blocks; 18,368 // 2 x 1,568 =
   * 14,400,512 tokens; at FalconH1Config's 8,192: cdiv(8,192, 1,568) = 6 + 1 = 7 -> 2624.00x */
  expect_row(t, "gqa", "as_configured", 2048, 14400512, 2624.0, NONE, 1.0);
  expect_logged(t, "14,400,512", "8,192", "2624.00");
  km_table_free(t);
}

/* ---- the printed forms */

static void test_text(void) {
  size_t n = 0;
  const char *const *names = km_model_preset_names(&n);
  static const char *const files[] = {"jamba-v0.1.json", "falcon-mamba-7b.json", "qwen3-next-80b-a3b-instruct.json",
                                      "gemma-2-9b.json", "deepseek-v2-lite.json", "gpt-oss-20b.json"};
  for (size_t i = 0; i < n + sizeof files / sizeof files[0]; i++) {
    const char *name = i < n ? names[i] : files[i - n];
    km_table *t = build(name, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    km_table_print(t, KM_FORMAT_TEXT, f);
    fclose(f);
    int longest = 0, notes = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
      longest = (int)strlen(line) > longest ? (int)strlen(line) : longest;
      notes += !strncmp(line, "[1] ", 4);
    }
    EXPECT(longest <= 120, "%s: a text line of %d columns", name, longest);
    EXPECT(notes == 1, "%s: numbered notes %d", name, notes);
    free(buf);
    km_table_free(t);
  }
  km_table *t = build("qwen3-8b", NULL);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  km_table_print(t, KM_FORMAT_TEXT, f);
  fclose(f);
  /* the mechanism is the group heading, not a column; the columns say what they are */
  EXPECT(strstr(buf, "[store fewer bytes]") && !strstr(buf, "  store fewer bytes  ") && strstr(buf, "token slots") &&
             strstr(buf, "conc (vLLM)") && strstr(buf, "conc ideal") && strstr(buf, "147,456"),
         "text form");
  free(buf);
  km_table_free(t);
}

static void test_json(void) {
  km_model m;
  km_bytes_params p;
  km_table *t = NULL;
  char err[256];
  km_model_preset("qwen3-8b", &m);
  km_bytes_params_default(&p);
  EXPECT(km_bytes_table_build(&m, &p, &t, err, sizeof err) == 0, "%s", err);
  cJSON *o = km_bytes_table_json(&m, &p, t);
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(o, "rows");
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
  const cJSON *vllm = cJSON_GetObjectItemCaseSensitive(o, "vllm");
  EXPECT(cJSON_IsArray(rows) && (size_t)cJSON_GetArraySize(rows) == t->nrows, "rows array");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "kv_budget_bytes")) == 58987118592.0, "budget");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "max_model_len")) == 40960, "len");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "block_size")) == 16, "block");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(model, "kv_bytes_per_token")) == 147456, "model B");
  EXPECT(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(model, "name")), "qwen3-8b"), "model name");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(vllm, "gpu_kv_cache_tokens")) == 400032 &&
             cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(vllm, "num_blocks")) == 25002 &&
             !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(vllm, "rules")), "vLLM v0.11"),
         "vllm object");
  EXPECT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "caption")) == (int)t->ncaption, "caption");
  const cJSON *first = cJSON_GetArrayItem(rows, 0);
  static const char *const keys[] = {"technique",       "mechanism",         "variant",    "bytes_per_token",
                                     "kv_cache_tokens", "max_concurrency",   "capacity_x", "ideal_concurrency",
                                     "per_request",     "kept_tokens_per_request", "note"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    EXPECT(cJSON_GetObjectItemCaseSensitive(first, keys[i]) != NULL, "row key %s", keys[i]);
  cJSON_Delete(o);
  km_table_free(t);
}

int main(void) {
  test_default();
  test_presets();
  test_logged();
  test_params();
  test_no_kv_layers();
  test_parallel_hybrid();
  test_text();
  test_json();
  return km_test_finish("cpu_bytes_table");
}
