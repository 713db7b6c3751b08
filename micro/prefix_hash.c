/* vLLM's block keys: the tuple (parent_block_hash, tuple(token_ids), extra_keys) written byte for byte
 * as CPython's pickle (protocol 5, the C pickler) and as cbor2.dumps(..., canonical=True) write it,
 * then hashed with OpenSSL's SHA-256 (one EVP context reused per hasher) or xxHash's XXH3-128. */
#include "prefix_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
/* XXH3 from the package's header, inlined into the block loop instead of called in libxxhash: a block key is
 * ~100 bytes, where the call and its generic dispatch are a visible share (dev machine, 16K-token prompt:
 * 34.1 -> 30.9 ns per block) */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "name_index.h"

static const char *const algo_names[KM_HASH_ALGO_COUNT] = {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"};

const char *km_hash_algo_name(km_hash_algo a) { return a >= 0 && a < KM_HASH_ALGO_COUNT ? algo_names[a] : "?"; }

int km_hash_algo_parse(const char *name, km_hash_algo *out) {
  int i = km_name_index(algo_names, KM_HASH_ALGO_COUNT, name);
  if (i >= 0) *out = (km_hash_algo)i;
  return i >= 0 ? 0 : -1;
}

static int is_sha(km_hash_algo a) { return a == KM_HASH_SHA256 || a == KM_HASH_SHA256_CBOR; }
static int is_cbor(km_hash_algo a) { return a == KM_HASH_SHA256_CBOR || a == KM_HASH_XXHASH_CBOR; }
size_t km_hash_digest_bytes(km_hash_algo a) { return is_sha(a) ? 32 : 16; }

/* ---- writers. The buffer is checked once against km_hash_serialized_bound, then written without a
 * check per byte: the per-token loop is the whole cost of a block beside XXH3. */
static uint8_t *put1(uint8_t *p, uint8_t b) {
  *p = b;
  return p + 1;
}
static uint8_t *put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
  return p + n;
}
static uint8_t *put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  return p + n;
}
static uint8_t *put(uint8_t *p, const void *src, size_t n) {
  memcpy(p, src, n);
  return p + n;
}

/* A parent hash: a fixed-size copy (the bound leaves room past it), so no variable-length memcpy. */
static uint8_t *put_hash(uint8_t *p, const km_block_hash *h) {
  memcpy(p, h->bytes, KM_BLOCK_HASH_MAX);
  return p + h->len;
}

/* Room for the inputs, which are within the limits: 0 when not. */
static int inputs_fit(size_t cap, const km_block_hash *parent, size_t ntokens, const char *const *extra,
                      size_t nextra) {
  if (!parent || parent->len == 0 || parent->len > KM_BLOCK_HASH_MAX) return 0;
  if (ntokens > KM_HASH_MAX_BLOCK_TOKENS || nextra > KM_HASH_MAX_EXTRA_KEYS) return 0;
  size_t extra_bytes = 0;
  for (size_t i = 0; i < nextra; i++) {
    size_t n = extra[i] ? strlen(extra[i]) : KM_HASH_MAX_EXTRA_BYTES + 1;
    if (n > KM_HASH_MAX_EXTRA_BYTES) return 0;
    extra_bytes += n;
  }
  return cap >= km_hash_serialized_bound(ntokens, extra_bytes);
}

size_t km_hash_serialized_bound(size_t tokens, size_t extra_bytes) {
  /* pickle, the larger: 11 header + 35 parent + 3 tuples of at most 3 + None + STOP, 7 per token
   * (LONG1 of a uint32), 6 per string beside its bytes */
  return 64 + 7 * tokens + extra_bytes + 6 * KM_HASH_MAX_EXTRA_KEYS;
}

/* ---- pickle, protocol 5, as Modules/_pickle.c writes these types */
enum {
  P_PROTO = 0x80, P_FRAME = 0x95, P_STOP = '.', P_MARK = '(', P_TUPLE = 't', P_EMPTY_TUPLE = ')',
  P_TUPLE1 = 0x85, P_NONE = 'N', P_MEMOIZE = 0x94, P_BININT1 = 'K', P_BININT2 = 'M', P_BININT = 'J',
  P_LONG1 = 0x8a, P_SHORT_BINBYTES = 'C', P_SHORT_BINUNICODE = 0x8c, P_BINUNICODE = 'X',
};
enum { PICKLE_HEADER = 11 }; /* PROTO 5, then FRAME and its 8-byte length */

/* Eight bytes little-endian in one store (the loop compiles to one); the buffer's bound leaves room for
 * the bytes past the value, which the next item overwrites. */
static void store_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Token ids are spread over widths at random, so a branch per width would be mispredicted about every
 * other token: the opcode and the length come from comparisons instead. */
static uint8_t *pickle_int(uint8_t *p, uint32_t v) {
  if (v >= 0x80000000u) /* LONG1: BININT is signed; little-endian two's complement, 5 bytes for a uint32 */
    return put_le(put1(put1(p, P_LONG1), 5), v, 5);
  const unsigned wide = v >= 0x100, wider = v >= 0x10000;
  const uint8_t op = (uint8_t)(P_BININT1 + 2 * wide - 3 * wider); /* K, M (BININT2) or J (BININT) */
  store_le64(p, op | ((uint64_t)v << 8));
  return p + 2 + wide + 2 * wider;
}

static uint8_t *pickle_str(uint8_t *p, const char *s) {
  size_t n = strlen(s);
  p = n <= 0xff ? put1(put1(p, P_SHORT_BINUNICODE), (uint8_t)n) : put_le(put1(p, P_BINUNICODE), n, 4);
  return put1(put(p, s, n), P_MEMOIZE);
}

/* Tuples: n <= 3 items then TUPLE1..3, longer ones MARK, items, TUPLE; the empty tuple is a singleton
 * the pickler does not memoize. */
static uint8_t *pickle_tuple_open(uint8_t *p, size_t n) { return n > 3 ? put1(p, P_MARK) : p; }
static uint8_t *pickle_tuple_close(uint8_t *p, size_t n) {
  if (n == 0) return put1(p, P_EMPTY_TUPLE);
  return put1(put1(p, n > 3 ? P_TUPLE : (uint8_t)(P_TUPLE1 + n - 1)), P_MEMOIZE);
}

static uint8_t *pickle_header(uint8_t *p) { return put_le(put1(put1(put1(p, P_PROTO), 5), P_FRAME), 0, 8); }

/* STOP, then the frame's length (what follows the header) into the header. */
static size_t pickle_finish(uint8_t *buf, uint8_t *p) {
  p = put1(p, P_STOP);
  put_le(buf + 3, (uint64_t)(p - buf - PICKLE_HEADER), 8);
  return (size_t)(p - buf);
}

size_t km_hash_serialize_pickle(uint8_t *buf, size_t cap, const km_block_hash *parent, const uint32_t *tokens,
                                size_t ntokens, const char *const *extra, size_t nextra) {
  if (!inputs_fit(cap, parent, ntokens, extra, nextra)) return 0;
  uint8_t *p = pickle_header(buf);
  p = put1(put_hash(put1(put1(p, P_SHORT_BINBYTES), parent->len), parent), P_MEMOIZE);
  p = pickle_tuple_open(p, ntokens);
  for (size_t i = 0; i < ntokens; i++) p = pickle_int(p, tokens[i]);
  p = pickle_tuple_close(p, ntokens);
  if (nextra == 0) {
    p = put1(p, P_NONE);
  } else {
    p = pickle_tuple_open(p, nextra);
    for (size_t i = 0; i < nextra; i++) p = pickle_str(p, extra[i]);
    p = pickle_tuple_close(p, nextra);
  }
  return pickle_finish(buf, pickle_tuple_close(p, 3));
}

/* ---- CBOR (RFC 8949), canonical: the shortest head for every length and integer */
enum { C_UINT = 0, C_BYTES = 2, C_TEXT = 3, C_ARRAY = 4, C_NULL = 0xf6 };

static uint8_t *cbor_head(uint8_t *p, int major, uint64_t v) {
  uint8_t m = (uint8_t)(major << 5);
  if (v < 24) return put1(p, (uint8_t)(m | v));
  if (v <= 0xff) return put1(put1(p, m | 24), (uint8_t)v);
  if (v <= 0xffff) return put_be(put1(p, m | 25), v, 2);
  if (v <= 0xffffffffu) return put_be(put1(p, m | 26), v, 4);
  return put_be(put1(p, m | 27), v, 8);
}

static uint8_t *cbor_text(uint8_t *p, const char *s) {
  size_t n = strlen(s);
  return put(cbor_head(p, C_TEXT, n), s, n);
}

/* An unsigned integer's head without a branch per width (see pickle_int): 1, 2, 3 or 5 bytes, the value
 * big-endian after the head byte. */
static uint8_t *cbor_uint32(uint8_t *p, uint32_t v) {
  static const uint8_t payload_bytes[4] = {0, 1, 2, 4};
  const unsigned cls = (v > 23) + (v > 0xff) + (v > 0xffff), len = payload_bytes[cls];
  const uint64_t be = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
  const uint64_t head = cls ? (C_UINT << 5) | (23 + cls) : v; /* 24, 25, 26: 1, 2, 4 bytes follow */
  store_le64(p, head | ((be >> (32 - 8 * len)) << 8));  /* the low len bytes of v, most significant first */
  return p + 1 + len;
}

size_t km_hash_serialize_cbor(uint8_t *buf, size_t cap, const km_block_hash *parent, const uint32_t *tokens,
                              size_t ntokens, const char *const *extra, size_t nextra) {
  if (!inputs_fit(cap, parent, ntokens, extra, nextra)) return 0;
  uint8_t *p = cbor_head(buf, C_ARRAY, 3);
  p = put_hash(cbor_head(p, C_BYTES, parent->len), parent);
  p = cbor_head(p, C_ARRAY, ntokens);
  for (size_t i = 0; i < ntokens; i++) p = cbor_uint32(p, tokens[i]);
  if (nextra == 0) {
    p = put1(p, C_NULL);
  } else {
    p = cbor_head(p, C_ARRAY, nextra);
    for (size_t i = 0; i < nextra; i++) p = cbor_text(p, extra[i]);
  }
  return (size_t)(p - buf);
}

/* ---- digests */
static void xxh3_128_canonical(const uint8_t *bytes, size_t len, km_block_hash *out) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(bytes, len));
  out->len = 16;
  memcpy(out->bytes, c.digest, 16);
}

int km_hash_digest(km_hash_algo a, const uint8_t *bytes, size_t len, km_block_hash *out) {
  if (!is_sha(a)) {
    xxh3_128_canonical(bytes, len, out);
    return 0;
  }
  unsigned int n = 0;
  if (!EVP_Digest(bytes, len, out->bytes, &n, EVP_sha256(), NULL) || n != 32) return -1;
  out->len = 32;
  return 0;
}

struct km_hasher {
  km_hash_algo algo;
  size_t block_size;
  EVP_MD *md;      /* fetched once: EVP_sha256() would look the algorithm up on every digest */
  EVP_MD_CTX *ctx;
  uint8_t *buf;
  size_t cap;
};

int km_hasher_new(km_hash_algo a, size_t block_size, km_hasher **out, char *err, size_t errlen) {
  *out = NULL;
  if (a < 0 || a >= KM_HASH_ALGO_COUNT) {
    snprintf(err, errlen, "unknown hash algorithm %d", (int)a);
    return -1;
  }
  if (block_size < 1 || block_size > KM_HASH_MAX_BLOCK_TOKENS) {
    snprintf(err, errlen, "block size %zu: the block hasher takes 1..%d tokens per block", block_size,
             KM_HASH_MAX_BLOCK_TOKENS);
    return -1;
  }
  km_hasher *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  h->algo = a;
  h->block_size = block_size;
  h->cap = km_hash_serialized_bound(block_size, KM_HASH_MAX_EXTRA_KEYS * (size_t)KM_HASH_MAX_EXTRA_BYTES);
  h->buf = malloc(h->cap);
  if (is_sha(a)) {
    h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    h->ctx = EVP_MD_CTX_new();
  }
  if (!h->buf || (is_sha(a) && (!h->md || !h->ctx))) {
    snprintf(err, errlen, "%s", h->buf ? "OpenSSL: could not fetch SHA-256" : "out of memory");
    km_hasher_free(h);
    return -1;
  }
  *out = h;
  return 0;
}

void km_hasher_free(km_hasher *h) {
  if (!h) return;
  EVP_MD_CTX_free(h->ctx);
  EVP_MD_free(h->md);
  free(h->buf);
  free(h);
}

km_hash_algo km_hasher_algo(const km_hasher *h) { return h->algo; }

static int digest(km_hasher *h, size_t len, km_block_hash *out) {
  if (!is_sha(h->algo)) {
    xxh3_128_canonical(h->buf, len, out);
    return 0;
  }
  unsigned int n = 0;
  if (!EVP_DigestInit_ex2(h->ctx, h->md, NULL) || !EVP_DigestUpdate(h->ctx, h->buf, len) ||
      !EVP_DigestFinal_ex(h->ctx, out->bytes, &n) || n != 32)
    return -1;
  out->len = 32;
  return 0;
}

int km_hasher_seed(km_hasher *h, const char *seed, km_block_hash *out) {
  if (strlen(seed) > KM_HASH_MAX_EXTRA_BYTES) return -1; /* the buffer holds a block's extra keys: room enough */
  size_t len = is_cbor(h->algo) ? (size_t)(cbor_text(h->buf, seed) - h->buf)
                                : pickle_finish(h->buf, pickle_str(pickle_header(h->buf), seed));
  return digest(h, len, out);
}

int km_hasher_block(km_hasher *h, const km_block_hash *parent, const km_block_hash *none_hash,
                    const uint32_t *tokens, const char *const *extra, size_t nextra, km_block_hash *out) {
  const km_block_hash *p = parent && parent->len ? parent : none_hash;
  size_t len = is_cbor(h->algo) ? km_hash_serialize_cbor(h->buf, h->cap, p, tokens, h->block_size, extra, nextra)
                                : km_hash_serialize_pickle(h->buf, h->cap, p, tokens, h->block_size, extra, nextra);
  return len ? digest(h, len, out) : -1;
}

long km_hasher_chain(km_hasher *h, const km_block_hash *none_hash, const uint32_t *tokens, size_t n, size_t first,
                     const km_extra_keys *x, km_block_hash *out) {
  const size_t blocks = n / h->block_size;
  const char *keys[2];
  for (size_t i = first; i < blocks; i++) {
    size_t nkeys = 0;
    if (x && x->lora_name) keys[nkeys++] = x->lora_name;
    if (x && x->cache_salt && i == 0) keys[nkeys++] = x->cache_salt;
    if (km_hasher_block(h, i ? &out[i - 1] : NULL, none_hash, tokens + i * h->block_size, keys, nkeys, &out[i]))
      return -1;
  }
  return blocks > first ? (long)(blocks - first) : 0;
}
