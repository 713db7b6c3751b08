/* The self-describing part of every result: the GPU, the host topology and the build, printed as a
 * banner before anything runs and stored in the JSON file. */
#ifndef KM_CONTEXT_H
#define KM_CONTEXT_H

#include <stdio.h>

#include <cjson/cJSON.h>

struct km_topo;

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
  int driver_version, runtime_version;
  char pci_bus_id[32];
  double ceiling_gbps;       /* measured at start-up; 0 until then */
} km_gpu_info;

/* 0 ok; -1 with one line in err. */
int km_gpu_info_query(int device, km_gpu_info *g, char *err, size_t errlen);
const char *km_build_revision(void);

void km_context_print_banner(const km_gpu_info *g, struct km_topo *topo, FILE *out);
cJSON *km_context_gpu_json(const km_gpu_info *g);
cJSON *km_context_host_json(struct km_topo *topo);
cJSON *km_context_build_json(void);

#endif
