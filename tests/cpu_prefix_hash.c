/* CPU checks of the prefix family's block keys against vectors computed independently:
 * - SHA-256 of the FIPS 180-2 messages, XXH3-128 of the empty input from xxHash's own sanity table;
 * - CBOR heads as RFC 8949 Appendix A spells them;
 * - the serialized bytes and the chain hashes of all four vLLM algorithms, computed with CPython 3.11,
 *   cbor2 6.3 and xxhash 4.1 by vLLM's own definitions (vllm/utils/hashing.py, kv_cache_utils.py):
 *     sha256(x)      = hashlib.sha256(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)).digest()
 *     sha256_cbor(x) = hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()
 *     xxhash(x)      = xxhash.xxh3_128_digest(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))
 *     xxhash_cbor(x) = xxhash.xxh3_128_digest(cbor2.dumps(x, canonical=True))
 *     NONE_HASH = hash_fn("0")  (PYTHONHASHSEED=0);  block b = hash_fn((parent, tuple(tokens[16b:16b+16]), extra))
 *   with tokens[i] = (i * 7919 + 13) % 151936 for i < 48, then tokens[5..11] = 70000, 65535, 255, 256,
 *   2**31, 2**32 - 1, 0 (every integer encoding width); extra = ("adapter-1", "s3cr3t") on block 0 and
 *   ("adapter-1",) on block 1 (a LoRA name on every block, a cache salt on the first);
 * - the fast chain (reused context, `first` > 0) against the reference chain on random prompts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefix_hash.h"
#include "prefix_ref.h"
#include "test_util.h"

static int from_hex(const char *hex, uint8_t *out, size_t cap) {
  size_t n = strlen(hex) / 2;
  if (n > cap) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
    out[i] = (uint8_t)v;
  }
  return (int)n;
}

static int hash_is(const km_block_hash *h, const char *hex) {
  uint8_t want[KM_BLOCK_HASH_MAX];
  int n = from_hex(hex, want, sizeof want);
  return n == h->len && memcmp(h->bytes, want, (size_t)n) == 0;
}

static void test_digests(void) {
  km_block_hash h;
  /* FIPS 180-2, appendix B.1 and B.2; and the empty message */
  KM_EXPECT(km_hash_digest(KM_HASH_SHA256, (const uint8_t *)"abc", 3, &h) == 0 &&
            hash_is(&h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  KM_EXPECT(km_hash_digest(KM_HASH_SHA256_CBOR, (const uint8_t *)m2, strlen(m2), &h) == 0 &&
            hash_is(&h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
  KM_EXPECT(km_hash_digest(KM_HASH_SHA256, (const uint8_t *)"", 0, &h) == 0 &&
            hash_is(&h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  /* xxHash's sanity test: XXH3_128bits(empty, seed 0) = {low 0x6001C324468D497F, high 0x99AA06D3014798D8},
   * written big-endian high half first (XXH128_canonicalFromHash, Python's xxh3_128_digest) */
  KM_EXPECT(km_hash_digest(KM_HASH_XXHASH, (const uint8_t *)"", 0, &h) == 0 &&
            hash_is(&h, "99aa06d3014798d86001c324468d497f"));
  KM_EXPECT(km_hash_digest_bytes(KM_HASH_SHA256) == 32 && km_hash_digest_bytes(KM_HASH_XXHASH_CBOR) == 16);
}

static void test_names(void) {
  km_hash_algo a;
  for (int i = 0; i < KM_HASH_ALGO_COUNT; i++)
    KM_EXPECT(km_hash_algo_parse(km_hash_algo_name((km_hash_algo)i), &a) == 0 && a == (km_hash_algo)i);
  KM_EXPECT(km_hash_algo_parse("sha-256", &a) == -1);
  KM_EXPECT(km_hash_algo_parse(NULL, &a) == -1);
}

static const uint32_t *vector_tokens(void) {
  static uint32_t t[48];
  for (uint32_t i = 0; i < 48; i++) t[i] = (i * 7919u + 13u) % 151936u;
  const uint32_t edge[7] = {70000, 65535, 255, 256, 2147483648u, 4294967295u, 0};
  memcpy(t + 5, edge, sizeof edge);
  return t;
}

/* CBOR: RFC 8949 Appendix A spells 1 = 01, 23 = 17, 24 = 1818, 500 = 1901f4, h'0102' = 420102,
 * "a" = 6161, a 3-array head 83, a 4-array head 84, a 1-array head 81. */
static void test_cbor_heads(void) {
  uint8_t buf[256];
  km_block_hash parent = {2, {1, 2}};
  const uint32_t tok[4] = {1, 23, 24, 500};
  const char *extra[1] = {"a"};
  size_t n = km_hash_serialize_cbor(buf, sizeof buf, &parent, tok, 4, extra, 1);
  uint8_t want[32];
  int w = from_hex("8342010284011718181901f4816161", want, sizeof want);
  KM_EXPECT(n == (size_t)w && memcmp(buf, want, n) == 0);
  /* a buffer under the bound is refused whole, never written past */
  KM_EXPECT(km_hash_serialize_cbor(buf, km_hash_serialized_bound(4, 1) - 1, &parent, tok, 4, extra, 1) == 0);
}

static void test_serialized_bytes(void) {
  const uint32_t *t = vector_tokens();
  uint8_t buf[512], want[512];
  km_block_hash none;
  int w = from_hex("1973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c", none.bytes, 32);
  none.len = (uint8_t)w;
  size_t n = km_hash_serialize_pickle(buf, sizeof buf, &none, t, 16, NULL, 0);
  w = from_hex("800595690000000000000043201973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c94284b0d"
               "4dfc1e4deb3d4dda5c4dc97b4a701101004dffff4bff4d00018a0500000080008a05ffffffff004b004a417301004a309201"
               "004a1fb101004a0ed0010074944e87942e",
               want, sizeof want);
  KM_EXPECT_MSG(n == (size_t)w && memcmp(buf, want, n) == 0, "pickle of block 0: %zu bytes, want %d", n, w);
  const char *extra[2] = {"adapter-1", "s3cr3t"};
  n = km_hash_serialize_pickle(buf, sizeof buf, &none, t, 16, extra, 2);
  w = from_hex("8005957f0000000000000043201973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c94284b0d"
               "4dfc1e4deb3d4dda5c4dc97b4a701101004dffff4bff4d00018a0500000080008a05ffffffff004b004a417301004a309201"
               "004a1fb101004a0ed0010074948c09616461707465722d31948c0673336372337494869487942e",
               want, sizeof want);
  KM_EXPECT_MSG(n == (size_t)w && memcmp(buf, want, n) == 0, "pickle with extra keys: %zu bytes, want %d", n, w);
  n = km_hash_serialize_cbor(buf, sizeof buf, &none, t, 16, NULL, 0);
  w = from_hex("8358201973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c900d191efc193deb195cda197bc9"
               "1a0001117019ffff18ff1901001a800000001affffffff001a000173411a000192301a0001b11f1a0001d00ef6",
               want, sizeof want);
  KM_EXPECT_MSG(n == (size_t)w && memcmp(buf, want, n) == 0, "cbor of block 0: %zu bytes, want %d", n, w);
  /* short tuples: (5,) is TUPLE1 + MEMOIZE; () is EMPTY_TUPLE, not memoized; 4 items use MARK .. TUPLE */
  km_block_hash p16 = {16, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}};
  const uint32_t five[1] = {5}, four[4] = {1, 2, 3, 4};
  n = km_hash_serialize_pickle(buf, sizeof buf, &p16, five, 1, NULL, 0);
  w = from_hex("8005951b00000000000000431002020202020202020202020202020202944b0585944e87942e", want, sizeof want);
  KM_EXPECT(n == (size_t)w && memcmp(buf, want, n) == 0);
  n = km_hash_serialize_pickle(buf, sizeof buf, &p16, five, 0, NULL, 0);
  w = from_hex("800595180000000000000043100202020202020202020202020202020294294e87942e", want, sizeof want);
  KM_EXPECT(n == (size_t)w && memcmp(buf, want, n) == 0);
  n = km_hash_serialize_pickle(buf, sizeof buf, &p16, four, 4, NULL, 0);
  w = from_hex("800595220000000000000043100202020202020202020202020202020294284b014b024b034b0474944e87942e", want,
               sizeof want);
  KM_EXPECT(n == (size_t)w && memcmp(buf, want, n) == 0);
}

typedef struct chain_vector {
  km_hash_algo algo;
  const char *seed0, *block[3], *extra[2];
} chain_vector;

static const chain_vector vectors[KM_HASH_ALGO_COUNT] = {
    {KM_HASH_SHA256, "1973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c",
     {"af8484a581720adb2b1890419dd3ef9c0edd4438c634652f6df275655c6eab13",
      "12a496e726b6c32f8a2185e9d062b63350a4216725262cdfeca865790db54e25",
      "4bd23e6db0a3c3fdfc43edfec058fd5686131a0e7a8a45a2ec55deaf2382edc7"},
     {"4f4bb2e5a144e861079ff5849a59108f35c464408dd55433d78ba9b20a93caa8",
      "65c851c744458e465447225fe54702095eab8d8854750513183c3653c73ccb50"}},
    {KM_HASH_SHA256_CBOR, "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e",
     {"0d88aac7890bbdb15457322e1ba24c381f89dbaa97aa60547e2e1126236e689b",
      "b61020d79e28e95387f1bd1bbbf35f2df66d3d4ec1ace2cad7de7bd8cbdafa14",
      "98f964c523451b5b502bae9d67505feabd86351ba059792da69227dfc582493b"},
     {"51bfa3a47cc0f4b615524057bd281a646d564ab7dd9242dfc72f65b70c759d3b",
      "97fbc231e9912941468060ef0a2367911a516f535c5590bc50cfb7a848e6fb5e"}},
    {KM_HASH_XXHASH, "6fb31cc38bba6066183f7f2104b9c051",
     {"ea0018bbee96270cc2696a967a009190", "4310abcf58a6ee2456a6f4e906fb9d08", "fbf80218c0bfeb4c14ca2116323f8073"},
     {"53a0f243afd3345cbc76328e8e459c49", "f7e8ae820b45c52d02b02a7a61e35543"}},
    {KM_HASH_XXHASH_CBOR, "1ebe36576dcb573f26b99533a20aaeca",
     {"04523158ac0a20a409bf7490b3ccf3ee", "218635193485c2ea01d7245f62769999", "f0cd416d9e5c28c6d2bfaef31da0a549"},
     {"e52bce1696096e367a820ae577a21db5", "2d85ac568c37d2426402dba8d70f76e5"}},
};

static void test_chain_vectors(void) {
  const uint32_t *t = vector_tokens();
  char err[256];
  for (int v = 0; v < KM_HASH_ALGO_COUNT; v++) {
    const chain_vector *cv = &vectors[v];
    km_hasher *h = NULL;
    if (km_hasher_new(cv->algo, 16, &h, err, sizeof err)) {
      KM_EXPECT_MSG(0, "%s: %s", km_hash_algo_name(cv->algo), err);
      continue;
    }
    km_block_hash none, out[3], ref[3];
    KM_EXPECT(km_hasher_seed(h, "0", &none) == 0 && hash_is(&none, cv->seed0));
    /* 47 tokens: two full blocks and a partial one that is not hashed; then the third from first = 2 */
    KM_EXPECT(km_hasher_chain(h, &none, t, 47, 0, NULL, out) == 2);
    KM_EXPECT(km_hasher_chain(h, &none, t, 48, 2, NULL, out) == 1);
    KM_EXPECT(km_prefix_ref_chain(cv->algo, 16, &none, t, 48, NULL, ref) == 0);
    for (int b = 0; b < 3; b++) {
      KM_EXPECT_MSG(hash_is(&out[b], cv->block[b]), "%s block %d", km_hash_algo_name(cv->algo), b);
      KM_EXPECT_MSG(hash_is(&ref[b], cv->block[b]), "%s reference block %d", km_hash_algo_name(cv->algo), b);
    }
    const km_extra_keys x = {"adapter-1", "s3cr3t"};
    KM_EXPECT(km_hasher_chain(h, &none, t, 32, 0, &x, out) == 2);
    KM_EXPECT(km_prefix_ref_chain(cv->algo, 16, &none, t, 32, &x, ref) == 0);
    for (int b = 0; b < 2; b++) {
      KM_EXPECT_MSG(hash_is(&out[b], cv->extra[b]), "%s extra-key block %d", km_hash_algo_name(cv->algo), b);
      KM_EXPECT_MSG(hash_is(&ref[b], cv->extra[b]), "%s reference extra-key block %d", km_hash_algo_name(cv->algo), b);
    }
    km_hasher_free(h);
  }
}

/* The chain's links: changing one token changes its block's hash and every later one, never an earlier one. */
static void test_chain_links(void) {
  enum { N = 16 * 40 + 7 };
  uint32_t *t = malloc(N * sizeof *t);
  km_block_hash a[40], b[40], r[40];
  uint64_t rng = 12345;
  for (int i = 0; i < N; i++) t[i] = (uint32_t)(km_test_rng_next(&rng) % 151936);
  char err[256];
  for (int algo = 0; algo < KM_HASH_ALGO_COUNT; algo++) {
    km_hasher *h = NULL;
    if (km_hasher_new((km_hash_algo)algo, 16, &h, err, sizeof err)) {
      KM_EXPECT_MSG(0, "%s", err);
      continue;
    }
    km_block_hash none = {32, {0}};
    for (int i = 0; i < 32; i++) none.bytes[i] = (uint8_t)(km_test_rng_next(&rng)); /* os.urandom(32) */
    KM_EXPECT(km_hasher_chain(h, &none, t, N, 0, NULL, a) == 40);
    KM_EXPECT(km_prefix_ref_chain((km_hash_algo)algo, 16, &none, t, N, NULL, r) == 0);
    KM_EXPECT(memcmp(a, r, sizeof a) == 0);
    t[16 * 20 + 3] ^= 1;
    KM_EXPECT(km_hasher_chain(h, &none, t, N, 0, NULL, b) == 40);
    t[16 * 20 + 3] ^= 1;
    int before_same = memcmp(a, b, 20 * sizeof *a) == 0, after_differ = 1;
    for (int i = 20; i < 40; i++) after_differ &= memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    KM_EXPECT_MSG(before_same && after_differ, "%s: a changed token moves exactly its block and the later ones",
                  km_hash_algo_name((km_hash_algo)algo));
    km_hasher_free(h);
  }
  free(t);
}

static void test_limits(void) {
  char err[256];
  km_hasher *h = NULL;
  KM_EXPECT(km_hasher_new(KM_HASH_SHA256, 0, &h, err, sizeof err) == -1 && h == NULL && strstr(err, "block size"));
  KM_EXPECT(km_hasher_new(KM_HASH_SHA256, KM_HASH_MAX_BLOCK_TOKENS + 1, &h, err, sizeof err) == -1);
  KM_EXPECT(km_hasher_new((km_hash_algo)KM_HASH_ALGO_COUNT, 16, &h, err, sizeof err) == -1);
  /* the largest block fits the buffer the hasher sizes */
  KM_EXPECT(km_hasher_new(KM_HASH_SHA256, KM_HASH_MAX_BLOCK_TOKENS, &h, err, sizeof err) == 0);
  uint32_t *t = calloc(KM_HASH_MAX_BLOCK_TOKENS, sizeof *t);
  for (int i = 0; i < KM_HASH_MAX_BLOCK_TOKENS; i++) t[i] = 4294967295u;
  km_block_hash none = {32, {7}}, out;
  KM_EXPECT(km_hasher_chain(h, &none, t, KM_HASH_MAX_BLOCK_TOKENS, 0, NULL, &out) == 1);
  km_hasher_free(h);
  free(t);
  uint8_t buf[128];
  km_block_hash empty = {0, {0}};
  const uint32_t one[1] = {1};
  KM_EXPECT(km_hash_serialize_pickle(buf, sizeof buf, &empty, one, 1, NULL, 0) == 0); /* a parent is needed */
  KM_EXPECT(km_hash_serialize_pickle(buf, 10, &none, one, 1, NULL, 0) == 0);
}

int main(void) {
  test_digests();
  test_names();
  test_cbor_heads();
  test_serialized_bytes();
  test_chain_vectors();
  test_chain_links();
  test_limits();
  return km_test_finish("cpu_prefix_hash");
}
