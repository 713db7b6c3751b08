/* prefix/: the keys of vLLM's prefix cache. Every full block of block_size token ids gets
 * hash_fn((parent_block_hash, tuple(block_token_ids), extra_keys)), the parent of the first block being
 * NONE_HASH (vllm/v1/core/kv_cache_utils.py: hash_block_tokens, get_request_block_hasher). hash_fn
 * serializes that tuple (pickle protocol 5, or canonical CBOR) and hashes the bytes with SHA-256 or
 * XXH3-128 (vllm/utils/hashing.py: sha256, sha256_cbor, xxhash, xxhash_cbor). */
#ifndef KM_PREFIX_HASH_H
#define KM_PREFIX_HASH_H

#include <stddef.h>
#include <stdint.h>

/* vLLM's --prefix-caching-hash-algo values, in its spelling. */
typedef enum km_hash_algo {
  KM_HASH_SHA256 = 0,  /* "sha256": pickle.dumps(protocol=5), SHA-256 (vLLM's default) */
  KM_HASH_SHA256_CBOR, /* "sha256_cbor": cbor2.dumps(canonical=True), SHA-256 */
  KM_HASH_XXHASH,      /* "xxhash": pickle, XXH3-128 */
  KM_HASH_XXHASH_CBOR, /* "xxhash_cbor": canonical CBOR, XXH3-128 */
  KM_HASH_ALGO_COUNT
} km_hash_algo;

const char *km_hash_algo_name(km_hash_algo a);
int km_hash_algo_parse(const char *name, km_hash_algo *out); /* 0 ok, -1 unknown */
size_t km_hash_digest_bytes(km_hash_algo a);                 /* 32 (SHA-256) or 16 (XXH3-128) */

/* The hasher takes blocks of up to this many tokens: the pickle then stays inside one 64 KiB frame,
 * as CPython writes it (vLLM's block sizes are 1..256). */
enum { KM_HASH_MAX_BLOCK_TOKENS = 4096, KM_BLOCK_HASH_MAX = 32 };
/* Extra keys per block: at most this many strings of at most this many bytes each. */
enum { KM_HASH_MAX_EXTRA_KEYS = 8, KM_HASH_MAX_EXTRA_BYTES = 4096 };

/* A block hash: vLLM's BlockHash bytes (a digest; NONE_HASH may be any 1..32 bytes). */
typedef struct km_block_hash {
  uint8_t len;
  uint8_t bytes[KM_BLOCK_HASH_MAX];
} km_block_hash;

/* A request's extra keys as vLLM's generate_block_hash_extra_keys makes them when there are no
 * multimodal inputs or prompt embeddings: the LoRA name on every block, then the cache salt on the
 * first block only. NULL fields (or a NULL pointer): none; a block with no key gets None. */
typedef struct km_extra_keys {
  const char *lora_name;
  const char *cache_salt;
} km_extra_keys;

/* Bytes a serialized block of `tokens` ids with `extra_bytes` bytes of extra-key strings may take. */
size_t km_hash_serialized_bound(size_t tokens, size_t extra_bytes);

/* Serialize (parent, tuple(tokens), extra) into buf. extra: nextra strings (0: None). Returns the
 * length, or 0 when cap is too small or an input is beyond the limits above. */
size_t km_hash_serialize_pickle(uint8_t *buf, size_t cap, const km_block_hash *parent, const uint32_t *tokens,
                                size_t ntokens, const char *const *extra, size_t nextra);
size_t km_hash_serialize_cbor(uint8_t *buf, size_t cap, const km_block_hash *parent, const uint32_t *tokens,
                              size_t ntokens, const char *const *extra, size_t nextra);

/* The digest of bytes as the algorithm's hash_fn ends: SHA-256, or XXH3-128 in canonical (big-endian)
 * byte order as xxhash.xxh3_128_digest returns it. One-shot; 0 ok, -1 when libcrypto fails. */
int km_hash_digest(km_hash_algo a, const uint8_t *bytes, size_t len, km_block_hash *out);

/* A reusable hasher: a serialization buffer and a SHA-256 context, one per thread. */
typedef struct km_hasher km_hasher;

/* 0 ok; -1 with one line in err (block size outside 1..KM_HASH_MAX_BLOCK_TOKENS, libcrypto failure). */
int km_hasher_new(km_hash_algo a, size_t block_size, km_hasher **out, char *err, size_t errlen);
void km_hasher_free(km_hasher *h);
km_hash_algo km_hasher_algo(const km_hasher *h);

/* NONE_HASH when PYTHONHASHSEED is set: hash_fn(seed), the seed being a Python str. 0 ok, -1 error. */
int km_hasher_seed(km_hasher *h, const char *seed, km_block_hash *out);

/* hash_block_tokens for one full block. parent NULL (or empty): none_hash. 0 ok, -1 error. */
int km_hasher_block(km_hasher *h, const km_block_hash *parent, const km_block_hash *none_hash,
                    const uint32_t *tokens, const char *const *extra, size_t nextra, km_block_hash *out);

/* The request's chain, as get_request_block_hasher computes it from block `first` on: blocks
 * first .. n / block_size - 1 of tokens[0..n), block i's parent being out[i - 1] (none_hash for block 0).
 * out has room for n / block_size hashes; out[0..first) already hold the earlier blocks' hashes.
 * Returns the number of blocks hashed, or -1 on error. */
long km_hasher_chain(km_hasher *h, const km_block_hash *none_hash, const uint32_t *tokens, size_t n, size_t first,
                     const km_extra_keys *x, km_block_hash *out);

#endif
