// The claims reports make over seeds, against values computed by hand: a mean with its 95%
// interval (t(0.975, 2) = 4.302653), a difference with Welch's t-test (equal spreads and n, so
// df = 4, t(0.975, 4) = 2.776445, and p from the t density integrated numerically), the one-seed
// case (no interval, no test), the tie with the best, and the CSV columns.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "experiments/report/claims.h"

using namespace normlab::experiments::report;

namespace {
// Three seeds each, sample std 0.02 (2 points) in each.
const std::vector<double> kA{0.80, 0.82, 0.84};  // mean 82%
const std::vector<double> kB{0.79, 0.81, 0.83};  // mean 81%: 1 point below A, t = 0.612, p = 0.573
const std::vector<double> kC{0.70, 0.72, 0.74};  // mean 72%: 10 points below A, t = 6.124, p = 0.0036
}  // namespace

BOOST_AUTO_TEST_SUITE(claims)

BOOST_AUTO_TEST_CASE(a_cell_is_the_mean_with_its_95_percent_interval) {
  // sem = 2 / sqrt(3) = 1.1547 points; x 4.302653 = 4.968 points.
  BOOST_TEST(interval_cell(kA, kPercent) == "82.00 ± 4.97");
  BOOST_TEST(interval_cell({0.80, NAN, 0.84}, kPercent) == "82.00 ± 25.41");  // n = 2: 2.828 / sqrt 2 x 12.706
  BOOST_TEST(interval_cell({0.8}, kPercent) == "80.00");                       // one seed: no ±
  BOOST_TEST(interval_cell({NAN, NAN}, kPercent) == "diverged");
  BOOST_TEST(interval_cell({}, kPercent) == "not run");
  BOOST_TEST(interval_cell({0.31, 0.33}, Units{1, 4, ""}) == "0.3200 ± 0.1271");  // 0.01414 / sqrt 2 x 12.706
}

BOOST_AUTO_TEST_CASE(a_difference_states_its_interval_and_welch_test) {
  // diff 10 points, se = sqrt(2 x 4 / 3) = 1.63299 points, half-width 2.776445 x se = 4.534.
  BOOST_TEST(difference_text(kA, kC, kPercent) == "+10.00 points (95% CI +5.47 to +14.53, Welch's t-test p = 0.0036)");
  BOOST_TEST(difference_cell(kA, kC, kPercent) == "10.00 [5.47, 14.53]");
  BOOST_TEST(distinguishable(kA, kC));
}

BOOST_AUTO_TEST_CASE(a_difference_inside_the_noise_is_not_distinguishable) {
  BOOST_TEST(difference_text(kB, kA, kPercent) ==
             "-1.00 points (95% CI -5.53 to +3.53, Welch's t-test p = 0.57: not distinguishable at n = 3)");
  BOOST_TEST(!distinguishable(kB, kA));
}

BOOST_AUTO_TEST_CASE(one_seed_claims_no_test) {
  BOOST_TEST(difference_text({0.8}, {0.7}, kPercent) == "+10.00 points (1 seed each: not tested)");
  BOOST_TEST(difference_text(kA, {0.7}, kPercent) == "+12.00 points (n = 3 and 1: not tested)");
  BOOST_TEST(difference_cell({0.8}, {0.7}, kPercent) == "10.00");
  BOOST_TEST(!distinguishable({0.8}, {0.7}));
  // Seeds that agree exactly: no spread, nothing to test.
  BOOST_TEST(difference_text({0.8, 0.8}, {0.7, 0.7}, kPercent) ==
             "+10.00 points (no spread over seeds at n = 2: not tested)");
}

BOOST_AUTO_TEST_CASE(the_best_lists_every_setting_tied_with_it) {
  // A is best; B is within the noise (tied), C is distinguishably lower, the diverged one is left out.
  BOOST_TEST((tied_with_best({kB, kA, kC, {NAN, NAN}}) == std::vector<size_t>{1, 0}));
  // C alone against A: not tied.
  BOOST_TEST((tied_with_best({kC, kA}) == std::vector<size_t>{1}));
  // One seed each: nothing is distinguishable, so every setting ties, highest mean first.
  BOOST_TEST((tied_with_best({{0.7}, {0.9}, {0.8}}) == std::vector<size_t>{1, 2, 0}));
  BOOST_TEST(tied_with_best({{NAN}, {}}).empty());
  BOOST_TEST(join_names({"A", "B", "C"}) == "A, B and C");
}

BOOST_AUTO_TEST_CASE(a_ranking_sets_every_other_setting_against_the_best) {
  // A best; C distinguishably below (+10 points the other way); B tied; a diverged one; one not run.
  const Ranking r = rank_against_best({kC, kA, {NAN, NAN}, kB, {}}, kPercent);
  BOOST_REQUIRE(r.found());
  BOOST_TEST(r.best() == 1u);
  BOOST_TEST((r.tied == std::vector<size_t>{1, 3}));
  BOOST_REQUIRE(r.others.size() == 3u);  // the one not run is left out
  BOOST_TEST(r.others[0].index == 0u);
  BOOST_TEST((r.others[0].finite && !r.others[0].tied));
  BOOST_TEST(r.others[0].difference == "-10.00 points (95% CI -14.53 to -5.47, Welch's t-test p = 0.0036)");
  BOOST_TEST((r.others[1].index == 2u && !r.others[1].finite && r.others[1].difference.empty()));
  BOOST_TEST((r.others[2].index == 3u && r.others[2].finite && r.others[2].tied));
  BOOST_TEST(points_against_best(r, {"2", "4", "8", "16", "32"}, "below it", 3) ==
             "; distinguishably below it: batch 2 -10.00 points (95% CI -14.53 to -5.47, Welch's t-test p = 0.0036); "
             "batch 8 diverged; not distinguishable from it at batch 16");
  BOOST_TEST(points_against_best(r, {"2", "4", "8", "16", "32"}, "worse", 1).ends_with(
      "; with one seed, no difference from batch 16 is tested"));
  // Lower is better (losses): C is the best, B and A distinguishably above it.
  const Ranking low = rank_against_best({kA, kC, kB}, Units{1, 2, ""}, /*lower_is_better=*/true);
  BOOST_TEST(low.best() == 1u);
  BOOST_TEST((low.tied == std::vector<size_t>{1}));
  BOOST_TEST(low.others[0].difference.starts_with("+0.10 (95% CI"));
  BOOST_TEST(!rank_against_best({{NAN}, {}}, kPercent).found());
  BOOST_TEST(tied_sentence({"A", "B"}, 3) == "Not distinguishable from the best at the 95% level: A and B. ");
  BOOST_TEST(tied_sentence({"A", "B"}, 1) == "With one seed nothing is tested: A and B are not told apart. ");
}

BOOST_AUTO_TEST_CASE(csv_columns_carry_n_mean_std_sem_and_the_interval) {
  BOOST_TEST((interval_columns("test_acc") == std::vector<std::string>{"test_acc_n", "test_acc_mean", "test_acc_std",
                                                                        "test_acc_sem", "test_acc_ci95_low",
                                                                        "test_acc_ci95_high"}));
  const auto v = interval_values(kA);
  BOOST_TEST(v[0] == "3");
  BOOST_TEST(std::stod(v[1]) == 0.82, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::stod(v[2]) == 0.02, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(std::stod(v[3]) == 0.02 / std::sqrt(3.0), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(std::stod(v[4]) == 0.82 - 0.04968275736, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(std::stod(v[5]) == 0.82 + 0.04968275736, boost::test_tools::tolerance(1e-6));
  const auto one = interval_values({0.8});  // one seed: no spread is claimed
  BOOST_TEST(one[0] == "1");
  BOOST_TEST(one[2] == "nan");
  BOOST_TEST(one[4] == "nan");
}

BOOST_AUTO_TEST_SUITE_END()
