/* prefix/: what prefix reuse costs and what it saves. The cost: vLLM's block-key chain on the host, for
 * each of its hash algorithms, on one thread and on every core. The saving: the prefill compute a reused
 * token skips, as one layer's linear GEMMs per chunk with cuBLASLt (plus the attention FLOPs at the prefix
 * length), against a large square GEMM as the ceiling. The prefix-cache simulator is `micro --prefix-sim`
 * (micro/prefix_sim_cli.c). */
#include "micro_tables.h"
#include "prefix_cases.h"

#define HASH_PARAMS(algo, all) (&(const km_prefix_hash_params){algo, all})
#define HASH(algo, name, all, flags)                                                                            \
  {"prefix/hash/" name "/bs16/prompt16k/" #all, "prefix_reuse",                                                \
   "vLLM's block-key chain (" name ") over 16,384-token prompts on the host: ns per block, cost per prompt",    \
   km_prefix_run_hash, HASH_PARAMS(algo, all), KM_CASE_HOST_ONLY | (flags), NULL}
#define HASH_ALGO(algo, name, flags) HASH(algo, name, t1, flags), HASH(algo, name, all_cores, flags)
/* the rows' last path element is the thread count: t1, or all_cores */
enum { t1 = 0, all_cores = 1 };

static const km_case prefix_cases[] = {
    HASH_ALGO(KM_HASH_SHA256, "sha256", KM_CASE_QUICK | KM_CASE_REPRESENTATIVE),
    HASH_ALGO(KM_HASH_SHA256_CBOR, "sha256_cbor", 0),
    HASH_ALGO(KM_HASH_XXHASH, "xxhash", 0),
    HASH_ALGO(KM_HASH_XXHASH_CBOR, "xxhash_cbor", KM_CASE_QUICK | KM_CASE_REPRESENTATIVE),
};

const km_case_table km_prefix_table = {prefix_cases, sizeof prefix_cases / sizeof prefix_cases[0]};
