/* Tiny test helpers: checks that count failures and say where, and a GPU-presence probe so GPU tests
 * report themselves skipped (exit 77) on machines without a device. */
#ifndef KM_TEST_UTIL_H
#define KM_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "verify_compare.h"

extern int km_test_failures;

#define KM_EXPECT(cond)                                                               \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);             \
      km_test_failures++;                                                             \
    }                                                                                 \
  } while (0)

#define KM_EXPECT_NEAR(a, b, tol)                                                               \
  do {                                                                                          \
    double km_a_ = (double)(a), km_b_ = (double)(b);                                            \
    if (!(fabs(km_a_ - km_b_) <= (tol))) {                                                      \
      fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g (tolerance %g)\n", __FILE__, __LINE__, #a, \
              km_a_, km_b_, (double)(tol));                                                     \
      km_test_failures++;                                                                       \
    }                                                                                           \
  } while (0)

/* KM_EXPECT with a formatted reason, for checks over many rows: say which one failed. */
#define KM_EXPECT_MSG(cond, ...)                                      \
  do {                                                                \
    if (!(cond)) {                                                    \
      km_test_failures++;                                             \
      fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fputc('\n', stderr);                                            \
    }                                                                 \
  } while (0)

/* A CUDA call in a void test function: on error count a failure, say where, and return. */
#define KM_EXPECT_CUDA(expr)                                                                      \
  do {                                                                                            \
    cudaError_t km_e_ = (expr);                                                                   \
    if (km_e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(km_e_)); \
      km_test_failures++;                                                                         \
      return;                                                                                     \
    }                                                                                             \
  } while (0)

/* Deterministic test data: splitmix64 steps and a Box-Muller normal from one step. */
uint64_t km_test_rng_next(uint64_t *state);
float km_test_rng_normal(uint64_t *state);

/* Exit status for the end of main: prints a summary line. */
int km_test_finish(const char *name);
/* 1 when a CUDA device is usable; otherwise prints "no CUDA device: skipped" and returns 0. */
int km_test_have_gpu(void);
/* A fixture file's text (caller frees); NULL, with a line on stderr, when it cannot be read. */
char *km_test_read_text(const char *name);
/* A fixture file parsed as JSON (any size); NULL, with a line on stderr, when missing or malformed. */
struct cJSON *km_test_read_json(const char *name);
/* The same for any path. */
struct cJSON *km_test_read_json_file(const char *path);
/* Path of a fixture file: $KM_FIXTURES/name, or fixtures/name. */
const char *km_test_fixture(const char *name, char *buf, size_t len);

/* Device buffers for GPU tests: a copy of host data, or `bytes` set to `fill` (poison); NULL on failure
 * (said on stderr). Bytes back to the host after the device finishes: 0 ok, -1 (said on stderr). */
void *km_test_dev_upload(const void *host, size_t bytes);
void *km_test_dev_filled(size_t bytes, int fill);
int km_test_download(void *host, const void *dev, size_t bytes);
/* A device output (host NULL: `bytes` of poison 0xFF) or input (a copy of host) followed by
 * KM_TEST_GUARD_BYTES of KM_TEST_GUARD_VALUE; after the download of bytes + the guard, 1 when the guard is
 * intact. */
#define KM_TEST_GUARD_BYTES 256
#define KM_TEST_GUARD_VALUE 0xA5
void *km_test_dev_guarded(const void *host, size_t bytes);
int km_test_guard_intact(const void *downloaded, size_t bytes);
/* The device comparison of kernels/verify_compare.h run to completion on the default stream: *out gets
 * what it found (got and want are device pointers). Returns the mismatch count, or ~0ull after printing
 * the CUDA error. */
unsigned long long km_test_device_diff(const void *got, const void *want, size_t n, int elem_bytes, size_t stride,
                                       int max_ulp, km_diff *out);
/* Overwrite one byte of device memory (a corrupted element for a check that must then fail). */
int km_test_corrupt_byte(void *dev, size_t offset, unsigned char value);

/* A family's whole-output check, failing where it must: `./micro --smoke --filter REGEX` (KM_MICRO) passes
 * every selected case, and with KM_VERIFY_FAULT set (micro/verify.h: one element of each case's first
 * device comparison changed) fails every one of them, naming the wrong element. Counted as checks. */
void km_test_check_catches_fault(const char *filter, int cases);

#define KM_TEST_SKIP 77

#endif
