// The softmax / cross-entropy row kernels on every Highway target against their scalar reference:
// row lengths around every vector width, several rows, large logits, NaN and infinite logits.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/softmax.h"
#include "tests/support/compare.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;
using normlab::test::check_close;
using normlab::test::for_each_target;
using normlab::test::tail_lengths;

using normlab::test::random_vec;

namespace {

std::vector<int64_t> random_targets(int64_t rows, int64_t c, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<int64_t> t(rows);
  for (auto& v : t) v = c > 0 ? static_cast<int64_t>(gen() % c) : 0;
  return t;
}

// p differs from the reference by the exponentials (a few ulp of double) and the order of the sum
// within a row: for float at most a rounding of each of its two steps, for double a few ulp (and
// terms below the smallest normal number, which the two exponentials round differently, by less
// than that). The loss, in double, by a few ulp of log s per row.
template <typename T> double p_rtol() { return sizeof(T) == 4 ? 2.4e-7 : 2e-14; }
template <typename T> double p_atol() { return std::numeric_limits<T>::min(); }
constexpr double kLossRtol = 1e-13, kLossAtol = 1e-14;

// Forward (with and without targets) and backward for rows x c logits uniform in [lo, hi).
template <typename T>
void check_rows(int64_t rows, int64_t c, double lo, double hi) {
  BOOST_TEST_CONTEXT("rows " << rows << " c " << c << " logits in [" << lo << ", " << hi << ")") {
    const int64_t n = rows * c;
    const auto x = random_vec<T>(n, lo, hi, 3 + static_cast<unsigned>(n));
    const auto t = random_targets(rows, c, 5 + static_cast<unsigned>(n));
    std::vector<T> p(n + 1, T(-7)), want(n);
    const double loss = k::cross_entropy_forward(rows, c, x.data(), t.data(), p.data());
    const double want_loss = k::ref::cross_entropy_forward(rows, c, x.data(), t.data(), want.data());
    check_close(p, want, n, p_rtol<T>(), p_atol<T>());
    BOOST_TEST(p[n] == T(-7));  // nothing written past the end
    BOOST_TEST(normlab::test::close(loss, want_loss, kLossRtol, kLossAtol), "loss " << loss << ", want " << want_loss);
    if (c > 0) BOOST_TEST(std::isfinite(loss));
    // Without targets: the same softmax, and 0.
    std::vector<T> p2(n);
    BOOST_TEST(k::cross_entropy_forward(rows, c, x.data(), nullptr, p2.data()) == 0.0);
    for (int64_t i = 0; i < n; ++i) BOOST_TEST(p2[i] == p[i]);
    // Backward (targets need c >= 1): one IEEE multiply (or subtract and multiply) per element,
    // bitwise equal.
    if (c == 0) return;
    std::vector<T> dx(n + 1, T(-7)), want_dx(n);
    const double scale = 0.7 / std::max<int64_t>(rows, 1);
    k::cross_entropy_backward(rows, c, want.data(), t.data(), scale, dx.data());
    k::ref::cross_entropy_backward(rows, c, want.data(), t.data(), scale, want_dx.data());
    for (int64_t i = 0; i < n; ++i) BOOST_TEST(dx[i] == want_dx[i], "dx element " << i);
    BOOST_TEST(dx[n] == T(-7));
  }
}

template <typename T>
void test_rows() {
  for_each_target([&] {
    for (int64_t c : tail_lengths())
      for (int64_t rows : {1, 3, 8}) {
        if (c * rows > 20000) continue;
        check_rows<T>(rows, c, -5, 5);
      }
    // 10 classes, the usual batch sizes.
    for (int64_t rows : {2, 32, 256}) check_rows<T>(rows, 10, -5, 5);
    // Large logits: every e^x overflows, e^(x - m) does not (PyTorch's cross_entropy_large fixture).
    for (int64_t c : {1, 10, 33}) check_rows<T>(4, c, 70, 130);
    check_rows<T>(3, 17, sizeof(T) == 4 ? 1e4 : 1e6, sizeof(T) == 4 ? 1.0001e4 : 1.000001e6);
    // A spread wider than the exponent range: most terms underflow to 0.
    check_rows<T>(5, 65, -3000, 3000);
  });
}

// Each row's p sums to 1 and the loss is -sum_i log p[i, t_i]: hand-worked, independent of the
// reference. Row [0, log 2, log 5] gives p = [1/8, 2/8, 5/8].
template <typename T>
void test_hand_worked() {
  const std::vector<T> x = {0, static_cast<T>(std::log(2.0)), static_cast<T>(std::log(5.0)), 0, 0, 0};
  const std::vector<int64_t> t = {1, 0};
  const double tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  for_each_target([&] {
    std::vector<T> p(6);
    const double loss = k::cross_entropy_forward(2, 3, x.data(), t.data(), p.data());
    check_close(p, std::vector<double>{1. / 8, 2. / 8, 5. / 8, 1. / 3, 1. / 3, 1. / 3}, 6, tol, 0);
    BOOST_TEST(loss == std::log(4.0) + std::log(3.0), boost::test_tools::tolerance(tol));
    std::vector<T> dx(6);
    k::cross_entropy_backward(2, 3, p.data(), t.data(), 0.5, dx.data());
    check_close(dx, std::vector<double>{1. / 16, -3. / 8, 5. / 16, -1. / 3, 1. / 6, 1. / 6}, 6, tol, 0);
  });
}

// The contrib Exp gives 0 for NaN, yet a NaN logit (or +inf, or a row of -inf) must give a NaN
// loss and a NaN softmax row, as std::exp does; a -inf logit among finite ones has p = 0. Rows of
// 37 put the special value in a full vector (position 0 or 20) or in the tail (36) on every target;
// the other rows of the batch stay finite.
template <typename T>
void test_special_values() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const int64_t c = 37, rows = 3;
  struct Case { T value; int64_t pos; bool nan_row; };
  const std::vector<Case> cases = {{nan, 0, true},  {nan, 20, true},  {nan, 36, true}, {inf, 0, true},
                                   {inf, 20, true}, {inf, 36, true}, {-inf, 0, false}, {-inf, 20, false},
                                   {-inf, 36, false}};
  for_each_target([&] {
    for (const Case& cs : cases)
      for (int64_t row : {0, 2}) {
        BOOST_TEST_CONTEXT("value " << cs.value << " at row " << row << " position " << cs.pos) {
          auto x = random_vec<T>(rows * c, -3, 3, 9);
          x[row * c + cs.pos] = cs.value;
          std::vector<int64_t> t = {5, 5, 5};
          std::vector<T> p(rows * c), want(rows * c);
          const double loss = k::cross_entropy_forward(rows, c, x.data(), t.data(), p.data());
          const double want_loss = k::ref::cross_entropy_forward(rows, c, x.data(), t.data(), want.data());
          check_close(p, want, rows * c, p_rtol<T>(), p_atol<T>());  // NaN where the reference has NaN
          BOOST_TEST(std::isnan(loss) == cs.nan_row);
          BOOST_TEST(normlab::test::close(loss, want_loss, kLossRtol, kLossAtol),
                     "loss " << loss << ", want " << want_loss);
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < c; ++j)
              BOOST_TEST(std::isnan(p[i * c + j]) == (cs.nan_row && i == row), "p " << i << ", " << j);
          if (!cs.nan_row) BOOST_TEST(p[row * c + cs.pos] == T(0));
        }
      }
    // A row of only -inf has no finite max: NaN.
    std::vector<T> x(2 * 5, -inf), p(10);
    const std::vector<int64_t> t = {0, 1};
    BOOST_TEST(std::isnan(k::cross_entropy_forward(2, 5, x.data(), t.data(), p.data())));
    for (T v : p) BOOST_TEST(std::isnan(v));
    // A -inf logit at the target (rows [-inf, 0, 0, 0, 0] and [0, -inf, -inf, -inf, -inf]): p of
    // the target is 0, the loss +inf.
    for (int64_t j = 1; j < 5; ++j) x[j] = 0;
    x[5] = 0;
    BOOST_TEST(k::cross_entropy_forward(2, 5, x.data(), t.data(), p.data()) == double(inf));
    BOOST_TEST(p[0] == T(0));
    BOOST_TEST(p[1] == T(0.25));
    BOOST_TEST(p[5] == T(1));
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(softmax_kernel)

BOOST_AUTO_TEST_CASE(cross_entropy_rows_f32) { test_rows<float>(); }
BOOST_AUTO_TEST_CASE(cross_entropy_rows_f64) { test_rows<double>(); }
BOOST_AUTO_TEST_CASE(cross_entropy_hand_worked_f32) { test_hand_worked<float>(); }
BOOST_AUTO_TEST_CASE(cross_entropy_hand_worked_f64) { test_hand_worked<double>(); }
BOOST_AUTO_TEST_CASE(cross_entropy_nan_and_inf_f32) { test_special_values<float>(); }
BOOST_AUTO_TEST_CASE(cross_entropy_nan_and_inf_f64) { test_special_values<double>(); }

BOOST_AUTO_TEST_SUITE_END()
