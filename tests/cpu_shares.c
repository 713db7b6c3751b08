/* The class ceilings' arithmetic without a GPU: traffic classes from bytes read and written, the time
 * the ceilings take (copy, read, write and the mixed model), shares of the class ceiling, the peak, the
 * link and the host copy, unknown ceilings as NaN, and the row figures: l2_resident rows (declared,
 * rotated or not) kept out of the HBM shares, host rows shared against the link only, smoke runs with
 * no shares. */
#include <math.h>
#include <string.h>

#include "row_figures.h"
#include "shares.h"
#include "test_util.h"

#define GB 1e9

static const km_ceilings h200 = {4000.0, 4500.0, 4200.0, 4800.0, 63.0, 55.0, 50.0};

static void test_classes(void) {
  KM_EXPECT(km_traffic_of(1, 1) == KM_TRAFFIC_COPY);
  KM_EXPECT(km_traffic_of(1, 0) == KM_TRAFFIC_READ);
  KM_EXPECT(km_traffic_of(0, 1) == KM_TRAFFIC_WRITE);
  KM_EXPECT(km_traffic_of(2, 1) == KM_TRAFFIC_MIXED);
  KM_EXPECT(km_traffic_of(0, 0) == KM_TRAFFIC_NONE);
  KM_EXPECT(strcmp(km_traffic_name(KM_TRAFFIC_MIXED), "mixed") == 0);
}

static void test_ceiling_seconds(void) {
  /* a copy of 1 GB each way at the copy ceiling (2 GB moved at 4000 GB/s) */
  KM_EXPECT_NEAR(km_ceiling_seconds(&h200, GB, GB), 2.0 / 4000.0, 1e-15);
  KM_EXPECT_NEAR(km_ceiling_seconds(&h200, GB, 0), 1.0 / 4500.0, 1e-15);
  KM_EXPECT_NEAR(km_ceiling_seconds(&h200, 0, GB), 1.0 / 4200.0, 1e-15);
  /* 2:1 read:write (fp8 quantize): the paired 1 GB each way at the copy ceiling, 1 GB more at the read ceiling */
  KM_EXPECT_NEAR(km_ceiling_seconds(&h200, 2 * GB, GB), 2.0 / 4000.0 + 1.0 / 4500.0, 1e-15);
  /* continuity: a copy with a little more read than written sits next to the copy ceiling */
  double near_copy = km_ceiling_seconds(&h200, GB * 1.001, GB);
  KM_EXPECT(near_copy > 2.0 / 4000.0 && near_copy < 2.0 / 4000.0 * 1.001);
  /* a class with no ceiling: NaN, and so is the share */
  km_ceilings no_read = h200;
  no_read.read_gbps = 0;
  KM_EXPECT(isnan(km_ceiling_seconds(&no_read, GB, 0)));
  KM_EXPECT(isnan(km_share_of_class(&no_read, GB, 0, 1.0)));
  KM_EXPECT(!isnan(km_share_of_class(&no_read, GB, GB, 1.0))); /* a copy does not need it */
}

static void test_shares(void) {
  /* a read at exactly the read ceiling is 100% of its class, 93.75% of the peak */
  double t = GB / (4500.0 * GB);
  KM_EXPECT_NEAR(km_share_of_class(&h200, GB, 0, t), 100.0, 1e-9);
  KM_EXPECT_NEAR(km_share_of_peak(&h200, GB, t), 100.0 * 4500.0 / 4800.0, 1e-9);
  /* the same row against the copy ceiling would read 112.5%: the reason for classes */
  KM_EXPECT_NEAR(100.0 * (GB / t / GB) / h200.copy_gbps, 112.5, 1e-9);
  KM_EXPECT_NEAR(km_share_of_class(&h200, GB, GB, 2.0 * GB / (3600.0 * GB)), 90.0, 1e-9);
  KM_EXPECT(isnan(km_share_of_class(&h200, GB, 0, 0.0)));
  /* host copies: each direction, both at once against their sum, undeclared against the faster */
  KM_EXPECT_NEAR(km_host_copy_gbps(&h200, KM_LINK_H2D), 55.0, 0);
  KM_EXPECT_NEAR(km_host_copy_gbps(&h200, KM_LINK_D2H), 50.0, 0);
  KM_EXPECT_NEAR(km_host_copy_gbps(&h200, KM_LINK_BOTH), 105.0, 0);
  KM_EXPECT_NEAR(km_host_copy_gbps(&h200, KM_LINK_ANY), 55.0, 0);
  KM_EXPECT_NEAR(km_share_of_host_copy(&h200, KM_LINK_D2H, 50.0 * GB, 1.0), 100.0, 1e-9);
  KM_EXPECT_NEAR(km_share_of_link(&h200, 63.0 * GB, 2.0), 50.0, 1e-9);
}

static void test_row_figures(void) {
  const size_t l2 = 60u << 20;
  km_row_figures f;
  km_work w;
  memset(&w, 0, sizeof w);
  w.bytes_read = w.bytes_written = GB;
  km_row_figures_compute(&w, 2.0 * GB / (4000.0 * GB), 0, &h200, l2, 1, &f);
  KM_EXPECT(f.traffic == KM_TRAFFIC_COPY && !f.l2_resident);
  KM_EXPECT_NEAR(f.pct_of_ceiling, 100.0, 1e-9);
  KM_EXPECT_NEAR(f.gbps, 4000.0, 1e-6);
  KM_EXPECT(isnan(f.pct_of_link) && isnan(f.tokens_per_second));
  /* 16 MiB per instance, not rotated: inside 4x L2, so no HBM share and flagged */
  w.bytes_read = w.bytes_written = 8u << 20;
  km_row_figures_compute(&w, 1e-6, 0, &h200, l2, 1, &f);
  KM_EXPECT(f.l2_resident && isnan(f.pct_of_ceiling) && isnan(f.pct_of_peak) && f.gbps > 0);
  /* the same instance rotated over 64 copies (1 GiB) is an HBM row */
  km_row_figures_compute(&w, 1e-6, 64.0 * (16u << 20), &h200, l2, 1, &f);
  KM_EXPECT(!f.l2_resident && isfinite(f.pct_of_ceiling));
  /* a declared working set wins over both */
  w.working_set_bytes = 100u << 20;
  km_row_figures_compute(&w, 1e-6, 64.0 * (16u << 20), &h200, l2, 1, &f);
  KM_EXPECT(f.l2_resident && f.working_set_bytes == (double)(100u << 20));
  /* a host row: link and host-copy shares only, never l2_resident */
  memset(&w, 0, sizeof w);
  w.bytes_read = 55.0 * GB;
  w.host_link = 1;
  w.link_dir = KM_LINK_H2D;
  km_row_figures_compute(&w, 1.0, 0, &h200, l2, 1, &f);
  KM_EXPECT(!f.l2_resident && isnan(f.pct_of_ceiling) && isnan(f.pct_of_peak));
  KM_EXPECT_NEAR(f.pct_of_host_copy, 100.0, 1e-9);
  KM_EXPECT_NEAR(f.pct_of_link, 100.0 * 55.0 / 63.0, 1e-9);
  /* smoke: no share at all */
  km_row_figures_compute(&w, 1.0, 0, &h200, l2, 0, &f);
  KM_EXPECT(isnan(f.pct_of_host_copy) && isnan(f.pct_of_link));
  /* tokens: per-token figures over the layers */
  memset(&w, 0, sizeof w);
  w.bytes_read = 1000;
  w.tokens = 10;
  w.layers = 2;
  km_row_figures_compute(&w, 1e-3, 0, &h200, l2, 1, &f);
  KM_EXPECT_NEAR(f.tokens_per_second, 1e4, 1e-6);
  KM_EXPECT_NEAR(f.ns_per_token_layer, 5e4, 1e-6);
  KM_EXPECT_NEAR(f.bytes_per_token, 100.0, 1e-12);
}

int main(void) {
  test_classes();
  test_ceiling_seconds();
  test_shares();
  test_row_figures();
  return km_test_finish("cpu_shares");
}
