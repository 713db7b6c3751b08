/* Bitwise checks for copies and gathers (word-wise memcmp that names the first bad offsets), the CPU twin
 * of the device comparison, and km_check, which sums a case's device and CPU checks into one outcome. */
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

size_t km_verify_equal(km_bench *b, const void *got, const void *want, size_t bytes) {
  const unsigned char *g = got, *w = want;
  size_t bad = 0, words = bytes / 4;
  for (size_t i = 0; i < words; i++) {
    uint32_t x, y;
    memcpy(&x, g + 4 * i, 4);
    memcpy(&y, w + 4 * i, 4);
    if (x != y && bad++ < 16) km_bench_mismatch(b, "byte offset %zu: got 0x%08x, want 0x%08x", 4 * i, x, y);
  }
  for (size_t i = words * 4; i < bytes; i++)
    if (g[i] != w[i] && bad++ < 16) km_bench_mismatch(b, "byte offset %zu: got 0x%02x, want 0x%02x", i, g[i], w[i]);
  return bad;
}

size_t km_verify_filled(km_bench *b, const void *got, size_t bytes, unsigned char value) {
  const unsigned char *g = got;
  size_t bad = 0;
  for (size_t i = 0; i < bytes; i++)
    if (g[i] != value && bad++ < 16) km_bench_mismatch(b, "byte offset %zu: got 0x%02x, want 0x%02x", i, g[i], value);
  return bad;
}

void *km_verify_to_host(km_bench *b, const void *dev, size_t bytes) {
  void *h = km_bench_host_alloc(b, bytes ? bytes : 16); /* NULL: recorded as a skip */
  if (!h) return NULL;
  cudaError_t e = cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, km_bench_stream(b));
  if (e == cudaSuccess) e = cudaStreamSynchronize(km_bench_stream(b));
  if (e != cudaSuccess) {
    km_bench_fail(b, "copy of verification data failed: %s", cudaGetErrorString(e));
    return NULL;
  }
  return h;
}

int km_verify_guard_set(km_bench *b, void *dev_end) {
  cudaError_t e = cudaMemsetAsync(dev_end, KM_VERIFY_GUARD_VALUE, KM_VERIFY_GUARD_BYTES, km_bench_stream(b));
  if (e != cudaSuccess) {
    km_bench_fail(b, "guard fill failed: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

size_t km_verify_guard_check(km_bench *b, const void *dev_end) {
  const unsigned char *g = km_verify_to_host(b, dev_end, KM_VERIFY_GUARD_BYTES);
  return g ? km_verify_filled(b, g, KM_VERIFY_GUARD_BYTES, KM_VERIFY_GUARD_VALUE) : KM_VERIFY_GUARD_BYTES;
}

static uint32_t host_elem(const unsigned char *p, size_t i, int elem_bytes) {
  uint32_t v = 0;
  if (elem_bytes == 1) return p[i];
  if (elem_bytes == 2) {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return h;
  }
  memcpy(&v, p + 4 * i, 4);
  return v;
}

/* The host side of km_diff_record (kernels/verify_diff.cuh), in index order. */
static void host_record(km_diff *diff, size_t i, uint32_t g, uint32_t w) {
  if (diff->count < KM_DIFF_KEPT) {
    diff->index[diff->count] = i;
    diff->got[diff->count] = g;
    diff->want[diff->count] = w;
  }
  diff->count++;
}

size_t km_verify_host_compare(const void *got, const void *want, size_t n, int elem_bytes, size_t stride, int max_ulp,
                              km_diff *diff) {
  memset(diff, 0, sizeof *diff);
  for (size_t i = 0; i < n; i++) {
    const uint32_t g = host_elem(got, i * stride, elem_bytes), w = host_elem(want, i * stride, elem_bytes);
    if (km_verify_differs(g, w, elem_bytes, max_ulp)) host_record(diff, i, g, w);
  }
  return (size_t)diff->count;
}

size_t km_verify_host_compare_codes3(const uint8_t *got, const uint8_t *want, size_t rows, int d, km_diff *far,
                                     km_diff *near) {
  memset(far, 0, sizeof *far);
  memset(near, 0, sizeof *near);
  if (d <= 0 || d % 8) return SIZE_MAX;
  const size_t row_bytes = (size_t)d / 8 * 3;
  for (size_t r = 0; r < rows; r++)
    for (int i = 0; i < d; i++) {
      const uint32_t g = km_verify_code3(got + r * row_bytes, i), w = km_verify_code3(want + r * row_bytes, i);
      const int dist = km_verify_code3_distance(g, w);
      if (dist) host_record(dist == 1 ? near : far, r * (size_t)d + (size_t)i, g, w);
    }
  return (size_t)far->count;
}

/* ---- km_check */

int km_check_init(km_check *c, km_bench *b) {
  memset(c, 0, sizeof *c);
  c->b = b;
  c->diff = km_bench_device_alloc(b, sizeof *c->diff);
  return c->diff ? 0 : -1;
}

static void report(km_check *c, const char *what, const km_diff *d, size_t n) {
  const size_t kept = d->count < KM_DIFF_KEPT ? (size_t)d->count : KM_DIFF_KEPT;
  for (size_t k = 0; k < kept; k++)
    km_bench_mismatch(c->b, "%s[%llu]: got 0x%08x, want 0x%08x", what, d->index[k], d->got[k], d->want[k]);
  c->bad += (size_t)d->count;
  c->n += n;
}

int km_check_begin(km_check *c, const char *what) {
  if (!km_bench_ok(c->b)) return -1;
  cudaError_t e = cudaMemsetAsync(c->diff, 0, sizeof *c->diff, km_bench_stream(c->b));
  if (e == cudaSuccess) return 0;
  km_bench_fail(c->b, "device check of %s failed: %s", what, cudaGetErrorString(e));
  return -1;
}

void km_check_end(km_check *c, const char *what, size_t n, cudaError_t launched) {
  cudaStream_t s = km_bench_stream(c->b);
  km_diff d;
  cudaError_t e = launched;
  if (e == cudaSuccess) e = cudaMemcpyAsync(&d, c->diff, sizeof d, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    km_bench_fail(c->b, "device check of %s failed: %s", what, cudaGetErrorString(e));
    return;
  }
  report(c, what, &d, n);
}

/* KM_VERIFY_FAULT (see verify.h): XOR a bit of the last element's top byte, beyond any ulp tolerance. */
static int inject_fault(km_check *c, const void *got, size_t n, int elem_bytes, size_t stride) {
  if (c->faulted || n == 0 || !getenv("KM_VERIFY_FAULT")) return 0;
  c->faulted = 1;
  unsigned char *top = (unsigned char *)got + ((n - 1) * stride + 1) * (size_t)elem_bytes - 1;
  unsigned char v;
  cudaStream_t s = km_bench_stream(c->b);
  cudaError_t e = cudaMemcpyAsync(&v, top, 1, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  v ^= 0x40;
  if (e == cudaSuccess) e = cudaMemcpyAsync(top, &v, 1, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e == cudaSuccess) return 0;
  km_bench_fail(c->b, "KM_VERIFY_FAULT: could not change the output: %s", cudaGetErrorString(e));
  return -1;
}

void km_check_device(km_check *c, const char *what, const void *got, const void *want, size_t n, int elem_bytes,
                     size_t stride, int max_ulp) {
  if (km_check_begin(c, what) != 0 || inject_fault(c, got, n, elem_bytes, stride) != 0) return;
  km_check_end(c, what, n,
                km_verify_compare(got, want, n, elem_bytes, stride, max_ulp, c->diff, km_bench_stream(c->b)));
}

void km_check_device_codes3(km_check *c, const char *what, const uint8_t *got, const uint8_t *want, size_t rows,
                            int d, size_t max_near) {
  const size_t n = rows * (size_t)(d > 0 ? d : 0);
  cudaStream_t s = km_bench_stream(c->b);
  km_diff *dev = km_bench_device_alloc(c->b, 2 * sizeof *dev); /* far, near */
  km_diff h[2];
  if (!dev || !km_bench_ok(c->b) || inject_fault(c, got, n / 8 * 3, 1, 1) != 0) return;
  cudaError_t e = cudaMemsetAsync(dev, 0, 2 * sizeof *dev, s);
  if (e == cudaSuccess) e = km_verify_compare_codes3(got, want, rows, d, dev, dev + 1, s);
  if (e == cudaSuccess) e = cudaMemcpyAsync(h, dev, sizeof h, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    km_bench_fail(c->b, "device check of %s failed: %s", what, cudaGetErrorString(e));
    return;
  }
  km_bench_counter(c->b, "codes_adjacent", (double)h[1].count); /* the row says how many, pass or fail */
  const int near_bad = h[1].count > max_near;
  if (h[0].count || near_bad) /* first, so that it is shown whatever follows */
    km_bench_mismatch(c->b, "%s: %llu more than one level off, %llu adjacent (%zu allowed)", what, h[0].count,
                      h[1].count, max_near);
  report(c, what, &h[0], n);
  if (near_bad) {
    char name[96];
    snprintf(name, sizeof name, "%s (adjacent)", what);
    report(c, name, &h[1], 0);
  }
}

void km_check_device_close(km_check *c, const char *what, const float *got, const float *want, const float *mag,
                           size_t n, float rel_tol) {
  if (km_check_begin(c, what) != 0) return;
  km_check_end(c, what, n, km_verify_compare_close(got, want, mag, n, rel_tol, c->diff, km_bench_stream(c->b)));
}

void km_check_host(km_check *c, const char *what, const void *got, const void *want, size_t n, int elem_bytes,
                   size_t stride, int max_ulp) {
  km_diff d;
  km_verify_host_compare(got, want, n, elem_bytes, stride, max_ulp, &d);
  report(c, what, &d, n);
}

void km_check_add(km_check *c, size_t bad, size_t n) {
  c->bad += bad;
  c->n += n;
}

int km_check_done(km_check *c, const char *tolerance) {
  if (!km_bench_ok(c->b)) return 0;
  return km_bench_verified(c->b, c->bad, c->n, tolerance);
}
