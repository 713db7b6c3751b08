/* p2p family: KV blocks between two GPUs of one host, the primitive of disaggregated prefill/decode and of
 * offloading to a peer's memory. Contiguous buffers and scattered blocks (paged pools on both GPUs) moved
 * by one cudaMemcpyPeerAsync per block, cudaMemcpyBatchAsync, cub::DeviceMemcpy::Batched, SM kernels that
 * read (pull) or write (push) the peer's memory, a gather + one peer copy + scatter, and NCCL send/recv of
 * the gathered blocks; each direction alone and both at once, with latency-bandwidth fits over sizes. A
 * rank of NCCL sending to itself is the case that runs on one GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "bytes_table.h"
#include "check.h"
#include "copy_fit.h"
#include "micro_tables.h"
#include "offload_baselines.h"
#include "offload_copy.h"
#include "p2p_baselines.h"
#include "p2p_copy.h"
#include "p2p_nccl.h"
#include "p2p_ref.h"
#include "paged_baselines.h"
#include "pattern.h"
#include "peer_link.h"
#include "stats.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* Why no buffer rotation or L2 flush: a peer transfer is bounded by the link (NVLink ~450 GB/s per
 * direction on H100/H200, PCIe ~55), well below what L2 or HBM serve on either side, and every byte
 * crosses the link whether or not it sat in L2. */

typedef enum p2p_dir { P2P_TO_PEER = 0, P2P_FROM_PEER, P2P_BIDIR, P2P_SELF } p2p_dir;
typedef enum p2p_method {
  P2P_MEMCPY_PEER = 0, /* one cudaMemcpyPeerAsync per block, issued on the sender's stream */
  P2P_BATCH,           /* one cudaMemcpyBatchAsync for the list, on the sender's stream */
  P2P_CUB,             /* cub::DeviceMemcpy::Batched on the receiver, reading the peer */
  P2P_SM_PULL,         /* km_p2p_copy_blocks on the receiver, reading the peer */
  P2P_SM_PUSH,         /* km_p2p_copy_blocks on the sender, writing the peer */
  P2P_STAGING,         /* gather on the sender, one cudaMemcpyPeerAsync, scatter on the receiver */
  P2P_NCCL,            /* NCCL send/recv (of the gathered blocks when scattered, then scattered) */
  P2P_METHOD_COUNT
} p2p_method;

static const char *const method_names[P2P_METHOD_COUNT] = {"memcpy_peer", "batch_async", "cub_batched", "sm_pull",
                                                           "sm_push",     "staging",     "nccl"};

typedef struct p2p_params {
  p2p_method method;
  p2p_dir dir;
  size_t block_bytes; /* contiguous: the buffer, per direction */
  size_t nblocks;     /* 1 when contiguous */
  int scattered;      /* random block tables on both GPUs */
  int fit;            /* latency-bandwidth fit over the fit sizes (contiguous) */
} p2p_params;

/* ---------------------------------------------------------------- devices, streams, buffers */

/* A transfer touches two "slots": 0 is the run's GPU (--device) with the bench stream, 1 the peer with a
 * stream of its own. The run's GPU stays the current device between calls; anything launched on the
 * peer switches to it and back. */
typedef struct p2p_half {
  int a, b; /* sending and receiving slot */
  km_p2p_plan plan;
  uint64_t first_word;                  /* where this direction's pattern starts: swapped pools fail */
  unsigned char *src_pool, *dst_pool;   /* on a, on b */
  unsigned char *src_stage, *dst_stage; /* staging and scattered NCCL: the gathered blocks, on a and on b */
  int32_t *ids[2][2];                   /* [slot][0: source table, 1: receiving table], where needed */
  void **dsts;                          /* per-block lists on the host (memcpy_peer, batch_async) */
  const void **srcs;
  size_t *sizes;
  void **d_dsts; /* the same lists on the receiver (cub_batched), and CUB's temporary storage */
  const void **d_srcs;
  size_t *d_sizes;
  void *cub_temp;
  size_t cub_temp_bytes;
  cudaEvent_t gathered; /* staging: on a, after the gather */
  cudaEvent_t done;     /* per-direction timing: after the direction's last operation */
} p2p_half;

typedef struct p2p_ctx {
  p2p_method method;
  int scattered;
  int nslots;
  int dev[2];
  int sms[2];                 /* each slot's multiprocessors (the staging kernels' grids), read at setup */
  cudaStream_t stream[2];
  int fork;                   /* slot 1 takes part: it starts after, and the bench stream waits for, it */
  cudaEvent_t forked, joined; /* on slot 0, on slot 1 */
  cudaEvent_t start[2];       /* per-direction timing, one per slot (elapsed times need one device) */
  int time_directions;
  int nhalves;
  p2p_half half[2];
  km_nccl *nccl;
} p2p_ctx;

/* A device object freed on its own device when the case ends. */
typedef enum slot_kind { SLOT_MEMORY, SLOT_STREAM, SLOT_EVENT } slot_kind;
typedef struct slot_obj {
  void *obj;
  int dev;
  slot_kind kind;
} slot_obj;

static void release_slot_obj(void *arg) {
  slot_obj *o = arg;
  int current = 0;
  cudaGetDevice(&current);
  cudaSetDevice(o->dev);
  if (o->kind == SLOT_MEMORY) cudaFree(o->obj);
  if (o->kind == SLOT_STREAM) cudaStreamDestroy((cudaStream_t)o->obj);
  if (o->kind == SLOT_EVENT) cudaEventDestroy((cudaEvent_t)o->obj);
  cudaSetDevice(current);
  free(o);
}

static int keep_slot_obj(km_bench *b, void *obj, int dev, slot_kind kind) {
  slot_obj *o = malloc(sizeof *o);
  if (!o) {
    km_bench_fail(b, "out of host memory");
    return -1;
  }
  *o = (slot_obj){obj, dev, kind};
  km_bench_defer(b, release_slot_obj, o);
  return 0;
}

/* Run `e = expr` with slot's device current, then make the run's GPU current again. */
#define ON_SLOT(c, slot, e, expr)                                  \
  do {                                                             \
    if ((slot) == 0) {                                             \
      (e) = (expr);                                                \
    } else {                                                       \
      (e) = cudaSetDevice((c)->dev[slot]);                         \
      if ((e) == cudaSuccess) (e) = (expr);                        \
      cudaError_t km_back_ = cudaSetDevice((c)->dev[0]);           \
      if ((e) == cudaSuccess) (e) = km_back_;                      \
    }                                                              \
  } while (0)

/* Device memory on a slot; a size beyond its free memory skips the case with the reason. */
static void *slot_alloc(km_bench *b, p2p_ctx *c, int slot, size_t bytes) {
  if (!km_bench_ok(b)) return NULL;
  if (slot == 0) return km_bench_device_alloc(b, bytes);
  const size_t margin = (size_t)256 << 20; /* the runtime's and NCCL's own buffers */
  size_t free_b = 0, total_b = 0;
  void *p = NULL;
  cudaError_t e;
  ON_SLOT(c, slot, e, cudaMemGetInfo(&free_b, &total_b));
  if (e == cudaSuccess && bytes + margin > free_b) {
    km_bench_skip(b, "needs %.2f GiB on the peer GPU %d, %.2f GiB free", bytes / 1073741824.0, c->dev[slot],
                  free_b / 1073741824.0);
    return NULL;
  }
  if (e == cudaSuccess) ON_SLOT(c, slot, e, cudaMalloc(&p, bytes ? bytes : 1));
  if (e != cudaSuccess) {
    cudaGetLastError();
    km_bench_fail(b, "cudaMalloc of %zu bytes on GPU %d failed: %s", bytes, c->dev[slot], cudaGetErrorString(e));
    return NULL;
  }
  return keep_slot_obj(b, p, c->dev[slot], SLOT_MEMORY) == 0 ? p : NULL;
}

static int slot_event(km_bench *b, p2p_ctx *c, int slot, unsigned flags, cudaEvent_t *ev) {
  cudaError_t e;
  ON_SLOT(c, slot, e, cudaEventCreateWithFlags(ev, flags));
  KM_CUDA_OR_FAIL(b, e);
  return keep_slot_obj(b, *ev, c->dev[slot], SLOT_EVENT);
}

/* Copy host bytes into a slot's memory, ordered on that slot's stream. */
static int upload(km_bench *b, p2p_ctx *c, int slot, void *dst, const void *src, size_t bytes) {
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream[slot]));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(c->stream[slot]));
  return 0;
}

static int download(km_bench *b, p2p_ctx *c, int slot, void *dst, const void *src, size_t bytes) {
  KM_CUDA_OR_FAIL(b, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream[slot]));
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(c->stream[slot]));
  return 0;
}

static int poison(km_bench *b, p2p_ctx *c, int slot, void *p, size_t bytes) {
  cudaError_t e;
  ON_SLOT(c, slot, e, cudaMemsetAsync(p, 0xFF, bytes, c->stream[slot]));
  KM_CUDA_OR_FAIL(b, e);
  KM_CUDA_OR_FAIL(b, cudaStreamSynchronize(c->stream[slot]));
  return 0;
}

/* ---------------------------------------------------------------- the peer */

/* The GPU the run's GPU exchanges with: the lowest-numbered other GPU that both can map, else the
 * lowest-numbered other GPU (copies then go through host memory). -1, the case skipped, when none. */
static int pick_peer(km_bench *b) {
  int n = 0, dev = km_bench_device_id(b), other = -1;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  if (n < 2) {
    km_bench_skip(b, "needs two CUDA devices, this machine has %d (the peer is the lowest-numbered other GPU)", n);
    return -1;
  }
  for (int d = 0; d < n; d++) {
    int ab = 0, ba = 0;
    if (d == dev) continue;
    if (other < 0) other = d;
    if (cudaDeviceCanAccessPeer(&ab, dev, d) == cudaSuccess && cudaDeviceCanAccessPeer(&ba, d, dev) == cudaSuccess &&
        ab && ba)
      return d;
  }
  cudaGetLastError();
  return other;
}

static int method_needs_access(p2p_method m) { return m == P2P_CUB || m == P2P_SM_PULL || m == P2P_SM_PUSH; }

/* The slot whose stream runs a direction's last operation (per-direction timing records there). */
static int last_slot(p2p_method m, const p2p_half *h) {
  return m == P2P_MEMCPY_PEER || m == P2P_BATCH || m == P2P_SM_PUSH ? h->a : h->b;
}

/* Does the method run anything on slot `s` for this direction? */
static int touches(p2p_method m, const p2p_half *h, int s) {
  if (m == P2P_STAGING || m == P2P_NCCL) return h->a == s || h->b == s;
  return last_slot(m, h) == s;
}

/* ---------------------------------------------------------------- setup */

/* Both tables on slot s, for the kernels launched there. */
static int tables_on(km_bench *b, p2p_ctx *c, p2p_half *h, int s) {
  if (h->ids[s][0]) return 0;
  const size_t bytes = h->plan.nblocks * sizeof(int32_t);
  h->ids[s][0] = slot_alloc(b, c, s, bytes);
  h->ids[s][1] = slot_alloc(b, c, s, bytes);
  if (!h->ids[s][0] || !h->ids[s][1]) return -1;
  if (upload(b, c, s, h->ids[s][0], h->plan.src_ids, bytes) || upload(b, c, s, h->ids[s][1], h->plan.dst_ids, bytes))
    return -1;
  return 0;
}

static void free_plan(void *p) { km_p2p_plan_free(p); }
static void destroy_nccl(void *n) { km_nccl_destroy(n); }

/* Host lists for the per-block and batched copies; for cub_batched also on the receiver with CUB's storage. */
static int block_lists(km_bench *b, p2p_ctx *c, p2p_half *h) {
  const size_t n = h->plan.nblocks;
  h->dsts = km_bench_host_alloc(b, n * sizeof *h->dsts);
  h->srcs = km_bench_host_alloc(b, n * sizeof *h->srcs);
  h->sizes = km_bench_host_alloc(b, n * sizeof *h->sizes);
  if (!h->dsts || !h->srcs || !h->sizes) return -1;
  km_p2p_plan_lists(&h->plan, h->dst_pool, h->src_pool, h->dsts, h->srcs, h->sizes);
  if (c->method != P2P_CUB) return 0;
  h->d_dsts = slot_alloc(b, c, h->b, n * sizeof *h->d_dsts);
  h->d_srcs = slot_alloc(b, c, h->b, n * sizeof *h->d_srcs);
  h->d_sizes = slot_alloc(b, c, h->b, n * sizeof *h->d_sizes);
  if (!h->d_dsts || !h->d_srcs || !h->d_sizes) return -1;
  if (upload(b, c, h->b, h->d_dsts, h->dsts, n * sizeof *h->dsts) ||
      upload(b, c, h->b, (void *)h->d_srcs, h->srcs, n * sizeof *h->srcs) ||
      upload(b, c, h->b, h->d_sizes, h->sizes, n * sizeof *h->sizes))
    return -1;
  cudaError_t e;
  ON_SLOT(c, h->b, e, km_paged_cub_temp_bytes(n, &h->cub_temp_bytes));
  KM_CUDA_OR_FAIL(b, e);
  h->cub_temp = slot_alloc(b, c, h->b, h->cub_temp_bytes);
  return h->cub_temp ? 0 : -1;
}

/* One direction's plan, pools, staging buffers, tables and lists. */
static int half_setup(km_bench *b, p2p_ctx *c, p2p_half *h, const p2p_params *p, size_t block_bytes) {
  if (km_p2p_plan_make(&h->plan, p->nblocks, block_bytes, p->scattered, km_bench_seed(b)) != 0) {
    km_bench_fail(b, "no plan for %zu blocks of %zu bytes (sizes or host memory)", p->nblocks, block_bytes);
    return -1;
  }
  km_bench_defer(b, free_plan, &h->plan);
  const size_t pool = km_p2p_pool_bytes(&h->plan), moved = km_p2p_moved_bytes(&h->plan);
  h->src_pool = slot_alloc(b, c, h->a, pool);
  h->dst_pool = slot_alloc(b, c, h->b, pool);
  if (!h->src_pool || !h->dst_pool) return -1;
  const int staged = c->method == P2P_STAGING || (c->method == P2P_NCCL && c->scattered);
  if (staged) {
    h->src_stage = slot_alloc(b, c, h->a, moved);
    h->dst_stage = slot_alloc(b, c, h->b, moved);
    if (!h->src_stage || !h->dst_stage) return -1;
  }
  /* the kernels read block tables where they run: the gather and sm_push on the sender, the scatter and
   * sm_pull on the receiver; the copies take pointer lists instead */
  const int kernel_on_a = c->method == P2P_SM_PUSH || staged, kernel_on_b = c->method == P2P_SM_PULL || staged;
  if (c->scattered && ((kernel_on_a && tables_on(b, c, h, h->a)) || (kernel_on_b && tables_on(b, c, h, h->b))))
    return -1;
  if ((c->method == P2P_MEMCPY_PEER || c->method == P2P_BATCH || c->method == P2P_CUB) && block_lists(b, c, h))
    return -1;
  if (c->method == P2P_STAGING && slot_event(b, c, h->a, cudaEventDisableTiming, &h->gathered)) return -1;
  return slot_event(b, c, last_slot(c->method, h), cudaEventDefault, &h->done);
}

/* Streams, events, NCCL and both directions' buffers for params p with block_bytes per block. The peer
 * is the lowest-numbered other GPU (pick_peer) or, for a rank sending to itself, none. c must live until
 * the case ends (km_bench_host_alloc): what is released then points into it. */
static int ctx_setup(km_bench *b, const p2p_params *p, int peer, size_t block_bytes, p2p_ctx *c) {
  memset(c, 0, sizeof *c);
  c->method = p->method;
  c->scattered = p->scattered;
  c->nslots = p->dir == P2P_SELF ? 1 : 2;
  c->dev[0] = km_bench_device_id(b);
  c->dev[1] = p->dir == P2P_SELF ? c->dev[0] : peer;
  for (int k = 0; k < 2; ++k)
    KM_CUDA_OR_FAIL(b, cudaDeviceGetAttribute(&c->sms[k], cudaDevAttrMultiProcessorCount, c->dev[k]));
  c->stream[0] = km_bench_stream(b);
  if (c->nslots == 2) {
    cudaError_t e;
    ON_SLOT(c, 1, e, cudaStreamCreateWithFlags(&c->stream[1], cudaStreamNonBlocking));
    KM_CUDA_OR_FAIL(b, e);
    if (keep_slot_obj(b, c->stream[1], c->dev[1], SLOT_STREAM)) return -1;
  }
  static const int halves[4][2][2] = {{{0, 1}}, {{1, 0}}, {{0, 1}, {1, 0}}, {{0, 0}}};
  c->nhalves = p->dir == P2P_BIDIR ? 2 : 1;
  for (int k = 0; k < c->nhalves; k++) {
    p2p_half *h = &c->half[k];
    h->a = halves[p->dir][k][0];
    h->b = halves[p->dir][k][1];
    h->first_word = (uint64_t)k << 40;
    if (half_setup(b, c, h, p, block_bytes)) return -1;
    c->fork |= c->nslots == 2 && touches(c->method, h, 1);
  }
  for (int s = 0; s < c->nslots; s++)
    if (slot_event(b, c, s, cudaEventDefault, &c->start[s])) return -1;
  if (c->fork && (slot_event(b, c, 0, cudaEventDisableTiming, &c->forked) ||
                  slot_event(b, c, 1, cudaEventDisableTiming, &c->joined)))
    return -1;
  if (c->method == P2P_NCCL) {
    char err[256];
    if (km_nccl_create(c->dev, c->nslots, &c->nccl, err, sizeof err) != 0) {
      km_bench_fail(b, "%s", err);
      return -1;
    }
    km_bench_defer(b, destroy_nccl, c->nccl);
  }
  return 0;
}

/* ---------------------------------------------------------------- one transfer */

/* One direction's part of a transfer on one side: the sender's (copy engines, push kernels, gathers)
 * before NCCL's exchange, the receiver's (pull kernels, the staging copy, scatters) after it. Each call is
 * made with the device of its stream current (kernels must be; copies then need not guess). */
static cudaError_t half_ops(p2p_ctx *c, p2p_half *h, int receiver) {
  const int a = h->a, b = h->b, slot = receiver ? b : a;
  const size_t n = h->plan.nblocks, bs = h->plan.block_bytes;
  cudaStream_t s = c->stream[slot];
  const int32_t *const *ids = (const int32_t *const *)h->ids[slot];
  cudaError_t e = cudaSuccess;
  switch (c->method) {
  case P2P_MEMCPY_PEER:
    if (!receiver)
      ON_SLOT(c, a, e, km_p2p_memcpy_peer_per_block(h->dsts, c->dev[b], h->srcs, c->dev[a], h->sizes, n, s));
    break;
  case P2P_BATCH:
    if (!receiver) ON_SLOT(c, a, e, km_offload_copy_batch(h->dsts, h->srcs, h->sizes, n, s));
    break;
  case P2P_CUB:
    if (receiver)
      ON_SLOT(c, b, e, km_paged_cub_batched(h->cub_temp, h->cub_temp_bytes, h->d_srcs, h->d_dsts, h->d_sizes, n, s));
    break;
  case P2P_SM_PULL:
  case P2P_SM_PUSH:
    if (slot == last_slot(c->method, h))
      ON_SLOT(c, slot, e, km_p2p_copy_blocks(h->dst_pool, ids[1], h->src_pool, ids[0], n, bs, s));
    break;
  case P2P_STAGING:
    if (!receiver) {
      ON_SLOT(c, a, e, km_offload_gather_blocks(h->src_stage, h->src_pool, ids[0], n, bs, c->sms[a], s));
      if (e == cudaSuccess) e = cudaEventRecord(h->gathered, s);
      break;
    }
    e = cudaStreamWaitEvent(s, h->gathered, 0);
    if (e == cudaSuccess)
      ON_SLOT(c, b, e, cudaMemcpyPeerAsync(h->dst_stage, c->dev[b], h->src_stage, c->dev[a], n * bs, s));
    if (e == cudaSuccess) ON_SLOT(c, b, e, km_offload_scatter_blocks(h->dst_pool, h->dst_stage, ids[1], n, bs, c->sms[b], s));
    break;
  case P2P_NCCL:
    if (c->scattered && !receiver)
      ON_SLOT(c, a, e, km_offload_gather_blocks(h->src_stage, h->src_pool, ids[0], n, bs, c->sms[a], s));
    if (c->scattered && receiver)
      ON_SLOT(c, b, e, km_offload_scatter_blocks(h->dst_pool, h->dst_stage, ids[1], n, bs, c->sms[b], s));
    break;
  default: break;
  }
  return e;
}

/* Every direction's send and receive in one NCCL group: rank = slot. */
static cudaError_t nccl_exchange(p2p_ctx *c) {
  km_nccl_xfer x[2];
  for (int k = 0; k < c->nhalves; k++) {
    const p2p_half *h = &c->half[k];
    x[k].from = h->a;
    x[k].to = h->b;
    x[k].send = c->scattered ? h->src_stage : h->src_pool;
    x[k].recv = c->scattered ? h->dst_stage : h->dst_pool;
    x[k].bytes = km_p2p_moved_bytes(&h->plan);
  }
  return km_nccl_transfer(c->nccl, x, (size_t)c->nhalves, c->stream);
}

/* One instance of the transfer, all directions at once. Slot 1's stream is forked from and joined back to
 * the bench stream, so the harness's two events on the bench stream bracket everything. */
static cudaError_t enqueue_transfer(void *arg, int rep, cudaStream_t s) {
  p2p_ctx *c = arg;
  (void)rep, (void)s; /* s is c->stream[0] */
  cudaError_t e = cudaSuccess;
  if (c->fork) {
    e = cudaEventRecord(c->forked, c->stream[0]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(c->stream[1], c->forked, 0);
  }
  for (int sl = 0; e == cudaSuccess && c->time_directions && sl < c->nslots; sl++)
    e = cudaEventRecord(c->start[sl], c->stream[sl]);
  for (int k = 0; e == cudaSuccess && k < c->nhalves; k++) e = half_ops(c, &c->half[k], 0);
  if (e == cudaSuccess && c->method == P2P_NCCL) e = nccl_exchange(c);
  for (int k = 0; e == cudaSuccess && k < c->nhalves; k++) e = half_ops(c, &c->half[k], 1);
  for (int k = 0; e == cudaSuccess && c->time_directions && k < c->nhalves; k++) {
    p2p_half *h = &c->half[k];
    e = cudaEventRecord(h->done, c->stream[last_slot(c->method, h)]);
  }
  if (e == cudaSuccess && c->fork) {
    e = cudaEventRecord(c->joined, c->stream[1]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(c->stream[0], c->joined, 0);
  }
  return e;
}

/* The whole receiving pool of each direction, checked bitwise against the plan on the CPU. */
static int check_received(km_bench *b, p2p_ctx *c, unsigned char *host, uint64_t seed) {
  size_t bad = 0, words = 0;
  for (int k = 0; k < c->nhalves; k++) {
    p2p_half *h = &c->half[k];
    const size_t pool = km_p2p_pool_bytes(&h->plan);
    memset(host, 0, pool); /* only the device's bytes can pass */
    if (download(b, c, h->b, host, h->dst_pool, pool)) return -1;
    bad += km_p2p_check_received(b, host, &h->plan, seed, h->first_word);
    words += pool / 8;
  }
  return km_bench_verified(b, bad, words, "bitwise (8-byte words) over every receiving pool, unlisted blocks untouched")
             ? 0
             : -1;
}

/* Fresh patterns in every source pool, every receiving pool poisoned, one transfer, then the check. A
 * runtime or driver without cudaMemcpyBatchAsync (or without it between GPUs) answers the first call: the
 * case is then skipped. */
static int transfer_verify(km_bench *b, p2p_ctx *c) {
  const uint64_t seed = km_bench_seed(b);
  size_t largest = 0;
  for (int k = 0; k < c->nhalves; k++) {
    const size_t pool = km_p2p_pool_bytes(&c->half[k].plan);
    largest = pool > largest ? pool : largest;
  }
  unsigned char *host = km_bench_host_alloc(b, largest);
  if (!host) return -1;
  for (int k = 0; k < c->nhalves; k++) {
    p2p_half *h = &c->half[k];
    const size_t pool = km_p2p_pool_bytes(&h->plan);
    km_pattern_fill(host, pool, seed, h->first_word);
    if (upload(b, c, h->a, h->src_pool, host, pool) || poison(b, c, h->b, h->dst_pool, pool)) return -1;
  }
  cudaError_t e = enqueue_transfer(c, 0, c->stream[0]);
  if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream[0]);
  if (c->method == P2P_BATCH && (e == cudaErrorNotSupported || e == cudaErrorCallRequiresNewerDriver)) {
    cudaGetLastError();
    km_bench_skip(b, "cudaMemcpyBatchAsync: %s", cudaGetErrorString(e));
    return -1;
  }
  if (e != cudaSuccess) {
    km_bench_fail(b, "moving the blocks by %s failed: %s", method_names[c->method],
                  c->method == P2P_NCCL && e == cudaErrorUnknown ? km_nccl_error(c->nccl) : cudaGetErrorString(e));
    return -1;
  }
  return km_bench_verify_enabled(b) ? check_received(b, c, host, seed) : 0;
}

/* Bytes one instance moves over the link, every direction counted once. */
static double moved_bytes(const p2p_ctx *c) {
  double bytes = 0;
  for (int k = 0; k < c->nhalves; k++) bytes += (double)km_p2p_moved_bytes(&c->half[k].plan);
  return bytes;
}

/* One transfer timed alone on the bench stream (copy_fit.h), with two events of the run's GPU. */
static int time_isolated(km_bench *b, p2p_ctx *c, double *seconds) {
  cudaEvent_t ev[2];
  if (slot_event(b, c, 0, cudaEventDefault, &ev[0]) || slot_event(b, c, 0, cudaEventDefault, &ev[1])) return -1;
  return km_copy_time_isolated(b, enqueue_transfer, c, c->stream[0], ev, seconds);
}

/* ---------------------------------------------------------------- figures beside GB/s */

/* The ceiling rows' size: every row's share of the peer copy is of a 1 GiB cudaMemcpyPeerAsync in the
 * same direction(s), re-measured in the row's own case so the share holds under any --filter. */
#define KM_P2P_CEILING_BYTES GIB

/* Samples of the per-direction rates of a transfer in both directions at once. */
enum { KM_P2P_DIR_SAMPLES = 5 };

/* GB/s of the 1 GiB peer copy in direction(s) dir, over every direction's bytes; 0 when it could not run
 * (the case is then skipped or failed with the reason). */
static double peer_copy_gbps(km_bench *b, p2p_dir dir, int peer) {
  const p2p_params ref = {P2P_MEMCPY_PEER, dir, KM_P2P_CEILING_BYTES, 1, 0, 0};
  p2p_ctx *c = km_bench_host_alloc(b, sizeof *c);
  double sec = 0;
  if (!c || ctx_setup(b, &ref, peer, KM_P2P_CEILING_BYTES, c) || time_isolated(b, c, &sec) || !(sec > 0)) return 0;
  return moved_bytes(c) / sec / 1e9;
}

/* Each direction of a bidirectional transfer timed from its own slot's start (events of one device). */
static void bidir_directions(km_bench *b, p2p_ctx *c) {
  static const char *const names[2] = {"to_peer_gbps", "from_peer_gbps"};
  double t[2][KM_P2P_DIR_SAMPLES];
  c->time_directions = 1;
  for (int k = 0; k < KM_P2P_DIR_SAMPLES; k++) {
    KM_CUDA(b, enqueue_transfer(c, k, c->stream[0]));
    KM_CUDA(b, cudaStreamSynchronize(c->stream[0]));
    for (int d = 0; d < c->nhalves; d++) {
      p2p_half *h = &c->half[d];
      float ms = 0.0f;
      KM_CUDA(b, cudaEventElapsedTime(&ms, c->start[last_slot(c->method, h)], h->done));
      t[d][k] = ms * 1e-3;
    }
  }
  c->time_directions = 0;
  for (int d = 0; d < c->nhalves; d++)
    km_bench_counter(b, names[c->half[d].a], (double)km_p2p_moved_bytes(&c->half[d].plan) /
                                                 km_median_of(t[d], KM_P2P_DIR_SAMPLES) / 1e9);
}

/* The link's share: NVLink as NVML reports it, else the run GPU's PCIe link (hwloc), both per direction
 * and doubled for both directions at once. Says which in `how`. */
static void link_share(km_bench *b, const p2p_ctx *c, const km_peer_link *l, double gbps, char *how, size_t len) {
  double per_dir = l->nvlink_gbps;
  if (per_dir > 0) {
    snprintf(how, len, "%s", l->how);
  } else if (km_bench_link_gbps(b) > 0) {
    per_dir = km_bench_link_gbps(b);
    snprintf(how, len, "%s; PCIe link of GPU %d (hwloc) %.1f GB/s per direction", l->how, c->dev[0], per_dir);
  } else {
    snprintf(how, len, "%s; PCIe link unknown: no share of the link", l->how);
  }
  if (!(per_dir > 0)) return;
  km_bench_counter(b, "peer_link_gbps", per_dir * c->nhalves);
  km_bench_counter(b, "pct_of_peer_link", 100.0 * gbps / (per_dir * c->nhalves));
}

/* K+V bytes of one token over every layer of the --model shape, in its own dtype. */
static double model_bytes_per_token(km_bench *b) {
  const km_model *m = km_bench_model(b);
  return m ? km_model_kv_bytes_per_token(m, 0) : 0.0;
}

/* A link row counts the bytes that cross it once (the link rate and the peer copy count them so); a rank
 * sending to itself copies within one GPU's memory, read + written, the HBM ceiling's way. */
static km_work transfer_work(km_bench *b, const p2p_ctx *c) {
  km_work w;
  memset(&w, 0, sizeof w);
  const double bytes = moved_bytes(c);
  w.bytes_read = bytes;
  if (c->nslots == 1) w.bytes_written = bytes;
  const km_model *m = km_bench_model(b);
  w.tokens = km_p2p_tokens(bytes, model_bytes_per_token(b));
  w.layers = m && m->num_layers > 0 ? m->num_layers : 0;
  return w;
}

/* ---------------------------------------------------------------- latency-bandwidth fit over sizes */

/* A contiguous transfer of `bytes` per direction: the buffers are the largest point's, the rest prefixes. */
static void set_contiguous_bytes(void *arg, size_t bytes) {
  p2p_ctx *c = arg;
  for (int k = 0; k < c->nhalves; k++) {
    c->half[k].plan.block_bytes = bytes;
    if (c->half[k].sizes) c->half[k].sizes[0] = bytes;
  }
}

static int fit_series(km_bench *b, p2p_ctx *c, km_copy_fit *f) {
  cudaEvent_t ev[2];
  if (slot_event(b, c, 0, cudaEventDefault, &ev[0]) || slot_event(b, c, 0, cudaEventDefault, &ev[1])) return -1;
  return km_copy_fit_run(b, enqueue_transfer, c, set_contiguous_bytes, c->nhalves, c->stream[0], ev, f);
}

/* ---------------------------------------------------------------- the case */

/* Why a method cannot run between these GPUs or in this build, or NULL. */
static const char *method_unavailable(const p2p_params *p, const km_peer_link *l) {
  if (p->method == P2P_NCCL && !km_nccl_built(NULL))
    return "this build has no NCCL: nccl.h and libnccl were not found at configure time (see cmake's output; "
           "-DKM_NCCL_ROOT=DIR)";
  if (p->method == P2P_BATCH && !km_offload_batch_available())
    return "cudaMemcpyBatchAsync needs a CUDA runtime >= 12.8, this build's is older";
  if (p->dir != P2P_SELF && method_needs_access(p->method) && !l->access)
    return "the two GPUs cannot map each other's memory (no peer access): the SMs cannot reach the peer";
  return NULL;
}

/* Peer access both ways. It stays on for the rest of the process: turning it off unmaps every allocation
 * of the peer, and no other family touches a second GPU. */
static int enable_access(km_bench *b, int dev, int peer) {
  p2p_ctx devs;
  devs.dev[0] = dev;
  devs.dev[1] = peer;
  for (int s = 0; s < 2; s++) {
    cudaError_t e;
    ON_SLOT(&devs, s, e, cudaDeviceEnablePeerAccess(devs.dev[1 - s], 0));
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
      e = cudaSuccess;
    }
    KM_CUDA_OR_FAIL(b, e);
  }
  return 0;
}

static void describe(km_bench *b, const p2p_params *p, const p2p_ctx *c, const km_copy_fit *f, const char *how) {
  char nccl[32] = "";
  int v = 0;
  if (p->method == P2P_NCCL && km_nccl_built(&v)) /* codes since 2.9: major x 10000 + minor x 100 + patch */
    snprintf(nccl, sizeof nccl, "NCCL %d.%d.%d, ", v / 10000, v / 100 % 100, v % 100);
  if (p->dir == P2P_SELF) {
    km_bench_label(b, "GPU %d, %sa rank sending to itself; bytes read + written", c->dev[0], nccl);
    return;
  }
  char what[128];
  if (f)
    snprintf(what, sizeof what, "t = %.2f us + bytes / %.1f GB/s (r2 %.4f, one transfer each, 4KiB..64MiB)",
             f->alpha * 1e6, f->beta / 1e9, f->r2);
  else if (p->scattered)
    snprintf(what, sizeof what, "%zu blocks of %zu KiB, random pool order on both GPUs", p->nblocks,
             p->block_bytes / KIB);
  else
    snprintf(what, sizeof what, "contiguous");
  km_bench_label(b, "GPU %d <-> GPU %d, %s%s; %s", c->dev[0], c->dev[1], nccl, what, how);
}

static void run_transfer(km_bench *b, const void *params) {
  const p2p_params *p = params;
  km_peer_link link;
  memset(&link, 0, sizeof link);
  int peer = -1;
  if (p->dir != P2P_SELF) {
    if ((peer = pick_peer(b)) < 0) return;
    km_peer_link_query(km_bench_device_id(b), peer, &link);
  }
  const char *why = method_unavailable(p, &link);
  if (why) {
    km_bench_skip(b, "%s", why);
    return;
  }
  if (link.access && enable_access(b, km_bench_device_id(b), peer)) return;
  /* the reference first: a row that cannot hold it is skipped before any of its own work */
  const double ref = p->dir == P2P_SELF || km_bench_smoke(b) ? 0.0 : peer_copy_gbps(b, p->dir, peer);
  KM_RETURN_IF_STOPPED(b);
  p2p_ctx *c = km_bench_host_alloc(b, sizeof *c);
  const size_t block_bytes = p->fit ? KM_COPY_FIT_LARGEST : p->block_bytes;
  if (!c || ctx_setup(b, p, peer, block_bytes, c) || transfer_verify(b, c)) return;
  km_copy_fit f;
  const int fit = p->fit && !km_bench_smoke(b);
  if (fit && fit_series(b, c, &f)) return;
  const km_work w = transfer_work(b, c);
  const double t = km_bench_measure(b, enqueue_transfer, c, &w);
  if (t <= 0) return;
  const double bytes = moved_bytes(c), gbps = bytes / t / 1e9;
  /* both directions at once move two requests' tokens in t: the time per token is over all of them */
  const double us = km_p2p_us_per_token(bytes, t, model_bytes_per_token(b));
  if (us > 0) km_bench_counter(b, "us_per_token", us);
  if (fit) km_copy_fit_counters(b, &f);
  char how[320] = "";
  if (p->dir != P2P_SELF && !km_bench_smoke(b)) {
    if (ref > 0) {
      km_bench_counter(b, "peer_copy_gbps", ref);
      km_bench_counter(b, "pct_of_peer_copy", 100.0 * gbps / ref);
    }
    if (c->nhalves == 2) {
      km_bench_counter(b, "sum_gbps", gbps);
      bidir_directions(b, c);
    }
    link_share(b, c, &link, gbps, how, sizeof how);
  }
  describe(b, p, c, fit ? &f : NULL, how);
}

/* ---------------------------------------------------------------- the sweep */

#define P2P_Q KM_CASE_QUICK
#define P2P_R KM_CASE_REPRESENTATIVE

#define CONTIG_NAME(m_s, dir_s, size_s) "p2p/" m_s "/" dir_s "/" size_s

#define CONTIG(m_s, m_e, dir_s, dir_e, size_s, size_v, flags_, base_)                                          \
  {CONTIG_NAME(m_s, dir_s, size_s), "p2p", m_s ", " dir_s ": one contiguous " size_s " buffer per direction", \
   run_transfer, &(const p2p_params){m_e, dir_e, size_v, 1, 0, 0}, (flags_), base_}

/* cudaMemcpyPeerAsync's sizes; its 1 GiB rows are the ceilings every row's pct_of_peer_copy is of */
#define MEMCPY(dir_s, dir_e, size_s, size_v, flags_) \
  CONTIG("memcpy_peer", P2P_MEMCPY_PEER, dir_s, dir_e, size_s, size_v, flags_, NULL)
#define VERSUS_MEMCPY(m_s, m_e, dir_s, dir_e, size_s, size_v, flags_) \
  CONTIG(m_s, m_e, dir_s, dir_e, size_s, size_v, flags_, CONTIG_NAME("memcpy_peer", dir_s, size_s))

#define MEMCPY_SIZES(dir_s, dir_e, quick_)                                                                   \
  MEMCPY(dir_s, dir_e, "4KiB", 4 * KIB, quick_), MEMCPY(dir_s, dir_e, "16KiB", 16 * KIB, 0),                \
      MEMCPY(dir_s, dir_e, "64KiB", 64 * KIB, 0), MEMCPY(dir_s, dir_e, "256KiB", 256 * KIB, 0),             \
      MEMCPY(dir_s, dir_e, "1MiB", 1 * MIB, 0), MEMCPY(dir_s, dir_e, "4MiB", 4 * MIB, 0),                   \
      MEMCPY(dir_s, dir_e, "16MiB", 16 * MIB, 0), MEMCPY(dir_s, dir_e, "64MiB", 64 * MIB, 0),               \
      MEMCPY(dir_s, dir_e, "256MiB", 256 * MIB, 0), MEMCPY(dir_s, dir_e, "1GiB", 1 * GIB, 0)

#define FIT(m_s, m_e, dir_s, dir_e, flags_)                                                                  \
  {"p2p/fit/" m_s "/" dir_s, "p2p",                                                                          \
   "latency-bandwidth fit t = alpha + bytes/beta of single " m_s " transfers, " dir_s                        \
   "; axis: bytes per direction, 4 KiB..64 MiB in powers of 4 (bytes fitted: every direction's)",            \
   run_transfer, &(const p2p_params){m_e, dir_e, 0, 1, 0, 1}, (flags_), NULL}

#define SCATTER_BASE_NAME(dir_s, bs_s, n_s) "baseline/p2p/scatter/" dir_s "/memcpy_peer/" bs_s "/n" n_s

#define SCATTER_BASE(dir_s, dir_e, bs_s, bs_v, n_s, n_v, flags_)                                             \
  {SCATTER_BASE_NAME(dir_s, bs_s, n_s), "p2p",                                                               \
   dir_s ": " n_s " scattered " bs_s " KV blocks, one cudaMemcpyPeerAsync per block", run_transfer,          \
   &(const p2p_params){P2P_MEMCPY_PEER, dir_e, bs_v, n_v, 1, 0}, KM_CASE_BASELINE | (flags_), NULL}

#define SCATTER(dir_s, dir_e, m_s, m_e, bs_s, bs_v, n_s, n_v, flags_)                                        \
  {"p2p/scatter/" dir_s "/" m_s "/" bs_s "/n" n_s, "p2p", dir_s ": " n_s " scattered " bs_s " KV blocks by " m_s, \
   run_transfer, &(const p2p_params){m_e, dir_e, bs_v, n_v, 1, 0}, (flags_), SCATTER_BASE_NAME(dir_s, bs_s, n_s)}

/* One block size, every method, one direction: 64 MiB per direction at every block size. The 32 KiB block
 * is 16 tokens x 8 KV heads x 128 x bf16, one layer's K or V of qwen3-8b's block. */
#define SCATTER_ALL(dir_s, dir_e, bs_s, bs_v, n_s, n_v, quick_, rep_)                                        \
  SCATTER_BASE(dir_s, dir_e, bs_s, bs_v, n_s, n_v, quick_),                                                  \
      SCATTER(dir_s, dir_e, "batch_async", P2P_BATCH, bs_s, bs_v, n_s, n_v, quick_),                          \
      SCATTER(dir_s, dir_e, "cub_batched", P2P_CUB, bs_s, bs_v, n_s, n_v, quick_),                            \
      SCATTER(dir_s, dir_e, "sm_pull", P2P_SM_PULL, bs_s, bs_v, n_s, n_v, (quick_) | (rep_)),                 \
      SCATTER(dir_s, dir_e, "sm_push", P2P_SM_PUSH, bs_s, bs_v, n_s, n_v, quick_),                            \
      SCATTER(dir_s, dir_e, "staging", P2P_STAGING, bs_s, bs_v, n_s, n_v, quick_),                            \
      SCATTER(dir_s, dir_e, "nccl", P2P_NCCL, bs_s, bs_v, n_s, n_v, rep_)

#define SELF(size_s, size_v, flags_)                                                                         \
  {"p2p/nccl_self/" size_s, "p2p", "NCCL send/recv of one contiguous " size_s " buffer by a rank to itself (one GPU)", \
   run_transfer, &(const p2p_params){P2P_NCCL, P2P_SELF, size_v, 1, 0, 0}, (flags_), NULL}

/* NCCL rows stay out of --quick: compute-sanitizer runs every quick case, and NCCL's own kernels and
 * allocations are not this suite's to judge. */
static const km_case p2p_rows[] = {
    MEMCPY_SIZES("to_peer", P2P_TO_PEER, P2P_Q),
    MEMCPY_SIZES("from_peer", P2P_FROM_PEER, 0),
    MEMCPY("bidir", P2P_BIDIR, "64KiB", 64 * KIB, P2P_Q),
    MEMCPY("bidir", P2P_BIDIR, "4MiB", 4 * MIB, 0),
    MEMCPY("bidir", P2P_BIDIR, "64MiB", 64 * MIB, 0),
    MEMCPY("bidir", P2P_BIDIR, "1GiB", 1 * GIB, 0),
    VERSUS_MEMCPY("sm_pull", P2P_SM_PULL, "to_peer", P2P_TO_PEER, "64KiB", 64 * KIB, P2P_Q),
    VERSUS_MEMCPY("sm_pull", P2P_SM_PULL, "to_peer", P2P_TO_PEER, "4MiB", 4 * MIB, 0),
    VERSUS_MEMCPY("sm_pull", P2P_SM_PULL, "to_peer", P2P_TO_PEER, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("sm_pull", P2P_SM_PULL, "to_peer", P2P_TO_PEER, "1GiB", 1 * GIB, 0),
    VERSUS_MEMCPY("sm_pull", P2P_SM_PULL, "from_peer", P2P_FROM_PEER, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("sm_pull", P2P_SM_PULL, "bidir", P2P_BIDIR, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("sm_push", P2P_SM_PUSH, "to_peer", P2P_TO_PEER, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("sm_push", P2P_SM_PUSH, "to_peer", P2P_TO_PEER, "1GiB", 1 * GIB, 0),
    VERSUS_MEMCPY("sm_push", P2P_SM_PUSH, "bidir", P2P_BIDIR, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "64KiB", 64 * KIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "1MiB", 1 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "4MiB", 4 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "16MiB", 16 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "256MiB", 256 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, "1GiB", 1 * GIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "from_peer", P2P_FROM_PEER, "64MiB", 64 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "bidir", P2P_BIDIR, "4MiB", 4 * MIB, 0),
    VERSUS_MEMCPY("nccl", P2P_NCCL, "bidir", P2P_BIDIR, "64MiB", 64 * MIB, 0),
    FIT("memcpy_peer", P2P_MEMCPY_PEER, "to_peer", P2P_TO_PEER, P2P_Q),
    FIT("memcpy_peer", P2P_MEMCPY_PEER, "from_peer", P2P_FROM_PEER, 0),
    FIT("memcpy_peer", P2P_MEMCPY_PEER, "bidir", P2P_BIDIR, 0),
    FIT("sm_pull", P2P_SM_PULL, "to_peer", P2P_TO_PEER, 0),
    FIT("nccl", P2P_NCCL, "to_peer", P2P_TO_PEER, 0),
    FIT("nccl", P2P_NCCL, "bidir", P2P_BIDIR, 0),
    SCATTER_ALL("to_peer", P2P_TO_PEER, "16KiB", 16 * KIB, "4096", 4096, 0, 0),
    SCATTER_ALL("to_peer", P2P_TO_PEER, "32KiB", 32 * KIB, "2048", 2048, P2P_Q, P2P_R),
    SCATTER_ALL("to_peer", P2P_TO_PEER, "128KiB", 128 * KIB, "512", 512, 0, 0),
    SCATTER_ALL("to_peer", P2P_TO_PEER, "2MiB", 2 * MIB, "32", 32, 0, 0),
    SCATTER_ALL("from_peer", P2P_FROM_PEER, "32KiB", 32 * KIB, "2048", 2048, 0, 0),
    SCATTER_ALL("bidir", P2P_BIDIR, "32KiB", 32 * KIB, "2048", 2048, 0, 0),
    /* one GPU: NCCL's rank sending to itself */
    SELF("4MiB", 4 * MIB, 0),
    SELF("64MiB", 64 * MIB, P2P_R),
    SELF("1GiB", 1 * GIB, 0),
    {"p2p/fit/nccl_self", "p2p",
     "latency-bandwidth fit t = alpha + bytes/beta of single NCCL self send/recv transfers on one GPU; axis: "
     "bytes, 4 KiB..64 MiB in powers of 4",
     run_transfer, &(const p2p_params){P2P_NCCL, P2P_SELF, 0, 1, 0, 1}, 0, NULL},
};

const km_case_table km_p2p_table = {p2p_rows, sizeof p2p_rows / sizeof p2p_rows[0]};
