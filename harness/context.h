/* The self-describing part of every result: the GPU (identity and state from NVML where it loads), the
 * start-up ceilings, the host topology and the build, printed as a banner before anything runs and
 * stored in the JSON file. */
#ifndef KM_CONTEXT_H
#define KM_CONTEXT_H

#include <stdio.h>

#include <cjson/cJSON.h>

struct km_topo;
struct km_nvml;
struct km_ceiling_report;
struct km_host_cpu;

typedef struct km_gpu_info {
  char name[256];
  int cc_major, cc_minor;
  int sms;
  int sm_clock_mhz, mem_clock_mhz;
  double mem_gib;
  int bus_width_bits;
  double theoretical_gbps;   /* 2 (DDR) x memory clock x bus width / 8 */
  int l2_bytes;
  int ecc;
  int driver_version, runtime_version; /* CUDA API versions (cudaDriverGetVersion), not the driver release */
  char pci_bus_id[32];
  double ceiling_gbps;       /* measured at start-up; 0 until then */
} km_gpu_info;

/* 0 ok; -1 with one line in err. */
int km_gpu_info_query(int device, km_gpu_info *g, char *err, size_t errlen);
const char *km_build_revision(void);

/* ceilings: NULL before they are measured or in a smoke run (L2's figures: not shown). */
void km_context_print_banner(const km_gpu_info *g, struct km_nvml *nvml, const struct km_ceiling_report *ceilings,
                             struct km_topo *topo, const struct km_host_cpu *cpu, FILE *out);
cJSON *km_context_gpu_json(const km_gpu_info *g, struct km_nvml *nvml, const struct km_ceiling_report *ceilings);
cJSON *km_context_host_json(struct km_topo *topo, const struct km_host_cpu *cpu);
cJSON *km_context_build_json(void);

#endif
