/* vLLM's block keys: the tuple (parent_block_hash, tuple(token_ids), extra_keys) written byte for byte
 * as CPython's pickle (protocol 5, the C pickler) and as cbor2.dumps(..., canonical=True) write it,
 * then hashed with OpenSSL's SHA-256 (one EVP context reused per hasher) or xxHash's XXH3-128. */
#include "prefix_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

static const char *const algo_names[KM_HASH_ALGO_COUNT] = {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"};

const char *km_hash_algo_name(km_hash_algo a) { return a >= 0 && a < KM_HASH_ALGO_COUNT ? algo_names[a] : "?"; }

int km_hash_algo_parse(const char *name, km_hash_algo *out) {
  for (int i = 0; name && i < KM_HASH_ALGO_COUNT; i++)
    if (strcmp(name, algo_names[i]) == 0) {
      *out = (km_hash_algo)i;
      return 0;
    }
  return -1;
}

static int is_sha(km_hash_algo a) { return a == KM_HASH_SHA256 || a == KM_HASH_SHA256_CBOR; }
static int is_cbor(km_hash_algo a) { return a == KM_HASH_SHA256_CBOR || a == KM_HASH_XXHASH_CBOR; }
size_t km_hash_digest_bytes(km_hash_algo a) { return is_sha(a) ? 32 : 16; }

/* ---- a bounded writer: every put checks room, so a short buffer gives 0, never an overrun */
typedef struct writer {
  uint8_t *p;
  size_t len, cap;
  int full;
} writer;

static void put(writer *w, const void *src, size_t n) {
  if (w->full || n > w->cap - w->len) {
    w->full = 1;
    return;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}
static void put1(writer *w, uint8_t b) { put(w, &b, 1); }
static void put_le(writer *w, uint64_t v, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
  put(w, b, (size_t)n);
}
static void put_be(writer *w, uint64_t v, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  put(w, b, (size_t)n);
}

static int inputs_fit(const km_block_hash *parent, size_t ntokens, const char *const *extra, size_t nextra) {
  if (!parent || parent->len == 0 || parent->len > KM_BLOCK_HASH_MAX) return 0;
  if (ntokens > KM_HASH_MAX_BLOCK_TOKENS || nextra > KM_HASH_MAX_EXTRA_KEYS) return 0;
  for (size_t i = 0; i < nextra; i++)
    if (!extra[i] || strlen(extra[i]) > KM_HASH_MAX_EXTRA_BYTES) return 0;
  return 1;
}

size_t km_hash_serialized_bound(size_t tokens, size_t extra_bytes) {
  /* pickle: 11 header + 3 per tuple + 35 parent + 6 per token (LONG1 of a uint32) + 6 per string */
  return 64 + 6 * tokens + extra_bytes + 6 * KM_HASH_MAX_EXTRA_KEYS;
}

/* ---- pickle, protocol 5, as Modules/_pickle.c writes these types */
enum {
  P_PROTO = 0x80, P_FRAME = 0x95, P_STOP = '.', P_MARK = '(', P_TUPLE = 't', P_EMPTY_TUPLE = ')',
  P_TUPLE1 = 0x85, P_NONE = 'N', P_MEMOIZE = 0x94, P_BININT1 = 'K', P_BININT2 = 'M', P_BININT = 'J',
  P_LONG1 = 0x8a, P_SHORT_BINBYTES = 'C', P_SHORT_BINUNICODE = 0x8c, P_BINUNICODE = 'X',
};
enum { PICKLE_HEADER = 11 }; /* PROTO 5, then FRAME and its 8-byte length */

static void pickle_int(writer *w, uint32_t v) {
  if (v < 0x100) {
    put1(w, P_BININT1);
    put1(w, (uint8_t)v);
  } else if (v < 0x10000) {
    put1(w, P_BININT2);
    put_le(w, v, 2);
  } else if (v < 0x80000000u) { /* BININT is a signed 32-bit value */
    put1(w, P_BININT);
    put_le(w, v, 4);
  } else { /* LONG1: little-endian two's complement, one byte more than the magnitude needs */
    put1(w, P_LONG1);
    put1(w, 5);
    put_le(w, v, 5);
  }
}

static void pickle_str(writer *w, const char *s) {
  size_t n = strlen(s);
  if (n <= 0xff) {
    put1(w, P_SHORT_BINUNICODE);
    put1(w, (uint8_t)n);
  } else {
    put1(w, P_BINUNICODE);
    put_le(w, n, 4);
  }
  put(w, s, n);
  put1(w, P_MEMOIZE);
}

/* A tuple's items are written by `items`; n <= 3 uses TUPLE1..3, longer ones MARK .. TUPLE; the
 * empty tuple is a singleton the pickler does not memoize. */
static void pickle_tuple_open(writer *w, size_t n) {
  if (n > 3) put1(w, P_MARK);
}
static void pickle_tuple_close(writer *w, size_t n) {
  if (n == 0) {
    put1(w, P_EMPTY_TUPLE);
    return;
  }
  put1(w, n > 3 ? P_TUPLE : (uint8_t)(P_TUPLE1 + n - 1));
  put1(w, P_MEMOIZE);
}

size_t km_hash_serialize_pickle(uint8_t *buf, size_t cap, const km_block_hash *parent, const uint32_t *tokens,
                                size_t ntokens, const char *const *extra, size_t nextra) {
  if (!inputs_fit(parent, ntokens, extra, nextra)) return 0;
  writer w = {buf, 0, cap, 0};
  put1(&w, P_PROTO);
  put1(&w, 5);
  put1(&w, P_FRAME);
  put_le(&w, 0, 8); /* the frame's length, filled in below */
  put1(&w, P_SHORT_BINBYTES);
  put1(&w, parent->len);
  put(&w, parent->bytes, parent->len);
  put1(&w, P_MEMOIZE);
  pickle_tuple_open(&w, ntokens);
  for (size_t i = 0; i < ntokens; i++) pickle_int(&w, tokens[i]);
  pickle_tuple_close(&w, ntokens);
  if (nextra == 0) {
    put1(&w, P_NONE);
  } else {
    pickle_tuple_open(&w, nextra);
    for (size_t i = 0; i < nextra; i++) pickle_str(&w, extra[i]);
    pickle_tuple_close(&w, nextra);
  }
  pickle_tuple_close(&w, 3);
  put1(&w, P_STOP);
  if (w.full) return 0;
  uint64_t frame = w.len - PICKLE_HEADER;
  for (int i = 0; i < 8; i++) buf[3 + i] = (uint8_t)(frame >> (8 * i));
  return w.len;
}

/* ---- CBOR (RFC 8949), canonical: the shortest head for every length and integer */
enum { C_UINT = 0, C_BYTES = 2, C_TEXT = 3, C_ARRAY = 4, C_NULL = 0xf6 };

static void cbor_head(writer *w, int major, uint64_t v) {
  uint8_t m = (uint8_t)(major << 5);
  if (v < 24) {
    put1(w, (uint8_t)(m | v));
  } else if (v <= 0xff) {
    put1(w, m | 24);
    put1(w, (uint8_t)v);
  } else if (v <= 0xffff) {
    put1(w, m | 25);
    put_be(w, v, 2);
  } else if (v <= 0xffffffffu) {
    put1(w, m | 26);
    put_be(w, v, 4);
  } else {
    put1(w, m | 27);
    put_be(w, v, 8);
  }
}

size_t km_hash_serialize_cbor(uint8_t *buf, size_t cap, const km_block_hash *parent, const uint32_t *tokens,
                              size_t ntokens, const char *const *extra, size_t nextra) {
  if (!inputs_fit(parent, ntokens, extra, nextra)) return 0;
  writer w = {buf, 0, cap, 0};
  cbor_head(&w, C_ARRAY, 3);
  cbor_head(&w, C_BYTES, parent->len);
  put(&w, parent->bytes, parent->len);
  cbor_head(&w, C_ARRAY, ntokens);
  for (size_t i = 0; i < ntokens; i++) cbor_head(&w, C_UINT, tokens[i]);
  if (nextra == 0) {
    put1(&w, C_NULL);
  } else {
    cbor_head(&w, C_ARRAY, nextra);
    for (size_t i = 0; i < nextra; i++) {
      size_t n = strlen(extra[i]);
      cbor_head(&w, C_TEXT, n);
      put(&w, extra[i], n);
    }
  }
  return w.full ? 0 : w.len;
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
  size_t n = strlen(seed);
  if (n > KM_HASH_MAX_EXTRA_BYTES) return -1;
  writer w = {h->buf, 0, h->cap, 0};
  if (is_cbor(h->algo)) {
    cbor_head(&w, C_TEXT, n);
    put(&w, seed, n);
  } else {
    put1(&w, P_PROTO);
    put1(&w, 5);
    put1(&w, P_FRAME);
    put_le(&w, 0, 8);
    pickle_str(&w, seed);
    put1(&w, P_STOP);
    uint64_t frame = w.len - PICKLE_HEADER;
    for (int i = 0; i < 8 && !w.full; i++) h->buf[3 + i] = (uint8_t)(frame >> (8 * i));
  }
  return w.full ? -1 : digest(h, w.len, out);
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
