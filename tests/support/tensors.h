// Test helpers for autograd tests: seeded random float64 inputs, gradcheck that reports its
// message, and expected-error checks that look for words in a normlab::Error's message.
#pragma once
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace normlab::test {

// A float64 tensor, uniform in [lo, hi), drawn from a seeded std::mt19937 (independent of
// autograd's own Generator), requiring grad.
inline autograd::Tensor random_input(const autograd::Shape& shape, unsigned seed, double lo = -1,
                                     double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(autograd::numel(shape));
  for (double& x : v) x = u(gen);
  autograd::Tensor t = autograd::tensor(v, shape, autograd::DType::Float64);
  t.requires_grad_();
  return t;
}

// Like random_input, but every value is at least `gap` away from 0 (random sign), so relu and
// other kinks at 0 are never within a finite-difference step.
inline autograd::Tensor nonzero_input(const autograd::Shape& shape, unsigned seed, double gap = 0.1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(gap, 1);
  std::vector<double> v(autograd::numel(shape));
  for (double& x : v) x = (gen() & 1 ? 1 : -1) * u(gen);
  autograd::Tensor t = autograd::tensor(v, shape, autograd::DType::Float64);
  t.requires_grad_();
  return t;
}

// A float64 tensor whose values are a random permutation of evenly spaced numbers in (-1, 1):
// no ties, and neighbours far apart compared with gradcheck's eps (for max).
inline autograd::Tensor distinct_input(const autograd::Shape& shape, unsigned seed) {
  const int64_t n = autograd::numel(shape);
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = (perm[i] + 0.5) / static_cast<double>(n) * 2 - 1;
  autograd::Tensor t = autograd::tensor(v, shape, autograd::DType::Float64);
  t.requires_grad_();
  return t;
}

// Runs autograd::gradcheck and turns a mismatch into a test failure that shows its message.
inline void expect_gradcheck(const std::string& what, const autograd::GradcheckFn& fn,
                             const std::vector<autograd::Tensor>& inputs) {
  BOOST_TEST_CONTEXT(what) {
    try {
      BOOST_TEST(autograd::gradcheck(fn, inputs));
    } catch (const normlab::Error& e) {
      BOOST_ERROR(e.what());
    }
  }
}

// Runs autograd::gradgradcheck (a standard normal output gradient drawn with this seed) and turns a
// mismatch into a test failure that shows its message.
inline void expect_gradgradcheck(const std::string& what, const autograd::GradcheckFn& fn,
                                 const std::vector<autograd::Tensor>& inputs, uint64_t seed = 7) {
  BOOST_TEST_CONTEXT(what) {
    try {
      autograd::Generator gen(seed);
      BOOST_TEST(autograd::gradgradcheck(fn, inputs, gen));
    } catch (const normlab::Error& e) {
      BOOST_ERROR(e.what());
    }
  }
}

// Expects f() to throw normlab::Error whose message contains every one of `words`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& words) {
  try {
    f();
  } catch (const normlab::Error& e) {
    const std::string msg = e.what();
    for (const std::string& w : words)
      BOOST_CHECK_MESSAGE(msg.find(w) != std::string::npos,
                          "the message \"" << msg << "\" does not contain \"" << w << "\"");
    return;
  } catch (const std::exception& e) {
    BOOST_ERROR("expected normlab::Error, got another exception: " << e.what());
    return;
  }
  BOOST_ERROR("expected normlab::Error containing \"" << (words.empty() ? "" : words[0])
                                                      << "\", nothing was thrown");
}

}  // namespace normlab::test
