// clip_grad_norm_: the total norm against sums written here (p = 1, 2, 3, inf; float32 and float64
// gradients mixed), the in-place scaling and its clamp at 1, skipped parameters, non-finite norms
// and bad arguments.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nn/nn.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab;
using autograd::DType;
using autograd::Shape;
using autograd::Tensor;
using normlab::test::expect_error;

namespace {

// A parameter with a seeded random gradient.
Tensor param_with_grad(const Shape& s, unsigned seed, DType dt) {
  Tensor p = autograd::zeros(s, dt);
  p.requires_grad_();
  p.set_grad(test::random_input(s, seed, -2, 2).detach().to(dt));
  return p;
}

// The total p-norm of all elements of all gradients, by one double loop over the flattened values.
double total_norm_loops(const std::vector<std::vector<double>>& grads, double p) {
  double acc = 0;
  for (const auto& g : grads)
    for (double v : g) {
      if (std::isinf(p)) acc = std::max(acc, std::fabs(v));
      else acc += std::pow(std::fabs(v), p);
    }
  return std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(clip_grad)

BOOST_AUTO_TEST_CASE(total_norm_and_scaling_against_loops) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {2.0, 1.0, 3.0, inf}) {
    BOOST_TEST_CONTEXT("norm_type " << p) {
      std::vector<Tensor> params = {param_with_grad({3, 4}, 1, DType::Float64), param_with_grad({5}, 2, DType::Float32),
                                    param_with_grad({2, 2, 2}, 3, DType::Float64)};
      Tensor no_grad = autograd::ones({4});  // skipped: no gradient
      no_grad.requires_grad_();
      params.insert(params.begin() + 1, no_grad);
      std::vector<std::vector<double>> before;
      for (const Tensor& t : params)
        if (t.grad().defined()) before.push_back(t.grad().to_vector());
      const double want = total_norm_loops(before, p);
      const double max_norm = want / 4;  // clips: coef about 1/4
      const double got = nn::clip_grad_norm_(params, max_norm, p);
      BOOST_TEST(got == want, boost::test_tools::tolerance(1e-12));
      const double coef = max_norm / (want + 1e-6);
      size_t k = 0;
      for (const Tensor& t : params) {
        if (!t.grad().defined()) continue;
        std::vector<double> scaled = before[k++];
        for (double& v : scaled) v *= coef;
        test::check_tensor(t.grad(), scaled, t.dtype() == DType::Float32 ? 1e-6 : 1e-12, 0);
      }
      BOOST_TEST(!no_grad.grad().defined());
      // The clipped gradients' total norm is max_norm (up to the 1e-6 in the coef).
      std::vector<std::vector<double>> after;
      for (const Tensor& t : params)
        if (t.grad().defined()) after.push_back(t.grad().to_vector());
      BOOST_TEST(total_norm_loops(after, p) == max_norm, boost::test_tools::tolerance(1e-5));
    }
  }
}

BOOST_AUTO_TEST_CASE(coef_clamped_at_one) {
  std::vector<Tensor> params = {param_with_grad({4, 3}, 4, DType::Float32)};
  const std::vector<double> before = params[0].grad().to_vector();
  const double total = nn::clip_grad_norm_(params, 1e6);
  BOOST_TEST(total == total_norm_loops({before}, 2), boost::test_tools::tolerance(1e-12));
  test::check_tensor(params[0].grad(), before, 0, 0);  // multiplied by exactly 1
}

BOOST_AUTO_TEST_CASE(no_gradients) {
  Tensor a = autograd::ones({3});
  a.requires_grad_();
  BOOST_TEST(nn::clip_grad_norm_({a}, 1.0) == 0.0);
  BOOST_TEST(nn::clip_grad_norm_({}, 1.0) == 0.0);
  BOOST_TEST(!a.grad().defined());
}

BOOST_AUTO_TEST_CASE(non_finite_norms) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (double bad : {inf, nan})
    for (double p : {2.0, inf}) {
      BOOST_TEST_CONTEXT("bad value " << bad << ", norm_type " << p) {
        std::vector<Tensor> params = {param_with_grad({3}, 5, DType::Float64), param_with_grad({2}, 6, DType::Float32)};
        params[1].grad().set_flat(1, bad);
        const std::vector<double> g0 = params[0].grad().to_vector();
        expect_error([&] { nn::clip_grad_norm_(params, 1.0, p, true); },
                     {"clip_grad_norm_", "non-finite", "error_if_nonfinite"});
        test::check_tensor(params[0].grad(), g0, 0, 0);  // unchanged after the error
        // Without the check: an infinite total scales by 0, a NaN one makes NaN (as PyTorch).
        const double total = nn::clip_grad_norm_(params, 1.0, p);
        if (std::isnan(bad)) {
          BOOST_TEST(std::isnan(total));
          BOOST_TEST(std::isnan(params[0].grad().flat(0)));
        } else {
          BOOST_TEST(total == inf);
          test::check_tensor(params[0].grad(), {0, 0, 0}, 0, 0);
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  std::vector<Tensor> params = {param_with_grad({3}, 7, DType::Float64)};
  expect_error([&] { nn::clip_grad_norm_(params, 1.0, 0.0); }, {"norm_type", "> 0", "0.0"});
  expect_error([&] { nn::clip_grad_norm_(params, 1.0, -2.0); }, {"norm_type", "-2.0"});
  expect_error([&] { nn::clip_grad_norm_(params, -1.0); }, {"max_norm", ">= 0", "-1.0"});
  expect_error([&] { nn::clip_grad_norm_(params, std::nan("")); }, {"max_norm", "nan"});
}

BOOST_AUTO_TEST_SUITE_END()
