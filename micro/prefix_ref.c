/* The prefix family's CPU references: the block-key chain and a double-precision GEMM. */
#include "prefix_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_ref.h"

int km_prefix_ref_chain(km_hash_algo a, size_t block_size, const km_block_hash *none_hash, const uint32_t *tokens,
                        size_t n, const km_extra_keys *x, km_block_hash *out) {
  const int cbor = a == KM_HASH_SHA256_CBOR || a == KM_HASH_XXHASH_CBOR;
  const char *lora = x ? x->lora_name : NULL, *salt = x ? x->cache_salt : NULL;
  size_t extra_bytes = (lora ? strlen(lora) : 0) + (salt ? strlen(salt) : 0);
  size_t cap = km_hash_serialized_bound(block_size, extra_bytes);
  for (size_t b = 0; b < n / block_size; b++) {
    /* generate_block_hash_extra_keys: LoRA keys, then (multimodal: none here), then the salt at token 0 */
    const char *keys[2];
    size_t nkeys = 0;
    if (lora) keys[nkeys++] = lora;
    if (salt && b * block_size == 0) keys[nkeys++] = salt;
    const km_block_hash *parent = b == 0 ? none_hash : &out[b - 1];
    uint8_t *buf = malloc(cap);
    if (!buf) return -1;
    size_t len = cbor ? km_hash_serialize_cbor(buf, cap, parent, tokens + b * block_size, block_size, keys, nkeys)
                      : km_hash_serialize_pickle(buf, cap, parent, tokens + b * block_size, block_size, keys, nkeys);
    int rc = len ? km_hash_digest(a, buf, len, &out[b]) : -1;
    free(buf);
    if (rc) return -1;
  }
  return 0;
}

void km_prefix_ref_gemm(const uint16_t *x, const uint16_t *w, double *y, double *abs_sum, int m, int n, int k) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0, s_abs = 0;
      for (int l = 0; l < k; l++) {
        double t = (double)km_bf16_to_float(x[(size_t)i * k + l]) * km_bf16_to_float(w[(size_t)j * k + l]);
        s += t;
        s_abs += fabs(t);
      }
      y[(size_t)i * n + j] = s;
      if (abs_sum) abs_sum[(size_t)i * n + j] = s_abs;
    }
}
