/* Host buffers for host<->device copies, placed on a chosen NUMA node with hwloc: pinned
 * (cudaHostAlloc), registered (cudaHostRegister on our own allocation) and pageable; and binding the
 * benchmark thread to the CPUs next to the GPU. */
#ifndef KM_HOST_MEM_H
#define KM_HOST_MEM_H

#include <stddef.h>

#include <hwloc.h>

struct km_topo;

typedef enum km_host_kind {
  KM_HOST_PINNED = 0, /* cudaHostAlloc (portable, mapped) */
  KM_HOST_REGISTERED, /* our own allocation, then cudaHostRegister (portable, mapped) */
  KM_HOST_PAGEABLE,   /* ordinary memory: the driver stages it through its own pinned buffers */
  KM_HOST_KIND_COUNT
} km_host_kind;

typedef struct km_host_buf {
  void *ptr;
  size_t bytes;
  km_host_kind kind;
  int node_wanted;        /* NUMA node os index asked for; -1: none (no topology) */
  int node_found;         /* node holding the first pages as hwloc reads them; -1: unknown */
  hwloc_topology_t hwloc; /* set when hwloc_alloc_membind made ptr (hwloc_free releases it) */
  int registered;         /* cudaHostRegister succeeded on ptr */
} km_host_buf;

const char *km_host_kind_name(km_host_kind kind); /* "pinned", "registered", "pageable" */

/* Bind the calling thread to the GPU's local cpuset. 0 bound; 1 nothing to bind to (no topology or
 * cpuset unknown); -1 hwloc refused (err says why). */
int km_host_bind_thread(struct km_topo *t, char *err, size_t errlen);

/* Allocate `bytes` of the kind on NUMA node `node` (os index; -1 or t == NULL: no placement).
 * 0 ok; -1 with one line in err (nothing is left allocated). */
int km_host_alloc(struct km_topo *t, km_host_kind kind, int node, size_t bytes, km_host_buf *out, char *err,
                  size_t errlen);
void km_host_free(km_host_buf *buf); /* safe on a zeroed or already freed buffer */

#endif
