/* Peer attributes from CUDA and NVLinks from NVML loaded at run time (see peer_link.h). Only the few
 * documented NVML entry points used are declared here, with their ABI as nvml.h gives it. */
#include "peer_link.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

typedef int nvml_return;          /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_dev_st *nvml_dev; /* nvmlDevice_t */

typedef struct nvml_pci {         /* nvmlPciInfo_t */
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} nvml_pci;

typedef struct nvml_field {       /* nvmlFieldValue_t */
  unsigned field_id, scope_id;
  long long timestamp, latency_us;
  int value_type;                 /* nvmlValueType_t */
  nvml_return ret;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
  } value;
} nvml_field;

enum {
  NVML_FIELD_NVLINK_SPEED_MBPS_COMMON = 90, /* NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON */
  NVML_FIELD_NVLINK_LINK_COUNT = 91,        /* NVML_FI_DEV_NVLINK_LINK_COUNT */
  NVML_VALUE_UNSIGNED_INT = 1,
  NVML_FEATURE_ENABLED = 1,
  NVML_NVLINK_REMOTE_SWITCH = 2, /* NVML_NVLINK_DEVICE_TYPE_SWITCH */
  NVML_NVLINK_MAX_LINKS_TODAY = 18, /* NVML_NVLINK_MAX_LINKS */
};

typedef struct nvml_api {
  void *lib;
  nvml_return (*init)(void);
  nvml_return (*shutdown)(void);
  nvml_return (*by_bus_id)(const char *, nvml_dev *);
  nvml_return (*fields)(nvml_dev, int, nvml_field *);
  nvml_return (*link_state)(nvml_dev, unsigned, int *);
  nvml_return (*remote_pci)(nvml_dev, unsigned, nvml_pci *);
  nvml_return (*remote_type)(nvml_dev, unsigned, int *); /* absent from old drivers: PCI match only */
} nvml_api;

int km_nvlink_links_to(const km_nvlink_end *ends, int n, unsigned domain, unsigned bus, unsigned device,
                       int *via_switch) {
  int links = 0, switched = 0;
  for (int i = 0; i < n; i++) {
    if (!ends[i].active) continue;
    if (ends[i].to_switch) {
      links++;
      switched = 1;
    } else if (ends[i].domain == domain && ends[i].bus == bus && ends[i].device == device) {
      links++;
    }
  }
  if (via_switch) *via_switch = switched;
  return links;
}

static int nvml_load(nvml_api *a, char *why, size_t len) {
  memset(a, 0, sizeof *a);
  a->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!a->lib) {
    snprintf(why, len, "NVML (libnvidia-ml.so.1) not loadable");
    return -1;
  }
  *(void **)&a->init = dlsym(a->lib, "nvmlInit_v2");
  *(void **)&a->shutdown = dlsym(a->lib, "nvmlShutdown");
  *(void **)&a->by_bus_id = dlsym(a->lib, "nvmlDeviceGetHandleByPciBusId_v2");
  *(void **)&a->fields = dlsym(a->lib, "nvmlDeviceGetFieldValues");
  *(void **)&a->link_state = dlsym(a->lib, "nvmlDeviceGetNvLinkState");
  *(void **)&a->remote_pci = dlsym(a->lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  *(void **)&a->remote_type = dlsym(a->lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
  if (!a->init || !a->shutdown || !a->by_bus_id || !a->fields || !a->link_state || !a->remote_pci) {
    snprintf(why, len, "NVML lacks the NVLink queries");
  } else if (a->init() != 0) {
    snprintf(why, len, "nvmlInit failed");
  } else {
    return 0;
  }
  dlclose(a->lib);
  a->lib = NULL;
  return -1;
}

static void nvml_unload(nvml_api *a) {
  if (!a->lib) return;
  a->shutdown();
  dlclose(a->lib);
  a->lib = NULL;
}

static unsigned field_uint(const nvml_api *a, nvml_dev d, unsigned id) {
  nvml_field f;
  memset(&f, 0, sizeof f);
  f.field_id = id;
  if (a->fields(d, 1, &f) != 0 || f.ret != 0 || f.value_type != NVML_VALUE_UNSIGNED_INT) return 0;
  return f.value.ui;
}

/* One GPU's NVLinks. Returns how many ends were read. */
static int read_ends(const nvml_api *a, nvml_dev d, km_nvlink_end *ends) {
  unsigned count = field_uint(a, d, NVML_FIELD_NVLINK_LINK_COUNT);
  if (count == 0) count = NVML_NVLINK_MAX_LINKS_TODAY; /* a driver without the field: ask each link */
  if (count > KM_NVLINK_MAX_LINKS) count = KM_NVLINK_MAX_LINKS;
  for (unsigned l = 0; l < count; l++) {
    km_nvlink_end *e = &ends[l];
    memset(e, 0, sizeof *e);
    int state = 0, type = -1;
    nvml_pci pci;
    memset(&pci, 0, sizeof pci);
    e->active = a->link_state(d, l, &state) == 0 && state == NVML_FEATURE_ENABLED;
    if (!e->active) continue;
    if (a->remote_type && a->remote_type(d, l, &type) == 0) e->to_switch = type == NVML_NVLINK_REMOTE_SWITCH;
    if (!e->to_switch && a->remote_pci(d, l, &pci) == 0) {
      e->domain = pci.domain;
      e->bus = pci.bus;
      e->device = pci.device;
    } else if (!e->to_switch) {
      e->active = 0; /* an end we cannot place is not counted */
    }
  }
  return (int)count;
}

static int pci_of(int dev, unsigned addr[3]) {
  int v[3] = {0, 0, 0};
  const enum cudaDeviceAttr attrs[3] = {cudaDevAttrPciDomainId, cudaDevAttrPciBusId, cudaDevAttrPciDeviceId};
  for (int i = 0; i < 3; i++)
    if (cudaDeviceGetAttribute(&v[i], attrs[i], dev) != cudaSuccess) return -1;
  for (int i = 0; i < 3; i++) addr[i] = (unsigned)v[i];
  return 0;
}

/* NVLinks between dev and peer: each GPU's links that reach the other, the smaller count (a switch
 * fabric can be wired unevenly), times the slower GPU's per-link speed. */
static void query_nvlink(int dev, int peer, km_peer_link *out) {
  const int gpus[2] = {dev, peer};
  unsigned addr[2][3];
  nvml_dev h[2] = {NULL, NULL};
  nvml_api a;
  char why[96];
  if (nvml_load(&a, why, sizeof why) != 0) {
    snprintf(out->how, sizeof out->how, "%s: no NVLink figure", why);
    return;
  }
  for (int g = 0; g < 2; g++) {
    char bus_id[32];
    if (pci_of(gpus[g], addr[g]) != 0 || cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, gpus[g]) != cudaSuccess ||
        a.by_bus_id(bus_id, &h[g]) != 0) {
      cudaGetLastError();
      snprintf(out->how, sizeof out->how, "NVML does not know GPU %d: no NVLink figure", gpus[g]);
      nvml_unload(&a);
      return;
    }
  }
  int links[2], switched[2];
  double mbps[2];
  for (int g = 0; g < 2; g++) {
    km_nvlink_end ends[KM_NVLINK_MAX_LINKS];
    const unsigned *other = addr[1 - g];
    int n = read_ends(&a, h[g], ends);
    links[g] = km_nvlink_links_to(ends, n, other[0], other[1], other[2], &switched[g]);
    mbps[g] = field_uint(&a, h[g], NVML_FIELD_NVLINK_SPEED_MBPS_COMMON);
  }
  nvml_unload(&a);
  out->nvlinks = links[0] < links[1] ? links[0] : links[1];
  out->via_switch = switched[0] && switched[1];
  out->link_mbps = mbps[0] < mbps[1] ? mbps[0] : mbps[1];
  if (out->nvlinks > 0 && out->link_mbps > 0) {
    out->nvlink_gbps = out->nvlinks * out->link_mbps / 1e3;
    snprintf(out->how, sizeof out->how, "NVLink (NVML): %d links%s x %.2f GB/s = %.1f GB/s per direction",
             out->nvlinks, out->via_switch ? " through NVSwitch" : "", out->link_mbps / 1e3, out->nvlink_gbps);
  } else if (out->nvlinks > 0) {
    out->nvlinks = 0;
    snprintf(out->how, sizeof out->how, "NVML reports NVLinks but no link speed: no NVLink figure");
  } else {
    snprintf(out->how, sizeof out->how, "no active NVLink joins GPU %d and GPU %d (NVML)", dev, peer);
  }
}

void km_peer_link_query(int dev, int peer, km_peer_link *out) {
  memset(out, 0, sizeof *out);
  out->perf_rank = -1;
  int ab = 0, ba = 0, v = 0;
  if (cudaDeviceCanAccessPeer(&ab, dev, peer) == cudaSuccess && cudaDeviceCanAccessPeer(&ba, peer, dev) == cudaSuccess)
    out->access = ab && ba;
  if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrPerformanceRank, dev, peer) == cudaSuccess) out->perf_rank = v;
  if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, dev, peer) == cudaSuccess) out->atomics = v;
  cudaGetLastError(); /* a failed query above is said by its field, not left for the next call */
  query_nvlink(dev, peer, out);
}
