// Linear: values against a plain loop, PyTorch's default init bounds, bad input, and gradcheck.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "nn/linear.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::Error;
using normlab::test::check_tensor;

namespace {

// y = x W^T + b by plain loops in double, for x of any rank (rows = all leading dims).
std::vector<double> linear_ref(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t out = w.size(0), in = w.size(1), rows = x.numel() / in;
  std::vector<double> y(rows * out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < out; ++j) {
      double s = b.defined() ? b.flat(j) : 0;
      for (int64_t k = 0; k < in; ++k) s += x.flat(r * in + k) * w.flat(j * in + k);
      y[r * out + j] = s;
    }
  return y;
}

bool message_has(const Error& e, const std::vector<std::string>& parts) {
  const std::string m = e.what();
  for (const auto& p : parts)
    if (m.find(p) == std::string::npos) {
      BOOST_TEST_MESSAGE("message \"" << m << "\" lacks \"" << p << "\"");
      return false;
    }
  return true;
}

// Checks every parameter of a float64 layer and the input with gradcheck.
void gradcheck_linear(Linear& fc, const Tensor& x) {
  std::vector<Tensor> inputs = {x, fc.weight()};
  if (fc.bias().defined()) inputs.push_back(fc.bias());
  // gradcheck perturbs the inputs in place, so perturbing fc.weight() perturbs the layer.
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) { return fc(in[0]); }, inputs));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(linear)

BOOST_AUTO_TEST_CASE(forward_2d_matches_loops) {
  Generator gen(1);
  Linear fc(4, 3, gen);
  BOOST_TEST(fc.weight().shape() == (Shape{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(fc.bias().shape() == (Shape{3}), boost::test_tools::per_element());
  Tensor x = randn({5, 4}, gen);
  Tensor y = fc(x);
  BOOST_TEST(y.shape() == (Shape{5, 3}), boost::test_tools::per_element());
  check_tensor(y, linear_ref(x, fc.weight(), fc.bias()), 1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(forward_3d_applies_to_the_last_dim) {
  Generator gen(2);
  Linear fc(4, 2, gen);
  Tensor x = randn({2, 3, 4}, gen);
  Tensor y = fc(x);
  BOOST_TEST(y.shape() == (Shape{2, 3, 2}), boost::test_tools::per_element());
  check_tensor(y, linear_ref(x, fc.weight(), fc.bias()), 1e-5, 1e-6);
  // A 1-D input is a single sample: (in) -> (out).
  Tensor v = randn({4}, gen);
  BOOST_TEST(fc(v).shape() == (Shape{2}), boost::test_tools::per_element());
  check_tensor(fc(v), linear_ref(v, fc.weight(), fc.bias()), 1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(hand_computed_values) {
  Generator gen(0);
  Linear fc(2, 2, gen);
  {
    NoGradGuard g;
    copy_(fc.weight(), tensor({1, 2, -1, 0.5}, {2, 2}));
    copy_(fc.bias(), tensor({0.5, -1}));
  }
  // [3, 4] -> [1*3 + 2*4 + 0.5, -3 + 2 - 1] = [11.5, -2].
  check_tensor(fc(tensor({3, 4}, {1, 2})), {11.5, -2});
}

BOOST_AUTO_TEST_CASE(without_bias) {
  Generator gen(3);
  Linear fc(4, 2, gen, /*bias=*/false);
  BOOST_TEST(!fc.bias().defined());
  BOOST_TEST(fc.state_dict().size() == 1u);
  BOOST_TEST(fc.state_dict()[0].first == "weight");
  BOOST_TEST(fc.repr() == "Linear(in_features=4, out_features=2, bias=False)");
  Tensor x = randn({3, 4}, gen);
  check_tensor(fc(x), linear_ref(x, fc.weight(), Tensor()), 1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(repr_is_pytorchs) {
  Generator gen(0);
  BOOST_TEST(Linear(4, 2, gen).repr() == "Linear(in_features=4, out_features=2, bias=True)");
}

BOOST_AUTO_TEST_CASE(default_init_is_uniform_within_one_over_sqrt_in_features) {
  // PyTorch: W, b ~ U(-1/sqrt(in), 1/sqrt(in)). With in = 400 the bound is 0.05; out = 300 differs
  // from in, so a bound computed from the wrong fan fails. U(-a, a) has variance a^2 / 3.
  Generator gen(7);
  Linear fc(400, 300, gen);
  const double bound = 1 / std::sqrt(400.0);
  for (const Tensor& t : {fc.weight(), fc.bias()}) {
    const std::vector<double> v = t.to_vector();
    double lo = 1e9, hi = -1e9, s = 0, s2 = 0;
    for (double e : v) lo = std::min(lo, e), hi = std::max(hi, e), s += e, s2 += e * e;
    const double n = static_cast<double>(v.size()), mean = s / n, var = s2 / n - mean * mean;
    BOOST_TEST(lo >= -bound * (1 + 1e-7));  // slack for rounding the bound to float32
    BOOST_TEST(hi <= bound * (1 + 1e-7));
    BOOST_TEST(lo < -0.95 * bound);  // the whole range is used (300 bias values: P(miss) ~ 1e-6)
    BOOST_TEST(hi > 0.95 * bound);
    if (v.size() > 1000) {  // weight: 120000 values
      BOOST_TEST(std::fabs(mean) < 0.01 * bound);
      BOOST_TEST(std::fabs(var / (bound * bound / 3) - 1) < 0.02);
    }
  }
}

BOOST_AUTO_TEST_CASE(same_seed_same_weights) {
  Generator g1(11), g2(11), g3(12);
  Linear a(5, 3, g1), b(5, 3, g2), c(5, 3, g3);
  BOOST_TEST(a.weight().to_vector() == b.weight().to_vector(), boost::test_tools::per_element());
  BOOST_TEST(a.bias().to_vector() == b.bias().to_vector(), boost::test_tools::per_element());
  BOOST_TEST((a.weight().to_vector() != c.weight().to_vector()));
}

BOOST_AUTO_TEST_CASE(wrong_feature_count_names_both_shapes) {
  Generator gen(0);
  Linear fc(4, 2, gen);
  BOOST_CHECK_EXCEPTION(fc(zeros({3, 5})), Error, [](const Error& e) { return message_has(e, {"(*, 4)", "[3, 5]"}); });
  BOOST_CHECK_EXCEPTION(fc(zeros({4, 3})), Error, [](const Error& e) { return message_has(e, {"(*, 4)", "[4, 3]"}); });
  BOOST_CHECK_EXCEPTION(fc(scalar(1)), Error, [](const Error& e) { return message_has(e, {"(*, 4)", "[]"}); });
}

BOOST_AUTO_TEST_CASE(dtype_mismatch_says_how_to_convert) {
  Generator gen(0);
  Linear fc(4, 2, gen);
  BOOST_CHECK_EXCEPTION(fc(zeros({3, 4}, DType::Float64)), Error,
                        [](const Error& e) { return message_has(e, {"float64", "float32", "the module with to(float64)"}); });
}

BOOST_AUTO_TEST_CASE(negative_sizes_are_errors) {
  Generator gen(0);
  BOOST_CHECK_EXCEPTION(Linear(-1, 2, gen), Error, [](const Error& e) { return message_has(e, {"in_features=-1"}); });
  BOOST_CHECK_EXCEPTION(Linear(3, -2, gen), Error, [](const Error& e) { return message_has(e, {"out_features=-2"}); });
}

BOOST_AUTO_TEST_CASE(zero_sizes_are_allowed_as_in_pytorch) {
  Generator gen(0);
  Linear no_in(0, 3, gen);  // bias bound is 0: y = b = 0 on every row
  BOOST_TEST(no_in.weight().numel() == 0);
  {
    NoGradGuard g;
    copy_(no_in.bias(), tensor({1, 2, 3}));
  }
  Tensor y = no_in(zeros({2, 0}));
  BOOST_TEST(y.shape() == (Shape{2, 3}), boost::test_tools::per_element());
  check_tensor(y, {1, 2, 3, 1, 2, 3});
  sum(y).backward();  // db = sum over the 2 rows
  check_tensor(no_in.bias().grad(), {2, 2, 2});
  Linear no_out(3, 0, gen);
  Tensor x = ones({2, 3});
  x.requires_grad_();
  Tensor z = no_out(x);
  BOOST_TEST(z.shape() == (Shape{2, 0}), boost::test_tools::per_element());
  sum(z).backward();
  check_tensor(x.grad(), {0, 0, 0, 0, 0, 0});
}

BOOST_AUTO_TEST_CASE(gradcheck_2d_with_and_without_bias) {
  for (bool bias : {true, false}) {
    Generator gen(5);
    Linear fc(3, 4, gen, bias);
    fc.to(DType::Float64);
    Tensor x = randn({5, 3}, gen, 0, 1, DType::Float64);
    x.requires_grad_();
    gradcheck_linear(fc, x);
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_3d_with_and_without_bias) {
  for (bool bias : {true, false}) {
    Generator gen(6);
    Linear fc(3, 2, gen, bias);
    fc.to(DType::Float64);
    Tensor x = randn({2, 4, 3}, gen, 0, 1, DType::Float64);
    x.requires_grad_();
    gradcheck_linear(fc, x);
  }
}

BOOST_AUTO_TEST_SUITE_END()
