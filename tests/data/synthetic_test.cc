// Synthetic sets: shapes, balanced classes, the geometry of each (checked with noise 0), reproducibility.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "data/synthetic.h"
#include "tests/data/support.h"

using namespace normlab::data;
using normlab::test::check_mentions;
using normlab::test::error_of;

namespace {

std::vector<int64_t> class_counts(const Dataset& ds) {
  std::vector<int64_t> c(ds.num_classes, 0);
  for (int64_t l : ds.labels) ++c.at(l);
  return c;
}

bool same_data(const Dataset& a, const Dataset& b) {
  return a.x.to_vector() == b.x.to_vector() && a.labels == b.labels;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(synthetic)

BOOST_AUTO_TEST_CASE(every_generator_has_balanced_shuffled_classes_and_repeats_with_its_seed) {
  for (const std::string& name : synthetic_names()) {
    BOOST_TEST_CONTEXT(name) {
      Dataset ds = make_synthetic(name, 101, 0.1, 7);
      BOOST_TEST(ds.name == name);
      BOOST_TEST(ds.size() == 101);
      BOOST_TEST(ds.features() == 2);
      BOOST_CHECK_NO_THROW(ds.validate());
      const std::vector<int64_t> counts = class_counts(ds);
      const int64_t k = ds.num_classes;
      for (int64_t c = 0; c < k; ++c) BOOST_TEST(counts[c] == 101 / k + (c < 101 % k ? 1 : 0));
      // Rows are shuffled: the first 20 labels are not all one class.
      bool mixed = false;
      for (int i = 1; i < 20; ++i) mixed = mixed || ds.labels[i] != ds.labels[0];
      BOOST_TEST(mixed);
      BOOST_TEST(same_data(ds, make_synthetic(name, 101, 0.1, 7)));
      BOOST_TEST(!same_data(ds, make_synthetic(name, 101, 0.1, 8)));
      for (double v : ds.x.to_vector()) BOOST_REQUIRE(std::isfinite(v));
    }
  }
}

BOOST_AUTO_TEST_CASE(circles_lie_on_their_radii_without_noise) {
  Dataset ds = make_circles(200, 0.0, 1, 0.3);
  for (int64_t i = 0; i < ds.size(); ++i) {
    const double r = std::hypot(ds.x.at({i, 0}), ds.x.at({i, 1}));
    BOOST_TEST(r == (ds.labels[i] == 0 ? 1.0 : 0.3), boost::test_tools::tolerance(1e-6));
  }
}

BOOST_AUTO_TEST_CASE(moons_are_the_two_half_circles_without_noise) {
  Dataset ds = make_moons(200, 0.0, 2);
  for (int64_t i = 0; i < ds.size(); ++i) {
    const double a = ds.x.at({i, 0}), b = ds.x.at({i, 1});
    if (ds.labels[i] == 0) {  // upper half of the unit circle
      BOOST_TEST(std::hypot(a, b) == 1.0, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(b >= -1e-6);
    } else {  // lower half of the unit circle centred at (1, 0.5)
      BOOST_TEST(std::hypot(a - 1, b - 0.5) == 1.0, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(b <= 0.5 + 1e-6);
    }
  }
}

BOOST_AUTO_TEST_CASE(xor_classes_are_the_sign_of_the_product) {
  Dataset ds = make_xor(400, 0.0, 3);
  int64_t quadrant[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < ds.size(); ++i) {
    const double a = ds.x.at({i, 0}), b = ds.x.at({i, 1});
    BOOST_TEST((a * b > 0 ? 0 : 1) == ds.labels[i]);
    BOOST_TEST((std::fabs(a) <= 1 && std::fabs(b) <= 1));
    ++quadrant[(a > 0) * 2 + (b > 0)];
  }
  for (int q = 0; q < 4; ++q) BOOST_TEST(quadrant[q] > 60);  // about 100 each
}

BOOST_AUTO_TEST_CASE(spirals_follow_their_arms_without_noise) {
  const double turns = 1.5;
  Dataset ds = make_spirals(300, 0.0, 4, turns);
  for (int64_t i = 0; i < ds.size(); ++i) {
    const double a = ds.x.at({i, 0}), b = ds.x.at({i, 1}), r = std::hypot(a, b);
    BOOST_TEST((r >= 0.05 - 1e-6 && r <= 1 + 1e-6));
    // The angle of a point at radius r on arm c is 2 pi turns r + pi c (mod 2 pi).
    const double want = 2 * M_PI * turns * r + M_PI * static_cast<double>(ds.labels[i]);
    const double diff = std::remainder(std::atan2(b, a) - want, 2 * M_PI);
    BOOST_TEST(std::fabs(diff) < 1e-4);
  }
}

BOOST_AUTO_TEST_CASE(blobs_gather_around_k_centres_in_d_dimensions) {
  Dataset ds = make_blobs(500, 0.0, 5, 4, 3, 5.0);
  BOOST_TEST(ds.features() == 3);
  BOOST_TEST(ds.num_classes == 4);
  BOOST_TEST(class_counts(ds) == (std::vector<int64_t>{125, 125, 125, 125}));
  // Without noise every sample of a class sits exactly on its centre, inside the box.
  std::vector<std::vector<double>> centre(4);
  for (int64_t i = 0; i < ds.size(); ++i) {
    std::vector<double> p = {ds.x.at({i, 0}), ds.x.at({i, 1}), ds.x.at({i, 2})};
    for (double v : p) BOOST_TEST(std::fabs(v) <= 5.0);
    if (centre[ds.labels[i]].empty()) centre[ds.labels[i]] = p;
    BOOST_TEST(p == centre[ds.labels[i]]);
  }
  // With noise 0.5, a class's mean is near its centre and its spread near 0.5.
  Dataset noisy = make_blobs(4000, 0.5, 5, 4, 3, 5.0);
  std::vector<double> sum(4, 0), sq(4, 0);
  std::vector<int64_t> n(4, 0);
  for (int64_t i = 0; i < noisy.size(); ++i) {
    const int64_t c = noisy.labels[i];
    const double dev = noisy.x.at({i, 0}) - centre[c][0];
    sum[c] += dev, sq[c] += dev * dev, ++n[c];
  }
  for (int c = 0; c < 4; ++c) {
    BOOST_TEST(std::fabs(sum[c] / n[c]) < 0.1);
    BOOST_TEST(std::sqrt(sq[c] / n[c]) == 0.5, boost::test_tools::tolerance(0.1));
  }
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_errors) {
  check_mentions(error_of([] { make_moons(1, 0.1, 0); }), {"moons", "at least the number of classes (2)", "got 1"});
  check_mentions(error_of([] { make_circles(10, -0.1, 0); }), {"circles", "noise", ">= 0"});
  check_mentions(error_of([] { make_circles(10, 0.1, 0, 1.5); }), {"factor", "(0, 1)"});
  check_mentions(error_of([] { make_blobs(10, 0.1, 0, 0); }), {"blobs", "at least 1, got 0"});
  check_mentions(error_of([] { make_blobs(10, 0.1, 0, 2, 0); }), {"dimension d", "got 0"});
  check_mentions(error_of([] { make_spirals(10, 0.1, 0, 0.0); }), {"turns"});
  check_mentions(error_of([] { make_synthetic("swiss_roll", 10, 0.1, 0); }),
                 {"\"swiss_roll\"", "spirals, moons, circles, blobs, xor"});
}

BOOST_AUTO_TEST_SUITE_END()
