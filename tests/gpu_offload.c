/* GPU checks of the offload primitives against CPU expectations: block gather/scatter through a
 * device staging buffer and through mapped pinned host memory (odd block sizes, a pool past 4 GiB),
 * argument checks, the per-block and batched copy baselines, and pinned/registered/pageable buffers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "host_mem.h"
#include "offload_baselines.h"
#include "offload_copy.h"
#include "test_util.h"
#include "topo.h"

#define CHECK_CUDA KM_EXPECT_CUDA

static unsigned char byte_at(uint64_t seed, size_t i) {
  uint64_t z = (seed + i) * 0x9E3779B97F4A7C15ull;
  return (unsigned char)((z >> 56) ^ (z >> 29));
}

static void fill(unsigned char *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = byte_at(seed, i);
}

/* A random subset of the pool in random order: perm[0..n) is the block table. */
static void permutation(int32_t *perm, size_t pool, uint64_t seed) {
  for (size_t i = 0; i < pool; i++) perm[i] = (int32_t)i;
  for (size_t i = pool - 1; i > 0; i--) {
    size_t j = (size_t)(((seed + i) * 0x2545F4914F6CDD1Dull >> 17) % (i + 1));
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* Does contiguous block i equal pool block perm[i] for all i < n, and (when pool_after is given)
 * every unlisted pool block still hold 0xFF? Returns the number of bad bytes. */
static size_t compare(const unsigned char *contig, const unsigned char *pool, const int32_t *perm, size_t n,
                      size_t pool_blocks, size_t bs, int check_unlisted) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += memcmp(contig + i * bs, pool + (size_t)perm[i] * bs, bs) != 0;
  for (size_t k = n; check_unlisted && k < pool_blocks; k++)
    for (size_t j = 0; j < bs; j++) bad += pool[(size_t)perm[k] * bs + j] != 0xFF;
  return bad;
}

/* The multiprocessor count the block kernels' persistent grid is sized by (asked once per test, as the
 * micro case asks once per case). */
static int sm_count(void) {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 0;
  return sms;
}

/* Gather and scatter of n blocks of bs bytes; `mapped`: the contiguous side is mapped pinned host memory. */
static void test_blocks(size_t n, size_t bs, int mapped) {
  const int sms = sm_count();
  const size_t pool_blocks = 2 * n, pool_bytes = pool_blocks * bs, run_bytes = n * bs;
  unsigned char *pool_h = malloc(pool_bytes), *run_h = malloc(run_bytes);
  int32_t *perm = malloc(pool_blocks * sizeof *perm);
  unsigned char *pool_d = NULL, *run_d = NULL, *pinned = NULL;
  int32_t *ids_d = NULL;
  if (!pool_h || !run_h || !perm) {
    KM_EXPECT(!"host memory");
    goto out;
  }
  permutation(perm, pool_blocks, n * 7 + bs);
  if (cudaMalloc((void **)&pool_d, pool_bytes) != cudaSuccess || cudaMalloc((void **)&ids_d, n * 4) != cudaSuccess ||
      cudaHostAlloc((void **)&pinned, run_bytes, cudaHostAllocMapped) != cudaSuccess ||
      (!mapped && cudaMalloc((void **)&run_d, run_bytes) != cudaSuccess)) {
    KM_EXPECT(!"device or pinned allocation");
    goto out;
  }
  if (mapped && cudaHostGetDevicePointer((void **)&run_d, pinned, 0) != cudaSuccess) {
    KM_EXPECT(!"cudaHostGetDevicePointer");
    goto out;
  }
  KM_EXPECT(cudaMemcpy(ids_d, perm, n * 4, cudaMemcpyHostToDevice) == cudaSuccess);

  /* gather: pool (pattern) -> contiguous (poisoned) */
  fill(pool_h, pool_bytes, bs);
  KM_EXPECT(cudaMemcpy(pool_d, pool_h, pool_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  if (mapped)
    memset(pinned, 0xFF, run_bytes);
  else
    KM_EXPECT(cudaMemset(run_d, 0xFF, run_bytes) == cudaSuccess);
  KM_EXPECT((mapped ? km_offload_blocks_to_host(run_d, pool_d, ids_d, n, bs, sms, 0)
                    : km_offload_gather_blocks(run_d, pool_d, ids_d, n, bs, sms, 0)) == cudaSuccess);
  KM_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
  if (mapped)
    memcpy(run_h, pinned, run_bytes);
  else
    KM_EXPECT(cudaMemcpy(run_h, run_d, run_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  size_t bad = compare(run_h, pool_h, perm, n, pool_blocks, bs, 0);
  if (bad) fprintf(stderr, "gather n=%zu bs=%zu mapped=%d: %zu bad blocks\n", n, bs, mapped, bad);
  KM_EXPECT(bad == 0);

  /* scatter: contiguous (pattern) -> pool (poisoned); unlisted blocks must stay poisoned */
  fill(run_h, run_bytes, bs + 1);
  if (mapped)
    memcpy(pinned, run_h, run_bytes);
  else
    KM_EXPECT(cudaMemcpy(run_d, run_h, run_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  KM_EXPECT(cudaMemset(pool_d, 0xFF, pool_bytes) == cudaSuccess);
  KM_EXPECT((mapped ? km_offload_host_to_blocks(pool_d, run_d, ids_d, n, bs, sms, 0)
                    : km_offload_scatter_blocks(pool_d, run_d, ids_d, n, bs, sms, 0)) == cudaSuccess);
  KM_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
  KM_EXPECT(cudaMemcpy(pool_h, pool_d, pool_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  bad = compare(run_h, pool_h, perm, n, pool_blocks, bs, 1);
  if (bad) fprintf(stderr, "scatter n=%zu bs=%zu mapped=%d: %zu bad blocks/bytes\n", n, bs, mapped, bad);
  KM_EXPECT(bad == 0);
out:
  if (!mapped) cudaFree(run_d);
  cudaFree(pool_d);
  cudaFree(ids_d);
  cudaFreeHost(pinned);
  free(pool_h);
  free(run_h);
  free(perm);
}

/* Pool offsets past 4 GiB: 8 blocks of 2 MiB at the top of a 4.5 GiB pool. */
static void test_large_pool(void) {
  const int sms = sm_count();
  const size_t bs = (size_t)2 << 20, pool_blocks = 2304, n = 8;
  unsigned char *pool_d = NULL, *run_d = NULL;
  int32_t *ids_d = NULL, ids[8];
  if (cudaMalloc((void **)&pool_d, pool_blocks * bs) != cudaSuccess) {
    cudaGetLastError();
    printf("4.5 GiB pool does not fit: large-offset test skipped\n");
    return;
  }
  unsigned char *want = malloc(n * bs), *got = malloc(bs);
  for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(pool_blocks - 1 - 3 * i);
  if (want && got && cudaMalloc((void **)&run_d, n * bs) == cudaSuccess &&
      cudaMalloc((void **)&ids_d, sizeof ids) == cudaSuccess) {
    fill(want, n * bs, 99);
    KM_EXPECT(cudaMemcpy(ids_d, ids, sizeof ids, cudaMemcpyHostToDevice) == cudaSuccess);
    KM_EXPECT(cudaMemcpy(run_d, want, n * bs, cudaMemcpyHostToDevice) == cudaSuccess);
    KM_EXPECT(km_offload_scatter_blocks(pool_d, run_d, ids_d, n, bs, sms, 0) == cudaSuccess);
    KM_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
    for (size_t i = 0; i < n; i++) {
      KM_EXPECT(cudaMemcpy(got, pool_d + (size_t)ids[i] * bs, bs, cudaMemcpyDeviceToHost) == cudaSuccess);
      KM_EXPECT(memcmp(got, want + i * bs, bs) == 0);
    }
  } else {
    KM_EXPECT(!"allocation for the large-pool test");
  }
  cudaFree(ids_d);
  cudaFree(run_d);
  cudaFree(pool_d);
  free(want);
  free(got);
}

static void test_bad_arguments(void) {
  const int sms = sm_count();
  void *a = NULL, *b = NULL;
  int32_t *ids = NULL;
  CHECK_CUDA(cudaMalloc(&a, 1 << 16));
  CHECK_CUDA(cudaMalloc(&b, 1 << 16));
  CHECK_CUDA(cudaMalloc((void **)&ids, 64));
  CHECK_CUDA(cudaMemset(ids, 0, 64));
  KM_EXPECT(km_offload_gather_blocks(a, b, ids, 2, 24, sms, 0) == cudaErrorInvalidValue);  /* not a multiple of 16 */
  KM_EXPECT(km_offload_gather_blocks(a, b, ids, 2, 0, sms, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_offload_scatter_blocks((char *)a + 8, b, ids, 2, 32, sms, 0) == cudaErrorInvalidValue); /* misaligned */
  KM_EXPECT(km_offload_scatter_blocks(a, b, NULL, 2, 32, sms, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_offload_gather_blocks(a, b, ids, 0, 32, sms, 0) == cudaSuccess); /* nothing to do */
  KM_EXPECT(km_offload_gather_blocks(a, b, ids, 2, 32, 0, 0) == cudaErrorInvalidValue); /* no SM count */
  KM_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(a);
  cudaFree(b);
  cudaFree(ids);
}

/* Per-block and batched copies of scattered blocks, both directions, against the CPU. */
static void test_baselines(int batch) {
  const size_t n = 64, bs = 32 << 10, pool_blocks = 2 * n;
  unsigned char *pool_d = NULL, *host = NULL, *pool_h = malloc(pool_blocks * bs);
  int32_t perm[128];
  void *dsts[64];
  const void *srcs[64];
  size_t sizes[64];
  cudaStream_t s = NULL;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&pool_d, pool_blocks * bs));
  CHECK_CUDA(cudaHostAlloc((void **)&host, n * bs, cudaHostAllocDefault));
  permutation(perm, pool_blocks, 5);
  for (int dir = 0; dir < 2 && pool_h; dir++) { /* 0: host -> pool blocks, 1: pool blocks -> host */
    for (size_t i = 0; i < n; i++) {
      unsigned char *dev = pool_d + (size_t)perm[i] * bs, *h = host + i * bs;
      dsts[i] = dir == 0 ? (void *)dev : (void *)h;
      srcs[i] = dir == 0 ? (const void *)h : (const void *)dev;
      sizes[i] = bs;
    }
    if (dir == 0) {
      fill(host, n * bs, 11);
      KM_EXPECT(cudaMemset(pool_d, 0xFF, pool_blocks * bs) == cudaSuccess);
    } else {
      fill(pool_h, pool_blocks * bs, 12);
      KM_EXPECT(cudaMemcpy(pool_d, pool_h, pool_blocks * bs, cudaMemcpyHostToDevice) == cudaSuccess);
      memset(host, 0xFF, n * bs);
    }
    KM_EXPECT(cudaDeviceSynchronize() == cudaSuccess); /* the legacy-stream fills above are done before s reads */
    cudaError_t e = batch ? km_offload_copy_batch(dsts, srcs, sizes, n, s)
                          : km_offload_copy_per_block(dsts, srcs, sizes, n, s);
    if (batch && (e == cudaErrorNotSupported || e == cudaErrorCallRequiresNewerDriver)) {
      printf("cudaMemcpyBatchAsync unavailable here (%s): skipped\n", cudaGetErrorString(e));
      cudaGetLastError();
      break;
    }
    KM_EXPECT(e == cudaSuccess);
    KM_EXPECT(cudaStreamSynchronize(s) == cudaSuccess);
    if (dir == 0) KM_EXPECT(cudaMemcpy(pool_h, pool_d, pool_blocks * bs, cudaMemcpyDeviceToHost) == cudaSuccess);
    size_t bad = compare(host, pool_h, perm, n, pool_blocks, bs, dir == 0);
    if (bad) fprintf(stderr, "%s dir %d: %zu bad\n", batch ? "batch" : "per-block", dir, bad);
    KM_EXPECT(bad == 0);
  }
  cudaFreeHost(host);
  cudaFree(pool_d);
  cudaStreamDestroy(s);
  free(pool_h);
}

/* Each kind of host buffer: allocated where asked (when hwloc can tell), mapped when pinned or
 * registered, and a round trip through the device returns the same bytes. */
static void test_host_kinds(struct km_topo *t) {
  const size_t bytes = (size_t)4 << 20;
  int node = t ? km_topo_gpu_near_node(t) : -1;
  void *dev = NULL;
  CHECK_CUDA(cudaMalloc(&dev, bytes));
  for (int k = 0; k < KM_HOST_KIND_COUNT; k++) {
    km_host_buf h;
    char err[200];
    if (km_host_alloc(t, (km_host_kind)k, node, bytes, &h, err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", km_host_kind_name((km_host_kind)k), err);
      KM_EXPECT(!"host buffer allocation");
      continue;
    }
    printf("%s: node asked %d, found %d\n", km_host_kind_name(h.kind), h.node_wanted, h.node_found);
    KM_EXPECT(h.node_found < 0 || node < 0 || h.node_found == node);
    if (k != KM_HOST_PAGEABLE) {
      void *mapped = NULL;
      KM_EXPECT(cudaHostGetDevicePointer(&mapped, h.ptr, 0) == cudaSuccess && mapped != NULL);
    }
    fill(h.ptr, bytes, 40 + k);
    KM_EXPECT(cudaMemcpy(dev, h.ptr, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    memset(h.ptr, 0, bytes);
    KM_EXPECT(cudaMemcpy(h.ptr, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += ((unsigned char *)h.ptr)[i] != byte_at(40 + k, i);
    KM_EXPECT(bad == 0);
    km_host_free(&h);
  }
  cudaFree(dev);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  const size_t sizes[] = {16, 48, 4096 + 16, 16 << 10, 32 << 10, (40 << 10) + 16, 2 << 20};
  const size_t counts[] = {1, 37, 300, 2048, 513, 77, 32};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    test_blocks(counts[i], sizes[i], 0);
    test_blocks(counts[i], sizes[i], 1);
  }
  test_large_pool();
  test_bad_arguments();
  test_baselines(0);
  if (km_offload_batch_available())
    test_baselines(1);
  else
    printf("cudaMemcpyBatchAsync not in this runtime: skipped\n");

  char bus[32] = "", err[200];
  int dev = 0;
  struct km_topo *t = NULL;
  if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetPCIBusId(bus, sizeof bus, dev) == cudaSuccess)
    t = km_topo_load(bus, err, sizeof err);
  test_host_kinds(t);
  test_host_kinds(NULL);
  km_topo_free(t);
  return km_test_finish("gpu_offload");
}
