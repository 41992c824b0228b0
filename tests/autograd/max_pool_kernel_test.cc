// The 2x2 max-pooling kernel on every Highway target against its scalar reference: widths that
// exercise whole vectors, the overlapping last block, 4-lane rows and scalar rows; odd sizes (the
// last row and column are not pooled); ties, NaN and -inf, with positions compared exactly.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/max_pool.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;

BOOST_AUTO_TEST_SUITE(max_pool_kernel)

BOOST_AUTO_TEST_CASE(matches_the_reference_on_every_target) {
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

BOOST_AUTO_TEST_SUITE_END()
