/* The measured state of a result row (its GPU clocks, temperature, power and throttle reasons sampled
 * around its samples, its CV), as text, and what differs between two runs of the same row: the only
 * evidence `report compare` and the recorded report give for a row that moved. */
#ifndef KM_REPORT_ROW_STATE_H
#define KM_REPORT_ROW_STATE_H

#include <stddef.h>

#include "results.h"

/* Rows whose medians are further apart than this are flagged by report compare. */
#define KM_COMPARE_FLAG_RATIO 0.03
/* Differences that count as evidence: clocks that differ by more than 1%, temperatures 5 C apart,
 * power 10% apart. A CV above 5% (noisy) or a throttle reason on either side always counts. */
#define KM_STATE_CLOCK_REL 0.01
#define KM_STATE_TEMP_C 5.0
#define KM_STATE_POWER_REL 0.10

/* "1980/3201 MHz; 45 C; 520 W; CV 0.3%; throttle: none", or "CV 0.3%; no GPU state recorded". */
void km_row_state_text(const km_result *row, char *buf, size_t len);
/* The measured differences between a and b, "; "-separated ("SM clock 1980 -> 1755 MHz; B throttled
 * (sw_power_cap)"), or a sentence saying none was measured (and whether there was state to compare).
 * Returns the number of differences found. */
int km_row_state_differences(const km_result *a, const km_result *b, char *buf, size_t len);

#endif
