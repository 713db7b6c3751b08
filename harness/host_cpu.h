/* The host CPU a run took its host-side figures on (block hashing, the simulators, the copies' threads):
 * model name and clock from /proc/cpuinfo, the 1-minute load average from /proc/loadavg at start-up. Lent
 * machines differ here, and a hash rate means nothing without them. */
#ifndef KM_HOST_CPU_H
#define KM_HOST_CPU_H

#include <stddef.h>

typedef struct km_host_cpu {
  char model[128]; /* "model name" of the first processor; "unknown" when absent */
  double mhz;      /* "cpu MHz" of the first processor; 0 when absent */
  double load_1m;  /* first field of loadavg; -1 when unreadable */
} km_host_cpu;

/* Fill *c from the two files (paths, so that tests can hand in fixtures). Never fails: what cannot be read
 * keeps its "unknown" value. */
void km_host_cpu_read(km_host_cpu *c, const char *cpuinfo_path, const char *loadavg_path);
/* The same from /proc. */
void km_host_cpu_query(km_host_cpu *c);

#endif
