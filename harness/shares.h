/* Shares of a ceiling: which traffic class a row's bytes put it in, how long the class ceilings would
 * take for those bytes, and the row's share of that, of the theoretical peak, of the PCIe link and of
 * the measured contiguous host copy. Pure arithmetic (tests/cpu_shares.c); the ceilings are measured at
 * start-up by harness/ceiling.c. */
#ifndef KM_SHARES_H
#define KM_SHARES_H

/* What a row's bytes are: both read and written in equal amounts (copy), only read, only written,
 * or both in other proportions (mixed). */
typedef enum km_traffic {
  KM_TRAFFIC_COPY = 0,
  KM_TRAFFIC_READ,
  KM_TRAFFIC_WRITE,
  KM_TRAFFIC_MIXED,
  KM_TRAFFIC_NONE, /* no bytes declared */
  KM_TRAFFIC_COUNT
} km_traffic;

/* Direction of the bytes of a row that crosses the host link (km_work.link_dir). */
typedef enum km_link_dir {
  KM_LINK_ANY = 0, /* not declared: compared with the faster one-way copy */
  KM_LINK_H2D,
  KM_LINK_D2H,
  KM_LINK_BOTH,    /* both directions at once: compared with the sum of the two one-way copies */
  KM_LINK_DIR_COUNT
} km_link_dir;

/* Every figure in GB/s of bytes read + written (each once); 0 where not measured or unknown. */
typedef struct km_ceilings {
  double copy_gbps;  /* device-to-device cudaMemcpyAsync */
  double read_gbps;  /* the best read-only kernel */
  double write_gbps; /* the best write-only kernel */
  double peak_gbps;  /* theoretical: 2 x memory clock x bus width / 8 */
  double link_gbps;  /* the PCIe link's rate from hwloc */
  double h2d_gbps, d2h_gbps; /* contiguous pinned copies over the link, measured */
} km_ceilings;

km_traffic km_traffic_of(double bytes_read, double bytes_written);
const char *km_traffic_name(km_traffic t); /* "copy", "read", "write", "mixed", "none" */

/* Seconds the class ceilings take for these bytes. The paired part, min(read, written) each way,
 * streams at the copy ceiling; what is left over streams at the read or the write ceiling:
 *   t = 2 min(r, w) / copy + (r - min) / read + (w - min) / write
 * so a copy is costed at the copy ceiling, a read-only row at the read ceiling, a write-only row at the
 * write ceiling, and a mixed row in between, continuously. NaN when a ceiling it needs is unknown. */
double km_ceiling_seconds(const km_ceilings *c, double bytes_read, double bytes_written);
/* Percent of the class ceilings: 100 x km_ceiling_seconds / seconds. NaN when unknown. */
double km_share_of_class(const km_ceilings *c, double bytes_read, double bytes_written, double seconds);
/* Percent of the theoretical peak for bytes read + written in `seconds`. NaN when unknown. */
double km_share_of_peak(const km_ceilings *c, double bytes, double seconds);
/* Percent of the hwloc link rate. NaN when unknown. */
double km_share_of_link(const km_ceilings *c, double bytes, double seconds);
/* The measured contiguous copy rate for a direction (0 unknown). */
double km_host_copy_gbps(const km_ceilings *c, km_link_dir dir);
/* Percent of the measured contiguous host copy of that direction. NaN when unknown. */
double km_share_of_host_copy(const km_ceilings *c, km_link_dir dir, double bytes, double seconds);

#endif
