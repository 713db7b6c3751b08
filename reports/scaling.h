/* `report compare` over two or more runs: which primitives scale with memory bandwidth, with PCIe, or
 * with neither. Each run's row is normalised by that run's own card: its GB/s over the ceiling of the
 * row's traffic class (copy, read, write, the mixed model of harness/shares.h for other proportions, the
 * contiguous pinned copy of the direction for a link row). A primitive scales with a ceiling when that
 * share stays within KM_SCALING_TOLERANCE across the cards while the ceiling itself moves by more. */
#ifndef KM_REPORT_SCALING_H
#define KM_REPORT_SCALING_H

#include <stddef.h>
#include <stdio.h>

#include "run_file.h"
#include "table.h"

/* Shares of their own ceiling within 10% of each other count as "the same share": the repeat runs of
 * one card recorded here move single rows by up to ~5% (reports/runs/h200.md), so a tighter bound
 * would call noise a change; and the ceilings must differ by more than the same 10% for a verdict. */
#define KM_SCALING_TOLERANCE 0.10

typedef enum km_scaling {
  KM_SCALES_MEMORY = 0, /* the share of the HBM class ceiling is the same on every card */
  KM_SCALES_PCIE,       /* a host-link row whose share of the pinned copy is the same on every card */
  KM_SCALES_NEITHER,    /* the share moved: latency, compute, the host CPU, or something else bounds it */
  KM_SCALES_UNDETERMINED, /* fewer than two runs measured it, or the cards' ceilings are too close */
  KM_SCALES_COUNT
} km_scaling;

const char *km_scaling_name(km_scaling s); /* "memory bandwidth", "PCIe", "neither", "undetermined" */

/* One row per case measured in any of the runs (in the first run's order, then the others'), grouped
 * by verdict: per run its GB/s and share of its own class ceiling, the spreads (largest / smallest) of
 * GB/s, of the ceiling and of the share, the verdict and why. NULL when out of memory. */
km_table *km_scaling_table(const km_run_file *const *runs, size_t n);
/* A header naming each run's card and ceilings, then the table. 0 ok, -1 out of memory. */
int km_scaling_print(const km_run_file *const *runs, size_t n, km_format f, FILE *out);

#endif
