/* Device, host and build description. Clocks come from device attributes (CUDA 13 dropped them from
 * cudaDeviceProp); the theoretical bandwidth assumes double data rate, as HBM and GDDR both report. */
#include "context.h"

#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "ceiling.h"
#include "host_cpu.h"
#include "nvml.h"
#include "topo.h"

const char *km_build_revision(void) { return KM_GIT_REV; }

static int attr(enum cudaDeviceAttr a, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) return 0;
  return v;
}

int km_gpu_info_query(int device, km_gpu_info *g, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  struct cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "cudaGetDeviceProperties(%d) failed: %s", device, cudaGetErrorString(e));
    return -1;
  }
  snprintf(g->name, sizeof g->name, "%s", p.name);
  g->cc_major = p.major;
  g->cc_minor = p.minor;
  g->sms = p.multiProcessorCount;
  g->sm_clock_mhz = attr(cudaDevAttrClockRate, device) / 1000;
  g->mem_clock_mhz = attr(cudaDevAttrMemoryClockRate, device) / 1000;
  g->bus_width_bits = attr(cudaDevAttrGlobalMemoryBusWidth, device);
  g->theoretical_gbps = 2.0 * g->mem_clock_mhz * 1e6 * (g->bus_width_bits / 8.0) / 1e9;
  g->mem_gib = p.totalGlobalMem / 1073741824.0;
  g->l2_bytes = p.l2CacheSize;
  g->ecc = attr(cudaDevAttrEccEnabled, device);
  cudaDriverGetVersion(&g->driver_version);
  cudaRuntimeGetVersion(&g->runtime_version);
  if (cudaDeviceGetPCIBusId(g->pci_bus_id, sizeof g->pci_bus_id, device) != cudaSuccess)
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "unknown");
  return 0;
}

static void version_string(int v, char *buf, size_t len) { snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10); }

static void print_ceilings(const km_ceiling_report *c, double theoretical, FILE *out) {
  const struct { const char *cls; const km_ceiling_figure *f; } all[] = {
      {"copy", &c->copy}, {"read", &c->read}, {"write", &c->write}};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    const km_ceiling_figure *f = all[i].f;
    if (f->gbps > 0)
      fprintf(out, "ceiling  %-5s %6.0f GB/s (%.1f%% of theoretical, CV %.2f%%) %s, %zu MiB, bytes read + written\n",
              all[i].cls, f->gbps, theoretical > 0 ? 100.0 * f->gbps / theoretical : 0.0, 100.0 * f->cv,
              f->method, c->bytes >> 20);
    else
      fprintf(out, "ceiling  %-5s none: no %s kernel declared; %s rows get no class share\n", all[i].cls, all[i].cls,
              all[i].cls);
  }
  if (c->h2d.gbps > 0)
    fprintf(out, "ceiling  host   %.2f GB/s H2D, %.2f GB/s D2H: contiguous pinned %zu MiB copies\n", c->h2d.gbps,
            c->d2h.gbps, KM_CEILING_HOST_BYTES >> 20);
}

void km_context_print_banner(const km_gpu_info *g, struct km_nvml *nvml, const km_ceiling_report *ceilings,
                             struct km_topo *topo, const km_host_cpu *cpu, FILE *out) {
  char drv[16], rt[16], cpus[128] = "unknown", line[768];
  version_string(g->driver_version, drv, sizeof drv);
  version_string(g->runtime_version, rt, sizeof rt);
  fprintf(out, "kvmicro %s\n", km_build_revision());
  fprintf(out, "GPU      %s (cc %d.%d, %d SMs, %d MHz SM, %d MHz memory max), PCI %s\n", g->name, g->cc_major,
          g->cc_minor, g->sms, g->sm_clock_mhz, g->mem_clock_mhz, g->pci_bus_id);
  fprintf(out, "memory   %.1f GiB, %d-bit bus, %.0f GB/s theoretical, L2 %.1f MiB, ECC %s\n", g->mem_gib,
          g->bus_width_bits, g->theoretical_gbps, g->l2_bytes / 1048576.0, g->ecc ? "on" : "off");
  fprintf(out, "software CUDA driver API %s, runtime %s\n", drv, rt);
  km_nvml_banner_line(nvml, line, sizeof line);
  fprintf(out, "%s\n", line);
  if (ceilings) print_ceilings(ceilings, g->theoretical_gbps, out);
  if (topo) {
    km_topo_cpuset_string(topo, cpus, sizeof cpus);
    double link = km_topo_link_gbps(topo);
    fprintf(out, "host     %d NUMA node(s), GPU nearest node %d, cpuset %s, PCIe link ", km_topo_numa_count(topo),
            km_topo_gpu_near_node(topo), cpus);
    if (link > 0)
      fprintf(out, "%.2f GB/s (hwloc)\n", link);
    else
      fprintf(out, "unknown (hwloc reports none)\n");
  } else {
    fprintf(out, "host     topology unavailable (hwloc could not load it)\n");
  }
  fprintf(out, "cpu      %s, %.0f MHz, load %.2f (1 min) at start-up\n", cpu->model, cpu->mhz, cpu->load_1m);
}

cJSON *km_context_gpu_json(const km_gpu_info *g, struct km_nvml *nvml, const km_ceiling_report *ceilings) {
  char buf[16];
  km_gpu_identity id;
  int have_id = km_nvml_identity(nvml, &id) == 0;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", g->name);
  if (have_id) {
    cJSON_AddStringToObject(o, "uuid", id.uuid);
    cJSON_AddStringToObject(o, "driver_release", id.driver);
    cJSON_AddStringToObject(o, "vbios", id.vbios);
  } else {
    cJSON_AddNullToObject(o, "uuid");
    cJSON_AddNullToObject(o, "driver_release");
    cJSON_AddNullToObject(o, "vbios");
  }
  snprintf(buf, sizeof buf, "%d.%d", g->cc_major, g->cc_minor);
  cJSON_AddStringToObject(o, "compute_capability", buf);
  cJSON_AddNumberToObject(o, "sms", g->sms);
  cJSON_AddNumberToObject(o, "sm_clock_mhz", g->sm_clock_mhz);
  cJSON_AddNumberToObject(o, "memory_clock_mhz", g->mem_clock_mhz);
  cJSON_AddNumberToObject(o, "memory_gib", g->mem_gib);
  cJSON_AddNumberToObject(o, "bus_width_bits", g->bus_width_bits);
  cJSON_AddNumberToObject(o, "theoretical_gbps", g->theoretical_gbps);
  cJSON_AddNumberToObject(o, "l2_bytes", g->l2_bytes);
  cJSON_AddBoolToObject(o, "ecc", g->ecc);
  version_string(g->driver_version, buf, sizeof buf);
  cJSON_AddStringToObject(o, "cuda_driver_api", buf);
  version_string(g->runtime_version, buf, sizeof buf);
  cJSON_AddStringToObject(o, "runtime", buf);
  cJSON_AddStringToObject(o, "pci_bus_id", g->pci_bus_id);
  cJSON_AddNumberToObject(o, "ceiling_gbps", g->ceiling_gbps);
  cJSON_AddStringToObject(o, "ceiling_method", "device-to-device cudaMemcpyAsync of >= 8x L2, bytes read + written");
  if (ceilings) cJSON_AddItemToObject(o, "ceilings", km_ceilings_json(ceilings));
  cJSON_AddItemToObject(o, "nvml", km_nvml_json(nvml));
  return o;
}

cJSON *km_context_host_json(struct km_topo *topo, const km_host_cpu *cpu) {
  cJSON *o = cJSON_CreateObject();
  char host[256] = "unknown", cpus[256] = "unknown";
  gethostname(host, sizeof host);
  cJSON_AddStringToObject(o, "hostname", host);
  cJSON_AddNumberToObject(o, "online_cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
  cJSON_AddStringToObject(o, "cpu_model", cpu->model);
  cJSON_AddNumberToObject(o, "cpu_mhz", cpu->mhz);
  cJSON_AddNumberToObject(o, "load_avg_1m", cpu->load_1m);
  if (topo) {
    km_topo_cpuset_string(topo, cpus, sizeof cpus);
    cJSON_AddNumberToObject(o, "numa_nodes", km_topo_numa_count(topo));
    cJSON_AddNumberToObject(o, "gpu_numa_node", km_topo_gpu_near_node(topo));
    cJSON_AddNumberToObject(o, "far_numa_node", km_topo_gpu_far_node(topo));
    cJSON_AddStringToObject(o, "gpu_cpuset", cpus);
    cJSON_AddNumberToObject(o, "pcie_link_gbps", km_topo_link_gbps(topo));
  }
  return o;
}

cJSON *km_context_build_json(void) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "git_revision", KM_GIT_REV);
  cJSON_AddStringToObject(o, "build_type", KM_BUILD_TYPE);
  cJSON_AddStringToObject(o, "cuda_architectures", KM_CUDA_ARCHS);
  cJSON_AddStringToObject(o, "google_benchmark", KM_GB_VERSION);
  cJSON_AddNumberToObject(o, "cuda_runtime_built", CUDART_VERSION);
  return o;
}
