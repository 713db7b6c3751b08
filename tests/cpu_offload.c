/* The latency-bandwidth fit on synthetic points (exact line, a hand-worked set, noise, degenerate
 * input) and the host buffers that need no GPU: pageable memory, unplaced and placed with hwloc. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fit.h"
#include "host_mem.h"
#include "test_util.h"
#include "topo.h"

enum { NPTS = 8 };

static void test_exact_line(void) {
  /* t = 5 us + bytes / 55 GB/s over 4 KiB .. 64 MiB: the offload fit's own points */
  double x[NPTS], y[NPTS], a = 0, s = 0, r2 = 0;
  for (int i = 0; i < NPTS; i++) {
    x[i] = 4096.0 * pow(4.0, i);
    y[i] = 5e-6 + x[i] / 55e9;
  }
  KM_EXPECT(km_fit_linear(x, y, NPTS, &a, &s, &r2) == 0);
  KM_EXPECT_NEAR(a * 1e6, 5.0, 1e-6);
  KM_EXPECT_NEAR(1.0 / s / 1e9, 55.0, 1e-6);
  KM_EXPECT_NEAR(r2, 1.0, 1e-12);
}

static void test_hand_worked(void) {
  /* means 2.5 and 3.75, Sxx 5, Sxy 3.5 -> slope 0.7, alpha 2; SSres 2.3, SStot 4.75 */
  const double x[] = {1, 2, 3, 4}, y[] = {2, 4, 5, 4};
  double a = 0, s = 0, r2 = 0;
  KM_EXPECT(km_fit_linear(x, y, 4, &a, &s, &r2) == 0);
  KM_EXPECT_NEAR(s, 0.7, 1e-12);
  KM_EXPECT_NEAR(a, 2.0, 1e-12);
  KM_EXPECT_NEAR(r2, 1.0 - 2.3 / 4.75, 1e-12);
  /* outputs may be NULL */
  KM_EXPECT(km_fit_linear(x, y, 4, NULL, &s, NULL) == 0);
}

static void test_noisy(void) {
  /* +-1% multiplicative noise, alternating: the fit stays near the truth and r2 just below 1 */
  double x[NPTS], y[NPTS], a = 0, s = 0, r2 = 0;
  for (int i = 0; i < NPTS; i++) {
    x[i] = 4096.0 * pow(4.0, i);
    y[i] = (3e-6 + x[i] / 50e9) * (i % 2 ? 1.01 : 0.99);
  }
  KM_EXPECT(km_fit_linear(x, y, NPTS, &a, &s, &r2) == 0);
  KM_EXPECT_NEAR(1.0 / s / 1e9, 50.0, 1.0);
  KM_EXPECT(fabs(a) < 20e-6);
  KM_EXPECT(r2 > 0.999 && r2 < 1.0);
}

static void test_degenerate(void) {
  const double x[] = {1, 1, 1}, y[] = {1, 2, 3}, flat_y[] = {7, 7, 7}, x3[] = {1, 2, 3};
  double a = -1, s = -1, r2 = -1;
  KM_EXPECT(km_fit_linear(x, y, 3, &a, &s, &r2) == -1); /* all x equal: no slope */
  KM_EXPECT(a == -1 && s == -1 && r2 == -1);            /* untouched on failure */
  KM_EXPECT(km_fit_linear(x3, y, 1, &a, &s, &r2) == -1);
  KM_EXPECT(km_fit_linear(x3, y, 0, &a, &s, &r2) == -1);
  KM_EXPECT(km_fit_linear(NULL, y, 3, &a, &s, &r2) == -1);
  const double bad[] = {1, NAN, 3};
  KM_EXPECT(km_fit_linear(x3, bad, 3, &a, &s, &r2) == -1);
  KM_EXPECT(km_fit_linear(bad, y, 3, &a, &s, &r2) == -1);
  /* constant y: slope 0, the line explains every point */
  KM_EXPECT(km_fit_linear(x3, flat_y, 3, &a, &s, &r2) == 0);
  KM_EXPECT_NEAR(s, 0, 0);
  KM_EXPECT_NEAR(a, 7, 1e-12);
  KM_EXPECT_NEAR(r2, 1, 0);
}

static void test_pageable(struct km_topo *t, int node) {
  km_host_buf h;
  char err[200];
  const size_t bytes = (size_t)3 << 20;
  KM_EXPECT(km_host_alloc(t, KM_HOST_PAGEABLE, node, bytes, &h, err, sizeof err) == 0);
  if (!h.ptr) return;
  KM_EXPECT(h.bytes == bytes && h.kind == KM_HOST_PAGEABLE && !h.registered);
  KM_EXPECT(((uintptr_t)h.ptr & 4095u) == 0);
  KM_EXPECT(h.node_wanted == (t ? node : -1));
  KM_EXPECT(h.node_found < 0 || !t || node < 0 || h.node_found == node);
  const unsigned char *p = h.ptr;
  KM_EXPECT(p[0] == 0 && p[bytes - 1] == 0); /* touched (zeroed) at allocation */
  memset(h.ptr, 0xA5, bytes);
  km_host_free(&h);
  KM_EXPECT(h.ptr == NULL);
  km_host_free(&h); /* twice is harmless */
}

int main(void) {
  test_exact_line();
  test_hand_worked();
  test_noisy();
  test_degenerate();

  KM_EXPECT(strcmp(km_host_kind_name(KM_HOST_PINNED), "pinned") == 0);
  KM_EXPECT(strcmp(km_host_kind_name(KM_HOST_REGISTERED), "registered") == 0);
  KM_EXPECT(strcmp(km_host_kind_name(KM_HOST_PAGEABLE), "pageable") == 0);
  char err[200];
  km_host_buf h;
  KM_EXPECT(km_host_alloc(NULL, KM_HOST_PAGEABLE, -1, 0, &h, err, sizeof err) == -1); /* zero bytes */
  KM_EXPECT(km_host_alloc(NULL, KM_HOST_KIND_COUNT, -1, 64, &h, err, sizeof err) == -1);
  KM_EXPECT(km_host_bind_thread(NULL, err, sizeof err) == 1); /* nothing to bind to */

  test_pageable(NULL, -1);
  /* with a topology but no GPU: the first NUMA node stands in for the GPU's */
  struct km_topo *t = km_topo_load(NULL, err, sizeof err);
  if (t) {
    test_pageable(t, km_topo_gpu_near_node(t));
    km_topo_free(t);
  } else {
    printf("hwloc topology not loaded (%s): placed allocation not tested\n", err);
  }
  return km_test_finish("cpu_offload");
}
