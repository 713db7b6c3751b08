/* NVML through dlopen. The entry points and types below are NVML's documented C API (nvml.h of the
 * driver): a return code of 0 is NVML_SUCCESS, devices are opaque pointers, strings are written into the
 * caller's buffer. Only the calls needed for identity and state are looked up; one that a driver lacks
 * leaves its figure unknown. */
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;           /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
typedef struct nvml_violation {    /* nvmlViolationTime_t */
  unsigned long long reference_time;
  unsigned long long violation_time; /* ns */
} nvml_violation;

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };                 /* nvmlClockType_t */
enum { NVML_TEMPERATURE_GPU = 0 };                              /* nvmlTemperatureSensors_t */
enum { NVML_PERF_POLICY_POWER = 0, NVML_PERF_POLICY_THERMAL = 1 }; /* nvmlPerfPolicyType_t */
#define KM_UNKNOWN_NS (~0ull)

struct km_nvml {
  void *lib;
  nvml_device dev;
  int ok, initialised;
  char reason[256];
  nvml_return (*init)(void);
  nvml_return (*shutdown)(void);
  const char *(*error_string)(nvml_return);
  nvml_return (*by_bus_id)(const char *, nvml_device *);
  nvml_return (*uuid)(nvml_device, char *, unsigned);
  nvml_return (*driver_version)(char *, unsigned);
  nvml_return (*nvml_version)(char *, unsigned);
  nvml_return (*vbios)(nvml_device, char *, unsigned);
  nvml_return (*clock)(nvml_device, int, unsigned *);
  nvml_return (*max_clock)(nvml_device, int, unsigned *);
  nvml_return (*power)(nvml_device, unsigned *);       /* mW */
  nvml_return (*power_limit)(nvml_device, unsigned *); /* mW */
  nvml_return (*temperature)(nvml_device, int, unsigned *);
  nvml_return (*pstate)(nvml_device, int *);
  nvml_return (*reasons)(nvml_device, unsigned long long *);
  nvml_return (*violation)(nvml_device, int, nvml_violation *);
};

static void *sym(km_nvml *n, const char *name) { return dlsym(n->lib, name); }

static const char *nvml_error(km_nvml *n, nvml_return r) {
  const char *s = n->error_string ? n->error_string(r) : NULL;
  return s ? s : "unknown NVML error";
}

static void lookup(km_nvml *n) {
  *(void **)&n->init = sym(n, "nvmlInit_v2");
  *(void **)&n->shutdown = sym(n, "nvmlShutdown");
  *(void **)&n->error_string = sym(n, "nvmlErrorString");
  *(void **)&n->by_bus_id = sym(n, "nvmlDeviceGetHandleByPciBusId_v2");
  *(void **)&n->uuid = sym(n, "nvmlDeviceGetUUID");
  *(void **)&n->driver_version = sym(n, "nvmlSystemGetDriverVersion");
  *(void **)&n->nvml_version = sym(n, "nvmlSystemGetNVMLVersion");
  *(void **)&n->vbios = sym(n, "nvmlDeviceGetVbiosVersion");
  *(void **)&n->clock = sym(n, "nvmlDeviceGetClockInfo");
  *(void **)&n->max_clock = sym(n, "nvmlDeviceGetMaxClockInfo");
  *(void **)&n->power = sym(n, "nvmlDeviceGetPowerUsage");
  *(void **)&n->power_limit = sym(n, "nvmlDeviceGetEnforcedPowerLimit");
  *(void **)&n->temperature = sym(n, "nvmlDeviceGetTemperature");
  *(void **)&n->pstate = sym(n, "nvmlDeviceGetPerformanceState");
  /* renamed in newer drivers; the old name stays exported as an alias */
  *(void **)&n->reasons = sym(n, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!n->reasons) *(void **)&n->reasons = sym(n, "nvmlDeviceGetCurrentClocksThrottleReasons");
  *(void **)&n->violation = sym(n, "nvmlDeviceGetViolationStatus");
}

km_nvml *km_nvml_open(const char *library, const char *pci_bus_id) {
  km_nvml *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  const char *name = library ? library : KM_NVML_LIBRARY;
  n->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!n->lib) {
    const char *why = dlerror();
    snprintf(n->reason, sizeof n->reason, "%s could not be loaded (%s)", name, why ? why : "no reason given");
    return n;
  }
  lookup(n);
  if (!n->init || !n->shutdown || !n->by_bus_id || !n->clock) {
    snprintf(n->reason, sizeof n->reason, "%s lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or "
             "nvmlDeviceGetClockInfo", name);
    return n;
  }
  nvml_return r = n->init();
  if (r != 0) {
    snprintf(n->reason, sizeof n->reason, "nvmlInit_v2 failed: %s", nvml_error(n, r));
    return n;
  }
  n->initialised = 1;
  r = n->by_bus_id(pci_bus_id ? pci_bus_id : "", &n->dev);
  if (r != 0) {
    snprintf(n->reason, sizeof n->reason, "NVML has no GPU at PCI %s: %s", pci_bus_id ? pci_bus_id : "?",
             nvml_error(n, r));
    return n;
  }
  n->ok = 1;
  return n;
}

void km_nvml_close(km_nvml *n) {
  if (!n) return;
  if (n->initialised) n->shutdown();
  if (n->lib) dlclose(n->lib);
  free(n);
}

int km_nvml_available(const km_nvml *n) { return n && n->ok; }
const char *km_nvml_reason(const km_nvml *n) { return !n ? "out of memory" : n->ok ? "" : n->reason; }

static void text(km_nvml *n, nvml_return (*fn)(nvml_device, char *, unsigned), char *buf, unsigned len) {
  if (!fn || fn(n->dev, buf, len) != 0) snprintf(buf, len, "unknown");
}

int km_nvml_identity(km_nvml *n, km_gpu_identity *id) {
  memset(id, 0, sizeof *id);
  if (!km_nvml_available(n)) return -1;
  text(n, n->uuid, id->uuid, sizeof id->uuid);
  text(n, n->vbios, id->vbios, sizeof id->vbios);
  if (!n->driver_version || n->driver_version(id->driver, sizeof id->driver) != 0)
    snprintf(id->driver, sizeof id->driver, "unknown");
  if (!n->nvml_version || n->nvml_version(id->nvml, sizeof id->nvml) != 0) snprintf(id->nvml, sizeof id->nvml, "unknown");
  if (n->max_clock) {
    if (n->max_clock(n->dev, NVML_CLOCK_SM, &id->max_sm_mhz) != 0) id->max_sm_mhz = 0;
    if (n->max_clock(n->dev, NVML_CLOCK_MEM, &id->max_mem_mhz) != 0) id->max_mem_mhz = 0;
  }
  unsigned mw = 0;
  if (n->power_limit && n->power_limit(n->dev, &mw) == 0) id->power_limit_w = mw / 1000.0;
  return 0;
}

static unsigned long long violation_ns(km_nvml *n, int policy) {
  nvml_violation v = {0, 0};
  if (!n->violation || n->violation(n->dev, policy, &v) != 0) return KM_UNKNOWN_NS;
  return v.violation_time;
}

void km_nvml_sample(km_nvml *n, km_gpu_state *s) {
  memset(s, 0, sizeof *s);
  s->pstate = -1;
  s->power_violation_ns = s->thermal_violation_ns = KM_UNKNOWN_NS;
  if (!km_nvml_available(n)) return;
  s->valid = n->clock(n->dev, NVML_CLOCK_SM, &s->sm_mhz) == 0 && n->clock(n->dev, NVML_CLOCK_MEM, &s->mem_mhz) == 0;
  unsigned mw = 0;
  if (n->power && n->power(n->dev, &mw) == 0) s->power_w = mw / 1000.0;
  if (n->temperature && n->temperature(n->dev, NVML_TEMPERATURE_GPU, &s->temp_c) != 0) s->temp_c = 0;
  if (n->pstate && n->pstate(n->dev, &s->pstate) != 0) s->pstate = -1;
  if (n->reasons && n->reasons(n->dev, &s->reasons) != 0) s->reasons = 0;
  s->power_violation_ns = violation_ns(n, NVML_PERF_POLICY_POWER);
  s->thermal_violation_ns = violation_ns(n, NVML_PERF_POLICY_THERMAL);
}

/* Violation time that grew between the samples means the clocks were held down in between. */
static int grew(unsigned long long a, unsigned long long b) { return a != KM_UNKNOWN_NS && b != KM_UNKNOWN_NS && b > a; }

unsigned long long km_throttle_reasons(const km_gpu_state *before, const km_gpu_state *after) {
  unsigned long long r = 0;
  if (before->valid) r |= before->reasons & KM_CLOCK_THROTTLE_MASK;
  if (after->valid) r |= after->reasons & KM_CLOCK_THROTTLE_MASK;
  if (before->valid && after->valid) {
    if (grew(before->power_violation_ns, after->power_violation_ns)) r |= KM_CLOCK_SW_POWER_CAP;
    if (grew(before->thermal_violation_ns, after->thermal_violation_ns)) r |= KM_CLOCK_SW_THERMAL;
  }
  return r;
}

int km_throttled(const km_gpu_state *before, const km_gpu_state *after) { return km_throttle_reasons(before, after) != 0; }

void km_clock_reason_names(unsigned long long reasons, char *buf, size_t len) {
  static const struct { unsigned long long bit; const char *name; } names[] = {
      {KM_CLOCK_GPU_IDLE, "gpu_idle"},         {KM_CLOCK_APPLICATIONS_SETTING, "applications_clocks"},
      {KM_CLOCK_SW_POWER_CAP, "sw_power_cap"}, {KM_CLOCK_HW_SLOWDOWN, "hw_slowdown"},
      {KM_CLOCK_SYNC_BOOST, "sync_boost"},     {KM_CLOCK_SW_THERMAL, "sw_thermal"},
      {KM_CLOCK_HW_THERMAL, "hw_thermal"},     {KM_CLOCK_HW_POWER_BRAKE, "hw_power_brake"},
      {KM_CLOCK_DISPLAY_SETTING, "display_clocks"},
  };
  size_t used = 0;
  if (len) buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0] && used + 1 < len; i++)
    if (reasons & names[i].bit) used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "+" : "", names[i].name);
  if (used == 0 && len) snprintf(buf, len, "none");
}

/* Identity and state now, with the clock-event reasons named: what the banner and the context show. */
typedef struct nvml_now {
  km_gpu_identity id;
  km_gpu_state s;
  char reasons[256];
} nvml_now;

static void read_now(km_nvml *n, nvml_now *now) {
  km_nvml_identity(n, &now->id);
  km_nvml_sample(n, &now->s);
  km_clock_reason_names(now->s.reasons, now->reasons, sizeof now->reasons);
}

cJSON *km_nvml_json(km_nvml *n) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddBoolToObject(o, "available", km_nvml_available(n));
  if (!km_nvml_available(n)) {
    cJSON_AddStringToObject(o, "reason", km_nvml_reason(n));
    return o;
  }
  nvml_now x;
  read_now(n, &x);
  const km_gpu_identity id = x.id;
  const km_gpu_state s = x.s;
  const char *names = x.reasons;
  cJSON_AddStringToObject(o, "uuid", id.uuid);
  cJSON_AddStringToObject(o, "driver_release", id.driver);
  cJSON_AddStringToObject(o, "vbios", id.vbios);
  cJSON_AddStringToObject(o, "nvml_version", id.nvml);
  cJSON_AddNumberToObject(o, "max_sm_clock_mhz", id.max_sm_mhz);
  cJSON_AddNumberToObject(o, "max_memory_clock_mhz", id.max_mem_mhz);
  cJSON_AddNumberToObject(o, "power_limit_w", id.power_limit_w);
  cJSON *now = cJSON_AddObjectToObject(o, "state_at_write");
  cJSON_AddNumberToObject(now, "sm_clock_mhz", s.sm_mhz);
  cJSON_AddNumberToObject(now, "memory_clock_mhz", s.mem_mhz);
  cJSON_AddNumberToObject(now, "temperature_c", s.temp_c);
  cJSON_AddNumberToObject(now, "power_w", s.power_w);
  cJSON_AddNumberToObject(now, "pstate", s.pstate);
  cJSON_AddStringToObject(now, "clock_event_reasons", names);
  return o;
}

void km_nvml_banner_line(km_nvml *n, char *buf, size_t len) {
  if (!km_nvml_available(n)) {
    snprintf(buf, len, "nvml     unavailable: %s; no UUID, driver release, actual clocks or throttle reasons in this run",
             km_nvml_reason(n));
    return;
  }
  nvml_now x;
  read_now(n, &x);
  const km_gpu_identity id = x.id;
  const km_gpu_state s = x.s;
  const char *names = x.reasons;
  snprintf(buf, len,
           "nvml     %s, driver %s, VBIOS %s; now %u MHz SM / %u MHz memory (max %u / %u), %u C, %.0f W of %.0f W, "
           "P%d, clock events: %s",
           id.uuid, id.driver, id.vbios, s.sm_mhz, s.mem_mhz, id.max_sm_mhz, id.max_mem_mhz, s.temp_c, s.power_w,
           id.power_limit_w, s.pstate, names);
}
