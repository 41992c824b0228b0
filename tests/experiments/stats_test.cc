// The statistics of the reports against values computed by hand (the t quantiles of a table, and
// Welch's test with the t density integrated numerically, an independent route to the p-value):
// intervals of a mean over seeds, the one-seed and the no-spread cases, and Welch's t-test.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "experiments/report/stats.h"

using namespace normlab::experiments::report;

BOOST_AUTO_TEST_SUITE(stats)

BOOST_AUTO_TEST_CASE(mean_interval_uses_the_t_quantile_of_n_minus_1_degrees_of_freedom) {
  // t(0.975, n - 1) for n = 2, 3, 4, 5, 6, 8, 10 (a t table): the interval of {0, 1, ..., n-1}
  // scaled so that its sem is 1 gives the quantile itself.
  const std::vector<std::pair<int, double>> table{{2, 12.706}, {3, 4.303}, {4, 3.182}, {5, 2.776},
                                                  {6, 2.571}, {8, 2.365}, {10, 2.262}};
  for (const auto& [n, t] : table) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(i);
    const MeanInterval m = mean_interval(v);
    BOOST_TEST_CONTEXT("n = " << n) {
      BOOST_TEST(m.n == n);
      BOOST_TEST(m.half_width / m.sem == t, boost::test_tools::tolerance(5e-4));
      BOOST_TEST(m.mean == (n - 1) / 2.0, boost::test_tools::tolerance(1e-12));
    }
  }
  const MeanInterval m = mean_interval({1, 2, 3, NAN});  // NaN (a diverged run) left out
  BOOST_TEST(m.n == 3);
  BOOST_TEST(m.std == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(m.sem == 1 / std::sqrt(3.0), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(m.low() == 2 - 4.302652730 / std::sqrt(3.0), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.high() == 2 + 4.302652730 / std::sqrt(3.0), boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(one_seed_has_no_interval) {
  const MeanInterval m = mean_interval({0.87});
  BOOST_TEST(m.n == 1);
  BOOST_TEST(m.mean == 0.87);
  BOOST_TEST(std::isnan(m.half_width));
  BOOST_TEST(std::isnan(m.low()));
  BOOST_TEST(mean_interval({}).n == 0);
}

BOOST_AUTO_TEST_CASE(welch_test_matches_hand_computed_values) {
  struct Case {
    std::vector<double> a, b;
    double diff, t, df, p;
  };
  // t, df and p computed by hand: Welch-Satterthwaite df, p = 2 P(T > |t|) by Simpson's rule on
  // the t density with 200,000 intervals.
  const std::vector<Case> cases{
      {{1, 2, 3}, {4, 5, 6}, -3, -3.674234614, 4, 0.02131164113},
      {{0.861, 0.867, 0.859}, {0.872, 0.870, 0.875}, -0.01, -3.560344975, 3.289396411, 0.03257009208},
      // One side without spread: the degrees of freedom are the other side's n - 1.
      {{0.8675, 0.8675}, {0.8717, 0.8691, 0.8702}, -0.002833333333, -3.760178619, 2, 0.06401060428},
  };
  for (const Case& c : cases) {
    const WelchTest w = welch_test(c.a, c.b);
    BOOST_TEST(w.diff == c.diff, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(w.t == c.t, boost::test_tools::tolerance(1e-8));
    BOOST_TEST(w.df == c.df, boost::test_tools::tolerance(1e-8));
    BOOST_TEST(w.p == c.p, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(w.low < w.diff);
    BOOST_TEST(w.high > w.diff);
  }
  // {1,2,3} vs {4,5,6}: the interval is -3 ± t(0.975, 4) se = -3 ± 2.776445105 · 0.8164965809.
  const WelchTest w = welch_test({1, 2, 3}, {4, 5, 6});
  BOOST_TEST(w.low == -3 - 2.776445105 * 0.8164965809, boost::test_tools::tolerance(1e-8));
  BOOST_TEST(w.distinguishable());
  BOOST_TEST(!welch_test({0.8675, 0.8675}, {0.8717, 0.8691, 0.8702}).distinguishable());  // p = 0.064
}

BOOST_AUTO_TEST_CASE(welch_test_is_untestable_with_one_seed_or_no_spread) {
  const WelchTest one = welch_test({0.87}, {0.85, 0.86});
  BOOST_TEST(one.diff == 0.87 - 0.855, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isnan(one.p));
  BOOST_TEST(!one.distinguishable());
  const WelchTest flat = welch_test({0.5, 0.5}, {0.6, 0.6});
  BOOST_TEST(std::isnan(flat.p));
  BOOST_TEST(!flat.distinguishable());
}

BOOST_AUTO_TEST_SUITE_END()
