// Temperature and top-k sampling (experiments/models/sampling.h): greedy picks, frequencies against the
// softmax, seeded repeatability and the errors of bad flags.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "experiments/models/sampling.h"

using normlab::Error;
using normlab::autograd::Generator;
using normlab::experiments::check_sampling;
using normlab::experiments::sample_token;
using normlab::experiments::SamplingOptions;

BOOST_AUTO_TEST_SUITE(sampling)

BOOST_AUTO_TEST_CASE(temperature_zero_and_top_one_pick_the_first_largest_logit) {
  const std::vector<float> z = {0.5f, 2.0f, -1.0f, 2.0f};
  Generator gen(1);
  BOOST_TEST(sample_token(z.data(), 4, {.temperature = 0}, gen) == 1);
  for (int i = 0; i < 20; ++i) BOOST_TEST(sample_token(z.data(), 4, {.temperature = 1.5, .top_k = 1}, gen) == 1);
}

BOOST_AUTO_TEST_CASE(frequencies_follow_the_tempered_softmax_over_the_top_k) {
  const std::vector<float> z = {1.0f, 0.0f, 2.0f, -3.0f, 0.5f};
  const double t = 0.7;
  // Expected probabilities over the 3 largest logits (indices 2, 0, 4), computed here directly.
  std::vector<double> want(5, 0.0);
  double total = 0;
  for (int i : {0, 2, 4}) total += want[i] = std::exp(z[i] / t);
  for (double& w : want) w /= total;
  std::vector<int> count(5, 0);
  Generator gen(7);
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++count[sample_token(z.data(), 5, {.temperature = t, .top_k = 3}, gen)];
  for (int i = 0; i < 5; ++i) {
    const double f = double(count[i]) / n, sd = std::sqrt(want[i] * (1 - want[i]) / n);
    BOOST_TEST(std::abs(f - want[i]) <= 5 * sd + 1e-12, "token " << i << ": " << f << " vs " << want[i]);
  }
  BOOST_TEST(count[1] == 0);
  BOOST_TEST(count[3] == 0);
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_tokens) {
  const std::vector<float> z = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f, -0.2f};
  Generator a(3), b(3), c(4);
  std::vector<int64_t> ta, tb, tc;
  for (int i = 0; i < 50; ++i) {
    ta.push_back(sample_token(z.data(), 6, {}, a));
    tb.push_back(sample_token(z.data(), 6, {}, b));
    tc.push_back(sample_token(z.data(), 6, {}, c));
  }
  BOOST_TEST(ta == tb);
  BOOST_TEST(ta != tc);
}

BOOST_AUTO_TEST_CASE(bad_flags_and_nan_logits_are_errors_naming_them) {
  const std::vector<float> z = {0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN()};
  Generator gen(0);
  const auto message = [&](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  BOOST_TEST(message([&] { check_sampling({.temperature = -1}, 3); }).find("--temperature") != std::string::npos);
  BOOST_TEST(message([&] { check_sampling({.temperature = NAN}, 3); }).find("--temperature") != std::string::npos);
  BOOST_TEST(message([&] { check_sampling({.top_k = 4}, 3); }).find("--top-k must be from 0") != std::string::npos);
  BOOST_TEST(message([&] { check_sampling({.top_k = -1}, 3); }).find("got -1") != std::string::npos);
  BOOST_TEST(message([&] { sample_token(z.data(), 3, {}, gen); }).find("NaN at token 2") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
