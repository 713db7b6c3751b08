/* A result file written by `micro --json` (or plain Google Benchmark JSON) loaded for the report tool:
 * the document, its card's name and ceiling, and the benchmarks read back as km_results. Every check
 * of the file's shape happens here, so the commands only see well-typed data. */
#ifndef KM_REPORT_RUN_FILE_H
#define KM_REPORT_RUN_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "results.h"
#include "shares.h"

typedef struct km_run_file {
  const char *path;
  cJSON *doc;
  const char *gpu_name;  /* context.gpu.name, or "unknown GPU" */
  double ceiling_gbps;   /* context.gpu.ceiling_gbps (the copy ceiling), NaN when the file has none */
  const cJSON *gpu;      /* context.gpu, NULL when absent (identity, ceilings, NVML state) */
  double link_gbps;      /* context.host.pcie_link_gbps, NaN when the file has none */
  const char *revision;  /* context.build.git_revision, or "unknown revision" */
  km_results results;
} km_run_file;

/* Read a whole file into a NUL-terminated buffer (caller frees). NULL with one line in err. */
char *km_report_read_text(const char *path, char *err, size_t errlen);
/* Parse a JSON file whose top level must be an object. NULL with one line in err. */
cJSON *km_report_read_json(const char *path, char *err, size_t errlen);

/* 0 ok; -1 with one line in err naming the file and what is wrong. */
int km_run_file_load(const char *path, km_run_file *out, char *err, size_t errlen);
void km_run_file_free(km_run_file *f);

/* The card's start-up ceilings as the file records them (context.gpu.ceilings.{copy,read,write,h2d,d2h}.gbps,
 * the peak, the hwloc link); an older file's lone context.gpu.ceiling_gbps is the copy ceiling. 0 where
 * the file has no figure (harness/shares.h treats 0 as unknown). */
km_ceilings km_run_file_ceilings(const km_run_file *f);

/* The row that stands for its case (the only iteration, or the median aggregate of repetitions). */
int km_run_row_is_primary(const km_results *r, const km_result *row);
/* Median time in microseconds (median_us, else real_time in its unit); NaN for error/skipped rows. */
double km_run_row_time_us(const km_result *row);
/* GB/s (bytes read + written); NaN when the row has none or did not run. */
double km_run_row_gbps(const km_result *row);

/* "4096", "4KiB", "64MiB", "1GiB", "1.5e6": bytes as a double. 0 ok, -1 not a size. */
int km_report_parse_bytes(const char *s, double *out);

#endif
