/* A stand-in for libnvidia-ml.so.1 with NVML's documented entry points and fixed answers, so the NVML
 * path (identity, state, throttle evidence) is tested without a driver (tests/cpu_nvml.c). Only the
 * GPU at PCI 0000:00:06.0 exists; its power-violation counter grows by 1 ms at every read. */
#include <stdio.h>
#include <string.h>

typedef struct fake_violation {
  unsigned long long reference_time, violation_time;
} fake_violation;

static int the_device;
static unsigned long long violation_reads;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int r) { return r == 6 ? "Not Found" : "Unknown Error"; }

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
  if (strcmp(bus, "0000:00:06.0") != 0) return 6; /* NVML_ERROR_NOT_FOUND */
  *dev = &the_device;
  return 0;
}

static int text(char *buf, unsigned len, const char *s) {
  if (strlen(s) + 1 > len) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  snprintf(buf, len, "%s", s);
  return 0;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len) { return text(buf, len, "GPU-00000000-fake-0000-0000-000000000001"); }
int nvmlSystemGetDriverVersion(char *buf, unsigned len) { return text(buf, len, "580.159.04"); }
int nvmlSystemGetNVMLVersion(char *buf, unsigned len) { return text(buf, len, "13.580.159.04"); }
int nvmlDeviceGetVbiosVersion(void *dev, char *buf, unsigned len) { return text(buf, len, "96.00.AF.00.01"); }

int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz) {
  *mhz = type == 1 ? 1755 : 3201; /* SM, memory */
  return 0;
}

int nvmlDeviceGetMaxClockInfo(void *dev, int type, unsigned *mhz) {
  *mhz = type == 1 ? 1980 : 3201;
  return 0;
}

int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw) {
  *mw = 612345;
  return 0;
}

int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned *mw) {
  *mw = 700000;
  return 0;
}

int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c) {
  *c = 61;
  return 0;
}

int nvmlDeviceGetPerformanceState(void *dev, int *p) {
  *p = 0;
  return 0;
}

int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r) {
  *r = 0x4ull | 0x1ull; /* sw power cap, and idle (not a throttle) */
  return 0;
}

int nvmlDeviceGetViolationStatus(void *dev, int policy, fake_violation *v) {
  v->reference_time = 0;
  v->violation_time = policy == 0 ? 1000000ull * ++violation_reads : 0; /* power only */
  return 0;
}
