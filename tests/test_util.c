/* Test helpers shared by every test program. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

int km_test_failures = 0;

int km_test_finish(const char *name) {
  if (km_test_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, km_test_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

int km_test_have_gpu(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("no CUDA device: skipped (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none present");
    return 0;
  }
  return 1;
}

const char *km_test_fixture(const char *name, char *buf, size_t len) {
  const char *dir = getenv("KM_FIXTURES");
  snprintf(buf, len, "%s/%s", dir && *dir ? dir : "fixtures", name);
  return buf;
}

uint64_t km_test_rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float km_test_rng_normal(uint64_t *state) {
  const uint64_t h = km_test_rng_next(state);
  const double u1 = ((double)(uint32_t)h + 1.0) / 4294967296.0, u2 = (double)(uint32_t)(h >> 32) / 4294967296.0;
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* The whole file at `path` as a NUL-terminated string (malloc'ed), or NULL with a line on stderr. */
static char *read_file_text(const char *path) {
  FILE *f = fopen(path, "rb");
  long n = -1;
  if (f && fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  size_t got = (text && fseek(f, 0, SEEK_SET) == 0) ? fread(text, 1, (size_t)n, f) : 0;
  if (f) fclose(f);
  if (text) text[got] = '\0';
  else fprintf(stderr, "cannot read %s\n", path);
  return text;
}

char *km_test_read_text(const char *name) {
  char path[1024];
  return read_file_text(km_test_fixture(name, path, sizeof path));
}

struct cJSON *km_test_read_json_file(const char *path) {
  char *text = read_file_text(path);
  cJSON *doc = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!doc) fprintf(stderr, "cannot read %s as JSON\n", path);
  return doc;
}

struct cJSON *km_test_read_json(const char *name) {
  char path[1024];
  return km_test_read_json_file(km_test_fixture(name, path, sizeof path));
}

void *km_test_dev_filled(size_t bytes, int fill) {
  void *d = NULL;
  cudaError_t e = cudaMalloc(&d, bytes ? bytes : 1);
  if (e == cudaSuccess) e = cudaMemset(d, fill, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    fprintf(stderr, "device buffer of %zu bytes: %s\n", bytes, cudaGetErrorString(e));
    cudaFree(d);
    return NULL;
  }
  return d;
}

void *km_test_dev_upload(const void *host, size_t bytes) {
  void *d = km_test_dev_filled(bytes, 0);
  if (d && bytes) {
    cudaError_t e = cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      fprintf(stderr, "upload of %zu bytes: %s\n", bytes, cudaGetErrorString(e));
      cudaFree(d);
      return NULL;
    }
  }
  return d;
}

int km_test_download(void *host, const void *dev, size_t bytes) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    fprintf(stderr, "download of %zu bytes: %s\n", bytes, cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

void *km_test_dev_guarded(const void *host, size_t bytes) {
  unsigned char *d = km_test_dev_filled(bytes + KM_TEST_GUARD_BYTES, KM_TEST_GUARD_VALUE);
  if (!d) return NULL;
  cudaError_t e = host ? cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) : cudaMemset(d, 0xff, bytes);
  if (e != cudaSuccess) {
    fprintf(stderr, "guarded buffer of %zu bytes: %s\n", bytes, cudaGetErrorString(e));
    cudaFree(d);
    return NULL;
  }
  return d;
}

int km_test_guard_intact(const void *downloaded, size_t bytes) {
  const unsigned char *g = (const unsigned char *)downloaded + bytes;
  for (size_t i = 0; i < KM_TEST_GUARD_BYTES; ++i)
    if (g[i] != KM_TEST_GUARD_VALUE) return 0;
  return 1;
}

unsigned long long km_test_device_diff(const void *got, const void *want, size_t n, int elem_bytes, size_t stride,
                                       int max_ulp, km_diff *out) {
  km_diff *d = NULL;
  cudaError_t e = cudaMalloc((void **)&d, sizeof *d);
  if (e == cudaSuccess) e = cudaMemset(d, 0, sizeof *d);
  if (e == cudaSuccess) e = km_verify_compare(got, want, n, elem_bytes, stride, max_ulp, d, 0);
  if (e == cudaSuccess) e = cudaMemcpy(out, d, sizeof *out, cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (e != cudaSuccess) {
    fprintf(stderr, "device comparison failed: %s\n", cudaGetErrorString(e));
    return ~0ull;
  }
  return out->count;
}

int km_test_corrupt_byte(void *dev, size_t offset, unsigned char value) {
  return cudaMemcpy((unsigned char *)dev + offset, &value, 1, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
}

/* micro's exit status and its output, read back into buf. */
static int run_micro_smoke(const char *env, const char *filter, char *buf, size_t len) {
  const char *micro = getenv("KM_MICRO");
  char path[] = "/tmp/km_test_micro_XXXXXX", cmd[1024];
  int fd = mkstemp(path);
  if (!micro || fd < 0) {
    fprintf(stderr, "KM_MICRO is not set or no temporary file could be made\n");
    if (fd >= 0) close(fd), unlink(path);
    return -1;
  }
  close(fd);
  snprintf(cmd, sizeof cmd, "%s '%s' --smoke --filter '%s' >'%s' 2>&1", env, micro, filter, path);
  const int rc = system(cmd);
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(buf, 1, len - 1, f) : 0;
  buf[got] = '\0';
  if (f) fclose(f);
  unlink(path);
  return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

void km_test_check_catches_fault(const char *filter, int cases) {
  static char log[1 << 16];
  char want[64];
  int rc = run_micro_smoke("", filter, log, sizeof log);
  snprintf(want, sizeof want, "smoke run: %d cases, 0 failed, 0 skipped", cases);
  KM_EXPECT_MSG(rc == 0 && strstr(log, want), "%s: want exit 0 and '%s', got exit %d:\n%s", filter, want, rc, log);
  rc = run_micro_smoke("KM_VERIFY_FAULT=1", filter, log, sizeof log);
  snprintf(want, sizeof want, "smoke run: %d cases, %d failed, 0 skipped", cases, cases);
  KM_EXPECT_MSG(rc == 1 && strstr(log, want) && strstr(log, ": got 0x"),
                "%s with KM_VERIFY_FAULT: want exit 1, '%s' and the wrong element named, got exit %d:\n%s", filter, want,
                rc, log);
}
