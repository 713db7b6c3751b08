/* prefix/: what prefix reuse costs and what it saves. The cost: vLLM's block-key chain on the host, for
 * each of its hash algorithms, on one thread and on every core. The saving: the prefill compute a reused
 * token skips, as one layer's linear GEMMs per chunk with cuBLASLt (plus the attention FLOPs at the prefix
 * length), against a large square GEMM as the ceiling. The prefix-cache simulator is `micro --prefix-sim`
 * (micro/prefix_sim_cli.c). */
#include <stddef.h>

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

#define PREFILL_PARAMS(kind, chunk, prefix, shape, saving) \
  (&(const km_prefill_params){kind, chunk, prefix, shape, saving})
#define LAYER(chunk, prefix, saving, flags)                                                                      \
  {"prefix/prefill/layer/chunk" #chunk "/prefix" #prefix, "prefix_reuse",                                       \
   "the --model's linear GEMMs of one layer (QKV, O, gate/up, down) on a prefill chunk, cuBLASLt bf16",          \
   km_prefix_run_prefill, PREFILL_PARAMS(KM_PREFILL_LAYER, chunk, prefix, NULL, saving), flags,                  \
   NULL}
#define MOE(chunk, flags)                                                                                        \
  {"prefix/prefill/moe_qwen3-30b-a3b/chunk" #chunk "/prefix0", "prefix_reuse",                                  \
   "Qwen3-30B-A3B's layer: QKV, O and the 8 of 128 experts each token is routed to (batched GEMMs, even routing)", \
   km_prefix_run_prefill, PREFILL_PARAMS(KM_PREFILL_LAYER, chunk, 0, "qwen3-30b-a3b", 0), flags, NULL}

static const km_case prefix_cases[] = {
    HASH_ALGO(KM_HASH_SHA256, "sha256", KM_CASE_QUICK | KM_CASE_REPRESENTATIVE),
    HASH_ALGO(KM_HASH_SHA256_CBOR, "sha256_cbor", 0),
    HASH_ALGO(KM_HASH_XXHASH, "xxhash", 0),
    HASH_ALGO(KM_HASH_XXHASH_CBOR, "xxhash_cbor", KM_CASE_QUICK | KM_CASE_REPRESENTATIVE),
    {"prefix/prefill/gemm_ceiling/bf16/m8192n8192k8192", "prefix_reuse",
     "cuBLASLt bf16 square GEMM, fp32 accumulation: the tensor throughput the prefill rows are a share of",
     km_prefix_run_prefill, PREFILL_PARAMS(KM_PREFILL_SQUARE, 8192, 0, NULL, 0), KM_CASE_REPRESENTATIVE, NULL},
    LAYER(512, 0, 0, KM_CASE_QUICK),
    LAYER(1024, 0, 0, 0),
    LAYER(2048, 0, 0, 0),
    LAYER(4096, 0, 0, 0),
    LAYER(8192, 0, 0, 0),
    /* the source article's longest shared prefix: what reusing it saves per block, against hashing it */
    LAYER(2048, 16384, 1, KM_CASE_REPRESENTATIVE),
    MOE(512, 0),
    MOE(2048, 0),
    MOE(8192, 0),
};

/* What reuse buys against what keying costs: prefill time saved per reused block over its hash. */
static const km_derived prefix_cases_derived[] = {
    {"prefix_reuse", "prefill GEMM time saved per reused 16-token block / its SHA-256 chain hash (x)",
     KM_DERIVED_RATIO, "prefix/prefill/layer/chunk2048/prefix16384", "prefix/prefill/layer/chunk2048/prefix16384", NULL,
     {"saved_us_per_block", "hash_ns_per_block"}, 1000, 0, 0},
};

const km_case_table km_prefix_table = {prefix_cases, sizeof prefix_cases / sizeof prefix_cases[0], NULL, prefix_cases_derived,
                                   sizeof prefix_cases_derived / sizeof prefix_cases_derived[0]};
