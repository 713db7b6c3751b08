/* GPU test of the paged gather, its read-only variant and the per-block / cub baselines against the
 * CPU reference: small random shapes in both layouts, bf16 and fp8, block sizes 1/16/256, misaligned
 * outputs (narrower vectors), a many-CTA shape, and a pool over 4 GiB when the device has room; plus the
 * trusted kernels that micro/paged.c checks its whole timed output with, and that check failing on one
 * corrupted byte. */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fill.h"
#include "paged_baselines.h"
#include "paged_gather.h"
#include "paged_ref.h"
#include "test_util.h"
#include "verify_paged.h"

#define GUARD 256
#define GUARD_VALUE 0xA5

#define EXPECT_CUDA KM_EXPECT_CUDA

typedef enum method { M_KERNEL, M_MEMCPY, M_CUB, M_COUNT } method;
static const char *const method_names[M_COUNT] = {"kernel", "memcpy_per_block", "cub_batched"};

static void describe(const km_paged_geom *g, const char *what, size_t out_shift) {
  fprintf(stderr, "  %s: layout %s bs %d h %d d %d elem %d seqs %d bps %d blocks %lld, output +%zu\n", what,
          g->layout == KM_PAGED_NHD ? "nhd" : "hnd", g->block_size, g->kv_heads, g->head_dim, g->elem_bytes,
          g->num_seqs, g->blocks_per_seq, (long long)g->num_blocks, out_shift);
}

static cudaError_t cub_gather(const km_paged_geom *g, const void *pool, const int32_t *host_table, void *out) {
  size_t n = km_paged_piece_count(g), temp_bytes = 0;
  const void **src = malloc(n * sizeof *src);
  void **dst = malloc(n * sizeof *dst);
  size_t *sizes = malloc(n * sizeof *sizes);
  void *d_args = NULL, *temp = NULL;
  cudaError_t e = src && dst && sizes ? km_paged_cub_temp_bytes(n, &temp_bytes) : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = cudaMalloc(&d_args, n * 3 * sizeof(void *));
  if (e == cudaSuccess) e = cudaMalloc(&temp, temp_bytes ? temp_bytes : 1);
  if (e == cudaSuccess) {
    km_paged_batch_args(g, pool, host_table, out, src, dst, sizes);
    const void **d_src = d_args;
    void **d_dst = (void **)d_args + n;
    size_t *d_sizes = (size_t *)((void **)d_args + 2 * n);
    e = cudaMemcpy(d_src, src, n * sizeof *src, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(d_dst, dst, n * sizeof *dst, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(d_sizes, sizes, n * sizeof *sizes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = km_paged_cub_batched(temp, temp_bytes, (const void *const *)d_src, (void *const *)d_dst, d_sizes, n, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
  }
  cudaFree(temp);
  cudaFree(d_args);
  free(src);
  free(dst);
  free(sizes);
  return e;
}

static cudaError_t run_method(method m, const km_paged_geom *g, const void *pool, const int32_t *d_table,
                              const int32_t *h_table, void *out) {
  if (m == M_KERNEL) return km_paged_gather(g, pool, d_table, out, 0);
  if (m == M_MEMCPY) return km_paged_memcpy_per_block(g, pool, h_table, out, 0);
  return cub_gather(g, pool, h_table, out);
}

/* Gather with method m into d_out + shift (poisoned, guard after), compare with `want`. */
static void check_gather(method m, const km_paged_geom *g, const void *pool, const int32_t *d_table,
                         const int32_t *h_table, unsigned char *d_out, size_t shift, const unsigned char *want) {
  size_t n = (size_t)km_paged_output_bytes(g);
  unsigned char *got = malloc(n + GUARD);
  KM_EXPECT(got != NULL);
  if (!got) return;
  EXPECT_CUDA(cudaMemset(d_out + shift, 0xFF, n));
  EXPECT_CUDA(cudaMemset(d_out + shift + n, GUARD_VALUE, GUARD));
  EXPECT_CUDA(run_method(m, g, pool, d_table, h_table, d_out + shift));
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaMemcpy(got, d_out + shift, n + GUARD, cudaMemcpyDeviceToHost));
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  size_t guard_bad = 0;
  for (size_t i = 0; i < GUARD; ++i) guard_bad += got[n + i] != GUARD_VALUE;
  if (bad || guard_bad) {
    fprintf(stderr, "%s: %zu wrong bytes (first at %zu), %zu guard bytes overwritten\n", method_names[m], bad, first,
            guard_bad);
    describe(g, method_names[m], shift);
  }
  KM_EXPECT(bad == 0 && guard_bad == 0);
  free(got);
}

static void check_sums(const km_paged_geom *g, const void *pool, const int32_t *d_table, uint32_t *d_sums,
                       const uint32_t *want) {
  size_t n = (size_t)g->num_seqs * 4;
  unsigned char *got = malloc(n + GUARD);
  KM_EXPECT(got != NULL);
  if (!got) return;
  EXPECT_CUDA(cudaMemset(d_sums, 0, n));
  EXPECT_CUDA(cudaMemset((unsigned char *)d_sums + n, GUARD_VALUE, GUARD));
  EXPECT_CUDA(km_paged_read_sum(g, pool, d_table, d_sums, 0));
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaMemcpy(got, d_sums, n + GUARD, cudaMemcpyDeviceToHost));
  int ok = memcmp(got, want, n) == 0;
  for (size_t i = 0; i < GUARD; ++i) ok &= got[n + i] == GUARD_VALUE;
  if (!ok) describe(g, "read_sum", 0);
  KM_EXPECT(ok);
  free(got);
}

/* The trusted gather and sums equal the CPU reference; the device comparison of the kernel's output with
 * them passes, then fails naming the one element when one byte of the output (or of a sum) is changed. */
static void check_trusted(const km_paged_geom *g, const void *d_pool, const int32_t *d_table,
                          const unsigned char *want, const uint32_t *sums, uint64_t seed) {
  const size_t n = (size_t)km_paged_output_bytes(g), ns = (size_t)g->num_seqs * 4;
  unsigned char *host = malloc(n), *d_out = NULL, *d_trusted = NULL;
  uint32_t *d_sums = NULL, *d_tsums = NULL;
  km_diff d;
  KM_EXPECT(host != NULL);
  if (!host) return;
  EXPECT_CUDA(cudaMalloc((void **)&d_out, n));
  EXPECT_CUDA(cudaMalloc((void **)&d_trusted, n));
  EXPECT_CUDA(cudaMalloc((void **)&d_sums, ns));
  EXPECT_CUDA(cudaMalloc((void **)&d_tsums, ns));
  EXPECT_CUDA(km_verify_paged_gather(g, d_pool, d_table, d_trusted, 0));
  EXPECT_CUDA(km_verify_paged_sums(g, d_pool, d_table, d_tsums, 0));
  EXPECT_CUDA(cudaMemcpy(host, d_trusted, n, cudaMemcpyDeviceToHost));
  KM_EXPECT_MSG(memcmp(host, want, n) == 0, "trusted gather differs from the CPU reference");
  EXPECT_CUDA(cudaMemcpy(host, d_tsums, ns, cudaMemcpyDeviceToHost));
  KM_EXPECT_MSG(memcmp(host, sums, ns) == 0, "trusted sums differ from the CPU reference");
  EXPECT_CUDA(cudaMemset(d_out, 0xFF, n));
  EXPECT_CUDA(km_paged_gather(g, d_pool, d_table, d_out, 0));
  EXPECT_CUDA(cudaMemset(d_sums, 0, ns));
  EXPECT_CUDA(km_paged_read_sum(g, d_pool, d_table, d_sums, 0));
  KM_EXPECT(km_test_device_diff(d_out, d_trusted, n / 4, 4, 1, 0, &d) == 0);
  KM_EXPECT(km_test_device_diff(d_sums, d_tsums, ns / 4, 4, 1, 0, &d) == 0);
  const size_t off = (size_t)(seed % n), sum_off = (size_t)(seed % ns);
  KM_EXPECT(km_test_corrupt_byte(d_out, off, (unsigned char)(want[off] ^ 0x5A)) == 0);
  KM_EXPECT(km_test_device_diff(d_out, d_trusted, n / 4, 4, 1, 0, &d) == 1 && d.index[0] == off / 4);
  KM_EXPECT(km_test_corrupt_byte(d_sums, sum_off, (unsigned char)(((const unsigned char *)sums)[sum_off] ^ 1)) == 0);
  KM_EXPECT(km_test_device_diff(d_sums, d_tsums, ns / 4, 4, 1, 0, &d) == 1 && d.index[0] == sum_off / 4);
  cudaFree(d_out);
  cudaFree(d_trusted);
  cudaFree(d_sums);
  cudaFree(d_tsums);
  free(host);
}

/* One shape, pool filled on the host: every method, the read variant, and two misaligned outputs. */
static void check_shape(const km_paged_geom *g, uint64_t seed, int with_baselines) {
  size_t pool_bytes = (size_t)g->num_blocks * (size_t)km_paged_block_bytes(g);
  size_t out_bytes = (size_t)km_paged_output_bytes(g), entries = (size_t)g->num_seqs * g->blocks_per_seq;
  unsigned char *pool = malloc(pool_bytes), *want = malloc(out_bytes);
  int32_t *table = malloc(entries * sizeof *table);
  uint32_t *sums = malloc((size_t)g->num_seqs * 4);
  unsigned char *d_pool = NULL, *d_out = NULL;
  int32_t *d_table = NULL;
  uint32_t *d_sums = NULL;
  KM_EXPECT(pool && want && table && sums);
  if (pool && want && table && sums && km_paged_table_random(table, entries, g->num_blocks, seed) == 0 &&
      cudaMalloc((void **)&d_pool, pool_bytes) == cudaSuccess &&
      cudaMalloc((void **)&d_out, out_bytes + 16 + GUARD) == cudaSuccess &&
      cudaMalloc((void **)&d_table, entries * sizeof *table) == cudaSuccess &&
      cudaMalloc((void **)&d_sums, (size_t)g->num_seqs * 4 + GUARD) == cudaSuccess) {
    uint64_t st = seed;
    for (size_t i = 0; i < pool_bytes; ++i) pool[i] = (unsigned char)km_paged_rand(&st);
    km_paged_ref_gather(g, pool, table, want);
    km_paged_ref_sums(g, pool, table, sums);
    KM_EXPECT(cudaMemcpy(d_pool, pool, pool_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    KM_EXPECT(cudaMemcpy(d_table, table, entries * sizeof *table, cudaMemcpyHostToDevice) == cudaSuccess);
    const size_t shifts[] = {0, 8, 4}; /* 16-, 8- and 4-byte vectors */
    for (size_t i = 0; i < 3; ++i) check_gather(M_KERNEL, g, d_pool, d_table, table, d_out, shifts[i], want);
    if (with_baselines) {
      check_gather(M_MEMCPY, g, d_pool, d_table, table, d_out, 0, want);
      check_gather(M_CUB, g, d_pool, d_table, table, d_out, 0, want);
    }
    check_sums(g, d_pool, d_table, d_sums, sums);
    check_trusted(g, d_pool, d_table, want, sums, seed);
  } else {
    fprintf(stderr, "setup failed\n");
    km_test_failures++;
  }
  cudaFree(d_pool);
  cudaFree(d_out);
  cudaFree(d_table);
  cudaFree(d_sums);
  free(pool);
  free(want);
  free(table);
  free(sums);
}

static void small_shapes(void) {
  const int block_sizes[] = {1, 16, 256};
  const int heads[] = {1, 2, 3, 8};
  const int dims[] = {64, 128, 40};
  uint64_t st = 2024;
  int n = 0;
  for (int layout = 0; layout < KM_PAGED_LAYOUT_COUNT; ++layout)
    for (int elem = 1; elem <= 2; ++elem)
      for (int b = 0; b < 3; ++b)
        for (int rep = 0; rep < 3; ++rep) {
          km_paged_geom g;
          g.layout = (km_paged_layout)layout;
          g.block_size = block_sizes[b];
          g.kv_heads = heads[km_paged_rand(&st) % 4];
          g.head_dim = dims[km_paged_rand(&st) % 3];
          g.elem_bytes = elem;
          g.num_seqs = 1 + (int)(km_paged_rand(&st) % 5);
          g.blocks_per_seq = 1 + (int)(km_paged_rand(&st) % (g.block_size == 256 ? 3 : 24));
          g.num_blocks = (int64_t)g.num_seqs * g.blocks_per_seq + (int64_t)(km_paged_rand(&st) % 7);
          check_shape(&g, km_paged_rand(&st), 1);
          ++n;
        }
  printf("small shapes: %d checked\n", n);
}

/* Enough vectors for hundreds of CTAs whose chunks cross sequence boundaries (the read variant's
 * flushes); baselines skipped (thousands of per-block copies add nothing here). */
static void many_ctas(void) {
  km_paged_geom nhd = {KM_PAGED_NHD, 16, 8, 128, 2, 1100, 64, 16};
  km_paged_geom hnd = {KM_PAGED_HND, 1, 8, 128, 2, 20000, 37, 500};
  check_shape(&nhd, 77, 0);
  check_shape(&hnd, 78, 0);
  printf("many-CTA shapes checked\n");
}

/* A pool over 4 GiB (filled on the device) read through table entries at and past the 4 GiB mark. */
static void big_pool_shape(unsigned char *d_pool, size_t pool_bytes, km_paged_geom g) {
  size_t bb = (size_t)km_paged_block_bytes(&g), entries = (size_t)g.num_seqs * g.blocks_per_seq;
  g.num_blocks = (int64_t)(pool_bytes / bb);
  int32_t *table = malloc(entries * sizeof *table), *ident = malloc(entries * sizeof *ident);
  unsigned char *staged = malloc(entries * bb), *want = malloc((size_t)km_paged_output_bytes(&g));
  uint32_t *sums = malloc((size_t)g.num_seqs * 4);
  int32_t *d_table = NULL;
  unsigned char *d_out = NULL;
  uint32_t *d_sums = NULL;
  if (!table || !ident || !staged || !want || !sums ||
      km_paged_table_random(table, entries, g.num_blocks, 99) != 0) {
    km_test_failures++;
    goto done;
  }
  int64_t four_gib_block = ((int64_t)1 << 32) / (int64_t)bb;
  table[0] = (int32_t)(g.num_blocks - 1);
  table[1] = (int32_t)four_gib_block;
  table[2] = (int32_t)(four_gib_block - 1);
  table[entries - 1] = (int32_t)(g.num_blocks - 2);
  for (size_t j = 0; j < entries; ++j)
    if (cudaMemcpy(staged + j * bb, d_pool + (size_t)table[j] * bb, bb, cudaMemcpyDeviceToHost) != cudaSuccess) {
      km_test_failures++;
      goto done;
    }
  km_paged_geom sg = g;
  sg.num_blocks = (int64_t)entries;
  km_paged_table_sequential(ident, entries);
  km_paged_ref_gather(&sg, staged, ident, want);
  km_paged_ref_sums(&sg, staged, ident, sums);
  if (cudaMalloc((void **)&d_table, entries * sizeof *table) != cudaSuccess ||
      cudaMalloc((void **)&d_out, (size_t)km_paged_output_bytes(&g) + GUARD) != cudaSuccess ||
      cudaMalloc((void **)&d_sums, (size_t)g.num_seqs * 4 + GUARD) != cudaSuccess ||
      cudaMemcpy(d_table, table, entries * sizeof *table, cudaMemcpyHostToDevice) != cudaSuccess) {
    km_test_failures++;
    goto done;
  }
  check_gather(M_KERNEL, &g, d_pool, d_table, table, d_out, 0, want);
  check_sums(&g, d_pool, d_table, d_sums, sums);
  check_trusted(&g, d_pool, d_table, want, sums, 12345);
done:
  cudaFree(d_table);
  cudaFree(d_out);
  cudaFree(d_sums);
  free(table);
  free(ident);
  free(staged);
  free(want);
  free(sums);
}

static void big_pool(void) {
  const size_t pool_bytes = ((size_t)9 << 29); /* 4.5 GiB */
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b < pool_bytes + ((size_t)1 << 30)) {
    printf("pool over 4 GiB: skipped (%.1f GiB free, needs 5.5)\n", free_b / 1073741824.0);
    return;
  }
  unsigned char *d_pool = NULL;
  if (cudaMalloc((void **)&d_pool, pool_bytes) != cudaSuccess ||
      km_fill_random_bits(d_pool, pool_bytes, 4242, 0) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    fprintf(stderr, "pool over 4 GiB: allocation or fill failed\n");
    km_test_failures++;
    cudaFree(d_pool);
    return;
  }
  const km_paged_geom shapes[] = {
      {KM_PAGED_NHD, 16, 8, 128, 2, 0, 3, 40}, /* 32 KiB blocks */
      {KM_PAGED_HND, 1, 8, 64, 1, 0, 2, 300},  /* 512-byte blocks of 64-byte pieces */
  };
  for (size_t i = 0; i < 2; ++i) big_pool_shape(d_pool, pool_bytes, shapes[i]);
  cudaFree(d_pool);
  printf("pool over 4 GiB checked\n");
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  small_shapes();
  many_ctas();
  big_pool();
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    fprintf(stderr, "sticky CUDA error: %s\n", cudaGetErrorString(e));
    km_test_failures++;
  }
  return km_test_finish("gpu_paged");
}
