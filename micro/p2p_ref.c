/* Plans, pointer lists, the received-pool check and per-token figures of the p2p family (p2p_ref.h). */
#include "p2p_ref.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

/* The receiving table is drawn from another stream than the source's, so the two never coincide. */
#define KM_P2P_DST_SEED_SALT 0x5A5A5A5A5A5A5A5Aull

int km_p2p_plan_make(km_p2p_plan *p, size_t nblocks, size_t block_bytes, int scattered, uint64_t seed) {
  memset(p, 0, sizeof *p);
  const size_t factor = scattered ? KM_P2P_POOL_FACTOR : 1;
  if (nblocks == 0 || block_bytes == 0 || block_bytes % 8 != 0 || nblocks > (size_t)INT32_MAX / factor) return -1;
  const size_t pool = nblocks * factor;
  if (block_bytes > SIZE_MAX / pool) return -1;
  int32_t *src_perm = malloc(pool * sizeof *src_perm), *dst_perm = malloc(pool * sizeof *dst_perm);
  p->recv_of = malloc(pool * sizeof *p->recv_of);
  if (!src_perm || !dst_perm || !p->recv_of) {
    free(src_perm);
    free(dst_perm);
    free(p->recv_of);
    p->recv_of = NULL;
    return -1;
  }
  if (scattered) {
    km_pattern_permutation(src_perm, pool, seed);
    km_pattern_permutation(dst_perm, pool, seed ^ KM_P2P_DST_SEED_SALT);
  } else {
    for (size_t k = 0; k < pool; k++) src_perm[k] = dst_perm[k] = (int32_t)k;
  }
  /* the first nblocks of each permutation are the tables; the arrays keep the whole pool, unused past it */
  p->src_ids = src_perm;
  p->dst_ids = dst_perm;
  p->nblocks = nblocks;
  p->block_bytes = block_bytes;
  p->pool_blocks = pool;
  for (size_t k = 0; k < pool; k++) p->recv_of[k] = -1;
  for (size_t i = 0; i < nblocks; i++) p->recv_of[p->dst_ids[i]] = (int32_t)i;
  return 0;
}

void km_p2p_plan_free(km_p2p_plan *p) {
  free(p->src_ids);
  free(p->dst_ids);
  free(p->recv_of);
  memset(p, 0, sizeof *p);
}

size_t km_p2p_pool_bytes(const km_p2p_plan *p) { return p->pool_blocks * p->block_bytes; }
size_t km_p2p_moved_bytes(const km_p2p_plan *p) { return p->nblocks * p->block_bytes; }

void km_p2p_plan_lists(const km_p2p_plan *p, void *dst_pool, const void *src_pool, void **dsts, const void **srcs,
                       size_t *sizes) {
  for (size_t i = 0; i < p->nblocks; i++) {
    dsts[i] = (unsigned char *)dst_pool + (size_t)p->dst_ids[i] * p->block_bytes;
    srcs[i] = (const unsigned char *)src_pool + (size_t)p->src_ids[i] * p->block_bytes;
    sizes[i] = p->block_bytes;
  }
}

size_t km_p2p_check_received(km_bench *b, const unsigned char *recv_pool, const km_p2p_plan *p, uint64_t seed,
                             uint64_t first_word) {
  const size_t words = p->block_bytes / 8;
  size_t bad = 0;
  for (size_t k = 0; k < p->pool_blocks; k++) {
    const unsigned char *blk = recv_pool + k * p->block_bytes;
    const int32_t i = p->recv_of[k];
    char what[96];
    if (i >= 0)
      snprintf(what, sizeof what, "receiving block %zu (block %d of the transfer)", k, (int)i);
    else
      snprintf(what, sizeof what, "unlisted receiving block %zu", k);
    bad += i >= 0 ? km_pattern_check(b, blk, p->block_bytes, seed, first_word + (size_t)p->src_ids[i] * words, what)
                  : km_poison_check(b, blk, p->block_bytes, what);
  }
  return bad;
}

double km_p2p_tokens(double bytes, double bytes_per_token) {
  return bytes_per_token > 0 && bytes > 0 ? bytes / bytes_per_token : 0.0;
}

double km_p2p_us_per_token(double bytes, double seconds, double bytes_per_token) {
  if (!(bytes > 0) || !(seconds > 0) || !(bytes_per_token > 0)) return 0.0;
  return seconds / (bytes / bytes_per_token) * 1e6;
}
