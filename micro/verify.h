/* Checks shared by the micro files: bitwise comparison of host copies with the first mismatches
 * reported through the bench, and guard bytes after outputs. */
#ifndef KM_MICRO_VERIFY_H
#define KM_MICRO_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

/* Count the 32-bit words (trailing bytes compared singly) where got differs from want; report the
 * first few as mismatches. Returns the number of differing units. */
size_t km_verify_equal(km_bench *b, const void *got, const void *want, size_t bytes);
/* Every byte equals `value`? Returns the number that do not. */
size_t km_verify_filled(km_bench *b, const void *got, size_t bytes, unsigned char value);

/* Guard bytes after a device output: set to KM_VERIFY_GUARD_VALUE before the verified launch, and checked
 * untouched after it (an out-of-bounds write shows there). Allocate KM_VERIFY_GUARD_BYTES more. */
#define KM_VERIFY_GUARD_BYTES 4096
#define KM_VERIFY_GUARD_VALUE 0xA5
int km_verify_guard_set(km_bench *b, void *dev_end);                /* 0 ok, -1 failed (recorded) */
size_t km_verify_guard_check(km_bench *b, const void *dev_end);      /* bytes changed; failures recorded */

/* A device buffer copied to a host buffer that lives until the case ends (km_bench_host_alloc). NULL
 * once the failure (or, out of host memory, the skip) is recorded. */
void *km_verify_to_host(km_bench *b, const void *dev, size_t bytes);

#endif
