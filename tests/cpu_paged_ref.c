/* CPU tests of the paged gather's host-side logic: the multiply-high division, the plan, the kernel's
 * index mapping run on the CPU exactly as the CTAs walk it, the CPU reference (against an element-level
 * formula), the batched-copy argument builder, and the block-table makers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paged_baselines.h"
#include "paged_gather.h"
#include "paged_ref.h"

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      return 1;                                                           \
    }                                                                     \
  } while (0)

static int check_div(uint32_t d, uint32_t n) {
  km_paged_divmod dm = km_paged_divmod_make(d);
  CHECK(km_paged_div(dm, n) == n / d, "%u / %u gave %u", n, d, km_paged_div(dm, n));
  return 0;
}

static int test_divmod(void) {
  uint64_t st = 1;
  const uint32_t edge_n[] = {0, 1, 2, 3, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (uint32_t d = 1; d < 3000; ++d) {
    for (size_t i = 0; i < sizeof edge_n / sizeof edge_n[0]; ++i)
      if (check_div(d, edge_n[i])) return 1;
    for (int i = 0; i < 200; ++i) {
      uint32_t r = (uint32_t)km_paged_rand(&st);
      uint32_t q = r / d;
      /* around multiples of d, where an off-by-one would show */
      if (check_div(d, r) || check_div(d, q * d) || (q * d > 0 && check_div(d, q * d - 1))) return 1;
    }
  }
  for (int s = 1; s < 32; ++s) {
    uint32_t p = 1u << s;
    const uint32_t ds[] = {p - 1, p, p + 1};
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2000; ++i)
        if (check_div(ds[j], (uint32_t)km_paged_rand(&st))) return 1;
  }
  for (int i = 0; i < 100000; ++i) {
    uint32_t d = (uint32_t)km_paged_rand(&st) >> (km_paged_rand(&st) % 32);
    if (d == 0) d = 1;
    if (check_div(d, (uint32_t)km_paged_rand(&st)) || check_div(d, 0xFFFFFFFFu)) return 1;
  }
  return 0;
}

/* Element-level definition: value of (block, token, head, i) for 2-byte elements. */
static uint16_t elem_value(int64_t blk, int t, int h, int i) { return (uint16_t)(blk * 7919 + t * 131 + h * 17 + i); }

static int test_ref_against_elements(km_paged_layout layout) {
  km_paged_geom g = {layout, 4, 3, 8, 2, 10, 2, 3};
  uint16_t pool[10 * 4 * 3 * 8], out[2 * 3 * 4 * 3 * 8];
  for (int64_t b = 0; b < 10; ++b)
    for (int t = 0; t < 4; ++t)
      for (int h = 0; h < 3; ++h)
        for (int i = 0; i < 8; ++i) {
          size_t at = layout == KM_PAGED_NHD ? (((size_t)b * 4 + t) * 3 + h) * 8 + i : (((size_t)b * 3 + h) * 4 + t) * 8 + i;
          pool[at] = elem_value(b, t, h, i);
        }
  const int32_t table[6] = {7, 2, 9, 0, 5, 3};
  km_paged_ref_gather(&g, (const unsigned char *)pool, table, (unsigned char *)out);
  for (int s = 0; s < 2; ++s)
    for (int tok = 0; tok < 12; ++tok)
      for (int h = 0; h < 3; ++h)
        for (int i = 0; i < 8; ++i) {
          size_t at = layout == KM_PAGED_NHD ? (((size_t)s * 12 + tok) * 3 + h) * 8 + i : (((size_t)s * 3 + h) * 12 + tok) * 8 + i;
          uint16_t want = elem_value(table[s * 3 + tok / 4], tok % 4, h, i);
          CHECK(out[at] == want, "layout %d s %d tok %d h %d i %d: %u != %u", layout, s, tok, h, i, out[at], want);
        }
  return 0;
}

/* Walk the plan as the CTAs do (full tiles, then the tail) and copy each vector on the CPU. */
static int emulate_gather(const km_paged_plan *p, const unsigned char *pool, const int32_t *table, unsigned char *out,
                          unsigned char *hits, uint32_t *sums) {
  for (uint32_t cta = 0; cta < p->grid; ++cta) {
    uint32_t tile, end;
    km_paged_cta_range(p, cta, &tile, &end);
    CHECK(tile <= end && end <= p->total_vectors, "cta %u range [%u, %u) past %u", cta, tile, end, p->total_vectors);
    for (; tile < end; tile += p->tile)
      for (uint32_t k = 0; k < p->tile / KM_PAGED_THREADS; ++k)
        for (uint32_t t = 0; t < KM_PAGED_THREADS; ++t) {
          uint32_t v = tile + (uint32_t)k * KM_PAGED_THREADS + t;
          if (v >= end) continue;
          km_paged_pos pos = km_paged_position(p, v);
          const unsigned char *src = pool + km_paged_src(p, table[pos.entry], pos.offset);
          memcpy(out + (uint64_t)v * p->vec_bytes, src, p->vec_bytes);
          for (uint32_t w = 0; w + 4 <= p->vec_bytes; w += 4)
            sums[pos.seq] += (uint32_t)src[w] | (uint32_t)src[w + 1] << 8 | (uint32_t)src[w + 2] << 16 |
                             (uint32_t)src[w + 3] << 24;
          CHECK(hits[v] == 0, "vector %u written twice", v);
          hits[v] = 1;
        }
  }
  CHECK(p->grid == 0 || p->chunk % p->tile == 0, "chunk %u not a multiple of the tile %u", p->chunk, p->tile);
  return 0;
}

static int run_shape(const km_paged_geom *g, uintptr_t align, uint32_t unroll, uint32_t max_ctas, uint64_t seed) {
  size_t pool_bytes = (size_t)(g->num_blocks * (int64_t)km_paged_block_bytes(g));
  size_t out_bytes = (size_t)km_paged_output_bytes(g), n_entries = (size_t)g->num_seqs * g->blocks_per_seq;
  unsigned char *pool = malloc(pool_bytes), *out = malloc(out_bytes), *ref = malloc(out_bytes);
  int32_t *table = malloc(n_entries * sizeof *table);
  uint32_t *sums = calloc((size_t)g->num_seqs, 4), *ref_sums = malloc((size_t)g->num_seqs * 4);
  unsigned char *hits = NULL;
  int rc = 1;
  uint64_t st = seed;
  for (size_t i = 0; i < pool_bytes; ++i) pool[i] = (unsigned char)km_paged_rand(&st);
  if (km_paged_table_random(table, n_entries, g->num_blocks, seed) != 0) goto done;
  km_paged_ref_gather(g, pool, table, ref);
  km_paged_ref_sums(g, pool, table, ref_sums);

  km_paged_plan p;
  if (km_paged_plan_make(g, align, unroll, max_ctas, &p) != cudaSuccess) {
    fprintf(stderr, "plan refused a valid shape\n");
    goto done;
  }
  hits = calloc(p.total_vectors, 1);
  memset(out, 0xFF, out_bytes);
  if (emulate_gather(&p, pool, table, out, hits, sums)) goto done;
  for (uint32_t v = 0; v < p.total_vectors; ++v)
    if (!hits[v]) {
      fprintf(stderr, "vector %u never written\n", v);
      goto done;
    }
  if (memcmp(out, ref, out_bytes) != 0 || memcmp(sums, ref_sums, (size_t)g->num_seqs * 4) != 0) {
    fprintf(stderr, "emulated kernel differs from the reference\n");
    goto done;
  }
  /* the cub baseline's argument arrays, replayed on the CPU */
  size_t n = km_paged_piece_count(g);
  const void **src = malloc(n * sizeof *src);
  void **dst = malloc(n * sizeof *dst);
  size_t *sizes = malloc(n * sizeof *sizes);
  memset(out, 0xFF, out_bytes);
  km_paged_batch_args(g, pool, table, out, src, dst, sizes);
  for (size_t i = 0; i < n; ++i) memcpy(dst[i], src[i], sizes[i]);
  int same = memcmp(out, ref, out_bytes) == 0;
  free(src);
  free(dst);
  free(sizes);
  if (!same) {
    fprintf(stderr, "batched-copy arguments differ from the reference\n");
    goto done;
  }
  rc = 0;
done:
  if (rc)
    fprintf(stderr, "shape: layout %d bs %d heads %d d %d elem %d blocks %lld seqs %d bps %d align %lu ctas %u\n",
            g->layout, g->block_size, g->kv_heads, g->head_dim, g->elem_bytes, (long long)g->num_blocks, g->num_seqs,
            g->blocks_per_seq, (unsigned long)align, max_ctas);
  free(pool);
  free(out);
  free(ref);
  free(table);
  free(sums);
  free(ref_sums);
  free(hits);
  return rc;
}

static int test_emulated_kernel(void) {
  const int block_sizes[] = {1, 2, 16, 256};
  const int head_dims[] = {64, 128, 40, 36, 6};
  const uintptr_t aligns[] = {0, 8, 4};
  const uint32_t ctas[] = {1, 3, 1056, UINT32_MAX}; /* UINT32_MAX: a CTA per tile */
  uint64_t st = 42;
  int cases = 0;
  for (int layout = 0; layout < KM_PAGED_LAYOUT_COUNT; ++layout)
    for (int elem = 1; elem <= 2; ++elem)
      for (size_t b = 0; b < sizeof block_sizes / sizeof block_sizes[0]; ++b)
        for (size_t d = 0; d < sizeof head_dims / sizeof head_dims[0]; ++d) {
          km_paged_geom g;
          g.layout = (km_paged_layout)layout;
          g.block_size = block_sizes[b];
          g.kv_heads = 1 + (int)(km_paged_rand(&st) % 5);
          g.head_dim = head_dims[d];
          g.elem_bytes = elem;
          g.num_seqs = 1 + (int)(km_paged_rand(&st) % 4);
          g.blocks_per_seq = 1 + (int)(km_paged_rand(&st) % (block_sizes[b] >= 256 ? 3 : 9));
          g.num_blocks = (int64_t)g.num_seqs * g.blocks_per_seq + (int64_t)(km_paged_rand(&st) % 5);
          uint64_t row = (uint64_t)g.head_dim * (uint64_t)elem;
          if ((row * (uint64_t)g.block_size) % 4 != 0) g.block_size *= 2; /* 6-byte fp8 rows need pairs */
          uintptr_t align = aligns[km_paged_rand(&st) % 3];
          uint32_t max_ctas = ctas[km_paged_rand(&st) % 4];
          /* the gather's plan (small tiles, a CTA per tile) and the read's (large tiles, persistent chunks) */
          uint32_t unroll = km_paged_rand(&st) % 2 ? KM_PAGED_GATHER_UNROLL : KM_PAGED_READ_UNROLL;
          if (run_shape(&g, align, unroll, max_ctas, km_paged_rand(&st))) return 1;
          ++cases;
        }
  printf("emulated kernel: %d shapes match the reference\n", cases);
  return 0;
}

static int test_plan(void) {
  km_paged_plan p;
  km_paged_geom g = {KM_PAGED_HND, 1, 8, 64, 1, 100, 2, 50}; /* 64-byte pieces */
  CHECK(km_paged_plan_make(&g, 256, 4, 1056, &p) == cudaSuccess, "bs1 d64 fp8 HND refused");
  CHECK(p.vec_bytes == 16 && p.vecs_per_piece == 4 && p.pieces_per_block == 8, "vb %u vpp %u", p.vec_bytes,
        p.vecs_per_piece);
  CHECK(km_paged_plan_make(&g, 260, 4, 1056, &p) == cudaSuccess && p.vec_bytes == 4, "align 4 gave vb %u", p.vec_bytes);
  g.head_dim = 6;
  CHECK(km_paged_plan_make(&g, 0, 4, 1, &p) == cudaErrorInvalidValue, "6-byte pieces accepted");
  g.head_dim = 64;
  g.num_seqs = 0;
  CHECK(km_paged_plan_make(&g, 0, 4, 1, &p) == cudaErrorInvalidValue, "zero sequences accepted");
  /* 32 GiB of output is one vector too many only at the limit: 2^31 vectors of 16 bytes pass */
  km_paged_geom big = {KM_PAGED_NHD, 256, 32, 256, 2, 8192, 8192, 1}; /* 4 MiB blocks, 32 GiB */
  CHECK(km_paged_plan_make(&big, 0, 4, 1056, &p) == cudaSuccess && p.total_vectors == KM_PAGED_MAX_VECTORS,
        "32 GiB output refused");
  big.num_seqs = 8193;
  CHECK(km_paged_plan_make(&big, 0, 4, 1056, &p) == cudaErrorInvalidValue, "over 2^31 vectors accepted");
  /* block ids near 2^31 address past 4 GiB without wrapping */
  big.num_seqs = 1;
  big.num_blocks = (int64_t)INT32_MAX + 1;
  CHECK(km_paged_plan_make(&big, 0, 4, 1056, &p) == cudaSuccess, "2^31 blocks refused");
  CHECK(km_paged_src(&p, INT32_MAX, 16) == (uint64_t)INT32_MAX * (4u << 20) + 16, "64-bit address wrapped");
  /* a CTA per tile: one tile of threads x unroll vectors each, the grid covering every vector */
  big.num_blocks = 8192;
  CHECK(km_paged_plan_make(&big, 0, 2, UINT32_MAX, &p) == cudaSuccess && p.tile == 2 * KM_PAGED_THREADS &&
            p.chunk == p.tile && (uint64_t)p.grid * p.chunk >= p.total_vectors,
        "tile-per-CTA plan: tile %u chunk %u grid %u", p.tile, p.chunk, p.grid);
  CHECK(km_paged_plan_make(&big, 0, 0, 1056, &p) == cudaErrorInvalidValue, "unroll 0 accepted");
  return 0;
}

static int test_tables(void) {
  enum { N = 5000 };
  int32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  unsigned char *seen = calloc(N, 1);
  CHECK(km_paged_table_random(a, N, N, 7) == 0, "random table failed");
  for (int i = 0; i < N; ++i) {
    CHECK(a[i] >= 0 && a[i] < N && !seen[a[i]], "entry %d = %d not a permutation", i, a[i]);
    seen[a[i]] = 1;
  }
  CHECK(km_paged_table_random(b, N, N, 7) == 0 && memcmp(a, b, N * sizeof *a) == 0, "same seed differs");
  CHECK(km_paged_table_random(b, N, N, 8) == 0 && memcmp(a, b, N * sizeof *a) != 0, "seeds 7 and 8 agree");
  int in_place = 0;
  for (int i = 0; i < N; ++i) in_place += a[i] == i;
  CHECK(in_place < 20, "%d fixed points: not shuffled", in_place);
  CHECK(km_paged_table_random(b, 100, 1000000, 9) == 0, "subset failed");
  for (int i = 0; i < 100; ++i) CHECK(b[i] >= 0 && b[i] < 1000000, "entry %d out of range", b[i]);
  CHECK(km_paged_table_random(b, 11, 10, 9) == -1, "more entries than blocks accepted");
  km_paged_table_sequential(b, N);
  for (int i = 0; i < N; ++i) CHECK(b[i] == i, "sequential entry %d = %d", i, b[i]);
  free(a);
  free(b);
  free(seen);
  return 0;
}

int main(void) {
  if (test_divmod() || test_plan() || test_tables() || test_ref_against_elements(KM_PAGED_NHD) ||
      test_ref_against_elements(KM_PAGED_HND) || test_emulated_kernel())
    return 1;
  printf("cpu_paged_ref: ok\n");
  return 0;
}
