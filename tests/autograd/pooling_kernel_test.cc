// The pooling kernels on every Highway target against their scalar references: widths that
// exercise whole vectors, the overlapping last block, 4-lane rows and scalar rows; odd sizes (the
// last row and column are not pooled); ties, NaN and -inf, with positions compared exactly; the
// backward passes bit for bit (+0 where nothing flows, 0 + (-0) = +0 as the reference's sums);
// the global average within float32 rounding of the in-order sum.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/pooling.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;

BOOST_AUTO_TEST_SUITE(pooling_kernels)

BOOST_AUTO_TEST_CASE(max_pool_matches_the_reference_on_every_target) {
  std::mt19937 gen(3);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  normlab::test::for_each_target([&] {
    for (int64_t w : {2, 3, 4, 5, 7, 8, 9, 14, 15, 16, 17, 28, 31, 32, 33, 34, 63, 64, 65})
      for (int64_t h : {2, 3, 6}) {
        const int64_t planes = 3, n = planes * h * w, out = planes * (h / 2) * (w / 2);
        std::vector<float> x(n);
        for (int64_t i = 0; i < n; ++i) {
          const unsigned r = gen() % 16;  // mostly small integers: many ties within a window
          x[i] = r == 0 ? nan : r == 1 ? -inf : static_cast<float>(r % 3);
        }
        if (w == 9) std::fill(x.begin(), x.end(), -inf);  // every window -inf: the first position
        std::vector<float> y(out), y_ref(out);
        std::vector<int32_t> ix(out), ix_ref(out);
        k::max_pool_2x2(planes, h, w, x.data(), y.data(), ix.data());
        k::ref::max_pool_2x2(planes, h, w, x.data(), y_ref.data(), ix_ref.data());
        BOOST_TEST_CONTEXT("h " << h << " w " << w) {
          BOOST_TEST(std::memcmp(y.data(), y_ref.data(), out * sizeof(float)) == 0);
          BOOST_TEST((ix == ix_ref));
        }
      }
  });
}

namespace {
const std::vector<int64_t> kWidths = {2, 3, 4, 5, 7, 8, 9, 14, 15, 16, 17, 28, 31, 32, 33, 34, 63, 64, 65};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
}  // namespace

BOOST_AUTO_TEST_CASE(max_pool_backward_matches_the_reference_on_every_target) {
  std::mt19937 gen(5);
  normlab::test::for_each_target([&] {
    for (int64_t w : kWidths)
      for (int64_t h : {2, 3, 6, 7}) {
        const int64_t planes = 3, n = planes * h * w, out = planes * (h / 2) * (w / 2);
        std::vector<float> x(n);
        for (auto& v : x) v = static_cast<float>(gen() % 3);  // ties: the argmax is the first
        std::vector<float> y(out), dy(out);
        std::vector<int32_t> ix(out);
        k::ref::max_pool_2x2(planes, h, w, x.data(), y.data(), ix.data());
        for (int64_t i = 0; i < out; ++i) dy[i] = i % 7 == 0 ? -0.0f : std::ldexp(static_cast<float>(gen() % 1000) - 500, -7);
        std::vector<float> dx(n, 123.0f), dx_ref(n, -5.0f);  // both overwritten everywhere
        k::max_pool_2x2_backward(planes, h, w, dy.data(), ix.data(), dx.data());
        k::ref::max_pool_2x2_backward(planes, h, w, dy.data(), ix.data(), dx_ref.data());
        BOOST_TEST_CONTEXT("h " << h << " w " << w) { BOOST_TEST(same_bits(dx, dx_ref)); }
      }
  });
}

BOOST_AUTO_TEST_CASE(avg_pool_matches_the_reference_on_every_target) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  normlab::test::for_each_target([&] {
    for (int64_t w : kWidths)
      for (int64_t h : {2, 3, 6, 7}) {
        const int64_t planes = 2, n = planes * h * w, out = planes * (h / 2) * (w / 2);
        std::vector<float> x(n);
        for (int64_t i = 0; i < n; ++i) x[i] = i % 53 == 5 ? nan : i % 61 == 7 ? -inf : i % 17 == 3 ? -0.0f : normal(gen);
        std::vector<float> y(out, 9.0f), y_ref(out, -9.0f);
        k::avg_pool_2x2(planes, h, w, x.data(), y.data());
        k::ref::avg_pool_2x2(planes, h, w, x.data(), y_ref.data());
        std::vector<float> dy(out);
        for (int64_t i = 0; i < out; ++i) dy[i] = i % 5 == 0 ? -0.0f : normal(gen);
        std::vector<float> dx(n, 123.0f), dx_ref(n, -5.0f);
        k::avg_pool_2x2_backward(planes, h, w, dy.data(), dx.data());
        k::ref::avg_pool_2x2_backward(planes, h, w, dy.data(), dx_ref.data());
        BOOST_TEST_CONTEXT("h " << h << " w " << w) {
          BOOST_TEST(same_bits(y, y_ref));
          BOOST_TEST(same_bits(dx, dx_ref));
        }
      }
  });
}

BOOST_AUTO_TEST_CASE(global_avg_pool_matches_the_reference_on_every_target) {
  std::mt19937 gen(11);
  std::normal_distribution<double> normal;
  normlab::test::for_each_target([&] {
    for (int64_t len : normlab::test::tail_lengths()) {
      if (len == 0) continue;
      const int64_t planes = 3;
      std::vector<float> x(planes * len);
      std::vector<double> xd(planes * len);
      for (int64_t i = 0; i < planes * len; ++i) x[i] = static_cast<float>(xd[i] = normal(gen) + 0.5), xd[i] = x[i];
      std::vector<float> y(planes);
      std::vector<double> y_ref(planes), abs_mean(planes, 0.0);
      k::global_avg_pool(planes, len, x.data(), y.data());
      k::ref::global_avg_pool(planes, len, xd.data(), y_ref.data());
      for (int64_t q = 0; q < planes; ++q) {
        for (int64_t i = 0; i < len; ++i) abs_mean[q] += std::abs(xd[q * len + i]) / static_cast<double>(len);
        // A float32 sum of len terms: error at most about len * 2^-24 of the sum of magnitudes.
        BOOST_TEST_CONTEXT("length " << len << " plane " << q) {
          BOOST_TEST(std::abs(y[q] - y_ref[q]) <= 1e-7 * static_cast<double>(len + 4) * abs_mean[q]);
        }
      }
      std::vector<float> dy = {1.5f, -0.0f, -3.25f}, dx(planes * len, 7.0f), dx_ref(planes * len, -7.0f);
      k::global_avg_pool_backward(planes, len, dy.data(), dx.data());
      k::ref::global_avg_pool_backward(planes, len, dy.data(), dx_ref.data());
      BOOST_TEST_CONTEXT("length " << len) { BOOST_TEST(same_bits(dx, dx_ref)); }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
