/* prefix/hash/...: the block-key chain timed on the host. One thread hashing one 16K-token prompt
 * (what a request's arrival costs the scheduler), and independent prompts on every core of the run's
 * cpuset through a pool of pthreads started and stopped together (what a host can sustain). Every
 * timed chain is first checked against the reference chain (micro/prefix_ref.c), outputs poisoned. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "prefix_cases.h"
#include "prefix_ref.h"
#include "run_ctx.h"

/* Prompts each core hashes per timed instance in the all-cores rows: enough that waking the pool
 * (a few microseconds) stays under a few percent of an XXH3 instance. */
#define PROMPTS_PER_CORE 4
/* Token ids drawn below Qwen3's vocabulary size, so the serialized integers have realistic widths. */
#define VOCAB 151936u

typedef struct hash_pool hash_pool;

typedef struct hash_worker {
  hash_pool *pool;
  km_hasher *h;
  uint32_t *tokens;   /* pool->prompts prompts of KM_PREFIX_PROMPT_TOKENS each */
  km_block_hash *out; /* pool->prompts x blocks */
  int failed;
  pthread_t thread;
} hash_worker;

/* Workers wait for the generation to move, hash, and count themselves done; a mutex and two condition
 * variables rather than barriers, so a pool whose last threads failed to start still stops cleanly. */
struct hash_pool {
  km_hash_algo algo;
  int workers, prompts, threaded, started;
  size_t blocks; /* per prompt */
  km_block_hash none;
  pthread_mutex_t mu;
  pthread_cond_t go, finished;
  unsigned long generation;
  int pending, quit;
  hash_worker *w;
};

static int hash_prompts(hash_worker *w) {
  hash_pool *p = w->pool;
  for (int i = 0; i < p->prompts; i++) {
    long n = km_hasher_chain(w->h, &p->none, w->tokens + (size_t)i * KM_PREFIX_PROMPT_TOKENS, KM_PREFIX_PROMPT_TOKENS,
                             0, NULL, w->out + (size_t)i * p->blocks);
    if (n != (long)p->blocks) return -1;
  }
  return 0;
}

static void *worker_main(void *arg) {
  hash_worker *w = arg;
  hash_pool *p = w->pool;
  unsigned long seen = 0;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->generation == seen && !p->quit) pthread_cond_wait(&p->go, &p->mu);
    if (p->quit) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    int failed = hash_prompts(w) != 0;
    pthread_mutex_lock(&p->mu);
    w->failed |= failed;
    if (--p->pending == 0) pthread_cond_signal(&p->finished);
    pthread_mutex_unlock(&p->mu);
  }
}

/* One timed instance: every worker hashes its prompts once. */
static int pool_instance(void *arg, int rep) {
  hash_pool *p = arg;
  if (!p->threaded) return hash_prompts(&p->w[0]);
  pthread_mutex_lock(&p->mu);
  p->pending = p->workers;
  p->generation++;
  pthread_cond_broadcast(&p->go);
  while (p->pending > 0) pthread_cond_wait(&p->finished, &p->mu);
  int failed = 0;
  for (int i = 0; i < p->workers; i++) failed |= p->w[i].failed;
  pthread_mutex_unlock(&p->mu);
  return failed ? -1 : 0;
}

static void pool_free(void *arg) {
  hash_pool *p = arg;
  if (p->threaded) {
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->w[i].thread, NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->finished);
    pthread_mutex_destroy(&p->mu);
  }
  for (int i = 0; i < p->workers; i++) {
    km_hasher_free(p->w[i].h);
    free(p->w[i].tokens);
    free(p->w[i].out);
  }
  free(p->w);
  free(p);
}

static int cpuset_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Fresh prompts and a random NONE_HASH (what vLLM draws with os.urandom(32) when no seed is set). */
static void fill_prompts(hash_pool *p, uint64_t seed) {
  p->none.len = 32;
  for (int i = 0; i < 32; i++) p->none.bytes[i] = (uint8_t)mix(&seed);
  for (int k = 0; k < p->workers; k++)
    for (size_t i = 0; i < (size_t)p->prompts * KM_PREFIX_PROMPT_TOKENS; i++)
      p->w[k].tokens[i] = (uint32_t)(mix(&seed) % VOCAB);
}

/* All the pool needs, threads started last: on failure the case is marked and NULL returned. */
static hash_pool *pool_new(km_bench *b, km_hash_algo algo, int workers, int prompts) {
  hash_pool *p = calloc(1, sizeof *p);
  if (!p || !(p->w = calloc((size_t)workers, sizeof *p->w))) {
    free(p);
    km_bench_fail(b, "out of host memory");
    return NULL;
  }
  p->algo = algo;
  p->workers = workers;
  p->prompts = prompts;
  p->blocks = KM_PREFIX_PROMPT_TOKENS / KM_PREFIX_BLOCK;
  km_bench_defer(b, pool_free, p);
  char err[256];
  for (int i = 0; i < workers; i++) {
    hash_worker *w = &p->w[i];
    w->pool = p;
    w->tokens = malloc((size_t)prompts * KM_PREFIX_PROMPT_TOKENS * sizeof *w->tokens);
    w->out = malloc((size_t)prompts * p->blocks * sizeof *w->out);
    if (!w->tokens || !w->out) {
      km_bench_fail(b, "out of host memory");
      return NULL;
    }
    if (km_hasher_new(algo, KM_PREFIX_BLOCK, &w->h, err, sizeof err)) {
      km_bench_fail(b, "%s", err);
      return NULL;
    }
  }
  fill_prompts(p, km_bench_seed(b));
  if (workers == 1) return p;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->finished, NULL);
  p->threaded = 1;
  for (; p->started < workers; p->started++)
    if (pthread_create(&p->w[p->started].thread, NULL, worker_main, &p->w[p->started]) != 0) {
      km_bench_fail(b, "pthread_create failed for worker %d of %d", p->started, workers);
      return NULL;
    }
  return p;
}

/* The timed path (poisoned outputs, one instance) against the reference chain, every block. */
static int verify_pool(km_bench *b, hash_pool *p) {
  for (int i = 0; i < p->workers; i++) memset(p->w[i].out, 0xA5, (size_t)p->prompts * p->blocks * sizeof *p->w[i].out);
  if (pool_instance(p, 0) != 0) {
    km_bench_fail(b, "hashing failed");
    return 0;
  }
  km_block_hash *ref = malloc(p->blocks * sizeof *ref);
  if (!ref) {
    km_bench_fail(b, "out of host memory");
    return 0;
  }
  size_t bad = 0, n = 0;
  for (int i = 0; i < p->workers; i++)
    for (int k = 0; k < p->prompts; k++) {
      const km_block_hash *got = p->w[i].out + (size_t)k * p->blocks;
      if (km_prefix_ref_chain(p->algo, KM_PREFIX_BLOCK, &p->none, p->w[i].tokens + (size_t)k * KM_PREFIX_PROMPT_TOKENS,
                              KM_PREFIX_PROMPT_TOKENS, NULL, ref) != 0) {
        km_bench_fail(b, "reference chain failed");
        free(ref);
        return 0;
      }
      for (size_t j = 0; j < p->blocks; j++, n++)
        if (got[j].len != ref[j].len || memcmp(got[j].bytes, ref[j].bytes, ref[j].len) != 0) {
          if (bad++ < 4)
            km_bench_mismatch(b, "worker %d prompt %d block %zu differs from the reference chain", i, k, j);
        }
    }
  free(ref);
  return km_bench_verified(b, bad, n, "every block hash equal to the reference chain's");
}

void km_prefix_run_hash(km_bench *b, const void *params) {
  const km_prefix_hash_params *hp = params;
  const int workers = hp->all_cores ? cpuset_cores() : 1;
  const int prompts = hp->all_cores ? PROMPTS_PER_CORE : 1;
  hash_pool *p = pool_new(b, hp->algo, workers, prompts);
  if (!p) return;
  if (km_bench_verify_enabled(b) && !verify_pool(b, p)) return;
  const double blocks = (double)p->blocks * prompts * workers, tokens = blocks * KM_PREFIX_BLOCK;
  const km_work w = {tokens * sizeof(uint32_t), blocks * km_hash_digest_bytes(hp->algo), tokens, 1, 0};
  double sec = km_bench_measure_host(b, pool_instance, p, &w);
  if (!(sec > 0)) return;
  const double per_core_ns = sec * 1e9 * workers / blocks; /* each core's time per block */
  km_bench_counter(b, "threads", workers);
  km_bench_counter(b, "ns_per_block", per_core_ns);
  km_bench_counter(b, "blocks_per_second", blocks / sec);
  km_bench_counter(b, "blocks_per_second_per_core", blocks / sec / workers);
  km_bench_counter(b, "prompt_us", sec * 1e6 / prompts); /* one 16K prompt, each core busy with its own */
  km_bench_label(b, "%s: %.1f ns/block/core, %.2f M blocks/s/core, %d thread%s: %.2f M blocks/s; 16K-token prompt "
                 "%.1f us", km_hash_algo_name(hp->algo), per_core_ns, blocks / sec / workers / 1e6, workers,
                 workers > 1 ? "s" : "", blocks / sec / 1e6, sec * 1e6 / prompts);
}

int km_prefix_hash_ns_per_block(km_bench *b, km_hash_algo algo, double *ns_per_block) {
  hash_pool *p = pool_new(b, algo, 1, 1);
  if (!p) return -1;
  if (km_bench_verify_enabled(b) && !verify_pool(b, p)) return -1;
  const double blocks = (double)p->blocks, tokens = blocks * KM_PREFIX_BLOCK;
  const km_work w = {tokens * sizeof(uint32_t), blocks * km_hash_digest_bytes(algo), tokens, 1, 0};
  km_stage st;
  if (km_bench_measure_host_stage(b, "block_hash", pool_instance, p, &w, &st) != 0) return -1;
  *ns_per_block = st.median_s * 1e9 / blocks;
  return 0;
}
