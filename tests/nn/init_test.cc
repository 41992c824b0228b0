// Initializers: fans and gains against PyTorch's definitions, the bounds, means and standard
// deviations of the fills (statistically, with tolerances a wrong formula fails), seeds, bad input.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "nn/init.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::Error;
using normlab::test::check_tensor;

namespace {

bool message_has(const Error& e, const std::vector<std::string>& parts) {
  const std::string m = e.what();
  for (const auto& p : parts)
    if (m.find(p) == std::string::npos) {
      BOOST_TEST_MESSAGE("message \"" << m << "\" lacks \"" << p << "\"");
      return false;
    }
  return true;
}

struct Stats {
  double min = 1e300, max = -1e300, mean = 0, std = 0;
};

Stats stats(const Tensor& t) {
  Stats s;
  const std::vector<double> v = t.to_vector();
  for (double e : v) s.min = std::min(s.min, e), s.max = std::max(s.max, e), s.mean += e;
  s.mean /= v.size();
  for (double e : v) s.std += (e - s.mean) * (e - s.mean);
  s.std = std::sqrt(s.std / v.size());
  return s;
}

// U(-b, b): every value inside, both ends reached, mean 0, std b/sqrt(3) within 2%.
void check_symmetric_uniform(const Tensor& t, double b) {
  const Stats s = stats(t);
  BOOST_TEST(s.min >= -b * (1 + 1e-7));  // slack for rounding the bound to float32
  BOOST_TEST(s.max <= b * (1 + 1e-7));
  BOOST_TEST(s.min < -0.99 * b);
  BOOST_TEST(s.max > 0.99 * b);
  BOOST_TEST(std::fabs(s.mean) < 0.02 * b);
  BOOST_TEST(s.std / (b / std::sqrt(3.0)) == 1.0, boost::test_tools::tolerance(0.02));
}

// N(0, sd^2): mean 0 and std sd within 2% (n >= 50000, so a standard error is below 0.5%).
void check_centered_normal(const Tensor& t, double sd) {
  const Stats s = stats(t);
  BOOST_TEST(std::fabs(s.mean) < 0.02 * sd);
  BOOST_TEST(s.std / sd == 1.0, boost::test_tools::tolerance(0.02));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(init_)

BOOST_AUTO_TEST_CASE(fans_follow_pytorch) {
  const init::Fans f2 = init::calculate_fan_in_and_fan_out(zeros({5, 3}));  // Linear(3, 5) weight
  BOOST_TEST(f2.fan_in == 3);
  BOOST_TEST(f2.fan_out == 5);
  const init::Fans f4 = init::calculate_fan_in_and_fan_out(zeros({8, 4, 3, 2}));  // conv: receptive field 6
  BOOST_TEST(f4.fan_in == 24);
  BOOST_TEST(f4.fan_out == 48);
  BOOST_CHECK_EXCEPTION(init::calculate_fan_in_and_fan_out(zeros({7})), Error,
                        [](const Error& e) { return message_has(e, {"fewer than 2 dimensions", "[7]"}); });
}

BOOST_AUTO_TEST_CASE(gains_follow_pytorch) {
  namespace tt = boost::test_tools;
  BOOST_TEST(init::calculate_gain("linear") == 1.0);
  BOOST_TEST(init::calculate_gain("conv2d") == 1.0);
  BOOST_TEST(init::calculate_gain("sigmoid") == 1.0);
  BOOST_TEST(init::calculate_gain("tanh") == 5.0 / 3, tt::tolerance(1e-15));
  BOOST_TEST(init::calculate_gain("relu") == std::sqrt(2.0), tt::tolerance(1e-15));
  BOOST_TEST(init::calculate_gain("selu") == 0.75);
  // PyTorch 1.13: calculate_gain('leaky_relu') = 1.4141428569978354 (negative slope 0.01).
  BOOST_TEST(init::calculate_gain("leaky_relu") == 1.4141428569978354, tt::tolerance(1e-15));
  BOOST_TEST(init::calculate_gain("leaky_relu", 0.0) == std::sqrt(2.0), tt::tolerance(1e-15));
  BOOST_TEST(init::calculate_gain("leaky_relu", std::sqrt(5.0)) == std::sqrt(1.0 / 3), tt::tolerance(1e-15));
  BOOST_CHECK_EXCEPTION(init::calculate_gain("swish"), Error, [](const Error& e) { return message_has(e, {"'swish'"}); });
}

BOOST_AUTO_TEST_CASE(uniform_fills_the_range) {
  Generator gen(1);
  Tensor t = zeros({100000}, DType::Float64);
  BOOST_TEST(init::uniform_(t, -2, 3, gen).is_same(t));
  const Stats s = stats(t);
  BOOST_TEST(s.min >= -2);
  BOOST_TEST(s.max < 3);
  BOOST_TEST(s.min < -1.99);
  BOOST_TEST(s.max > 2.99);
  BOOST_TEST(s.mean == 0.5, boost::test_tools::tolerance(0.03));  // standard error 0.0046
  BOOST_TEST(s.std == 5 / std::sqrt(12.0), boost::test_tools::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(normal_has_the_mean_and_std) {
  Generator gen(2);
  Tensor t = zeros({100000});
  init::normal_(t, 1.5, 0.5, gen);
  const Stats s = stats(t);
  BOOST_TEST(s.mean == 1.5, boost::test_tools::tolerance(0.005));  // standard error 0.0016 (0.1%)
  BOOST_TEST(s.std == 0.5, boost::test_tools::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(constant_zeros_ones) {
  Tensor t = empty({2, 3});
  init::constant_(t, 2.5);
  check_tensor(t, {2.5, 2.5, 2.5, 2.5, 2.5, 2.5});
  init::zeros_(t);
  check_tensor(t, {0, 0, 0, 0, 0, 0});
  init::ones_(t);
  check_tensor(t, {1, 1, 1, 1, 1, 1});
}

BOOST_AUTO_TEST_CASE(kaiming_uniform_bound) {
  Generator gen(3);
  Tensor w = zeros({200, 500});
  init::kaiming_uniform_(w, gen);  // a = 0, leaky_relu: gain sqrt(2), bound sqrt(2) sqrt(3/500)
  check_symmetric_uniform(w, std::sqrt(6.0 / 500));
  init::kaiming_uniform_(w, gen, 0, "fan_out", "relu");  // fan_out = 200
  check_symmetric_uniform(w, std::sqrt(6.0 / 200));
  init::kaiming_uniform_(w, gen, std::sqrt(5.0));  // Linear's default: 1/sqrt(fan_in)
  check_symmetric_uniform(w, 1 / std::sqrt(500.0));
  Tensor conv = zeros({64, 16, 3, 3});  // fan_in 144
  init::kaiming_uniform_(conv, gen, 0, "fan_in", "tanh");
  check_symmetric_uniform(conv, 5.0 / 3 * std::sqrt(3.0 / 144));
}

BOOST_AUTO_TEST_CASE(kaiming_normal_std) {
  Generator gen(4);
  Tensor w = zeros({200, 500}, DType::Float64);
  init::kaiming_normal_(w, gen);  // std = sqrt(2) / sqrt(500)
  check_centered_normal(w, std::sqrt(2.0 / 500));
  init::kaiming_normal_(w, gen, 0, "fan_out");
  check_centered_normal(w, std::sqrt(2.0 / 200));
}

BOOST_AUTO_TEST_CASE(xavier_bounds_and_std) {
  Generator gen(5);
  Tensor w = zeros({64, 16, 3, 3});  // fan_in 144, fan_out 576
  init::xavier_uniform_(w, gen);
  check_symmetric_uniform(w, std::sqrt(6.0 / (144 + 576)));
  init::xavier_uniform_(w, gen, 2.0);
  check_symmetric_uniform(w, 2 * std::sqrt(6.0 / (144 + 576)));
  init::xavier_normal_(w, gen, 0.5);
  check_centered_normal(w, 0.5 * std::sqrt(2.0 / (144 + 576)));
}

BOOST_AUTO_TEST_CASE(same_seed_same_values) {
  Tensor a = zeros({30, 20}), b = zeros({30, 20}), c = zeros({30, 20});
  Generator g1(9), g2(9), g3(10);
  init::kaiming_normal_(a, g1);
  init::kaiming_normal_(b, g2);
  init::kaiming_normal_(c, g3);
  BOOST_TEST(a.to_vector() == b.to_vector(), boost::test_tools::per_element());
  BOOST_TEST((a.to_vector() != c.to_vector()));
  init::xavier_uniform_(a, g1);
  init::xavier_uniform_(b, g2);
  BOOST_TEST(a.to_vector() == b.to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(fills_parameters_in_grad_mode_without_recording) {
  Generator gen(6);
  Tensor w = zeros({4, 3});
  w.requires_grad_();
  BOOST_TEST(grad_enabled());
  init::xavier_normal_(w, gen);
  BOOST_TEST(grad_enabled());  // the guard is restored
  BOOST_TEST(w.is_leaf());
  BOOST_TEST(w.requires_grad());
  BOOST_TEST(stats(w).std > 0);
}

BOOST_AUTO_TEST_CASE(zero_element_tensors_are_left_alone) {
  Generator gen(7), fresh(7);
  Tensor w = zeros({0, 3});
  init::kaiming_uniform_(w, gen);
  init::xavier_normal_(w, gen);
  BOOST_TEST(gen.next_u64() == fresh.next_u64());  // nothing drawn
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_errors) {
  Generator gen(0);
  Tensor w = zeros({3, 2});
  BOOST_CHECK_EXCEPTION(init::uniform_(w, 1, 0, gen), Error, [](const Error& e) { return message_has(e, {"a=1", "b=0"}); });
  BOOST_CHECK_EXCEPTION(init::normal_(w, 0, -1, gen), Error, [](const Error& e) { return message_has(e, {"std=-1"}); });
  BOOST_CHECK_EXCEPTION(init::kaiming_uniform_(w, gen, 0, "fan_avg"), Error,
                        [](const Error& e) { return message_has(e, {"'fan_avg'", "fan_in", "fan_out"}); });
  BOOST_CHECK_EXCEPTION(init::kaiming_normal_(w, gen, 0, "fan_in", "softplus"), Error,
                        [](const Error& e) { return message_has(e, {"'softplus'"}); });
  BOOST_CHECK_EXCEPTION(init::xavier_uniform_(zeros({5}), gen), Error,
                        [](const Error& e) { return message_has(e, {"fewer than 2 dimensions"}); });
  check_tensor(w, {0, 0, 0, 0, 0, 0});  // untouched by the failed calls
}

BOOST_AUTO_TEST_SUITE_END()
