/* vLLM v1 KV cache sizing (vLLM v0.11). Each step names the vLLM function it follows:
 *   vllm/v1/kv_cache_interface.py       page_size_bytes, max_memory_usage_bytes per spec
 *   vllm/model_executor/models/config.py HybridAttentionMambaModelConfig.verify_and_update_config
 *   vllm/v1/core/kv_cache_utils.py      get_kv_cache_groups, unify_kv_cache_spec_page_size,
 *                                       _get_kv_cache_groups_uniform_page_size, get_kv_cache_config_from_groups,
 *                                       get_num_blocks, _report_kv_cache_config,
 *                                       get_max_concurrency_for_kv_cache_config, check_enough_kv_cache_memory
 * Defaults this models: no prefix caching for state layers (mamba_cache_mode "none"), no speculative decoding,
 * one GPU (no tensor, pipeline or context parallelism), the hybrid KV cache manager on. */
#include "vllm_kv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One layer as vLLM's spec holds it once the block sizes are settled. */
typedef struct spec {
  km_kv_spec_kind kind;
  long long block;   /* tokens per block */
  double page;       /* page_size_bytes */
  long long window;
} spec;

/* Block sizes stay far below 2^63 tokens: the inputs are bounded (budget <= 2^53 B, state <= 1e12 elements,
 * max_model_len <= 2^40), and a unification that would need a larger block is reported, not computed. */
#define MAX_BLOCK 1e15

static double cdiv(double a, double b) { return ceil(a / b); }

/* Python's a // b for the non-negative integers these are (exact in a double below 2^53). */
static long long floor_div(double a, double b) {
  if (a == floor(a) && b == floor(b) && a < 9e15 && b >= 1) return (long long)a / (long long)b;
  return (long long)floor(a / b);
}

static int is_attn(km_kv_spec_kind k) { return k == KM_KV_FULL || k == KM_KV_WINDOW; }

/* max_memory_usage_bytes / page_size_bytes: FullAttentionSpec cdiv(max_model_len, block);
 * SlidingWindowSpec cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1 (the window
 * may start mid-block); MambaSpec one page (mamba_cache_mode "none", no speculative blocks). */
static long long blocks_needed(const spec *s, const km_kv_config *c, long long max_model_len) {
  switch (s->kind) {
  case KM_KV_FULL: return (long long)cdiv((double)max_model_len, (double)s->block);
  case KM_KV_WINDOW: {
    long long tokens = s->window - 1 + c->max_num_batched_tokens;
    if (tokens > max_model_len) tokens = max_model_len;
    return (long long)cdiv((double)tokens, (double)s->block) + 1;
  }
  default: return 1;
  }
}

static int same_spec(const spec *a, const spec *b) {
  return a->kind == b->kind && a->block == b->block && a->page == b->page && a->window == b->window;
}

/* UniformTypeKVCacheSpecs.is_uniform_type: one block size and one kind (one window for sliding layers). */
static int uniform_type(const spec *s, int n) {
  for (int i = 1; i < n; i++)
    if (s[i].kind != s[0].kind || s[i].block != s[0].block || s[i].window != s[0].window) return 0;
  return 1;
}

/* HybridAttentionMambaModelConfig (no prefix caching): the smallest attention block, a multiple of the
 * kernel alignment (16; 64 for MLA), whose page holds a state page; then the state page is padded to the
 * attention page. MambaModelConfig: the state's block size is max_model_len. */
static void settle_blocks(const km_kv_layer *l, int n, const km_kv_config *c, spec *s, km_kv_plan *p) {
  double attn_1tok = 0;
  for (int i = 0; i < n; i++) {
    if (is_attn(l[i].kind) && l[i].token_bytes > attn_1tok) attn_1tok = l[i].token_bytes;
    if (l[i].kind == KM_KV_STATE && l[i].state_bytes > p->state_bytes) p->state_bytes = l[i].state_bytes;
  }
  long long block = c->block_size;
  double state_page = 0; /* 0: each state layer its own page (no attention to pad to) */
  if (p->attn_layers > 0 && p->state_layers > 0) {
    double align = c->mla ? 64 : 16;
    long long want = (long long)(align * cdiv(p->state_bytes, align * attn_1tok));
    if (block < want) block = want;
    state_page = (double)block * attn_1tok;
  }
  p->attn_block_size = p->attn_layers ? block : 0;
  p->attn_page_bytes = (double)block * attn_1tok;
  for (int i = 0; i < n; i++) {
    s[i].kind = l[i].kind;
    s[i].window = l[i].kind == KM_KV_WINDOW ? l[i].window : 0;
    s[i].block = is_attn(l[i].kind) ? block : c->max_model_len;
    s[i].page = is_attn(l[i].kind) ? (double)block * l[i].token_bytes : state_page > 0 ? state_page : l[i].state_bytes;
  }
}

/* unify_kv_cache_spec_page_size: grow the block of every smaller page until all pages equal the largest;
 * a page that does not divide the largest is vLLM's NotImplementedError. */
static int unify_pages(spec *s, int n, km_kv_plan *p) {
  double big = 0;
  for (int i = 0; i < n; i++) big = s[i].page > big ? s[i].page : big;
  for (int i = 0; i < n; i++) {
    if (s[i].page == big) continue;
    double ratio = big / s[i].page;
    if (ratio != floor(ratio)) {
      snprintf(p->reason, sizeof p->reason, "page sizes %.0f B and %.0f B do not divide: vLLM cannot unify them "
               "(unify_kv_cache_spec_page_size)", s[i].page, big);
      return -1;
    }
    if ((double)s[i].block * ratio > MAX_BLOCK) {
      snprintf(p->reason, sizeof p->reason, "page sizes %.0f B and %.0f B need a %.3g-token block to unify (vLLM "
               "unify_kv_cache_spec_page_size): not a real cache", s[i].page, big, (double)s[i].block * ratio);
      return -1;
    }
    s[i].block = (long long)((double)s[i].block * ratio);
    s[i].page = big;
  }
  p->page_bytes = big;
  return 0;
}

/* _get_kv_cache_groups_uniform_page_size: layers of one spec form a type; the group size is the smallest
 * type's layer count (the largest when it is under 1.5x the smallest); each type splits into
 * cdiv(count, group size) groups, the last one padded. Returns the blocks a request needs over all groups. */
static long long group_layers(const spec *s, int n, const km_kv_config *c, long long max_len, km_kv_plan *p) {
  int first[KM_KV_MAX_LAYERS], count[KM_KV_MAX_LAYERS], types = 0;
  for (int i = 0; i < n; i++) {
    int t = 0;
    while (t < types && !same_spec(&s[first[t]], &s[i])) t++;
    if (t == types) {
      first[types] = i;
      count[types++] = 0;
    }
    count[t]++;
  }
  int lo = n, hi = 0;
  for (int t = 0; t < types; t++) {
    lo = count[t] < lo ? count[t] : lo;
    hi = count[t] > hi ? count[t] : hi;
  }
  p->group_size = (double)hi < 1.5 * lo ? hi : lo;
  long long per_request = 0;
  p->num_groups = p->padding_layers = 0;
  for (int t = 0; t < types; t++) {
    int groups = (count[t] + p->group_size - 1) / p->group_size;
    p->num_groups += groups;
    p->padding_layers += groups * p->group_size - count[t];
    per_request += groups * blocks_needed(&s[first[t]], c, max_len);
  }
  return per_request;
}

/* get_kv_cache_groups then get_kv_cache_config_from_groups / get_num_blocks; the blocks a request needs
 * as get_max_concurrency_for_kv_cache_config counts them (padding included). */
static int plan_groups(spec *s, int n, const km_kv_config *c, long long max_len, km_kv_plan *p) {
  int uniform = 1;
  for (int i = 1; i < n && uniform; i++) uniform = same_spec(&s[i], &s[0]);
  if (uniform) { /* _get_kv_cache_groups_uniform_spec: one group of every layer */
    p->num_groups = 1;
    p->group_size = n;
    p->page_bytes = s[0].page;
    p->num_blocks = floor_div((double)floor_div(c->available_memory, s[0].page), n);
    p->blocks_per_request = blocks_needed(&s[0], c, max_len);
    return 0;
  }
  if (uniform_type(s, n)) { /* one UniformTypeKVCacheSpecs group: each layer its own page size */
    p->uniform_type = 1;
    p->num_groups = 1;
    p->group_size = n;
    p->page_bytes = 0;
    for (int i = 0; i < n; i++) p->page_bytes += s[i].page;
    p->num_blocks = floor_div(c->available_memory, p->page_bytes);
    p->blocks_per_request = blocks_needed(&s[0], c, max_len);
    return 0;
  }
  if (unify_pages(s, n, p)) return -1;
  p->blocks_per_request = group_layers(s, n, c, max_len, p);
  p->num_blocks = floor_div((double)floor_div(c->available_memory, p->page_bytes), p->group_size);
  return 0;
}

/* check_enough_kv_cache_memory: every layer's max_memory_usage_bytes for one max_model_len request. */
static double request_bytes(const spec *s, int n, const km_kv_config *c, long long max_len) {
  double total = 0;
  for (int i = 0; i < n; i++) total += (double)blocks_needed(&s[i], c, max_len) * s[i].page;
  return total;
}

/* What a request really keeps: its tokens (a window's, an eviction budget's) in whole blocks, and its state. */
static double ideal_concurrency(const km_kv_layer *l, int n, const km_kv_config *c, long long block) {
  double foot = 0;
  for (int i = 0; i < n; i++) {
    if (l[i].kind == KM_KV_STATE) {
      foot += l[i].state_bytes;
      continue;
    }
    long long kept = l[i].kept > 0 && l[i].kept < c->max_model_len ? l[i].kept : c->max_model_len;
    foot += cdiv((double)kept, (double)block) * (double)block * l[i].token_bytes;
  }
  return foot > 0 ? c->available_memory / foot : NAN;
}

static void count_layers(const km_kv_layer *l, int n, km_kv_plan *p) {
  for (int i = 0; i < n; i++) {
    p->attn_layers += is_attn(l[i].kind) && l[i].token_bytes > 0;
    p->state_layers += l[i].kind == KM_KV_STATE && l[i].state_bytes > 0;
  }
}

void km_kv_plan_build(const km_kv_layer *layers, int n, const km_kv_config *cfg, km_kv_plan *out) {
  spec s[KM_KV_MAX_LAYERS];
  memset(out, 0, sizeof *out);
  out->max_concurrency = out->ideal_concurrency = NAN;
  if (n > KM_KV_MAX_LAYERS) n = KM_KV_MAX_LAYERS;
  count_layers(layers, n, out);
  if (out->attn_layers + out->state_layers != n || n == 0) {
    snprintf(out->reason, sizeof out->reason, "%s", n == 0 ? "no KV cache or state layers: nothing to size"
                                                           : "a layer with no bytes per token or state");
    return;
  }
  settle_blocks(layers, n, cfg, s, out);
  out->request_bytes = request_bytes(s, n, cfg, cfg->max_model_len);
  out->ideal_concurrency = ideal_concurrency(layers, n, cfg, out->attn_block_size ? out->attn_block_size : 1);
  if (plan_groups(s, n, cfg, cfg->max_model_len, out)) return;
  /* _report_kv_cache_config: num_blocks // groups x the smallest block size of any group */
  long long min_block = s[0].block;
  for (int i = 1; i < n; i++) min_block = s[i].block < min_block ? s[i].block : min_block;
  out->min_block_size = min_block;
  out->kv_cache_tokens = (double)(out->num_blocks / out->num_groups) * (double)min_block;
  out->max_concurrency = (double)out->num_blocks / (double)out->blocks_per_request;
  out->ok = 1;
}

long long km_kv_max_fit_len(const km_kv_layer *layers, int n, const km_kv_config *cfg) {
  spec s[KM_KV_MAX_LAYERS];
  km_kv_plan p;
  memset(&p, 0, sizeof p);
  if (n > KM_KV_MAX_LAYERS) n = KM_KV_MAX_LAYERS;
  count_layers(layers, n, &p);
  settle_blocks(layers, n, cfg, s, &p);
  long long lo = 1, hi = cfg->max_model_len, best = 0;
  while (lo <= hi) { /* estimate_max_model_len's binary search */
    long long mid = lo + (hi - lo) / 2;
    if (request_bytes(s, n, cfg, mid) <= cfg->available_memory) {
      best = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}
