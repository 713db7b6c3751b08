/* CPU checks of the prefix-cache simulator against what vLLM's rules give from first principles:
 * - the source article's shared-prefix workload: every request after the first hits exactly the shared
 *   prefix's full blocks, so the hit fraction is shared blocks / all prompt blocks ((R - 1) floor(S / bs) of
 *   R P / bs), for prefixes that do and do not end on a block boundary;
 * - the capacity cliff on the default rig (Qwen3-8B, 400,032-token cache): pass 2 hits nothing, because
 *   LRU evicts every document before its turn comes again; a working set inside the cache hits all but
 *   the block vLLM always recomputes;
 * - vLLM's eviction order on a pool of a few blocks: least recently freed first, a freed chain's tail
 *   before its head; the MRU policy's order; the recomputed last block of a prompt that ends on a boundary;
 * - the workload checks: an empty prompt, a request beyond max_model_len or beyond the cache. */
#include <stdio.h>
#include <string.h>

#include "prefix_capacity.h"
#include "prefix_sim.h"
#include "test_util.h"

static int run(const km_sim_workload *w, const km_sim_config *c, km_sim_pass *out) {
  char err[256] = "";
  int rc = km_sim_run(w, c, out, err, sizeof err);
  if (rc) fprintf(stderr, "km_sim_run: %s\n", err);
  return rc;
}

/* The default rig's pool, through the same adapter the command uses. */
static km_sim_config rig(km_sim_policy policy, km_hash_algo algo) {
  km_model m;
  km_bytes_params p;
  km_bytes_params_default(&p);
  long long tokens = 0, blocks = 0;
  char err[256];
  KM_EXPECT(km_model_resolve("qwen3-8b", &m, err, sizeof err) == 0);
  KM_EXPECT(km_prefix_pool(&m, &p, &tokens, &blocks, err, sizeof err) == 0);
  KM_EXPECT(tokens == 400032 && blocks == 25002);
  const long long len = km_bytes_max_model_len(&m, &p, err, sizeof err); /* the config's 40,960 */
  KM_EXPECT(len == 40960);
  km_sim_config c = {blocks, 16, len, policy, algo};
  return c;
}

static void test_shared_prefix(void) {
  const km_sim_config c = rig(KM_SIM_LRU, KM_HASH_XXHASH_CBOR);
  const long long prefixes[] = {0, 16, 1000, 1024, 4096, 16384, 16383};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    const long long R = 32, S = prefixes[i], P = S + 256, bs = c.block_size;
    km_sim_workload w = {R, S, 0, 256, 64, 1, 32};
    km_sim_pass p;
    if (run(&w, &c, &p)) {
      km_test_failures++;
      continue;
    }
    const long long shared_blocks = S / bs;
    KM_EXPECT_MSG(p.blocks_hit == (R - 1) * shared_blocks, "S %lld: %lld blocks hit, want %lld", S, p.blocks_hit,
                  (R - 1) * shared_blocks);
    KM_EXPECT_MSG(p.prompt_blocks == R * (P / bs), "S %lld: %lld prompt blocks", S, p.prompt_blocks);
    KM_EXPECT_NEAR(p.hit_rate, (double)((R - 1) * shared_blocks * bs) / (double)(R * P), 1e-12);
    KM_EXPECT(p.tokens_computed == R * P - (R - 1) * shared_blocks * bs);
    KM_EXPECT(p.evictions == 0 && p.requests == R && p.prompt_tokens == R * P);
    if (P % bs == 0) /* whole blocks: the hit fraction is shared blocks over all blocks, exactly */
      KM_EXPECT_NEAR(p.hit_rate, (double)((R - 1) * shared_blocks) / (double)(R * (P / bs)), 1e-12);
    /* one request at a time: the same hits (blocks are cached when allocated, so batching changes nothing) */
    w.concurrency = 1;
    km_sim_pass q;
    if (run(&w, &c, &q) == 0) KM_EXPECT(q.blocks_hit == p.blocks_hit && q.tokens_computed == p.tokens_computed);
  }
}

static void test_cliff(void) {
  for (int policy = 0; policy < KM_SIM_POLICY_COUNT; policy++) {
    const km_sim_config c = rig((km_sim_policy)policy, KM_HASH_SHA256);
    /* the article: 64 x (8,192 + 256) tokens = 540,672 into 400,032, twice, in the same order */
    const km_sim_workload w = {64, 0, 8192, 256, 64, 2, 64};
    KM_EXPECT(km_sim_working_set_tokens(&w) == 540672);
    km_sim_pass p[2];
    if (run(&w, &c, p)) {
      km_test_failures++;
      continue;
    }
    KM_EXPECT(p[0].blocks_hit == 0 && p[0].tokens_computed == 540672);
    if (policy == KM_SIM_LRU) {
      KM_EXPECT_MSG(p[1].blocks_hit == 0 && p[1].hit_rate == 0.0, "pass 2 hit %lld blocks", p[1].blocks_hit);
      KM_EXPECT(p[1].tokens_computed == 540672);
      /* every cached block of pass 1 (64 x 531: 528 prompt + 3 full decode blocks) is evicted in pass 2 */
      KM_EXPECT(p[1].evictions == 64 * 531);
    } else {
      KM_EXPECT_MSG(p[1].blocks_hit > 0, "mru keeps part of the working set");
    }
    /* one request at a time, the cliff stands under LRU too */
    km_sim_workload one = w;
    one.concurrency = 1;
    if (policy == KM_SIM_LRU && run(&one, &c, p) == 0) KM_EXPECT(p[1].blocks_hit == 0);
  }
  /* inside the cache: pass 2 hits every prompt block but the last (8,448 tokens end on a block boundary,
   * and vLLM recomputes the last token, so the block holding it) */
  const km_sim_config c = rig(KM_SIM_LRU, KM_HASH_XXHASH);
  const km_sim_workload w = {40, 0, 8192, 256, 64, 2, 40};
  km_sim_pass p[2];
  if (run(&w, &c, p) == 0) {
    KM_EXPECT(p[1].blocks_hit == 40 * 527);
    KM_EXPECT(p[1].tokens_computed == 40 * 16);
  }
}

static km_sim_pool *pool(long long blocks, km_sim_policy policy) {
  km_sim_config c = {blocks, 4, 1024, policy, KM_HASH_XXHASH_CBOR};
  km_sim_pool *p = NULL;
  char err[256];
  if (km_sim_pool_new(&c, &p, err, sizeof err)) fprintf(stderr, "km_sim_pool_new: %s\n", err);
  return p;
}

/* n distinct token ids starting at base (requests that share nothing use disjoint ranges) */
static const uint32_t *ids(uint32_t base, int n) {
  static uint32_t t[64];
  for (int i = 0; i < n && i < 64; i++) t[i] = base + (uint32_t)i;
  return t;
}

static long long serve(km_sim_pool *p, uint32_t base, int prompt, int output, km_sim_pass *st) {
  memset(st, 0, sizeof *st);
  int rc = km_sim_pool_serve(p, ids(base, prompt + output - 1), prompt, output, st);
  KM_EXPECT_MSG(rc == 0, "serve %d + %d tokens", prompt, output);
  return st->blocks_hit;
}

static int order_is(const km_sim_pool *p, const int32_t *want, long long n) {
  int32_t got[32];
  return km_sim_pool_eviction_order(p, got, 32) == n && memcmp(got, want, (size_t)n * sizeof *got) == 0;
}

/* 7 blocks (6 usable: block 0 is the null block), 4 tokens each. A: 17 prompt tokens and 1 output token
 * hold 5 blocks (ids 1..5), 4 of them full and cached. Freed in reverse, the queue is then
 * [6, 5 (A's partial block), 4, 3, 2, 1]: B (2 blocks) takes 6 and 5, evicting nothing cached; C takes 4
 * and 3, A's tail. A again hits blocks 1 and 2: its head outlived its tail. Evicting head first would
 * have left it nothing. */
static void test_tail_first(void) {
  km_sim_pool *p = pool(7, KM_SIM_LRU);
  if (!p) {
    km_test_failures++;
    return;
  }
  km_sim_pass st;
  KM_EXPECT(serve(p, 1000, 17, 1, &st) == 0);
  KM_EXPECT(order_is(p, (const int32_t[]){6, 5, 4, 3, 2, 1}, 6));
  KM_EXPECT(km_sim_pool_is_cached(p, 4) && !km_sim_pool_is_cached(p, 5));
  KM_EXPECT(serve(p, 2000, 8, 1, &st) == 0 && st.evictions == 0);
  KM_EXPECT(serve(p, 3000, 8, 1, &st) == 0 && st.evictions == 2);
  KM_EXPECT(serve(p, 1000, 17, 1, &st) == 2);
  KM_EXPECT(st.tokens_computed == 17 - 8 && st.prompt_blocks == 4);
  KM_EXPECT_NEAR(st.hit_rate, 8.0 / 17.0, 1e-12);
  km_sim_pool_free(p);
}

/* 9 blocks (8 usable). A1 then A2 (2 blocks each), then B (6 blocks). LRU: B takes the 4 never-used
 * blocks, then A1's (freed first); A2 keeps its first block for a hit. MRU: B takes the 4 never-used
 * blocks, then A2's (freed last); A1 keeps its hit. A2 is sent again before A1. */
static void test_policies(void) {
  for (int policy = 0; policy < KM_SIM_POLICY_COUNT; policy++) {
    km_sim_pool *p = pool(9, (km_sim_policy)policy);
    if (!p) {
      km_test_failures++;
      continue;
    }
    km_sim_pass st;
    serve(p, 100, 8, 1, &st); /* A1: blocks 1, 2 */
    serve(p, 200, 8, 1, &st); /* A2: blocks 3, 4 */
    if (policy == KM_SIM_LRU) KM_EXPECT(order_is(p, (const int32_t[]){5, 6, 7, 8, 2, 1, 4, 3}, 8));
    else KM_EXPECT(order_is(p, (const int32_t[]){5, 6, 7, 8, 4, 3, 2, 1}, 8));
    KM_EXPECT(serve(p, 300, 24, 1, &st) == 0 && st.evictions == 2);
    long long a2 = serve(p, 200, 8, 1, &st), a1 = serve(p, 100, 8, 1, &st); /* A2 first: A1's blocks could be its */
    KM_EXPECT_MSG(policy == KM_SIM_LRU ? (a1 == 0 && a2 == 1) : (a1 == 1 && a2 == 0), "%s: A1 hit %lld, A2 hit %lld",
                  km_sim_policy_name((km_sim_policy)policy), a1, a2);
    km_sim_pool_free(p);
  }
}

/* A prompt that ends on a block boundary, sent again: vLLM hits all its blocks but the last (the last
 * token is always computed), allocates a new block for it and caches it beside the old one under the
 * same hash. Either copy serves later hits until both are evicted. */
static void test_recomputed_last_block(void) {
  km_sim_pool *p = pool(8, KM_SIM_LRU);
  if (!p) {
    km_test_failures++;
    return;
  }
  km_sim_pass st;
  KM_EXPECT(serve(p, 500, 12, 1, &st) == 0);   /* blocks 1, 2, 3 */
  KM_EXPECT(serve(p, 500, 12, 1, &st) == 2);   /* hits 1, 2; block 4 recomputes the third */
  KM_EXPECT(st.tokens_computed == 4 && st.evictions == 0);
  KM_EXPECT(km_sim_pool_is_cached(p, 3) && km_sim_pool_is_cached(p, 4));
  KM_EXPECT(serve(p, 900, 12, 1, &st) == 0);   /* takes 5, 6, 7: nothing evicted yet */
  KM_EXPECT(serve(p, 800, 3, 1, &st) == 0 && st.evictions == 1); /* a partial block in 3: the older copy goes */
  KM_EXPECT(!km_sim_pool_is_cached(p, 3) && km_sim_pool_is_cached(p, 4));
  KM_EXPECT(serve(p, 500, 13, 1, &st) == 3);   /* 13 tokens: up to 3 blocks may hit; the third is block 4 */
  km_sim_pool_free(p);
}

static void expect_check_error(const km_sim_workload *w, const km_sim_config *c, const char *flag) {
  char err[256] = "";
  km_sim_pass p[4];
  KM_EXPECT_MSG(km_sim_check(w, c, err, sizeof err) == -1 && strstr(err, flag), "want an error naming %s, got '%s'",
                flag, err);
  KM_EXPECT(km_sim_run(w, c, p, err, sizeof err) == -1);
}

static void test_checks(void) {
  const km_sim_config c = rig(KM_SIM_LRU, KM_HASH_SHA256);
  const km_sim_workload empty = {4, 0, 0, 0, 64, 1, 1};
  expect_check_error(&empty, &c, "prompt is empty");
  const km_sim_workload long_req = {4, 40000, 0, 1000, 64, 1, 1};
  expect_check_error(&long_req, &c, "--max-model-len");
  km_sim_config small = c;
  small.num_blocks = 100;
  const km_sim_workload big = {4, 0, 2000, 0, 64, 1, 1};
  expect_check_error(&big, &small, "--kv-budget");
  const km_sim_workload many = {1000000, 0, 8192, 256, 64, 1000, 1};
  expect_check_error(&many, &c, "--passes");
  km_sim_config bs = c;
  bs.block_size = KM_HASH_MAX_BLOCK_TOKENS + 1;
  const km_sim_workload ok = {4, 0, 0, 256, 64, 1, 1};
  expect_check_error(&ok, &bs, "--block-size");
}

int main(void) {
  test_shared_prefix();
  test_cliff();
  test_tail_first();
  test_policies();
  test_recomputed_last_block();
  test_checks();
  return km_test_finish("cpu_prefix_sim");
}
