/* CPU side of the p2p family, no GPU: the plan of blocks (tables are random subsets of the pools, the
 * receiving map agrees with them), the per-block pointer lists, the received-pool check against a CPU
 * transfer (it passes the right image and catches a wrong block, a stray write, a swapped direction), the
 * per-token arithmetic for the qwen3-8b shape, NVLink counting, and the case table (names, baselines,
 * flags) that --list shows without a device. */
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "micro_tables.h"
#include "p2p_ref.h"
#include "pattern.h"
#include "peer_link.h"
#include "registry.h"
#include "test_util.h"

static int is_permutation_prefix(const int32_t *ids, size_t n, size_t pool) {
  char *seen = calloc(pool, 1);
  int ok = seen != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    ok = ids[i] >= 0 && (size_t)ids[i] < pool && !seen[ids[i]];
    if (ok) seen[ids[i]] = 1;
  }
  free(seen);
  return ok;
}

static void test_plans(void) {
  km_p2p_plan p;
  KM_EXPECT(km_p2p_plan_make(&p, 1, 4096, 0, 1) == 0);
  KM_EXPECT(p.pool_blocks == 1 && p.src_ids[0] == 0 && p.dst_ids[0] == 0 && p.recv_of[0] == 0);
  KM_EXPECT(km_p2p_pool_bytes(&p) == 4096 && km_p2p_moved_bytes(&p) == 4096);
  km_p2p_plan_free(&p);

  const size_t n = 2048, bs = 32768;
  KM_EXPECT(km_p2p_plan_make(&p, n, bs, 1, 12345) == 0);
  KM_EXPECT(p.pool_blocks == n * KM_P2P_POOL_FACTOR);
  KM_EXPECT(km_p2p_pool_bytes(&p) == 2 * n * bs && km_p2p_moved_bytes(&p) == n * bs);
  KM_EXPECT(is_permutation_prefix(p.src_ids, n, p.pool_blocks));
  KM_EXPECT(is_permutation_prefix(p.dst_ids, n, p.pool_blocks));
  size_t same = 0, in_order = 0, listed = 0;
  for (size_t i = 0; i < n; i++) {
    same += p.src_ids[i] == p.dst_ids[i];
    in_order += p.src_ids[i] == (int32_t)i;
    KM_EXPECT(p.recv_of[p.dst_ids[i]] == (int32_t)i);
  }
  for (size_t k = 0; k < p.pool_blocks; k++) listed += p.recv_of[k] >= 0;
  KM_EXPECT(listed == n);
  /* random tables: a handful of coincidences at most (expected about one each) */
  KM_EXPECT_MSG(same < 16 && in_order < 16, "%zu equal entries, %zu in order", same, in_order);
  km_p2p_plan_free(&p);

  /* bad sizes leave an empty plan */
  KM_EXPECT(km_p2p_plan_make(&p, 0, 4096, 1, 1) == -1 && p.src_ids == NULL);
  KM_EXPECT(km_p2p_plan_make(&p, 4, 0, 1, 1) == -1);
  KM_EXPECT(km_p2p_plan_make(&p, 4, 12, 1, 1) == -1);
  KM_EXPECT(km_p2p_plan_make(&p, (size_t)1 << 31, 16, 1, 1) == -1);
}

static void test_lists(void) {
  km_p2p_plan p;
  KM_EXPECT(km_p2p_plan_make(&p, 8, 64, 1, 7) == 0);
  unsigned char src[16 * 64], dst[16 * 64];
  void *dsts[8];
  const void *srcs[8];
  size_t sizes[8];
  km_p2p_plan_lists(&p, dst, src, dsts, srcs, sizes);
  for (size_t i = 0; i < 8; i++) {
    KM_EXPECT(dsts[i] == dst + (size_t)p.dst_ids[i] * 64);
    KM_EXPECT(srcs[i] == src + (size_t)p.src_ids[i] * 64);
    KM_EXPECT(sizes[i] == 64);
  }
  km_p2p_plan_free(&p);
}

/* The transfer done on the CPU: what every method must leave in the receiving pool. */
static void cpu_transfer(const km_p2p_plan *p, unsigned char *dst, const unsigned char *src) {
  for (size_t i = 0; i < p->nblocks; i++)
    memcpy(dst + (size_t)p->dst_ids[i] * p->block_bytes, src + (size_t)p->src_ids[i] * p->block_bytes,
           p->block_bytes);
}

static void test_received_check(void) {
  const size_t n = 64, bs = 256;
  const uint64_t seed = 99, first = (uint64_t)1 << 40;
  km_p2p_plan p;
  KM_EXPECT(km_p2p_plan_make(&p, n, bs, 1, seed) == 0);
  const size_t pool = km_p2p_pool_bytes(&p);
  unsigned char *src = malloc(pool), *dst = malloc(pool);
  if (!src || !dst) {
    KM_EXPECT(!"host memory");
    goto out;
  }
  km_pattern_fill(src, pool, seed, first);
  memset(dst, 0xFF, pool);
  cpu_transfer(&p, dst, src);
  KM_EXPECT(km_p2p_check_received(NULL, dst, &p, seed, first) == 0);
  /* the other direction's pattern (or a fresh seed) does not pass */
  KM_EXPECT(km_p2p_check_received(NULL, dst, &p, seed, 0) > 0);
  KM_EXPECT(km_p2p_check_received(NULL, dst, &p, seed + 1, first) > 0);
  /* one flipped byte in a received block */
  unsigned char *blk = dst + (size_t)p.dst_ids[5] * bs;
  blk[17] ^= 0x10;
  KM_EXPECT(km_p2p_check_received(NULL, dst, &p, seed, first) == 1);
  blk[17] ^= 0x10;
  /* a stray write into an unlisted receiving block */
  size_t unlisted = 0;
  while (p.recv_of[unlisted] >= 0) unlisted++;
  dst[unlisted * bs + 8] = 0;
  KM_EXPECT(km_p2p_check_received(NULL, dst, &p, seed, first) == 1);
  memset(dst + unlisted * bs, 0xFF, bs);
  /* a block delivered to the slot of another */
  memcpy(dst + (size_t)p.dst_ids[3] * bs, src + (size_t)p.src_ids[4] * bs, bs);
  KM_EXPECT(km_p2p_check_received(NULL, dst, &p, seed, first) == bs / 8);
  /* a contiguous buffer is one block */
  km_p2p_plan c;
  KM_EXPECT(km_p2p_plan_make(&c, 1, pool, 0, seed) == 0);
  KM_EXPECT(km_p2p_check_received(NULL, src, &c, seed, first) == 0);
  KM_EXPECT(km_p2p_check_received(NULL, dst, &c, seed, first) > 0);
  km_p2p_plan_free(&c);
out:
  free(src);
  free(dst);
  km_p2p_plan_free(&p);
}

static void test_per_token(void) {
  km_model m;
  KM_EXPECT(km_model_preset("qwen3-8b", &m) == 0);
  const double bpt = km_model_kv_bytes_per_token(&m, 0);
  KM_EXPECT_NEAR(bpt, 147456.0, 0.0); /* 36 layers x 2 x 8 heads x 128 x 2 bytes */
  /* 2048 blocks of 32 KiB (64 MiB) in 1 ms: 455.1 tokens, 2.197 us each */
  const double bytes = 2048.0 * 32768.0;
  KM_EXPECT_NEAR(km_p2p_tokens(bytes, bpt), bytes / 147456.0, 1e-9);
  KM_EXPECT_NEAR(km_p2p_us_per_token(bytes, 1e-3, bpt), 1e3 * 147456.0 / bytes, 1e-9);
  KM_EXPECT_NEAR(km_p2p_us_per_token(bytes, 1e-3, bpt), 2.19727, 1e-5);
  /* 450 GB/s: a token's KV crosses in 0.33 us */
  KM_EXPECT_NEAR(km_p2p_us_per_token(450e9, 1.0, bpt), 0.327680, 1e-6);
  KM_EXPECT(km_p2p_tokens(bytes, 0) == 0 && km_p2p_us_per_token(bytes, 0, bpt) == 0);
  KM_EXPECT(km_p2p_us_per_token(0, 1e-3, bpt) == 0 && km_p2p_us_per_token(bytes, 1e-3, -1) == 0);
}

static void test_nvlink_count(void) {
  /* GPU at 0:0x18:0; links 0-3 to it, 4-5 to another GPU, 6 inactive, 7 to a switch */
  km_nvlink_end e[8];
  memset(e, 0, sizeof e);
  for (int i = 0; i < 8; i++) e[i] = (km_nvlink_end){1, 0, 0, 0x18, 0};
  e[4].bus = e[5].bus = 0x2a;
  e[6].active = 0;
  int via = -1;
  KM_EXPECT(km_nvlink_links_to(e, 7, 0, 0x18, 0, &via) == 4 && via == 0);
  KM_EXPECT(km_nvlink_links_to(e, 7, 0, 0x2a, 0, &via) == 2 && via == 0);
  KM_EXPECT(km_nvlink_links_to(e, 7, 1, 0x18, 0, NULL) == 0); /* another domain */
  e[7] = (km_nvlink_end){1, 1, 0, 0, 0};
  KM_EXPECT(km_nvlink_links_to(e, 8, 0, 0x99, 0, &via) == 1 && via == 1);
  /* HGX: 18 links, all to NVSwitch */
  km_nvlink_end sw[18];
  for (int i = 0; i < 18; i++) sw[i] = (km_nvlink_end){1, 1, 0, 0, 0};
  KM_EXPECT(km_nvlink_links_to(sw, 18, 0, 0x18, 0, &via) == 18 && via == 1);
  KM_EXPECT(km_nvlink_links_to(sw, 0, 0, 0x18, 0, &via) == 0 && via == 0);
}

/* The peer query never fails: without a driver it says why there is no figure. */
static void test_peer_link_without_nvml(void) {
  km_peer_link l;
  km_peer_link_query(0, 1, &l);
  KM_EXPECT(l.how[0] != '\0');
  KM_EXPECT(l.nvlink_gbps >= 0 && (l.nvlink_gbps == 0 || l.nvlinks > 0));
}

static const km_case *find(const km_case_table *t, const char *name) {
  for (size_t i = 0; i < t->count; i++)
    if (strcmp(t->cases[i].name, name) == 0) return &t->cases[i];
  return NULL;
}

static void test_table(void) {
  const km_case_table *t = &km_p2p_table;
  size_t self = 0, fits = 0, quick = 0, rep = 0, base = 0;
  KM_EXPECT(t->count > 50);
  for (size_t i = 0; i < t->count; i++) {
    const km_case *c = &t->cases[i];
    KM_EXPECT_MSG(strncmp(c->name, "p2p/", 4) == 0 || strncmp(c->name, "baseline/p2p/", 13) == 0, "%s", c->name);
    KM_EXPECT_MSG(strcmp(c->technique, "p2p") == 0 && c->run && c->params && c->summary[0], "%s", c->name);
    KM_EXPECT_MSG(((c->flags & KM_CASE_BASELINE) != 0) == (strncmp(c->name, "baseline/", 9) == 0), "%s", c->name);
    KM_EXPECT_MSG(!c->baseline || find(t, c->baseline), "%s: baseline %s is not a row", c->name, c->baseline);
    for (size_t j = 0; j < i; j++) KM_EXPECT_MSG(strcmp(t->cases[j].name, c->name) != 0, "%s twice", c->name);
    /* NCCL stays out of --quick (compute-sanitizer runs every quick case) */
    KM_EXPECT_MSG(!(c->flags & KM_CASE_QUICK) || !strstr(c->name, "nccl"), "%s is quick", c->name);
    self += strstr(c->name, "nccl_self") != NULL;
    fits += strncmp(c->name, "p2p/fit/", 8) == 0;
    quick += (c->flags & KM_CASE_QUICK) != 0;
    rep += (c->flags & KM_CASE_REPRESENTATIVE) != 0;
    base += (c->flags & KM_CASE_BASELINE) != 0;
  }
  KM_EXPECT(self == 4 && fits == 7 && quick > 0 && rep > 0 && base == 6);
  /* the ceiling rows and the representative scattered rows exist under their documented names */
  KM_EXPECT(find(t, "p2p/memcpy_peer/to_peer/1GiB") && find(t, "p2p/memcpy_peer/bidir/1GiB"));
  KM_EXPECT(find(t, "p2p/scatter/to_peer/nccl/32KiB/n2048") && find(t, "p2p/scatter/bidir/sm_pull/32KiB/n2048"));
  KM_EXPECT(find(t, "baseline/p2p/scatter/to_peer/memcpy_peer/32KiB/n2048"));

  /* --list sees the family through the registry, as it does with no device */
  km_filter *f = NULL;
  char err[128];
  km_selection sel;
  KM_EXPECT(km_filter_compile("p2p/", &f, err, sizeof err) == 0);
  KM_EXPECT(km_select(km_all_tables, km_all_table_count, f, 0, &sel) == 0);
  KM_EXPECT(sel.count == t->count);
  km_selection_free(&sel);
  km_filter_free(f);
}

int main(void) {
  test_plans();
  test_lists();
  test_received_check();
  test_per_token();
  test_nvlink_count();
  test_peer_link_without_nvml();
  test_table();
  return km_test_finish("cpu_p2p");
}
