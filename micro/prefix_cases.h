/* The prefix family's case parameters and run functions, shared by its table (micro/prefix.c) and the
 * files that run each kind of case: block hashing on the host, prefill GEMMs on the GPU. */
#ifndef KM_PREFIX_CASES_H
#define KM_PREFIX_CASES_H

#include "bench.h"
#include "prefix_hash.h"

/* vLLM's default block size, and the prompt of the source article's longest shared prefix. */
enum { KM_PREFIX_BLOCK = 16, KM_PREFIX_PROMPT_TOKENS = 16384 };

typedef struct km_prefix_hash_params {
  km_hash_algo algo;
  int all_cores; /* 0: one thread, one prompt; 1: independent prompts on every core of the cpuset */
} km_prefix_hash_params;

void km_prefix_run_hash(km_bench *b, const void *params);

/* The hashing cost that the representative prefill row sets against the compute a reused block saves:
 * nanoseconds per block of vLLM's default algorithm on one thread, measured on a fresh 16K-token prompt
 * (the stage block_hash, after checking the chain against the reference). 0 ok, -1 error. */
int km_prefix_hash_ns_per_block(km_bench *b, km_hash_algo algo, double *ns_per_block);

typedef enum km_prefill_kind {
  KM_PREFILL_LAYER = 0, /* one layer's linear GEMMs (QKV, O, gate/up, down; or the active experts) */
  KM_PREFILL_SQUARE,    /* the ceiling: one large square GEMM */
  KM_PREFILL_KIND_COUNT
} km_prefill_kind;

typedef struct km_prefill_params {
  km_prefill_kind kind;
  int chunk;          /* tokens per prefill chunk (LAYER); the square's side (SQUARE) */
  int prefix;         /* tokens before the chunk: sets the attention FLOPs counted per token */
  const char *shape;  /* NULL: the --model's shape; else a named shape of micro/prefill_shapes.c */
  int saving;         /* 1: also time the block hash and report the saving per reused block */
} km_prefill_params;

void km_prefix_run_prefill(km_bench *b, const void *params);

/* The tensor-core ceiling other families report a share of (attn/mla): cuBLASLt's bf16 square GEMM (8192^3,
 * fp32 accumulation) on fresh random data, verified and then timed as the stage gemm_ceiling of the calling
 * case. TFLOP/s, or 0 after the failure was recorded in the case. */
double km_prefix_gemm_ceiling_tflops(km_bench *b);

/* The prefill rows' tolerances. A bf16 output against the fp32 reference GEMM: rounding to bf16 moves a
 * value by at most 2^-8 of it (half an ulp of 8 significant bits), hence 2^-8 |ref|; 2^-12 of sum|a*b|
 * covers two fp32 accumulations in different orders (their partial sums of random-signed products grow like
 * sqrt(k): at k = 12,288 even an accumulation that truncates every one stays ~35x under it), while a wrong
 * element, a skipped 16-wide slice of k (~4x the bound) or an unwritten (NaN) one is caught.
 * The reference against a CPU GEMM in double: products of bf16 values are exact in fp32, so the fp32 sum
 * of k of them is within k * 2^-24 of sum|a*b| (the rounding error bound of recursive summation). */
#define KM_PREFILL_OUT_REL 0x1p-8f
#define KM_PREFILL_OUT_SHARE 0x1p-12f
#define KM_PREFILL_REF_SHARE(k) (1.01 * (double)(k) * 0x1p-24)

#endif
