/* Statistics: odd and even medians (the even case averages the middle pair), CV, noisy flag,
 * batch sizing of the timer, and rejection of empty or non-finite input. */
#include <math.h>

#include "stats.h"
#include "test_util.h"
#include "timer.h"

int main(void) {
  km_stats s;
  const double odd[] = {5, 1, 3};
  KM_EXPECT(km_stats_compute(odd, 3, &s) == 0);
  KM_EXPECT_NEAR(s.median, 3, 0);
  KM_EXPECT_NEAR(s.mean, 3, 1e-12);
  KM_EXPECT_NEAR(s.stddev, 2, 1e-12); /* sample stddev of 1,3,5 */
  KM_EXPECT_NEAR(s.cv, 2.0 / 3.0, 1e-12);
  KM_EXPECT_NEAR(s.min, 1, 0);
  KM_EXPECT_NEAR(s.max, 5, 0);

  const double even[] = {4, 1, 3, 10};
  KM_EXPECT(km_stats_compute(even, 4, &s) == 0);
  KM_EXPECT_NEAR(s.median, 3.5, 0); /* (3 + 4) / 2, not 3 or 4 */
  KM_EXPECT_NEAR(km_median_of(even, 2), 2.5, 0);
  KM_EXPECT_NEAR(km_median_of(even, 1), 4, 0);
  KM_EXPECT(isnan(km_median_of(even, 0)));
  /* nearest-rank quantiles, the input left as it was */
  double five[5] = {5, 1, 4, 2, 3};
  KM_EXPECT_NEAR(km_quantile_of(five, 5, 0.0), 1, 0);
  KM_EXPECT_NEAR(km_quantile_of(five, 5, 0.1), 1, 0); /* rank 0.4 -> 0 */
  KM_EXPECT_NEAR(km_quantile_of(five, 5, 0.15), 2, 0); /* rank 0.6 -> 1 */
  KM_EXPECT_NEAR(km_quantile_of(five, 5, 0.5), 3, 0);
  KM_EXPECT_NEAR(km_quantile_of(five, 5, 0.9), 5, 0);
  KM_EXPECT_NEAR(km_quantile_of(five, 5, 2.0), 5, 0); /* q clamped to [0, 1] */
  KM_EXPECT(five[0] == 5 && five[4] == 3);
  KM_EXPECT(isnan(km_quantile_of(five, 0, 0.5)));
  const double qs[3] = {0.1, 0.5, 1.0};
  double got[3];
  km_quantiles_of(five, 5, qs, 3, got); /* the same ranks from one sort */
  KM_EXPECT(got[0] == 1 && got[1] == 3 && got[2] == 5 && five[0] == 5);
  km_quantiles_of(five, 0, qs, 3, got);
  KM_EXPECT(isnan(got[0]) && isnan(got[2]));

  const double flat[] = {2, 2, 2, 2, 2, 2};
  KM_EXPECT(km_stats_compute(flat, 6, &s) == 0);
  KM_EXPECT_NEAR(s.cv, 0, 0);
  KM_EXPECT(!km_stats_noisy(&s));

  const double jumpy[] = {1.0, 1.0, 1.2, 1.0};
  KM_EXPECT(km_stats_compute(jumpy, 4, &s) == 0);
  KM_EXPECT(s.cv > KM_NOISY_CV);
  KM_EXPECT(km_stats_noisy(&s));

  const double one[] = {7};
  KM_EXPECT(km_stats_compute(one, 1, &s) == 0);
  KM_EXPECT_NEAR(s.stddev, 0, 0);

  const double bad[] = {1, NAN};
  KM_EXPECT(km_stats_compute(bad, 2, &s) == -1);
  KM_EXPECT(km_stats_compute(odd, 0, &s) == -1);

  /* the timer batches short kernels up to the minimum sample time plus its margin (KM_BATCH_MARGIN,
   * 15%), within [1, KM_MAX_BATCH] */
  KM_EXPECT(km_timer_batch_for(1e-3, 200e-6) == 1);
  KM_EXPECT(km_timer_batch_for(10e-6, 200e-6) == 23);
  KM_EXPECT(km_timer_batch_for(3e-6, 200e-6) == 77);
  KM_EXPECT(km_timer_batch_for(200e-6, 200e-6) == 2); /* one launch at exactly the minimum is too close */
  KM_EXPECT(km_timer_batch_for(1e-12, 200e-6) == KM_MAX_BATCH);
  KM_EXPECT(km_timer_batch_for(0, 200e-6) == KM_MAX_BATCH);
  return km_test_finish("cpu_stats");
}
