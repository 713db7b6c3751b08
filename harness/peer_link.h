/* The path between two GPUs of this host as the driver describes it: CUDA's peer attributes, and the
 * NVLinks between the two from NVML (the driver's libnvidia-ml.so.1, loaded at run time, so neither the
 * build nor a machine without a driver needs it). Peer-to-peer rows take their share of the link from here. */
#ifndef KM_PEER_LINK_H
#define KM_PEER_LINK_H

#include <stddef.h>

/* NVML_NVLINK_MAX_LINKS is 18 today; room for more. */
enum { KM_NVLINK_MAX_LINKS = 32 };

/* One NVLink of a GPU as NVML reports it. */
typedef struct km_nvlink_end {
  int active;                   /* nvmlDeviceGetNvLinkState */
  int to_switch;                /* the remote end is an NVSwitch (nvmlDeviceGetNvLinkRemoteDeviceType) */
  unsigned domain, bus, device; /* the remote end's PCI address */
} km_nvlink_end;

/* Links among ends[0..n) that reach the GPU at domain:bus:device: active, and ending at that GPU or at an
 * NVSwitch (every GPU on the switch fabric reaches every other). *via_switch (when not NULL) is set to 1
 * when a counted link ends at a switch, else 0. */
int km_nvlink_links_to(const km_nvlink_end *ends, int n, unsigned domain, unsigned bus, unsigned device,
                       int *via_switch);

typedef struct km_peer_link {
  int access;         /* each GPU can map the other's memory (cudaDeviceCanAccessPeer both ways) */
  int perf_rank;      /* cudaDevP2PAttrPerformanceRank: relative, lower is faster; -1 unknown */
  int atomics;        /* cudaDevP2PAttrNativeAtomicSupported */
  int nvlinks;        /* NVLinks that join the two: the smaller of the two GPUs' counts; 0 none or unknown */
  int via_switch;     /* those links go through NVSwitch */
  double link_mbps;   /* the slower GPU's common per-link speed (NVML, MB/s, one direction) */
  double nvlink_gbps; /* nvlinks x link_mbps in GB/s, one direction; 0 when not known */
  char how[200];      /* what the figure is and where it came from, or why there is none */
} km_peer_link;

/* Fill *out for CUDA devices dev and peer. Never fails: what could not be read is 0 / -1 and said in how. */
void km_peer_link_query(int dev, int peer, km_peer_link *out);

#endif
