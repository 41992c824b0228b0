// Dataset: subsets and slices copy the right rows; validation; standardization with hand-computed numbers.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "data/dataset.h"
#include "tests/data/support.h"
#include "tests/support/compare.h"

using namespace normlab::data;
using normlab::autograd::tensor;
using normlab::test::check_mentions;
using normlab::test::check_tensor;
using normlab::test::error_of;
using normlab::test::numbered;

BOOST_AUTO_TEST_SUITE(dataset)

BOOST_AUTO_TEST_CASE(helpers_report_size_features_and_task) {
  Dataset ds = numbered(5);
  BOOST_TEST(ds.size() == 5);
  BOOST_TEST(ds.features() == 2);
  BOOST_TEST(ds.is_classification());
  Dataset r;
  r.x = tensor({1, 2, 3, 4}, {2, 2});
  r.y = tensor({0.5, -1}, {2, 1});
  BOOST_TEST(!r.is_classification());
  BOOST_CHECK_NO_THROW(r.validate());
  BOOST_TEST(Dataset().size() == 0);
}

BOOST_AUTO_TEST_CASE(subset_copies_rows_and_labels_in_the_given_order) {
  Dataset ds = numbered(4);
  Dataset s = ds.subset({3, 0, 3});
  check_tensor(s.x, {3, 30, 0, 0, 3, 30});
  BOOST_TEST(s.labels == (std::vector<int64_t>{0, 0, 0}));
  BOOST_TEST(s.class_names == ds.class_names);
  s.x.set_flat(0, -1);  // a copy: the original is untouched
  BOOST_TEST(ds.x.at({3, 0}) == 3);
  Dataset sl = ds.slice(1, 3);
  check_tensor(sl.x, {1, 10, 2, 20});
  BOOST_TEST(sl.labels == (std::vector<int64_t>{1, 2}));
  BOOST_TEST(ds.slice(2, 2).x.shape() == (normlab::autograd::Shape{0, 2}));
}

BOOST_AUTO_TEST_CASE(subset_of_a_regression_set_copies_targets) {
  Dataset r;
  r.name = "reg";
  r.x = tensor({1, 2, 3}, {3, 1});
  r.y = tensor({10, 20, 30}, {3, 1});
  Dataset s = r.subset({2, 1});
  check_tensor(s.y, {30, 20});
  check_tensor(s.x, {3, 2});
  BOOST_TEST(s.labels.empty());
}

BOOST_AUTO_TEST_CASE(standardizer_scales_regression_targets_with_the_training_mean_and_std) {
  Dataset r;
  r.name = "reg";
  r.x = tensor({1, 2, 3, 4}, {4, 1});
  r.y = tensor({10, 20, 30, 40}, {4, 1});
  const Standardizer s = Standardizer::fit(r);
  // mean 25, population std sqrt((225 + 25 + 25 + 225) / 4) = sqrt(125)
  BOOST_TEST(s.y_mean == 25.0);
  BOOST_TEST(s.y_std == std::sqrt(125.0));
  Dataset test = r.slice(0, 2);
  test.y = tensor({25, 50}, {2, 1});
  check_tensor(s.apply(test).y, {0, 25 / std::sqrt(125.0)});
  // A constant target is only centred; a classification set keeps 0 and 1.
  r.y = tensor({7, 7, 7, 7}, {4, 1});
  BOOST_TEST(Standardizer::fit(r).y_std == 1.0);
  BOOST_TEST(Standardizer::fit(numbered(4)).y_mean == 0.0);
  BOOST_TEST(Standardizer::fit(numbered(4)).y_std == 1.0);
}

BOOST_AUTO_TEST_CASE(bad_indices_and_inconsistent_sets_are_errors) {
  Dataset ds = numbered(4);
  check_mentions(error_of([&] { ds.subset({0, 4}); }), {"index 4", "4 samples", "numbered"});
  check_mentions(error_of([&] { ds.slice(3, 5); }), {"[3, 5)", "[0, 4)"});
  Dataset bad = numbered(4);
  bad.labels[2] = 3;
  check_mentions(error_of([&] { bad.validate(); }), {"label 3", "sample 2", "[0, 3)"});
  bad = numbered(4);
  bad.labels.pop_back();
  check_mentions(error_of([&] { bad.validate(); }), {"3 labels for 4 samples"});
  bad = numbered(4);
  bad.x = tensor({1, 2, 3, 4});
  check_mentions(error_of([&] { bad.validate(); }), {"(N, D)", "[4]"});
  Dataset none;
  none.x = tensor({1, 2}, {1, 2});
  check_mentions(error_of([&] { none.validate(); }), {"neither class labels nor regression targets"});
}

BOOST_AUTO_TEST_CASE(standardizer_uses_training_statistics_and_centres_constant_features) {
  Dataset train;
  train.name = "train";
  train.x = tensor({1, 0.1, 3, 0.1, 5, 0.1}, {3, 2});  // feature 1 is constant (0.1f, not exact in binary)
  train.num_classes = 1;
  train.class_names = {"a"};
  train.labels = {0, 0, 0};
  Standardizer s = Standardizer::fit(train);
  // Feature 0: mean 3, population variance (4 + 0 + 4) / 3 = 8/3.
  const double sd = std::sqrt(8.0 / 3.0);
  BOOST_TEST(s.mean[0] == 3.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.std[0] == sd, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.mean[1] == static_cast<double>(0.1f));
  BOOST_TEST(s.std[1] == 0.0);
  Dataset t = s.apply(train);
  check_tensor(t.x, {-2 / sd, 0, 0, 0, 2 / sd, 0}, 1e-6, 1e-7);
  BOOST_TEST(t.x.at({0, 1}) == 0.0);  // exactly centred, not rounding noise divided by a tiny std
  BOOST_TEST(train.x.at({0, 0}) == 1.0);  // the input is not modified
  Dataset test = train.subset({0});
  test.x = tensor({7, 1.1}, {1, 2});
  check_tensor(s.apply(test).x, {4 / sd, 1.1 - 0.1}, 1e-6, 1e-6);
  // Many rows: a constant feature still has std exactly 0 and standardizes to exactly 0.
  Dataset big = normlab::test::numbered(1000);
  for (int64_t i = 0; i < 1000; ++i) big.x.data<float>()[2 * i + 1] = 0.7f;
  Standardizer sb = Standardizer::fit(big);
  BOOST_TEST(sb.std[1] == 0.0);
  // Feature 0 is 0..999: mean 499.5, population variance (1000^2 - 1) / 12.
  BOOST_TEST(sb.mean[0] == 499.5);
  BOOST_TEST(sb.std[0] == std::sqrt((1000.0 * 1000.0 - 1) / 12.0), boost::test_tools::tolerance(1e-12));
  Dataset bt = sb.apply(big);
  for (int64_t i = 0; i < 1000; ++i) BOOST_REQUIRE(bt.x.at({i, 1}) == 0.0);
}

BOOST_AUTO_TEST_CASE(standardizer_refuses_mismatched_features_and_empty_sets) {
  Standardizer s = Standardizer::fit(numbered(3));
  Dataset wide;
  wide.name = "wide";
  wide.x = tensor({1, 2, 3}, {1, 3});
  wide.y = tensor({1}, {1, 1});
  check_mentions(error_of([&] { s.apply(wide); }), {"\"wide\" has 3 features", "computed on 2"});
  check_mentions(error_of([&] { Standardizer::fit(numbered(4).slice(0, 0)); }), {"empty"});
}

BOOST_AUTO_TEST_SUITE_END()
