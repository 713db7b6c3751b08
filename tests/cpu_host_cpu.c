/* The host CPU description: the first processor's model name and clock, the 1-minute load, and the
 * "unknown" values when a file is missing or a field malformed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_cpu.h"
#include "test_util.h"

static void fixture(char *buf, size_t n, const char *name) {
  const char *dir = getenv("KM_FIXTURES");
  snprintf(buf, n, "%s/host/%s", dir ? dir : "fixtures", name);
}

int main(void) {
  char info[512], load[512], bad[512];
  fixture(info, sizeof info, "cpuinfo");
  fixture(load, sizeof load, "loadavg");
  fixture(bad, sizeof bad, "cpuinfo-bad");
  km_host_cpu c;
  km_host_cpu_read(&c, info, load);
  KM_EXPECT_MSG(strcmp(c.model, "Intel(R) Xeon(R) Platinum 8480C") == 0, "model '%s'", c.model);
  KM_EXPECT_NEAR(c.mhz, 2000.0, 0);
  KM_EXPECT_NEAR(c.load_1m, 0.52, 1e-12);
  km_host_cpu_read(&c, bad, "/nonexistent/loadavg"); /* an empty model, a clock that is not a number */
  KM_EXPECT(strcmp(c.model, "unknown") == 0 && c.mhz == 0 && c.load_1m == -1);
  km_host_cpu_read(&c, NULL, NULL);
  KM_EXPECT(strcmp(c.model, "unknown") == 0 && c.mhz == 0 && c.load_1m == -1);
  km_host_cpu_query(&c); /* this machine's: whatever it says, never a crash */
  KM_EXPECT(c.model[0] != '\0');
  return km_test_finish("cpu_host_cpu");
}
