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

#endif
