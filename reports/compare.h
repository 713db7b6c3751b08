/* `report compare A.json B.json`: the cases of two runs side by side, matched by kvmicro name, with
 * the ratios B/A of median time and of GB/s, and each GB/s as a share of its own card's ceiling (so a
 * slower card whose kernels reach the same share shows a share ratio of 1.00). */
#ifndef KM_REPORT_COMPARE_H
#define KM_REPORT_COMPARE_H

#include <stdio.h>

#include "run_file.h"
#include "table.h"

/* The matched cases (group: technique), in A's order. */
km_table *km_compare_table(const km_run_file *a, const km_run_file *b);
/* Cases present in only one of the two files. */
km_table *km_compare_unmatched_table(const km_run_file *a, const km_run_file *b);
/* Both tables with a header naming the two cards, in the format. 0 ok, -1 out of memory. */
int km_compare_print(const km_run_file *a, const km_run_file *b, km_format f, FILE *out);

#endif
