/* NUMA placement of host copy buffers. Pinned memory comes from cudaHostAlloc while the thread's
 * memory policy is bound to the node; registered and pageable memory come from hwloc_alloc_membind on
 * the node. Each buffer then records where hwloc finds its first pages, so a row can say so. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include "host_mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "topo.h"

/* Why two placement paths: the issue defines pinned as cudaHostAlloc, whose pages the driver
 * allocates and faults inside the call, in the calling thread, so binding the thread's memory policy
 * around the call is the only way to steer them (and it is what `numactl --membind` does to a whole
 * process). Registered memory is our own allocation, so hwloc_alloc_membind places it directly,
 * and cudaHostRegister then pins the pages where they already are. */

/* Bytes read back to find a buffer's node: hwloc asks the kernel page by page, so a prefix keeps the
 * check cheap for 1 GiB buffers; the whole buffer comes from one allocation under one policy. */
#define KM_HOST_PROBE_BYTES ((size_t)1 << 20)

const char *km_host_kind_name(km_host_kind kind) {
  switch (kind) {
  case KM_HOST_PINNED: return "pinned";
  case KM_HOST_REGISTERED: return "registered";
  case KM_HOST_PAGEABLE: return "pageable";
  default: return "unknown";
  }
}

int km_host_bind_thread(struct km_topo *t, char *err, size_t errlen) {
  hwloc_const_cpuset_t cs = t ? km_topo_gpu_cpuset(t) : NULL;
  if (!cs) return 1;
  if (hwloc_set_cpubind(km_topo_hwloc(t), cs, HWLOC_CPUBIND_THREAD) != 0) {
    snprintf(err, errlen, "hwloc_set_cpubind to the GPU's cpuset failed: %s", strerror(errno));
    return -1;
  }
  return 0;
}

static int node_of(hwloc_topology_t topo, const void *p, size_t bytes) {
  if (!topo || !p || bytes == 0) return -1;
  hwloc_nodeset_t ns = hwloc_bitmap_alloc();
  if (!ns) return -1;
  size_t len = bytes < KM_HOST_PROBE_BYTES ? bytes : KM_HOST_PROBE_BYTES;
  int node = -1;
  if (hwloc_get_area_memlocation(topo, p, len, ns, HWLOC_MEMBIND_BYNODESET) == 0 && hwloc_bitmap_weight(ns) == 1)
    node = hwloc_bitmap_first(ns);
  hwloc_bitmap_free(ns);
  return node;
}

/* cudaHostAlloc with the thread's memory policy bound to `node` for the duration of the call. */
static int alloc_pinned(hwloc_topology_t topo, int node, km_host_buf *out, char *err, size_t errlen) {
  hwloc_nodeset_t want = NULL, old = NULL;
  hwloc_membind_policy_t old_policy = HWLOC_MEMBIND_DEFAULT;
  const int flags = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;
  int bound = 0;
  if (topo && node >= 0) {
    want = hwloc_bitmap_alloc();
    old = hwloc_bitmap_alloc();
    if (want && old) {
      hwloc_bitmap_only(want, (unsigned)node);
      bound = hwloc_get_membind(topo, old, &old_policy, flags) == 0 &&
              hwloc_set_membind(topo, want, HWLOC_MEMBIND_BIND, flags) == 0;
    }
  }
  cudaError_t e = cudaHostAlloc(&out->ptr, out->bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (bound) hwloc_set_membind(topo, old, old_policy, flags);
  hwloc_bitmap_free(want);
  hwloc_bitmap_free(old);
  if (e != cudaSuccess) {
    out->ptr = NULL;
    snprintf(err, errlen, "cudaHostAlloc of %zu bytes failed: %s", out->bytes, cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

/* Our own page-aligned allocation on `node` (hwloc_alloc_membind), or plain when there is no node. */
static int alloc_own(hwloc_topology_t topo, int node, km_host_buf *out, char *err, size_t errlen) {
  if (topo && node >= 0) {
    hwloc_nodeset_t want = hwloc_bitmap_alloc();
    if (want) {
      hwloc_bitmap_only(want, (unsigned)node);
      /* without HWLOC_MEMBIND_STRICT hwloc falls back to an unbound allocation where binding is not
       * supported; node_found then tells the truth */
      out->ptr = hwloc_alloc_membind(topo, out->bytes, want, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
      hwloc_bitmap_free(want);
      if (out->ptr) {
        out->hwloc = topo;
        return 0;
      }
    }
  }
  if (posix_memalign(&out->ptr, 4096, out->bytes) != 0) {
    out->ptr = NULL;
    snprintf(err, errlen, "allocating %zu bytes of host memory failed", out->bytes);
    return -1;
  }
  return 0;
}

int km_host_alloc(struct km_topo *t, km_host_kind kind, int node, size_t bytes, km_host_buf *out, char *err,
                  size_t errlen) {
  memset(out, 0, sizeof *out);
  out->bytes = bytes;
  out->kind = kind;
  out->node_wanted = t ? node : -1;
  out->node_found = -1;
  if (bytes == 0 || (int)kind < 0 || (int)kind >= (int)KM_HOST_KIND_COUNT) {
    snprintf(err, errlen, "host buffer of %zu bytes and kind %d: need bytes > 0 and a known kind", bytes, (int)kind);
    return -1;
  }
  hwloc_topology_t topo = t ? km_topo_hwloc(t) : NULL;
  int rc = kind == KM_HOST_PINNED ? alloc_pinned(topo, out->node_wanted, out, err, errlen)
                                  : alloc_own(topo, out->node_wanted, out, err, errlen);
  if (rc != 0) return -1;
  if (kind == KM_HOST_REGISTERED) {
    cudaError_t e = cudaHostRegister(out->ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e != cudaSuccess) {
      snprintf(err, errlen, "cudaHostRegister of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
      km_host_free(out);
      return -1;
    }
    out->registered = 1;
  } else if (kind == KM_HOST_PAGEABLE) {
    /* fault every page in now, under the node policy, so no copy pays first-touch time */
    memset(out->ptr, 0, bytes);
  }
  out->node_found = node_of(topo, out->ptr, bytes);
  return 0;
}

void km_host_free(km_host_buf *buf) {
  if (!buf || !buf->ptr) return;
  if (buf->kind == KM_HOST_PINNED) {
    cudaFreeHost(buf->ptr);
  } else {
    if (buf->registered) cudaHostUnregister(buf->ptr);
    if (buf->hwloc)
      hwloc_free(buf->hwloc, buf->ptr, buf->bytes);
    else
      free(buf->ptr);
  }
  buf->ptr = NULL;
  buf->registered = 0;
  buf->hwloc = NULL;
}
