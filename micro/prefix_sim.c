/* The prefix-cache simulator's block pool, hash map and scheduler loop. vLLM's names are kept where a
 * step mirrors one of its functions: find_longest_cache_hit, touch, get_new_blocks (popleft, then
 * _maybe_evict_cached_block), cache_full_blocks, free_blocks (blocks in reverse order, then append_n). */
#include "prefix_sim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name_index.h"

enum { NONE = -1 };
/* LRU keeps every free block on LIST_FREE, as vLLM's one free queue; MRU keeps never-cached blocks there
 * and cached ones on LIST_CACHED, a stack. */
enum { LIST_NONE = 0, LIST_FREE, LIST_CACHED, LIST_COUNT };
/* Token ids drawn below Qwen3's vocabulary size. The ids only need to differ where the workload says
 * the requests differ; which values they take changes no hit. */
#define VOCAB 151936u
#define TOKEN_SEED 0x6b766d6963726f31ull

static const char *const policy_names[KM_SIM_POLICY_COUNT] = {"lru", "mru"};

const char *km_sim_policy_name(km_sim_policy p) { return p >= 0 && p < KM_SIM_POLICY_COUNT ? policy_names[p] : "?"; }

int km_sim_policy_parse(const char *name, km_sim_policy *out) {
  int i = km_name_index(policy_names, KM_SIM_POLICY_COUNT, name);
  if (i >= 0) *out = (km_sim_policy)i;
  return i >= 0 ? 0 : -1;
}

static long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

long long km_sim_prompt_tokens(const km_sim_workload *w) { return w->shared_prefix + w->document + w->suffix; }

long long km_sim_request_blocks(const km_sim_workload *w, long long block_size) {
  return cdiv(km_sim_prompt_tokens(w) + w->output - 1, block_size);
}

long long km_sim_working_set_tokens(const km_sim_workload *w) {
  return w->shared_prefix + w->requests * (w->document + w->suffix);
}

int km_sim_check(const km_sim_workload *w, const km_sim_config *c, char *err, size_t errlen) {
  const long long prompt = km_sim_prompt_tokens(w);
  if (prompt < 1) {
    snprintf(err, errlen,
             "workload: the prompt is empty (give --shared-prefix, --document-tokens or --suffix-tokens > 0)");
    return -1;
  }
  if (c->block_size < 1 || c->block_size > KM_HASH_MAX_BLOCK_TOKENS) {
    snprintf(err, errlen, "--block-size %lld: the simulator hashes blocks of 1..%d tokens", c->block_size,
             KM_HASH_MAX_BLOCK_TOKENS);
    return -1;
  }
  if (prompt + w->output > c->max_model_len) {
    snprintf(err, errlen, "workload: a request of %lld prompt + %lld output tokens exceeds --max-model-len %lld",
             prompt, w->output, c->max_model_len);
    return -1;
  }
  const long long need = km_sim_request_blocks(w, c->block_size);
  if (c->num_blocks - 1 < need) {
    snprintf(err, errlen, "workload: one request needs %lld blocks of %lld tokens, the cache holds %lld (block 0 is "
             "vLLM's null block): raise --kv-budget or shorten the request", need, c->block_size, c->num_blocks - 1);
    return -1;
  }
  if (c->num_blocks > INT32_MAX) {
    snprintf(err, errlen, "--kv-budget: %lld blocks, the simulator takes at most %d", c->num_blocks, INT32_MAX);
    return -1;
  }
  if ((double)w->requests * (double)w->passes * (double)(prompt + w->output) > (double)KM_SIM_MAX_TOKENS) {
    snprintf(err, errlen, "workload: --requests %lld x --passes %lld x %lld tokens per request is beyond the %lld "
             "tokens one simulation replays", w->requests, w->passes, prompt + w->output, KM_SIM_MAX_TOKENS);
    return -1;
  }
  return 0;
}

/* ---- the pool */
typedef struct sim_list {
  int32_t head, tail;
  long long count;
} sim_list;

struct km_sim_pool {
  km_sim_config c_own; /* a pool made by km_sim_pool_new keeps its own config */
  const km_sim_config *c;
  const km_sim_workload *w;
  int32_t n;
  int32_t *ref, *prev, *next, *dup_next;
  uint8_t *list, *cached;
  km_block_hash *hash;
  sim_list lists[LIST_COUNT];
  int32_t *slots; /* open addressing, linear probing: the first cached block with a given hash */
  size_t mask;
  long long reserved; /* blocks the running requests will still take */
  km_hasher *hasher;
  km_block_hash none;
  km_sim_pass *pass; /* the pass of the request being served */
};
typedef struct km_sim_pool sim;

static void list_push_back(sim *s, int l, int32_t b) {
  sim_list *L = &s->lists[l];
  s->prev[b] = L->tail;
  s->next[b] = NONE;
  if (L->tail != NONE) s->next[L->tail] = b;
  else L->head = b;
  L->tail = b;
  L->count++;
  s->list[b] = (uint8_t)l;
}

static void list_push_front(sim *s, int l, int32_t b) {
  sim_list *L = &s->lists[l];
  s->next[b] = L->head;
  s->prev[b] = NONE;
  if (L->head != NONE) s->prev[L->head] = b;
  else L->tail = b;
  L->head = b;
  L->count++;
  s->list[b] = (uint8_t)l;
}

static void list_remove(sim *s, int32_t b) {
  sim_list *L = &s->lists[s->list[b]];
  if (s->prev[b] != NONE) s->next[s->prev[b]] = s->next[b];
  else L->head = s->next[b];
  if (s->next[b] != NONE) s->prev[s->next[b]] = s->prev[b];
  else L->tail = s->prev[b];
  L->count--;
  s->list[b] = LIST_NONE;
}

static long long free_blocks(const sim *s) { return s->lists[LIST_FREE].count + s->lists[LIST_CACHED].count; }

/* ---- hash -> blocks: a slot holds the first block cached under a hash; later ones (vLLM does not
 * de-duplicate) follow through dup_next in the order they were cached, and a lookup returns the first. */
static size_t home_slot(const sim *s, const km_block_hash *h) {
  uint64_t k = 0;
  memcpy(&k, h->bytes, sizeof k); /* a digest: its first bytes are as good as any mix of them */
  return (size_t)(k ^ (k >> 29)) & s->mask;
}

static int same_hash(const km_block_hash *a, const km_block_hash *b) {
  return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

static size_t find_slot(const sim *s, const km_block_hash *h) {
  size_t i = home_slot(s, h);
  while (s->slots[i] != NONE && !same_hash(&s->hash[s->slots[i]], h)) i = (i + 1) & s->mask;
  return i;
}

static void map_insert(sim *s, int32_t b, const km_block_hash *h) {
  s->hash[b] = *h;
  s->cached[b] = 1;
  s->dup_next[b] = NONE;
  size_t i = find_slot(s, h);
  if (s->slots[i] == NONE) {
    s->slots[i] = b;
    return;
  }
  int32_t last = s->slots[i];
  while (s->dup_next[last] != NONE) last = s->dup_next[last];
  s->dup_next[last] = b;
}

/* Backward-shift deletion keeps every remaining key reachable from its home slot without tombstones. */
static void slot_delete(sim *s, size_t i) {
  s->slots[i] = NONE;
  for (size_t j = (i + 1) & s->mask; s->slots[j] != NONE; j = (j + 1) & s->mask) {
    size_t k = home_slot(s, &s->hash[s->slots[j]]);
    int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    s->slots[i] = s->slots[j];
    s->slots[j] = NONE;
    i = j;
  }
}

/* _maybe_evict_cached_block: this block leaves the map; others cached under the same hash stay. */
static void map_remove(sim *s, int32_t b) {
  size_t i = find_slot(s, &s->hash[b]);
  if (s->slots[i] == b) {
    if (s->dup_next[b] == NONE) slot_delete(s, i);
    else s->slots[i] = s->dup_next[b];
  } else {
    int32_t p = s->slots[i];
    while (s->dup_next[p] != b) p = s->dup_next[p];
    s->dup_next[p] = s->dup_next[b];
  }
  s->cached[b] = 0;
}

static int32_t map_find(const sim *s, const km_block_hash *h) { return s->slots[find_slot(s, h)]; }

/* get_new_blocks for one block: the head of the free queue (MRU: of the never-cached list while it has
 * any), its cached hash dropped. */
static int32_t take_block(sim *s) {
  int l = s->lists[LIST_FREE].count > 0 ? LIST_FREE : LIST_CACHED;
  int32_t b = s->lists[l].head;
  if (b == NONE) return NONE; /* admission reserves every block a request takes: not reached */
  list_remove(s, b);
  if (s->cached[b]) {
    map_remove(s, b);
    s->pass->evictions++;
  }
  s->ref[b] = 1;
  return b;
}

static void touch(sim *s, int32_t b) {
  if (s->ref[b]++ == 0) list_remove(s, b);
}

/* free_blocks(reversed(blocks)): every reference dropped, then the blocks that reached 0 appended in
 * that order (tail first). MRU puts the cached ones on the front of its stack so the tail is on top. */
static void release(sim *s, const int32_t *blocks, long long n, int32_t *scratch) {
  long long k = 0;
  for (long long i = n - 1; i >= 0; i--)
    if (--s->ref[blocks[i]] == 0) scratch[k++] = blocks[i];
  if (s->c->policy == KM_SIM_LRU) {
    for (long long i = 0; i < k; i++) list_push_back(s, LIST_FREE, scratch[i]);
    return;
  }
  for (long long i = 0; i < k; i++)
    if (!s->cached[scratch[i]]) list_push_back(s, LIST_FREE, scratch[i]);
  for (long long i = k - 1; i >= 0; i--)
    if (s->cached[scratch[i]]) list_push_front(s, LIST_CACHED, scratch[i]);
}

/* ---- requests */
typedef struct sim_req {
  long long prompt, total; /* tokens: the prompt, and all that get KV (prompt + output - 1) */
  uint32_t *tokens;        /* total */
  km_block_hash *hashes;   /* full blocks of tokens, hashed as they are cached */
  int32_t *blocks;
  long long nblocks, nhashed, ncached, kv, generated, reserved;
  long long pass_index;
  km_sim_pass *pass;
} sim_req;

static uint32_t token_at(uint64_t stream, long long i) {
  uint64_t z = TOKEN_SEED ^ (stream * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i * 0xD6E8FEB86659FD93ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) % VOCAB);
}

/* The same ids for request r on every pass: the shared prefix from stream 0, the rest from r's own. */
static void fill_tokens(const km_sim_workload *w, long long r, uint32_t *t) {
  long long i = 0;
  for (long long j = 0; j < w->shared_prefix; j++) t[i++] = token_at(0, j);
  for (long long j = 0; j < w->document; j++) t[i++] = token_at(4 * (uint64_t)r + 1, j);
  for (long long j = 0; j < w->suffix; j++) t[i++] = token_at(4 * (uint64_t)r + 2, j);
  for (long long j = 0; j < w->output - 1; j++) t[i++] = token_at(4 * (uint64_t)r + 3, j);
}

/* Hash and cache the request's blocks that are full and not cached yet (cache_full_blocks). */
static int cache_full(sim *s, sim_req *q) {
  const long long bs = s->c->block_size, full = q->kv / bs;
  if (full > q->nhashed) {
    if (km_hasher_chain(s->hasher, &s->none, q->tokens, (size_t)(full * bs), (size_t)q->nhashed, NULL, q->hashes) < 0)
      return -1;
    q->nhashed = full;
  }
  for (; q->ncached < full; q->ncached++) map_insert(s, q->blocks[q->ncached], &q->hashes[q->ncached]);
  return 0;
}

/* find_longest_cache_hit: cached full blocks from the first one until a miss, at most (prompt - 1) / bs.
 * hits[] gets their blocks; returns how many, and how many of them sit in the free queue. */
static long long longest_hit(const sim *s, const sim_req *q, int32_t *hits, long long *evictable) {
  const long long max = (q->prompt - 1) / s->c->block_size;
  long long n = 0;
  *evictable = 0;
  for (; n < max; n++) {
    int32_t b = map_find(s, &q->hashes[n]);
    if (b == NONE) break;
    hits[n] = b;
    *evictable += s->ref[b] == 0;
  }
  return n;
}

/* Admit the request if its whole footprint fits beside the running requests' reservations: 1 admitted,
 * 0 not now, -1 error. The prompt's full blocks are hashed first (request.block_hashes). */
static int admit(sim *s, sim_req *q, int32_t *scratch) {
  const long long bs = s->c->block_size, prompt_full = q->prompt / bs;
  q->kv = 0;
  if (km_hasher_chain(s->hasher, &s->none, q->tokens, (size_t)(prompt_full * bs), 0, NULL, q->hashes) < 0) return -1;
  q->nhashed = prompt_full;
  long long evictable = 0, hits = longest_hit(s, q, scratch, &evictable);
  const long long prefill = cdiv(q->prompt, bs), total = cdiv(q->total, bs);
  if (free_blocks(s) - s->reserved < (prefill - hits) + evictable + (total - prefill)) return 0;
  for (long long j = 0; j < hits; j++) {
    touch(s, scratch[j]);
    q->blocks[j] = scratch[j];
  }
  s->pass = q->pass;
  for (long long j = hits; j < prefill; j++)
    if ((q->blocks[j] = take_block(s)) == NONE) return -1;
  q->nblocks = prefill;
  q->ncached = hits;
  q->kv = q->prompt;
  if (cache_full(s, q)) return -1;
  q->reserved = total - prefill;
  s->reserved += q->reserved;
  q->generated = 1; /* the first output token is sampled by the prefill step */
  q->pass->requests++;
  q->pass->prompt_tokens += q->prompt;
  q->pass->prompt_blocks += prompt_full;
  q->pass->blocks_hit += hits;
  q->pass->tokens_computed += q->prompt - hits * bs;
  return 1;
}

/* One decode step of a running request: the last sampled token gets KV (a new block when it starts
 * one), then the next token is sampled. */
static int decode(sim *s, sim_req *q) {
  q->kv++;
  if (cdiv(q->kv, s->c->block_size) > q->nblocks) {
    s->pass = q->pass;
    if ((q->blocks[q->nblocks++] = take_block(s)) == NONE) return -1;
    q->reserved--;
    s->reserved--;
  }
  q->generated++;
  return cache_full(s, q);
}

static void req_free(sim_req *q) {
  free(q->tokens);
  free(q->hashes);
  free(q->blocks);
  memset(q, 0, sizeof *q);
}

static int req_alloc(sim_req *q, long long prompt, long long output, long long block_size) {
  memset(q, 0, sizeof *q);
  q->prompt = prompt;
  q->total = prompt + output - 1;
  const long long nb = cdiv(q->total, block_size);
  q->tokens = malloc((size_t)q->total * sizeof *q->tokens);
  q->hashes = malloc((size_t)nb * sizeof *q->hashes);
  q->blocks = malloc((size_t)nb * sizeof *q->blocks);
  if (q->tokens && q->hashes && q->blocks) return 0;
  req_free(q);
  return -1;
}

static int req_new(const sim *s, long long index, km_sim_pass *passes, sim_req *q) {
  const km_sim_workload *w = s->w;
  if (req_alloc(q, km_sim_prompt_tokens(w), w->output, s->c->block_size)) return -1;
  fill_tokens(w, index % w->requests, q->tokens);
  q->pass_index = index / w->requests;
  q->pass = &passes[q->pass_index];
  return 0;
}

/* ---- the pool's life */
static void sim_free(sim *s) {
  free(s->ref);
  free(s->prev);
  free(s->next);
  free(s->dup_next);
  free(s->list);
  free(s->cached);
  free(s->hash);
  free(s->slots);
  km_hasher_free(s->hasher);
}

/* s starts zeroed (a pool keeps its config copy in it). */
static int sim_init(sim *s, const km_sim_workload *w, const km_sim_config *c, char *err, size_t errlen) {
  s->c = c;
  s->w = w;
  if (c->num_blocks < 2 || c->num_blocks > INT32_MAX) {
    snprintf(err, errlen, "%lld blocks: the pool takes 2..%d (block 0 is the null block)", c->num_blocks, INT32_MAX);
    return -1;
  }
  s->n = (int32_t)c->num_blocks;
  size_t n = (size_t)s->n, slots = 16;
  while (slots < 2 * n) slots *= 2;
  s->mask = slots - 1;
  s->ref = calloc(n, sizeof *s->ref);
  s->prev = malloc(n * sizeof *s->prev);
  s->next = malloc(n * sizeof *s->next);
  s->dup_next = malloc(n * sizeof *s->dup_next);
  s->list = calloc(n, 1);
  s->cached = calloc(n, 1);
  s->hash = calloc(n, sizeof *s->hash);
  s->slots = malloc(slots * sizeof *s->slots);
  if (!s->ref || !s->prev || !s->next || !s->dup_next || !s->list || !s->cached || !s->hash || !s->slots) {
    snprintf(err, errlen, "out of memory for %lld blocks", c->num_blocks);
    return -1;
  }
  for (size_t i = 0; i < slots; i++) s->slots[i] = NONE;
  for (int l = 0; l < LIST_COUNT; l++) s->lists[l] = (sim_list){NONE, NONE, 0};
  /* the free queue starts in block-id order; BlockPool pops block 0 as the null block */
  for (int32_t b = 1; b < s->n; b++) list_push_back(s, LIST_FREE, b);
  s->ref[0] = 1;
  if (km_hasher_new(c->algo, (size_t)c->block_size, &s->hasher, err, errlen)) return -1;
  /* NONE_HASH as with PYTHONHASHSEED=0, so a run is reproducible */
  if (km_hasher_seed(s->hasher, "0", &s->none)) {
    snprintf(err, errlen, "hashing the seed failed");
    return -1;
  }
  return 0;
}

/* One scheduler step: running requests decode, waiting ones are admitted in order while they fit (a
 * pass starts once the one before has finished), and those that sampled their last token are freed
 * (in admission order). Returns 0, 1 when the next request does not fit an idle cache, -1 on error. */
static int step(sim *s, sim_req *run, long long conc, long long *nrun, long long *next, long long total,
                km_sim_pass *passes, int32_t *scratch) {
  for (long long i = 0; i < *nrun; i++)
    if (run[i].generated < s->w->output && decode(s, &run[i])) return -1;
  while (*nrun < conc && *next < total && (*nrun == 0 || run[0].pass_index == *next / s->w->requests)) {
    sim_req *q = &run[*nrun];
    if (req_new(s, *next, passes, q)) return -1;
    int rc = admit(s, q, scratch);
    if (rc <= 0) {
      req_free(q);
      if (rc < 0) return -1;
      if (*nrun == 0) return 1; /* nothing running frees a block: this request never fits */
      break;
    }
    (*nrun)++;
    (*next)++;
  }
  long long kept = 0;
  for (long long i = 0; i < *nrun; i++) {
    if (run[i].generated >= s->w->output) {
      release(s, run[i].blocks, run[i].nblocks, scratch);
      s->reserved -= run[i].reserved;
      req_free(&run[i]);
      continue;
    }
    run[kept++] = run[i];
  }
  *nrun = kept;
  return 0;
}

/* vLLM's hit rate: prompt tokens served from the cache over prompt tokens. */
static void set_hit_rate(km_sim_pass *p) {
  p->hit_rate = p->prompt_tokens ? (double)(p->prompt_tokens - p->tokens_computed) / (double)p->prompt_tokens : 0.0;
}

int km_sim_run(const km_sim_workload *w, const km_sim_config *c, km_sim_pass *passes, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  if (km_sim_check(w, c, err, errlen)) return -1;
  memset(passes, 0, (size_t)w->passes * sizeof *passes);
  sim s;
  memset(&s, 0, sizeof s);
  long long conc = w->concurrency < w->requests ? w->concurrency : w->requests;
  sim_req *run = calloc((size_t)conc + 1, sizeof *run);
  int32_t *scratch = malloc((size_t)km_sim_request_blocks(w, c->block_size) * sizeof *scratch);
  int rc = -1;
  if (!run || !scratch) {
    snprintf(err, errlen, "out of memory");
  } else if (sim_init(&s, w, c, err, errlen) == 0) {
    const long long total = w->requests * w->passes;
    long long nrun = 0, next = 0;
    rc = 0;
    while (rc == 0 && (next < total || nrun > 0)) rc = step(&s, run, conc, &nrun, &next, total, passes, scratch);
    if (rc == 1) { /* km_sim_check makes sure a request fits an idle cache: not reached */
      snprintf(err, errlen, "request %lld does not fit the idle cache", next);
      rc = -1;
    }
    if (rc && !err[0]) snprintf(err, errlen, "out of memory, or hashing failed");
    for (long long i = 0; i < nrun; i++) req_free(&run[i]);
  }
  sim_free(&s);
  free(run);
  free(scratch);
  for (long long p = 0; rc == 0 && p < w->passes; p++) set_hit_rate(&passes[p]);
  return rc;
}

/* ---- one request at a time, for tests and for callers with their own token ids */
int km_sim_pool_new(const km_sim_config *c, km_sim_pool **out, char *err, size_t errlen) {
  sim *s = calloc(1, sizeof *s);
  *out = NULL;
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->c_own = *c;
  if (sim_init(s, NULL, &s->c_own, err, errlen)) {
    km_sim_pool_free(s);
    return -1;
  }
  *out = s;
  return 0;
}

void km_sim_pool_free(km_sim_pool *s) {
  if (!s) return;
  sim_free(s);
  free(s);
}

int km_sim_pool_serve(km_sim_pool *s, const uint32_t *tokens, long long prompt, long long output, km_sim_pass *stats) {
  if (prompt < 1 || output < 1 || cdiv(prompt + output - 1, s->c->block_size) > s->n - 1) return -1;
  sim_req q;
  int32_t *scratch = malloc((size_t)cdiv(prompt + output - 1, s->c->block_size) * sizeof *scratch);
  if (!scratch || req_alloc(&q, prompt, output, s->c->block_size)) {
    free(scratch);
    return -1;
  }
  memcpy(q.tokens, tokens, (size_t)q.total * sizeof *q.tokens);
  q.pass = stats;
  int rc = admit(s, &q, scratch) == 1 ? 0 : -1; /* nothing else runs: it fits (checked above) */
  while (rc == 0 && q.generated < output) rc = decode(s, &q);
  if (rc == 0) {
    release(s, q.blocks, q.nblocks, scratch);
    s->reserved -= q.reserved;
  }
  req_free(&q);
  free(scratch);
  set_hit_rate(stats);
  return rc;
}

long long km_sim_pool_eviction_order(const km_sim_pool *s, int32_t *ids, long long max) {
  long long n = 0;
  for (int l = LIST_FREE; l <= LIST_CACHED; l++)
    for (int32_t b = s->lists[l].head; b != NONE; b = s->next[b]) {
      if (n < max) ids[n] = b;
      n++;
    }
  return n;
}

int km_sim_pool_is_cached(const km_sim_pool *s, int32_t block) {
  return block >= 0 && block < s->n && s->cached[block];
}
