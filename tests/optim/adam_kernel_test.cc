// The fused Adam / AdamW kernel on every Highway target against its scalar reference, bit for bit,
// for every flag combination, several step counts and lengths that exercise the vector body and the
// one-lane tail; AMSGrad's maximum with NaNs; the reference against the rule worked by hand.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "autograd/kernels/target.h"
#include "optim/kernels/adam.h"
#include "tests/support/random.h"
#include "tests/support/targets.h"

namespace k = normlab::optim::kernels;
using normlab::test::for_each_target;
using normlab::test::random_vec;
using normlab::test::tail_lengths;

namespace {

// Every flag combination (weight decay none, L2 or decoupled; amsgrad; maximize) at a few step
// counts: 1 (bias corrections 0.1 and 0.001), 2, 10 and 1000 (beta1^step underflows to 0 in float).
std::vector<k::AdamStep> all_steps() {
  std::vector<k::AdamStep> out;
  for (int decay = 0; decay < 3; ++decay)
    for (bool amsgrad : {false, true})
      for (bool maximize : {false, true})
        for (int64_t step : {1, 2, 10, 1000})
          out.push_back({.lr = 0.01, .beta1 = 0.85, .beta2 = 0.995, .eps = 1e-6, .weight_decay = decay ? 0.05 : 0.0,
                         .decoupled = decay == 2, .amsgrad = amsgrad, .maximize = maximize, .step = step});
  return out;
}

// Equal bits, or both NaN (the same computation may give NaNs of another sign or payload).
template <typename T>
bool same(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, int64_t n, const char* what) {
  for (int64_t i = 0; i < n; ++i)
    if (!same(got[i], want[i])) {
      BOOST_ERROR(what << " element " << i << " of " << n << ": got " << got[i] << ", want " << want[i]);
      return;
    }
}

template <typename T>
void test_adam_kernel() {
  const T sentinel = T(-12345);
  for_each_target([&] {
    BOOST_REQUIRE_EQUAL(std::string(k::adam_active_target()),
                        std::string(normlab::autograd::kernels::active_target()));
    for (const k::AdamStep& s : all_steps())
      for (int64_t n : tail_lengths()) {
        BOOST_TEST_CONTEXT("weight_decay=" << s.weight_decay << " decoupled=" << s.decoupled << " amsgrad="
                                           << s.amsgrad << " maximize=" << s.maximize << " step=" << s.step
                                           << " n=" << n) {
          const unsigned seed = static_cast<unsigned>(n + 10 * s.step);
          const auto param = random_vec<T>(n, -1, 1, 3 + seed), grad = random_vec<T>(n, -2, 2, 5 + seed);
          const auto m = random_vec<T>(n, -0.5, 0.5, 7 + seed), v = random_vec<T>(n, 0, 0.5, 11 + seed);
          const auto vmax = random_vec<T>(n, 0, 0.5, 13 + seed);  // above v in about half the elements
          // One extra element past the end, which must not be written.
          std::vector<T> got_p(param), got_m(m), got_v(v), got_vmax(vmax);
          std::vector<T> want_p(param), want_m(m), want_v(v), want_vmax(vmax);
          for (auto* x : {&got_p, &got_m, &got_v, &got_vmax}) x->push_back(sentinel);
          k::adam_step(s, n, got_p.data(), grad.data(), got_m.data(), got_v.data(),
                       s.amsgrad ? got_vmax.data() : nullptr);
          k::ref::adam_step(s, n, want_p.data(), grad.data(), want_m.data(), want_v.data(),
                            s.amsgrad ? want_vmax.data() : nullptr);
          // Each operation is one IEEE operation (+, *, /, sqrt, compare) in the same order on every
          // target, with no FMA (see adam.cc): bitwise equal.
          expect_same(got_p, want_p, n, "param");
          expect_same(got_m, want_m, n, "exp_avg");
          expect_same(got_v, want_v, n, "exp_avg_sq");
          expect_same(got_vmax, want_vmax, n, "max_exp_avg_sq");  // untouched without amsgrad
          if (!s.amsgrad) expect_same(got_vmax, vmax, n, "max_exp_avg_sq without amsgrad");
          for (auto* x : {&got_p, &got_m, &got_v, &got_vmax}) BOOST_TEST((*x)[n] == sentinel);
        }
      }
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(adam_kernel)

BOOST_AUTO_TEST_CASE(matches_scalar_reference_bitwise_on_every_target_float32) { test_adam_kernel<float>(); }
BOOST_AUTO_TEST_CASE(matches_scalar_reference_bitwise_on_every_target_float64) { test_adam_kernel<double>(); }

BOOST_AUTO_TEST_CASE(amsgrad_maximum_propagates_nan_like_torch_maximum) {
  // torch.maximum(old, v) is NaN where either is NaN; the kernel keeps that on every target (a
  // plain SIMD max would return one operand or the other depending on the instruction).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> grad = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, nan, 0.5f, 0.5f};
  const std::vector<float> old = {0.f, 1.f, nan, 0.f, 1.f, nan, 0.f, 1.f, 0.f, 1.f, 0.25f};
  const int64_t n = static_cast<int64_t>(grad.size());
  const k::AdamStep s{.lr = 0.1, .amsgrad = true, .step = 3};
  for_each_target([&] {
    std::vector<float> p(n, 1.f), m(n, 0.f), v(n, 0.f), vmax(old);
    k::adam_step(s, n, p.data(), grad.data(), m.data(), v.data(), vmax.data());
    for (int64_t i = 0; i < n; ++i)
      BOOST_TEST_CONTEXT("element " << i) {
        const float vi = v[i];  // 0.001 * 0.5^2 = 0.00025 (NaN for the NaN gradient)
        if (std::isnan(old[i]) || std::isnan(vi)) {
          BOOST_TEST(std::isnan(vmax[i]));
          BOOST_TEST(std::isnan(p[i]));
        } else {
          BOOST_TEST(vmax[i] == std::max(old[i], vi));
        }
      }
  });
}

BOOST_AUTO_TEST_CASE(scalar_reference_follows_pytorch_rule_by_hand) {
  // Adam, step 2, lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.1: param 1, grad 0.5,
  // exp_avg 0.2, exp_avg_sq 0.004. g = 0.5 + 0.1 * 1 = 0.6;
  // exp_avg = 0.9 * 0.2 + 0.1 * 0.6 = 0.24; exp_avg_sq = 0.999 * 0.004 + 0.001 * 0.36 = 0.004356;
  // bias_correction1 = 1 - 0.81 = 0.19, bias_correction2 = 1 - 0.998001 = 0.001999;
  // denom = sqrt(0.004356) / sqrt(0.001999) + 1e-8 = 0.066 / 0.0447101778... + 1e-8 = 1.47617396...;
  // param = 1 - (0.1 / 0.19) * 0.24 / denom = 1 - 0.126315789... / 1.47617396... = 0.91443028...
  double p = 1, g = 0.5, m = 0.2, v = 0.004;
  k::ref::adam_step<double>({.lr = 0.1, .weight_decay = 0.1, .step = 2}, 1, &p, &g, &m, &v, nullptr);
  const double denom = 0.066 / std::sqrt(0.001999) + 1e-8;
  BOOST_TEST(m == 0.24, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(v == 0.004356, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p == 1 - (0.1 / 0.19) * 0.24 / denom, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p == 0.91443028, boost::test_tools::tolerance(1e-8));
  // AdamW, maximize, amsgrad, step 1, lr 0.1, weight decay 0.5: param = 0.914430... * 0.95 first;
  // g = -0.5; exp_avg = 0.9 * 0.24 - 0.05 = 0.166; exp_avg_sq = 0.999 * 0.004356 + 0.00025 =
  // 0.004601644; max(0.01, that) = 0.01; bias corrections 0.1 and 0.001:
  // param = 0.95 p - (0.1 / 0.1) * 0.166 / (sqrt(0.01) / sqrt(0.001) + 1e-8).
  const double p0 = p;
  double vmax = 0.01;
  k::ref::adam_step<double>({.lr = 0.1, .weight_decay = 0.5, .decoupled = true, .amsgrad = true, .maximize = true,
                             .step = 1},
                            1, &p, &g, &m, &v, &vmax);
  BOOST_TEST(m == 0.166, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(v == 0.004601644, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(vmax == 0.01);
  BOOST_TEST(p == 0.95 * p0 - 0.166 / (std::sqrt(10.0) + 1e-8), boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_SUITE_END()
