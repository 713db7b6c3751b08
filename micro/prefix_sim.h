/* The prefix-cache simulator: vLLM v1's block pool replayed over a workload, block for block. A pool of
 * num_gpu_blocks blocks (block 0 taken as the null block), a map from block hash to cached blocks,
 * reference counts, and vLLM's free queue (vllm/v1/core/block_pool.py, kv_cache_utils.py): a request's
 * longest run of cached full prompt blocks is hit (at most (prompt - 1) / block_size of them, so the last
 * token is always computed), its blocks are taken from the head of the free queue (evicting what they
 * cached), every full block is cached when allocated, and a finished request's blocks go back to the
 * queue's tail in reverse order, so a chain's tail is evicted before its head. Requests are admitted in
 * order while their whole footprint fits next to the running ones (no preemption); running requests
 * decode one token per step together. No GPU: only hashes and block ids move. */
#ifndef KM_PREFIX_SIM_H
#define KM_PREFIX_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "prefix_hash.h"

typedef enum km_sim_policy {
  KM_SIM_LRU = 0, /* vLLM: the least recently freed block first, a freed chain's tail before its head */
  KM_SIM_MRU,     /* never-cached blocks first, then the most recently freed chain, tail first: a loop over
                     a working set larger than the cache keeps the part that fitted first */
  KM_SIM_POLICY_COUNT
} km_sim_policy;

const char *km_sim_policy_name(km_sim_policy p);
int km_sim_policy_parse(const char *name, km_sim_policy *out); /* 0 ok, -1 unknown */

/* Request r's prompt: the shared prefix, then a document of its own, then a suffix of its own; then it
 * generates output tokens (greedy: the same ones on every pass). Each pass sends the same requests in
 * the same order. */
typedef struct km_sim_workload {
  long long requests;      /* distinct requests per pass */
  long long shared_prefix; /* tokens every request starts with */
  long long document;      /* tokens of a document only this request reads */
  long long suffix;        /* tokens only this request asks */
  long long output;        /* generated tokens (>= 1); KV holds prompt + output - 1 of them */
  long long passes;
  long long concurrency;   /* requests running at once */
} km_sim_workload;

typedef struct km_sim_config {
  long long num_blocks; /* vLLM's num_gpu_blocks */
  long long block_size;
  long long max_model_len;
  km_sim_policy policy;
  km_hash_algo algo;
} km_sim_config;

typedef struct km_sim_pass {
  long long requests;
  long long prompt_tokens;
  long long prompt_blocks;   /* full prompt blocks, each looked up until the first miss */
  long long blocks_hit;
  long long tokens_computed; /* prompt tokens not served from the cache */
  long long evictions;       /* cached blocks whose hash was dropped to reuse them */
  double hit_rate;           /* hit tokens / prompt tokens (vLLM's prefix cache hit rate) */
} km_sim_pass;

/* Upper bound on the tokens one simulation replays (requests x passes x tokens per request). */
#define KM_SIM_MAX_TOKENS 2000000000LL

long long km_sim_prompt_tokens(const km_sim_workload *w);
/* Blocks one request holds when it ends: ceil((prompt + output - 1) / block_size). */
long long km_sim_request_blocks(const km_sim_workload *w, long long block_size);
/* Distinct prompt tokens of one pass: the shared prefix once, the rest per request. */
long long km_sim_working_set_tokens(const km_sim_workload *w);

/* Whether the workload can run on the config: 0 ok; -1 with one line naming the flag (--requests,
 * --output-tokens, --max-model-len, --kv-budget, ...) and what would be right. */
int km_sim_check(const km_sim_workload *w, const km_sim_config *c, char *err, size_t errlen);

/* Replay the workload; passes[0 .. w->passes) get the figures. 0 ok, -1 with one line in err. */
int km_sim_run(const km_sim_workload *w, const km_sim_config *c, km_sim_pass *passes, char *err, size_t errlen);

/* The pool on its own, one request served to its end at a time (what km_sim_run does at concurrency 1),
 * with the caller's token ids: for tests of the eviction order and for other workloads. */
typedef struct km_sim_pool km_sim_pool;
int km_sim_pool_new(const km_sim_config *c, km_sim_pool **out, char *err, size_t errlen);
void km_sim_pool_free(km_sim_pool *p);
/* Serve tokens[0 .. prompt + output - 1) (the prompt, then the output tokens that get KV): admit, decode,
 * free. stats accumulates (zero it first). 0 ok, -1 when the request cannot fit the pool or on error. */
int km_sim_pool_serve(km_sim_pool *p, const uint32_t *tokens, long long prompt, long long output, km_sim_pass *stats);
/* The free blocks in the order new blocks would take them; returns their count, ids gets the first max. */
long long km_sim_pool_eviction_order(const km_sim_pool *p, int32_t *ids, long long max);
int km_sim_pool_is_cached(const km_sim_pool *p, int32_t block);

#endif
