/* Host topology from hwloc: NUMA nodes, the GPU's nearest node and cpuset, and its PCIe link.
 * Owned by the run context; micro cases reach it through km_bench_topo(). */
#ifndef KM_TOPO_H
#define KM_TOPO_H

#include <stddef.h>

#include <hwloc.h>

struct km_topo; /* opaque: owns an hwloc_topology_t */

/* Load the topology and find the PCI device with this bus id ("0000:00:06.0"); NULL pci_bus_id: none. */
struct km_topo *km_topo_load(const char *pci_bus_id, char *err, size_t errlen);
void km_topo_free(struct km_topo *t);

hwloc_topology_t km_topo_hwloc(struct km_topo *t);
int km_topo_numa_count(const struct km_topo *t);
/* os index of the NUMA node nearest the GPU (-1 unknown), and the farthest other one (-1 when single) */
int km_topo_gpu_near_node(const struct km_topo *t);
int km_topo_gpu_far_node(const struct km_topo *t);
hwloc_const_cpuset_t km_topo_gpu_cpuset(const struct km_topo *t); /* NULL unknown */
double km_topo_link_gbps(const struct km_topo *t); /* PCIe link speed from hwloc, GB/s; 0 unknown */
/* "0-15" style list of the GPU's local cpuset, into buf. */
void km_topo_cpuset_string(const struct km_topo *t, char *buf, size_t len);

#endif
