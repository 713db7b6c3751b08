/* The GPU's identity and state from NVML, loaded at run time from the driver's libnvidia-ml.so.1 (the
 * toolkit ships no nvml.h here, so the few documented entry points used are declared in nvml.c). A
 * machine without the library, or a driver that refuses, is not an error: the handle says why and every
 * query reports nothing. */
#ifndef KM_NVML_H
#define KM_NVML_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The driver's library; tests pass another name to exercise the paths without a GPU. */
#define KM_NVML_LIBRARY "libnvidia-ml.so.1"

/* NVML's clock-event (throttle) reason bits, as documented for nvmlDeviceGetCurrentClocksEventReasons. */
enum km_clock_reason {
  KM_CLOCK_GPU_IDLE = 0x1ull,
  KM_CLOCK_APPLICATIONS_SETTING = 0x2ull,
  KM_CLOCK_SW_POWER_CAP = 0x4ull,
  KM_CLOCK_HW_SLOWDOWN = 0x8ull,
  KM_CLOCK_SYNC_BOOST = 0x10ull,
  KM_CLOCK_SW_THERMAL = 0x20ull,
  KM_CLOCK_HW_THERMAL = 0x40ull,
  KM_CLOCK_HW_POWER_BRAKE = 0x80ull,
  KM_CLOCK_DISPLAY_SETTING = 0x100ull,
};
/* The reasons that mean the clocks were pulled down under load (power, thermal, hardware slowdown);
 * idle, application clocks, sync boost and display settings are not throttling. */
#define KM_CLOCK_THROTTLE_MASK \
  (KM_CLOCK_SW_POWER_CAP | KM_CLOCK_HW_SLOWDOWN | KM_CLOCK_SW_THERMAL | KM_CLOCK_HW_THERMAL | KM_CLOCK_HW_POWER_BRAKE)

typedef struct km_gpu_identity {
  char uuid[96];
  char driver[80];  /* the driver release, e.g. 580.159.04 */
  char vbios[64];
  char nvml[80];    /* NVML's own version */
  unsigned max_sm_mhz, max_mem_mhz;
  double power_limit_w;
} km_gpu_identity;

typedef struct km_gpu_state {
  int valid;                   /* NVML answered the clocks */
  unsigned sm_mhz, mem_mhz;    /* actual clocks now */
  unsigned temp_c;
  double power_w;
  int pstate;                  /* P-state, -1 unknown */
  unsigned long long reasons;  /* clock-event reasons active now */
  unsigned long long power_violation_ns, thermal_violation_ns; /* cumulative time held down, -1 unknown */
} km_gpu_state;

typedef struct km_nvml km_nvml;

/* Load `library` (NULL: KM_NVML_LIBRARY), initialise NVML and find the GPU with this PCI bus id. Returns
 * NULL only when out of memory; otherwise check km_nvml_available. */
km_nvml *km_nvml_open(const char *library, const char *pci_bus_id);
void km_nvml_close(km_nvml *n);
int km_nvml_available(const km_nvml *n);
/* Why NVML is unavailable (one line), or "" when it is available. */
const char *km_nvml_reason(const km_nvml *n);
/* 0 ok; -1 when unavailable (fields left empty). */
int km_nvml_identity(km_nvml *n, km_gpu_identity *id);
/* Always fills *s; s->valid is 0 when NVML is unavailable. */
void km_nvml_sample(km_nvml *n, km_gpu_state *s);

/* Throttling between two samples: the throttle reasons active at either end, plus power or thermal
 * violation time that grew in between. 0 when neither sample is valid. */
unsigned long long km_throttle_reasons(const km_gpu_state *before, const km_gpu_state *after);
int km_throttled(const km_gpu_state *before, const km_gpu_state *after);
/* "sw_power_cap+hw_thermal" (or "none") for a reason mask. */
void km_clock_reason_names(unsigned long long reasons, char *buf, size_t len);

/* The context's "nvml" object: available or the reason, identity, and the state now. */
cJSON *km_nvml_json(km_nvml *n);
/* One banner line: identity and state, or why there is none. */
void km_nvml_banner_line(km_nvml *n, char *buf, size_t len);

#endif
