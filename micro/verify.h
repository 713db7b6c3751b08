/* Checks shared by the micro files: bitwise comparison of host copies with the first mismatches
 * reported through the bench, guard bytes after outputs, and km_check, which gathers a case's device
 * comparisons of its whole timed output (kernels/verify_compare.h) and its CPU slice checks into one
 * verification outcome. */
#ifndef KM_MICRO_VERIFY_H
#define KM_MICRO_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "verify_compare.h"

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
/* The CPU twin of km_verify_compare (same arguments, host pointers): fills *diff, mismatches kept in
 * index order. Returns diff->count. */
size_t km_verify_host_compare(const void *got, const void *want, size_t n, int elem_bytes, size_t stride, int max_ulp,
                              km_diff *diff);
/* The CPU twin of km_verify_compare_codes3 (host pointers): fills *far and *near, kept in index order.
 * Returns far->count; SIZE_MAX (nothing compared) for d not a positive multiple of 8. */
size_t km_verify_host_compare_codes3(const uint8_t *got, const uint8_t *want, size_t rows, int d, km_diff *far,
                                     km_diff *near);

/* One case's verification: every check adds its mismatches and the elements it covered; km_check_done
 * turns the sums into the case's outcome. A CUDA error fails the case (km_bench_ok turns false). */
typedef struct km_check {
  km_bench *b;
  km_diff *diff; /* device scratch for one comparison at a time */
  size_t bad, n;
  int faulted; /* KM_VERIFY_FAULT: the case's first exact device comparison has had its fault */
} km_check;

int km_check_init(km_check *c, km_bench *b); /* 0, or -1 when the scratch could not be had */
/* Device comparisons of device buffers (kernels/verify_compare.h), reported under `what`.
 * Test hook: with the environment variable KM_VERIFY_FAULT set, the first km_check_device (or
 * km_check_device_codes3) of each check (each case) flips a high bit of the last element of `got` on the device before comparing, so that the
 * GPU tests (tests/gpu_*_verify.c) can show a family's whole-output check failing on one wrong element. */
void km_check_device(km_check *c, const char *what, const void *got, const void *want, size_t n, int elem_bytes,
                     size_t stride, int max_ulp);
/* 3-bit codes of `rows` packed rows of d (km_verify_compare_codes3) from a quantizer whose sums round
 * differently from the reference's: every code more than one level off is a mismatch, and the adjacent
 * ones are all mismatches too when there are more than max_near of them; a line gives both counts, and the
 * row's counter codes_adjacent the adjacent ones.
 * Faulted by KM_VERIFY_FAULT as km_check_device is, when it is the check's first device comparison. */
void km_check_device_codes3(km_check *c, const char *what, const uint8_t *got, const uint8_t *want, size_t rows,
                            int d, size_t max_near);
void km_check_device_close(km_check *c, const char *what, const float *got, const float *want, const float *mag,
                           size_t n, float rel_tol);
/* The same comparison of host buffers (a CPU slice against the CPU reference). */
void km_check_host(km_check *c, const char *what, const void *got, const void *want, size_t n, int elem_bytes,
                   size_t stride, int max_ulp);
/* A family's own device check that adds to c->diff: km_check_begin zeroes it (0 ok, -1 when the case has
 * stopped), km_check_end takes the launch's error, brings the result back and reports it as n checked. */
int km_check_begin(km_check *c, const char *what);
void km_check_end(km_check *c, const char *what, size_t n, cudaError_t launched);
/* A family's own check: bad of n. */
void km_check_add(km_check *c, size_t bad, size_t n);
/* km_bench_verified over everything checked. Returns 1 when it passed. */
int km_check_done(km_check *c, const char *tolerance);

#endif
