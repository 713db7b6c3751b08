/* The per-token byte table against hand arithmetic: the source article's numbers for the default
 * (Qwen3-8B, 58,987,118,592 B budget, 40,960-token requests, 16-token blocks) and, for every preset,
 * figures worked out from its config in the comments. Capacity as vLLM: floor(budget / (16 x B)) x 16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "test_util.h"

/* KM_EXPECT with a formatted reason: these checks compare many rows, so say which one failed. */
#define EXPECT KM_EXPECT_MSG

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

/* One row's figures; NAN skips a figure. concurrency and capacity_x to the 2 decimals the table shows. */
static void expect_row(const km_table *t, const char *tech, const char *variant, double bytes, double tokens,
                       double conc, double x) {
  long r = find(t, tech, variant);
  EXPECT(r >= 0, "%s: no row %s/%s", t->title, tech, variant);
  if (r < 0) return;
  double b = num(t, r, "bytes_per_token"), n = num(t, r, "capacity_tokens");
  double c = num(t, r, "max_concurrency"), cx = num(t, r, "capacity_x");
  EXPECT(isnan(bytes) || b == bytes, "%s %s/%s bytes %.1f want %.1f", t->title, tech, variant, b, bytes);
  EXPECT(isnan(tokens) || n == tokens, "%s %s/%s tokens %.0f want %.0f", t->title, tech, variant, n, tokens);
  EXPECT(isnan(conc) || fabs(c - conc) <= 0.005, "%s %s/%s concurrency %.4f want %.2f", t->title, tech, variant, c,
         conc);
  EXPECT(isnan(x) || fabs(cx - x) <= 0.005, "%s %s/%s capacity_x %.4f want %.2f", t->title, tech, variant, cx, x);
}

static km_table *build(const char *preset, const km_bytes_params *p) {
  km_model m;
  km_table *t = NULL;
  char err[512] = "";
  if (km_model_preset(preset, &m) != 0 || km_bytes_table_build(&m, p, &t, err, sizeof err) != 0) {
    fprintf(stderr, "%s: build failed: %s\n", preset, err);
    exit(1);
  }
  return t;
}

static km_table *build_default(const char *preset) {
  km_bytes_params p;
  km_bytes_params_default(&p);
  return build(preset, &p);
}

/* ---- the source article's figures */

static void test_default(void) {
  km_bytes_params p;
  km_bytes_params_default(&p);
  EXPECT(p.kv_budget == 58987118592.0 && p.max_model_len == 40960 && p.block_size == 16, "defaults");
  km_table *t = build_default("qwen3-8b");
  /* 36 x 8 x 128 x 2 x 2 = 147,456 B; 58,987,118,592 / (16 x 147,456 = 2,359,296) = 25,002 blocks exactly
   * = 400,032 tokens; 400,032 / 40,960 = 9.766 -> 9.77 */
  expect_row(t, "gqa", "as_configured", 147456, 400032, 9.77, 1.0);
  /* MHA: 32 heads -> 589,824 B; budget / 9,437,184 = 6,250.5 -> 6,250 blocks = 100,000 tokens; 2.44 */
  expect_row(t, "gqa", "mha", 589824, 100000, 2.44, 0.25);
  /* MQA: 1 head -> 18,432 B; 8 x 25,002 = 200,016 blocks = 3,200,256 tokens; 78.13; 8.0x */
  expect_row(t, "gqa", "mqa", 18432, 3200256, 78.13, 8.0);
  /* fp8: 1 B -> 73,728 B; 50,004 blocks = 800,064 tokens; 2.0x */
  expect_row(t, "kv_quant", "fp8_e4m3", 73728, 800064, 19.53, 2.0);
  /* TurboQuant: slot (48+2)+(48+4) = 102 B per head; 32 layers x 8 x 102 = 26,112 + 4 bf16 layers x 4,096 =
   * 16,384 -> 42,496 B; budget / 679,936 = 86,753.9 -> 86,753 blocks = 1,388,048 tokens; / 400,032 = 3.47 */
  expect_row(t, "kv_quant", "turboquant_3bit_nc", 42496, 1388048, 33.89, 3.47);
  /* without boundary layers: 36 x 8 x 102 = 29,376 B; 125,500 blocks = 2,008,000 tokens = 5.02x */
  expect_row(t, "kv_quant", "turboquant_3bit_nc_all_layers", 29376, 2008000, 49.02, 5.02);
  /* per-token-head scales: + 36 x 8 x 8 B = 2,304 -> 76,032 B; budget / 1,216,512 = 48,488.6 -> 775,808 */
  expect_row(t, "kv_quant", "fp8_e4m3_per_token_head", 76032, 775808, 18.94, 1.94);
  /* int3 group 32: 48 B codes + 4 groups x 4 B = 64 B per vector; 36 x 8 x 2 x 64 = 36,864 -> 4x */
  expect_row(t, "kv_quant", "int3_g32", 36864, 1600128, 39.07, 4.0);
  /* cross-layer: 18 of 36 layers -> 73,728 B, as fp8 */
  expect_row(t, "cross_layer", "share_2", 73728, 800064, 19.53, 2.0);
  /* MLA 512 + 64: 36 x 576 x 2 = 41,472 B; budget / 663,552 = 88,896 blocks = 1,422,336; 3.56x */
  expect_row(t, "mla", "latent_512_64", 41472, 1422336, 34.73, 3.56);
  /* window 4096 everywhere: pool 400,032 tokens, footprint 4,096 tokens/seq: 400,032 / 4,096 = 97.66 seqs;
   * capacity 97.66 x 40,960 = 4,000,320 tokens = 10x */
  expect_row(t, "sliding_window", "w4096_all", 147456, 4000320, 97.66, 10.0);
  /* 5 local : 1 global: 30 layers hold 4,096 and 6 hold 40,960: footprint = 4,096 B x (30 x 4,096 + 6 x 40,960)
   * = 1,509,949,440 B; 58,987,118,592 / that = 39.07 seqs; x 40,960 = 1,600,128 tokens = 4x */
  expect_row(t, "sliding_window", "w4096_5to1", 147456, 1600128, 39.07, 4.0);
  expect_row(t, "sliding_window", "none", 147456, 400032, 9.77, 1.0);
  /* eviction keep 2,048: 400,032 / 2,048 = 195.33 seqs; x 40,960 = 8,000,640 = 20x */
  expect_row(t, "eviction", "keep_2048", 147456, 8000640, 195.33, 20.0);
  /* compressed 4:1: 36,864 B/token; 25,002 blocks of 16 entries = 400,032 entries = 1,600,128 tokens */
  expect_row(t, "compressed", "ratio_4", 36864, 1600128, 39.07, 4.0);
  /* attn 1 in 8: layers 0, 8, 16, 24, 32 keep KV: 5 x 4,096 = 20,480 B; 31 Mamba layers x 2,158,592 B =
   * 66,916,352 B state; budget / 327,680 = 180,014.4 -> 2,880,224 tokens; footprint 20,480 x 40,960 +
   * 66,916,352 = 905,777,152 B; 2,880,224 x 20,480 / 905,777,152 = 65.12 seqs; x 40,960 = 2,667,440 */
  expect_row(t, "hybrid_mamba", "attn_1_in_8", 20480, 2667440, 65.12, 6.67);
  expect_row(t, "prefix_reuse", "shared_prefix", 147456, 400032, 9.77, 1.0);
  /* Quest: + 2 x 128 x 2 B x 8 heads x 36 layers / 16 tokens = 9,216 B -> 156,672 B; budget / 2,506,752 =
   * 23,531.3 -> 376,496 tokens; read per step: 147,456 x 2,048 / 40,960 + 9,216 = 16,588.8 */
  expect_row(t, "sparse_read", "quest_p16_k2048", 156672, 376496, 9.19, 0.94);
  long r = find(t, "sparse_read", "quest_p16_k2048");
  EXPECT(r >= 0 && fabs(num(t, r, "read_per_step") - 16588.8) < 1e-6, "quest read %.3f", num(t, r, "read_per_step"));
  r = find(t, "gqa", "as_configured");
  EXPECT(r >= 0 && num(t, r, "read_per_step") == 147456, "dense read");
  /* contiguous: floor(58,987,118,592 / (40,960 x 147,456 = 6,039,797,760)) = 9 seqs = 368,640 tokens */
  expect_row(t, "paged", "contiguous", 147456, 368640, 9.0, 0.92);
  expect_row(t, "paged", "block_16", 147456, 400032, 9.77, 1.0);
  r = find(t, "paged", "block_16");
  EXPECT(r >= 0 && strstr(text(t, r, "per_seq_cap"), "15 tok"), "paged waste: %s",
         r >= 0 ? text(t, r, "per_seq_cap") : "");
  r = find(t, "offload", "no_host_budget");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "not measured (run offload/ benchmarks)"), "offload note");
  km_table_free(t);
}

/* ---- every preset: all twelve techniques, grouped by mechanism, and its own hand figures */

static void test_structure(const char *preset) {
  km_table *t = build_default(preset);
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

  km_table *t = build_default("llama-3.1-8b");
  /* 32 x 8 x 128 x 2 x 2 = 131,072 B; budget / 2,097,152 = 28,127.25 -> 450,032 tokens; / 40,960 = 10.99 */
  expect_row(t, "gqa", "as_configured", 131072, 450032, 10.99, 1.0);
  /* MHA: 524,288 B; budget / 8,388,608 = 7,031.8 -> 112,496 tokens; 2.75 seqs; 0.25x */
  expect_row(t, "gqa", "mha", 524288, 112496, 2.75, 0.25);
  km_table_free(t);

  t = build_default("qwen3-32b");
  /* 64 x 8 x 128 x 2 x 2 = 262,144 B; budget / 4,194,304 = 14,063.6 -> 225,008 tokens; 5.49 */
  expect_row(t, "gqa", "as_configured", 262144, 225008, 5.49, 1.0);
  /* fp8: 131,072 B -> 450,032 tokens (as llama bf16); 450,032 / 225,008 = 2.0x */
  expect_row(t, "kv_quant", "fp8_e4m3", 131072, 450032, 10.99, 2.0);
  km_table_free(t);

  t = build_default("mistral-7b-v0.1");
  /* 131,072 B, every layer windowed at 4,096: pool 450,032 tokens (as llama); footprint 4,096 tokens:
   * 450,032 x 131,072 / (131,072 x 4,096) = 109.87 seqs; x 40,960 = 4,500,320 tokens */
  expect_row(t, "gqa", "as_configured", 131072, 4500320, 109.87, 1.0);
  expect_row(t, "sliding_window", "w4096_all", 131072, 4500320, 109.87, 1.0);
  /* window removed: 450,032 tokens, 10.99 seqs, 450,032 / 4,500,320 = 0.10x */
  expect_row(t, "sliding_window", "none", 131072, 450032, 10.99, 0.10);
  km_table_free(t);

  t = build_default("gemma-3-27b");
  /* per layer 16 x 128 x 2 x 2 = 8,192 B; 62 layers = 507,904 B; budget / 8,126,464 = 7,258.6 -> 116,128 tokens
   * = 58,981,875,712 B of pool. Footprint: 52 local x 1,024 + 10 global x 40,960 = 462,848 layer-tokens x
   * 8,192 = 3,791,650,816 B; 58,981,875,712 / 3,791,650,816 = 15.56 seqs; x 40,960 = 637,162 tokens */
  expect_row(t, "gqa", "as_configured", 507904, 637162, 15.56, 1.0);
  expect_row(t, "sliding_window", "w1024_5to1", 507904, 637162, 15.56, 1.0);
  /* window removed: 116,128 tokens, 116,128 / 40,960 = 2.84 seqs, 116,128 / 637,162 = 0.18x */
  expect_row(t, "sliding_window", "none", 507904, 116128, 2.84, 0.18);
  /* cross-layer sharing pairs layers of the same kind: 26 of 52 local + 5 of 10 global = 31 x 8,192 =
   * 253,952 B; budget / 4,063,232 = 14,517.3 -> 232,272 tokens = 58,985,938,944 B; footprint 8,192 x
   * (26 x 1,024 + 5 x 40,960) = 1,895,825,408 B -> 31.11 seqs; x 40,960 = 1,274,412 tokens = 2.0x */
  expect_row(t, "cross_layer", "share_2", 253952, 1274412, 31.11, 2.0);
  long r = find(t, "gqa", "as_configured");
  /* read per step: 3,791,650,816 B / 40,960 = 92,569.6 B per context token */
  EXPECT(r >= 0 && fabs(num(t, r, "read_per_step") - 92569.6) < 1e-6, "gemma read %.2f", num(t, r, "read_per_step"));
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "per-seq footprint"), "gemma capped note");
  EXPECT(r >= 0 && strstr(text(t, r, "per_seq_cap"), "1,024 tok/seq on 52 of 62"), "gemma cap: %s",
         r >= 0 ? text(t, r, "per_seq_cap") : "");
  km_table_free(t);

  t = build_default("deepseek-v3");
  /* MLA: 61 x 576 x 2 = 70,272 B; budget / 1,124,352 = 52,463.2 -> 839,408 tokens; 20.49 seqs */
  expect_row(t, "gqa", "as_configured", 70272, 839408, 20.49, 1.0);
  expect_row(t, "mla", "native", 70272, 839408, 20.49, 1.0);
  /* decompressed MHA: 61 x 128 heads x (192 + 128) x 2 B = 4,997,120 B; budget / 79,953,920 = 737.8 ->
   * 11,792 tokens; 0.29 seqs */
  expect_row(t, "gqa", "mha", 4997120, 11792, 0.29, 0.01);
  /* fp8 latent: 35,136 B; budget / 562,176 = 104,926.4 -> 1,678,816 tokens = 2.0x */
  expect_row(t, "kv_quant", "fp8_e4m3", 35136, 1678816, 40.99, 2.0);
  r = find(t, "kv_quant", "turboquant_3bit_nc");
  EXPECT(r >= 0 && isnan(num(t, r, "bytes_per_token")) && isnan(num(t, r, "capacity_tokens")) &&
             strstr(text(t, r, "note"), "MLA"),
         "deepseek turboquant must be a note, not a number");
  km_table_free(t);

  t = build_default("nemotron-h-8b");
  /* 4 attention layers x 8 x 128 x 2 x 2 = 16,384 B; budget / 262,144 = 225,018 blocks = 3,600,288 tokens.
   * Mamba state per layer: (8,192 x 128 + 3 x (8,192 + 2 x 8 x 128)) x 2 B = 2,158,592 B; x 24 = 51,806,208.
   * Footprint 16,384 x 40,960 + 51,806,208 = 722,894,848 B; 58,987,118,592 / that = 81.60 seqs;
   * x 40,960 = 3,342,273 tokens */
  expect_row(t, "gqa", "as_configured", 16384, 3342273, 81.60, 1.0);
  expect_row(t, "hybrid_mamba", "as_configured", 16384, 3342273, 81.60, 1.0);
  /* every Mamba layer attention: 28 x 4,096 = 114,688 B; budget / 1,835,008 = 32,145.4 -> 514,320 tokens;
   * 12.56 seqs; 514,320 / 3,342,273 = 0.15x */
  expect_row(t, "hybrid_mamba", "all_attention", 114688, 514320, 12.56, 0.15);
  /* all 4 KV layers are TurboQuant boundary layers: nothing quantized */
  expect_row(t, "kv_quant", "turboquant_3bit_nc", 16384, 3342273, 81.60, 1.0);
  r = find(t, "kv_quant", "turboquant_3bit_nc");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "nothing quantized"), "nemotron tq note");
  r = find(t, "hybrid_mamba", "as_configured");
  EXPECT(r >= 0 && strstr(text(t, r, "per_seq_cap"), "state 49.4 MiB"), "state text: %s",
         r >= 0 ? text(t, r, "per_seq_cap") : "");
  km_table_free(t);
}

/* ---- flags: short context, host budget, KV dtype, block size */

static void test_params(void) {
  km_bytes_params p;
  km_bytes_params_default(&p);
  p.max_model_len = 2048;
  km_table *t = build("qwen3-8b", &p);
  /* a window of 4,096 over 2,048-token requests saves nothing: same as configured, with a note */
  expect_row(t, "sliding_window", "w4096_all", 147456, 400032, 195.33, 1.0);
  long r = find(t, "sliding_window", "w4096_all");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "no saving"), "window note: %s", r >= 0 ? text(t, r, "note") : "");
  r = find(t, "eviction", "keep_2048");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "nothing evicted"), "eviction note");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.host_budget = 58987118592.0;
  p.h2d_gbps = 25.0;
  t = build("qwen3-8b", &p);
  /* host pool as large as the GPU's: 2 x 58,987,118,592 / 2,359,296 = 50,004 blocks = 800,064 tokens;
   * reload 147,456 B / 25 GB/s = 5.90 us per token */
  expect_row(t, "offload", "host_budget", 147456, 800064, 19.53, 2.0);
  r = find(t, "offload", "host_budget");
  EXPECT(r >= 0 && strstr(text(t, r, "note"), "5.90 us"), "reload: %s", r >= 0 ? text(t, r, "note") : "");
  km_table_free(t);

  km_bytes_params_default(&p);
  p.kv_dtype_bytes = 4;
  t = build("qwen3-8b", &p);
  /* fp32 KV: 294,912 B; budget / 4,718,592 = 12,501 blocks = 200,016 tokens; fp8 is 4x that */
  expect_row(t, "gqa", "as_configured", 294912, 200016, 4.88, 1.0);
  expect_row(t, "kv_quant", "fp8_e4m3", 73728, 800064, 19.53, 4.0);
  km_table_free(t);

  km_bytes_params_default(&p);
  p.block_size = 256;
  p.max_model_len = 40961;
  t = build("qwen3-8b", &p);
  /* budget / (256 x 147,456 = 37,748,736) = 1,562.6 -> 1,562 blocks = 399,872 tokens; a 40,961-token request
   * takes ceil(40,961 / 256) = 161 blocks = 41,216 tokens: 399,872 / 41,216 = 9.70 seqs */
  expect_row(t, "gqa", "as_configured", 147456, 399872, 9.70, 1.0);
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
  long r = find(t, "gqa", "as_configured");
  /* 26 Mamba layers x 2,158,592 B = 56,123,392 B per sequence: 58,987,118,592 / that = 1,051.03 seqs */
  EXPECT(r >= 0 && num(t, r, "bytes_per_token") == 0 && isnan(num(t, r, "capacity_tokens")), "no-KV tokens");
  EXPECT(r >= 0 && fabs(num(t, r, "max_concurrency") - 1051.03) < 0.005, "no-KV conc %.3f",
         num(t, r, "max_concurrency"));
  r = find(t, "mla", "latent");
  EXPECT(r >= 0 && isnan(num(t, r, "bytes_per_token")) && strstr(text(t, r, "note"), "meaningless"), "no-KV mla");
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
  EXPECT(cJSON_IsArray(rows) && (size_t)cJSON_GetArraySize(rows) == t->nrows, "rows array");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "kv_budget_bytes")) == 58987118592.0, "budget");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "max_model_len")) == 40960, "len");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "block_size")) == 16, "block");
  EXPECT(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(model, "kv_bytes_per_token")) == 147456, "model B");
  EXPECT(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(model, "name")), "qwen3-8b"), "model name");
  const cJSON *first = cJSON_GetArrayItem(rows, 0);
  static const char *const keys[] = {"technique", "mechanism", "variant", "bytes_per_token", "capacity_tokens",
                                     "max_concurrency", "capacity_x", "note"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    EXPECT(cJSON_GetObjectItemCaseSensitive(first, keys[i]) != NULL, "row key %s", keys[i]);
  cJSON_Delete(o);
  km_table_free(t);
}

int main(void) {
  test_default();
  test_presets();
  test_params();
  test_no_kv_layers();
  test_json();
  return km_test_finish("cpu_bytes_table");
}
