/* NVML without a GPU: a missing library is a line saying why (never an error), every query answers
 * nothing and the JSON says unavailable; with a stand-in library (tests/fake_nvml.c) the identity, the
 * state and the throttle evidence are read through the same entry points; the throttle rules alone. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nvml.h"
#include "test_util.h"

static void test_missing(void) {
  km_nvml *n = km_nvml_open("libkm-no-such-nvml.so.1", "0000:00:06.0");
  KM_EXPECT(n != NULL && !km_nvml_available(n));
  KM_EXPECT(strstr(km_nvml_reason(n), "libkm-no-such-nvml.so.1") != NULL);
  km_gpu_identity id;
  KM_EXPECT(km_nvml_identity(n, &id) == -1 && id.uuid[0] == '\0');
  km_gpu_state s;
  km_nvml_sample(n, &s);
  KM_EXPECT(!s.valid);
  char line[512];
  km_nvml_banner_line(n, line, sizeof line);
  KM_EXPECT(strncmp(line, "nvml     unavailable: ", 22) == 0 && strstr(line, "no UUID"));
  cJSON *j = km_nvml_json(n);
  KM_EXPECT(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "available")));
  KM_EXPECT(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "reason")));
  cJSON_Delete(j);
  km_nvml_close(n);
  km_nvml_close(NULL);
  /* a sample from no NVML at all throttles nothing */
  KM_EXPECT(!km_throttled(&s, &s));
}

static void test_fake(const char *lib) {
  km_nvml *other = km_nvml_open(lib, "0000:99:00.0");
  KM_EXPECT(!km_nvml_available(other) && strstr(km_nvml_reason(other), "Not Found"));
  km_nvml_close(other);
  km_nvml *n = km_nvml_open(lib, "0000:00:06.0");
  KM_EXPECT_MSG(km_nvml_available(n), "%s", km_nvml_reason(n));
  km_gpu_identity id;
  KM_EXPECT(km_nvml_identity(n, &id) == 0);
  KM_EXPECT(strcmp(id.uuid, "GPU-00000000-fake-0000-0000-000000000001") == 0);
  KM_EXPECT(strcmp(id.driver, "580.159.04") == 0 && strcmp(id.vbios, "96.00.AF.00.01") == 0);
  KM_EXPECT(id.max_sm_mhz == 1980 && id.max_mem_mhz == 3201);
  KM_EXPECT_NEAR(id.power_limit_w, 700.0, 1e-9);
  km_gpu_state a, b;
  km_nvml_sample(n, &a);
  km_nvml_sample(n, &b);
  KM_EXPECT(a.valid && a.sm_mhz == 1755 && a.mem_mhz == 3201 && a.temp_c == 61 && a.pstate == 0);
  KM_EXPECT_NEAR(a.power_w, 612.345, 1e-9);
  KM_EXPECT(km_throttled(&a, &b));
  KM_EXPECT(km_throttle_reasons(&a, &b) == KM_CLOCK_SW_POWER_CAP); /* idle is not a throttle */
  char line[512];
  km_nvml_banner_line(n, line, sizeof line);
  KM_EXPECT(strstr(line, "driver 580.159.04") && strstr(line, "1755 MHz SM") && strstr(line, "gpu_idle+sw_power_cap"));
  cJSON *j = km_nvml_json(n);
  KM_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "available")));
  const cJSON *rel = cJSON_GetObjectItemCaseSensitive(j, "driver_release");
  KM_EXPECT(cJSON_IsString(rel) && strcmp(rel->valuestring, "580.159.04") == 0);
  cJSON_Delete(j);
  km_nvml_close(n);
}

static void test_throttle_rules(void) {
  km_gpu_state a, b;
  memset(&a, 0, sizeof a);
  a.valid = 1;
  a.power_violation_ns = a.thermal_violation_ns = 5;
  b = a;
  KM_EXPECT(!km_throttled(&a, &b));
  b.reasons = KM_CLOCK_GPU_IDLE | KM_CLOCK_APPLICATIONS_SETTING | KM_CLOCK_SYNC_BOOST;
  KM_EXPECT(!km_throttled(&a, &b)); /* none of these pulls clocks down under load */
  b.reasons = KM_CLOCK_HW_THERMAL;
  KM_EXPECT(km_throttle_reasons(&a, &b) == KM_CLOCK_HW_THERMAL);
  b.reasons = 0;
  b.thermal_violation_ns = 6; /* held down in between, although neither end shows a reason */
  KM_EXPECT(km_throttle_reasons(&a, &b) == KM_CLOCK_SW_THERMAL);
  b.thermal_violation_ns = ~0ull; /* unknown: no evidence */
  KM_EXPECT(!km_throttled(&a, &b));
  char names[128];
  km_clock_reason_names(KM_CLOCK_SW_POWER_CAP | KM_CLOCK_HW_SLOWDOWN, names, sizeof names);
  KM_EXPECT(strcmp(names, "sw_power_cap+hw_slowdown") == 0);
  km_clock_reason_names(0, names, sizeof names);
  KM_EXPECT(strcmp(names, "none") == 0);
}

int main(void) {
  test_missing();
  const char *fake = getenv("KM_FAKE_NVML");
  KM_EXPECT_MSG(fake && fake[0], "KM_FAKE_NVML is not set (tests/CMakeLists.txt sets it to the stand-in library)");
  if (fake && fake[0]) test_fake(fake);
  test_throttle_rules();
  return km_test_finish("cpu_nvml");
}
