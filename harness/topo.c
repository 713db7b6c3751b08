/* hwloc topology for the run: the GPU is found as a PCI device by its bus id; its nearest NUMA node
 * is the first ancestor with a memory child (hwloc 2 attaches NUMA nodes as memory children). */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct km_topo {
  hwloc_topology_t topo;
  hwloc_obj_t pci;        /* the GPU, NULL when not found */
  hwloc_obj_t near_numa;  /* NULL unknown */
  hwloc_obj_t far_numa;   /* NULL when single */
};

static hwloc_obj_t find_pci(hwloc_topology_t topo, const char *bus_id) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (!bus_id || sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return NULL;
  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o; o = hwloc_get_next_pcidev(topo, o)) {
    const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
    if (p->domain == dom && p->bus == bus && p->dev == dev && p->func == fn) return o;
  }
  return NULL;
}

static hwloc_obj_t nearest_numa(hwloc_topology_t topo, hwloc_obj_t pci) {
  hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
  for (; anc; anc = anc->parent) {
    if (anc->memory_arity > 0 && anc->memory_first_child) {
      hwloc_obj_t m = anc->memory_first_child;
      while (m && m->type != HWLOC_OBJ_NUMANODE) m = m->memory_first_child;
      if (m) return m;
    }
  }
  return hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, 0);
}

/* The node farthest from `near` by hwloc's distance matrix when there is one, else the last other node. */
static hwloc_obj_t farthest_numa(hwloc_topology_t topo, hwloc_obj_t near) {
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  if (n < 2 || !near) return NULL;
  hwloc_obj_t best = NULL;
  hwloc_uint64_t best_d = 0;
  struct hwloc_distances_s *dist = NULL;
  unsigned nr = 1;
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &dist, HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
      nr == 1) {
    int i = hwloc_distances_obj_index(dist, near);
    for (unsigned j = 0; i >= 0 && j < dist->nbobjs; j++) {
      hwloc_uint64_t d = dist->values[(unsigned)i * dist->nbobjs + j];
      if (dist->objs[j] != near && (!best || d > best_d)) best = dist->objs[j], best_d = d;
    }
    hwloc_distances_release(topo, dist);
  }
  if (best) return best;
  for (int i = n - 1; i >= 0; i--) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
    if (o != near) return o;
  }
  return NULL;
}

struct km_topo *km_topo_load(const char *pci_bus_id, char *err, size_t errlen) {
  struct km_topo *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(err, errlen, "out of memory loading the hwloc topology");
    return NULL;
  }
  if (hwloc_topology_init(&t->topo) != 0) {
    snprintf(err, errlen, "hwloc_topology_init failed");
    free(t);
    return NULL;
  }
  hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t->topo) != 0) {
    snprintf(err, errlen, "hwloc_topology_load failed");
    hwloc_topology_destroy(t->topo);
    free(t);
    return NULL;
  }
  t->pci = find_pci(t->topo, pci_bus_id);
  t->near_numa = nearest_numa(t->topo, t->pci);
  t->far_numa = farthest_numa(t->topo, t->near_numa);
  return t;
}

void km_topo_free(struct km_topo *t) {
  if (!t) return;
  hwloc_topology_destroy(t->topo);
  free(t);
}

hwloc_topology_t km_topo_hwloc(struct km_topo *t) { return t->topo; }

int km_topo_numa_count(const struct km_topo *t) {
  int n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);
  return n > 0 ? n : 1;
}

int km_topo_gpu_near_node(const struct km_topo *t) { return t->near_numa ? (int)t->near_numa->os_index : -1; }
int km_topo_gpu_far_node(const struct km_topo *t) { return t->far_numa ? (int)t->far_numa->os_index : -1; }

hwloc_const_cpuset_t km_topo_gpu_cpuset(const struct km_topo *t) {
  if (t->pci) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->topo, t->pci);
    if (anc && anc->cpuset) return anc->cpuset;
  }
  return t->near_numa ? t->near_numa->cpuset : NULL;
}

double km_topo_link_gbps(const struct km_topo *t) {
  /* hwloc reports the link on the device or, for some drivers, only on the bridge above it */
  for (hwloc_obj_t o = t->pci; o && o->type != HWLOC_OBJ_PACKAGE && o->type != HWLOC_OBJ_MACHINE; o = o->parent) {
    if (o->type == HWLOC_OBJ_PCI_DEVICE && o->attr->pcidev.linkspeed > 0) return o->attr->pcidev.linkspeed;
    if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI &&
        o->attr->bridge.upstream.pci.linkspeed > 0)
      return o->attr->bridge.upstream.pci.linkspeed;
  }
  return 0.0;
}

void km_topo_cpuset_string(const struct km_topo *t, char *buf, size_t len) {
  hwloc_const_cpuset_t cs = km_topo_gpu_cpuset(t);
  if (!cs) {
    snprintf(buf, len, "unknown");
    return;
  }
  hwloc_bitmap_list_snprintf(buf, len, cs);
}
