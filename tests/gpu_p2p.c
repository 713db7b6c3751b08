/* GPU checks of the p2p primitives against the CPU's transfer: the block-table copy kernel on one GPU
 * (scattered tables on both sides or one, contiguous, odd block sizes, argument checks), and with two GPUs
 * the same kernel pulling and pushing across them, one cudaMemcpyPeerAsync per block, and NCCL send/recv
 * both ways at once; NCCL's rank sending to itself on one GPU. Then ./micro itself: with one GPU every
 * two-GPU case is skipped with the reason and the self send/recv runs verified; with two, a sample of
 * cases runs verified. Exit 77 without a device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "p2p_baselines.h"
#include "p2p_copy.h"
#include "p2p_nccl.h"
#include "p2p_ref.h"
#include "pattern.h"
#include "test_util.h"

#define CHECK_CUDA KM_EXPECT_CUDA

/* Device pools and tables of one plan: source on src_dev, receiver (poisoned) on dst_dev, tables where
 * the kernel runs (run_dev). */
typedef struct pools {
  km_p2p_plan plan;
  unsigned char *src, *dst, *host;
  int32_t *src_ids, *dst_ids;
  uint64_t seed;
} pools;

static void pools_free(pools *p, int src_dev, int dst_dev, int run_dev) {
  cudaSetDevice(src_dev);
  cudaFree(p->src);
  cudaSetDevice(dst_dev);
  cudaFree(p->dst);
  cudaSetDevice(run_dev);
  cudaFree(p->src_ids);
  cudaFree(p->dst_ids);
  cudaSetDevice(0);
  free(p->host);
  km_p2p_plan_free(&p->plan);
}

static int pools_make(pools *p, size_t n, size_t bs, int scattered, int src_dev, int dst_dev, int run_dev) {
  memset(p, 0, sizeof *p);
  p->seed = n * 1000003u + bs;
  if (km_p2p_plan_make(&p->plan, n, bs, scattered, p->seed) != 0) return -1;
  const size_t pool = km_p2p_pool_bytes(&p->plan);
  p->host = malloc(pool);
  if (!p->host) return -1;
  km_pattern_fill(p->host, pool, p->seed, 0);
  int ok = cudaSetDevice(src_dev) == cudaSuccess && cudaMalloc((void **)&p->src, pool) == cudaSuccess &&
           cudaMemcpy(p->src, p->host, pool, cudaMemcpyHostToDevice) == cudaSuccess;
  ok = ok && cudaSetDevice(dst_dev) == cudaSuccess && cudaMalloc((void **)&p->dst, pool) == cudaSuccess &&
       cudaMemset(p->dst, 0xFF, pool) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  ok = ok && cudaSetDevice(run_dev) == cudaSuccess && cudaMalloc((void **)&p->src_ids, n * 4) == cudaSuccess &&
       cudaMalloc((void **)&p->dst_ids, n * 4) == cudaSuccess &&
       cudaMemcpy(p->src_ids, p->plan.src_ids, n * 4, cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaMemcpy(p->dst_ids, p->plan.dst_ids, n * 4, cudaMemcpyHostToDevice) == cudaSuccess;
  return ok ? 0 : -1;
}

/* The whole receiving pool against the CPU's transfer. */
static size_t pools_check(pools *p, int dst_dev) {
  const size_t pool = km_p2p_pool_bytes(&p->plan);
  memset(p->host, 0, pool);
  if (cudaSetDevice(dst_dev) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(p->host, p->dst, pool, cudaMemcpyDeviceToHost) != cudaSuccess)
    return (size_t)-1;
  cudaSetDevice(0);
  return km_p2p_check_received(NULL, p->host, &p->plan, p->seed, 0);
}

/* The kernel launched on run_dev from a pool on src_dev to one on dst_dev. */
static void test_kernel(size_t n, size_t bs, int scattered, int src_dev, int dst_dev, int run_dev) {
  pools p;
  if (pools_make(&p, n, bs, scattered, src_dev, dst_dev, run_dev) != 0) {
    KM_EXPECT(!"pools");
    cudaGetLastError();
  } else {
    cudaSetDevice(run_dev);
    KM_EXPECT(km_p2p_copy_blocks(p.dst, scattered ? p.dst_ids : NULL, p.src, scattered ? p.src_ids : NULL, n, bs,
                                 0) == cudaSuccess);
    size_t bad = pools_check(&p, dst_dev);
    KM_EXPECT_MSG(bad == 0, "kernel n=%zu bs=%zu scattered=%d GPU %d -> %d on %d: %zu bad words", n, bs, scattered,
                  src_dev, dst_dev, run_dev, bad);
  }
  pools_free(&p, src_dev, dst_dev, run_dev);
}

/* One table NULL: source blocks in order into scattered receiving blocks, and scattered ones into order. */
static void test_one_sided(void) {
  const size_t n = 33, bs = 1040;
  pools p;
  if (pools_make(&p, n, bs, 1, 0, 0, 0) != 0) {
    KM_EXPECT(!"pools");
  } else {
    KM_EXPECT(km_p2p_copy_blocks(p.dst, p.dst_ids, p.src, NULL, n, bs, 0) == cudaSuccess);
    for (size_t i = 0; i < n; i++) p.plan.src_ids[i] = (int32_t)i; /* what the NULL table means */
    KM_EXPECT(pools_check(&p, 0) == 0);
  }
  pools_free(&p, 0, 0, 0);
}

static void test_arguments(void) {
  void *a = NULL, *b = NULL;
  CHECK_CUDA(cudaMalloc(&a, 4096));
  CHECK_CUDA(cudaMalloc(&b, 4096));
  KM_EXPECT(km_p2p_copy_blocks(a, NULL, b, NULL, 1, 0, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_p2p_copy_blocks(a, NULL, b, NULL, 1, 24, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_p2p_copy_blocks((char *)a + 8, NULL, b, NULL, 1, 16, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_p2p_copy_blocks(a, NULL, (char *)b + 4, NULL, 1, 16, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_p2p_copy_blocks(a, NULL, b, NULL, (size_t)1 << 31, 16, 0) == cudaErrorInvalidValue);
  KM_EXPECT(km_p2p_copy_blocks(a, NULL, b, NULL, 0, 16, 0) == cudaSuccess);
  KM_EXPECT(km_p2p_tiles(3, 16 * 1024 + 16) == 6 && km_p2p_tiles(1, 16) == 1);
  cudaFree(a);
  cudaFree(b);
}

/* One cudaMemcpyPeerAsync per block from GPU 0 to GPU 1. */
static void test_memcpy_peer(void) {
  const size_t n = 100, bs = 4096;
  pools p;
  void **dsts = malloc(n * sizeof *dsts);
  const void **srcs = malloc(n * sizeof *srcs);
  size_t *sizes = malloc(n * sizeof *sizes);
  if (!dsts || !srcs || !sizes || pools_make(&p, n, bs, 1, 0, 1, 0) != 0) {
    KM_EXPECT(!"pools");
  } else {
    km_p2p_plan_lists(&p.plan, p.dst, p.src, dsts, srcs, sizes);
    cudaSetDevice(0);
    KM_EXPECT(km_p2p_memcpy_peer_per_block(dsts, 1, srcs, 0, sizes, n, 0) == cudaSuccess);
    KM_EXPECT(cudaDeviceSynchronize() == cudaSuccess);
    KM_EXPECT(pools_check(&p, 1) == 0);
  }
  pools_free(&p, 0, 1, 0);
  free(dsts);
  free(srcs);
  free(sizes);
}

/* NCCL over ranks on `devs`: every transfer of x at once, each receiving buffer checked. */
static void test_nccl(const int *devs, int ndev, const km_nccl_xfer *shape, size_t count) {
  km_nccl *n = NULL;
  char err[256];
  if (km_nccl_create(devs, ndev, &n, err, sizeof err) != 0) {
    KM_EXPECT_MSG(0, "%s", err);
    return;
  }
  km_nccl_xfer x[2];
  cudaStream_t streams[2] = {NULL, NULL};
  unsigned char *host = NULL;
  size_t largest = 0;
  for (size_t k = 0; k < count; k++) largest = shape[k].bytes > largest ? shape[k].bytes : largest;
  host = malloc(largest + 8);
  int ok = host != NULL;
  for (int r = 0; ok && r < ndev; r++)
    ok = cudaSetDevice(devs[r]) == cudaSuccess &&
         cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking) == cudaSuccess;
  memset(x, 0, sizeof x);
  for (size_t k = 0; ok && k < count; k++) {
    x[k] = shape[k];
    const size_t bytes = x[k].bytes, rounded = (bytes + 7) / 8 * 8;
    km_pattern_fill(host, rounded, 77 + k, 0);
    void *send = NULL, *recv = NULL;
    ok = cudaSetDevice(devs[x[k].from]) == cudaSuccess && cudaMalloc(&send, bytes) == cudaSuccess &&
         cudaMemcpy(send, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaSetDevice(devs[x[k].to]) == cudaSuccess && cudaMalloc(&recv, rounded) == cudaSuccess &&
         cudaMemset(recv, 0xFF, rounded) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
    x[k].send = send;
    x[k].recv = recv;
  }
  cudaSetDevice(devs[0]);
  if (ok) {
    cudaError_t e = km_nccl_transfer(n, x, count, streams);
    KM_EXPECT_MSG(e == cudaSuccess, "km_nccl_transfer: %s / %s", cudaGetErrorString(e), km_nccl_error(n));
    for (int r = 0; r < ndev; r++) KM_EXPECT(cudaStreamSynchronize(streams[r]) == cudaSuccess);
  } else {
    KM_EXPECT(!"NCCL buffers");
  }
  for (size_t k = 0; ok && k < count; k++) {
    const size_t bytes = x[k].bytes, rounded = (bytes + 7) / 8 * 8;
    KM_EXPECT(cudaMemcpy(host, x[k].recv, rounded, cudaMemcpyDeviceToHost) == cudaSuccess);
    /* the received bytes are the pattern; the word holding the end is the pattern up to it, then poison */
    size_t bad = km_pattern_check(NULL, host, bytes / 8 * 8, 77 + k, 0, "nccl");
    for (size_t i = bytes / 8 * 8; i < bytes; i++) {
      uint64_t w = km_pattern_word(77 + k, i / 8);
      bad += host[i] != (unsigned char)(w >> (8 * (i % 8)));
    }
    for (size_t i = bytes; i < rounded; i++) bad += host[i] != 0xFF;
    KM_EXPECT_MSG(bad == 0, "NCCL %d -> %d, %zu bytes: %zu bad", x[k].from, x[k].to, bytes, bad);
  }
  for (size_t k = 0; k < count; k++) {
    cudaFree((void *)x[k].send);
    cudaFree(x[k].recv);
  }
  for (int r = 0; r < ndev; r++)
    if (streams[r]) cudaStreamDestroy(streams[r]);
  free(host);
  km_nccl_destroy(n);
  cudaSetDevice(0);
}

/* ./micro over the family, with the run's JSON read back. */
static cJSON *run_micro(const char *filter) {
  const char *micro = getenv("KM_MICRO");
  char path[] = "/tmp/gpu_p2p_XXXXXX", cmd[1024];
  int fd = mkstemp(path);
  if (!micro || fd < 0) {
    KM_EXPECT(!"KM_MICRO is set and a temporary file can be made");
    return NULL;
  }
  close(fd);
  snprintf(cmd, sizeof cmd, "'%s' --filter '%s' --json '%s' >/dev/null 2>&1", micro, filter, path);
  int rc = system(cmd);
  KM_EXPECT_MSG(rc == 0, "%s exited %d", cmd, rc);
  cJSON *doc = km_test_read_json_file(path);
  unlink(path);
  return doc;
}

static const char *str_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static double num_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* One GPU: every case but NCCL's self send/recv skipped with the two-GPU reason; those run verified
 * (or, in a build without NCCL, skip saying so). Two GPUs: each sampled case verified or skipped with a
 * reason that is not the device count. */
static void test_micro(int gpus) {
  const char *filter = gpus < 2 ? "^(baseline/)?p2p/"
                                : "^(baseline/)?p2p/(memcpy_peer/(to_peer|bidir)/64KiB|nccl/to_peer/4MiB|"
                                  "scatter/(to_peer|bidir)/[a-z_]+/32KiB/n2048|fit/memcpy_peer/to_peer|nccl_self/4MiB)$";
  cJSON *doc = run_micro(filter);
  const cJSON *rows = doc ? cJSON_GetObjectItemCaseSensitive(doc, "benchmarks") : NULL;
  size_t n = 0, ran = 0;
  const int nccl = km_nccl_built(NULL);
  for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next, n++) {
    const int skipped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "skipped"));
    /* Google Benchmark's spellings: a skipped row says why in skip_message, a failed one in error_message */
    const char *name = str_of(r, "kvmicro_name"), *msg = str_of(r, skipped ? "skip_message" : "error_message");
    const int self = strstr(name, "nccl_self") != NULL;
    KM_EXPECT_MSG(skipped || !msg[0], "%s: %s", name, msg);
    if (gpus < 2 && !self) KM_EXPECT_MSG(skipped && strstr(msg, "needs two CUDA devices"), "%s: '%s'", name, msg);
    if (gpus >= 2 || self) {
      if (!nccl && strstr(name, "nccl"))
        KM_EXPECT_MSG(skipped && strstr(msg, "no NCCL"), "%s: '%s'", name, msg);
      else if (skipped)
        KM_EXPECT_MSG(!strstr(msg, "needs two CUDA devices"), "%s: '%s'", name, msg);
      else
        KM_EXPECT_MSG(num_of(r, "verified") == 1, "%s not verified", name);
    }
    ran += !skipped;
  }
  KM_EXPECT_MSG(n > (gpus < 2 ? 50u : 10u), "%zu rows", n);
  KM_EXPECT(ran > 0 || (gpus < 2 && !nccl));
  cJSON_Delete(doc);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  static const size_t sizes[] = {16, 48, 4096, 16 * 1024 + 16, 64 * 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    test_kernel(7, sizes[i], 1, 0, 0, 0);
    test_kernel(300, sizes[i], 1, 0, 0, 0);
  }
  test_kernel(1, (size_t)3 << 20, 0, 0, 0, 0); /* contiguous, 192 tiles */
  test_one_sided();
  test_arguments();
  if (km_nccl_built(NULL)) {
    const int dev0 = 0;
    const km_nccl_xfer self[1] = {{0, 0, NULL, NULL, ((size_t)4 << 20) + 3}};
    test_nccl(&dev0, 1, self, 1);
  }
  int access = 0, back = 0;
  if (gpus >= 2 && cudaDeviceCanAccessPeer(&access, 0, 1) == cudaSuccess &&
      cudaDeviceCanAccessPeer(&back, 1, 0) == cudaSuccess && access && back) {
    for (int d = 0; d < 2; d++) {
      cudaSetDevice(d);
      cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
      KM_EXPECT(e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled);
      cudaGetLastError();
    }
    cudaSetDevice(0);
    test_kernel(2048, 32 * 1024, 1, 0, 1, 1); /* pull: GPU 1 reads GPU 0 */
    test_kernel(2048, 32 * 1024, 1, 0, 1, 0); /* push: GPU 0 writes GPU 1 */
    test_kernel(1, (size_t)64 << 20, 0, 1, 0, 0);
  } else if (gpus >= 2) {
    printf("GPUs 0 and 1 cannot map each other's memory: the cross-GPU kernel checks are left out\n");
  }
  if (gpus >= 2) {
    test_memcpy_peer();
    if (km_nccl_built(NULL)) {
      const int devs[2] = {0, 1};
      const km_nccl_xfer both[2] = {{0, 1, NULL, NULL, (size_t)64 << 20}, {1, 0, NULL, NULL, ((size_t)1 << 20) + 5}};
      test_nccl(devs, 2, both, 2);
    }
  }
  test_micro(gpus);
  return km_test_finish("gpu_p2p");
}
