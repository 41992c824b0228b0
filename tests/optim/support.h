// Helpers for the optim tests: optimizer trajectories on one parameter, expected errors, bitwise
// comparisons, and a small BatchNorm model trained on fixed batches (for save, load and resume).
#pragma once
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"
#include "nn/nn.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

namespace normlab::test {

// A parameter's values after each step.
using Steps = std::vector<std::vector<double>>;

// The options of optimizer Opt (SGDOptions for SGD, AdamOptions for Adam, ...).
template <class Opt>
using OptionsOf = decltype(std::declval<const Opt&>().options());

// Runs optimizer Opt on one parameter starting at theta0, giving it grads[k] before step k; returns
// the parameter after each step.
template <class Opt>
Steps run(const OptionsOf<Opt>& o, const std::vector<double>& theta0, const Steps& grads,
          autograd::DType dt = autograd::DType::Float64) {
  autograd::Tensor p = autograd::tensor(theta0, dt);
  p.requires_grad_();
  Opt opt({p}, o);
  Steps out;
  for (const auto& g : grads) {
    p.set_grad(autograd::tensor(g, dt));
    opt.step();
    out.push_back(p.to_vector());
  }
  return out;
}

// Expects run's steps within rtol and atol of want, naming the step that differs.
inline void check_steps(const Steps& got, const Steps& want, double rtol, double atol) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    BOOST_TEST_CONTEXT("after step " << k + 1) {
      BOOST_REQUIRE_EQUAL(got[k].size(), want[k].size());
      check_close(got[k], want[k], want[k].size(), rtol, atol);
    }
}

// Checks that f throws a normlab::Error whose message contains `part`.
inline void check_error(const std::function<void()>& f, const std::string& part) { expect_error(f, {part}); }

// A tensor's dtype, shape and raw bytes ("undefined" for an undefined tensor).
inline std::string bytes_of(const autograd::Tensor& t) {
  if (!t.defined()) return "undefined";
  return autograd::dtype_name(t.dtype()) + autograd::shape_str(t.shape()) +
         std::string(static_cast<const char*>(t.raw_data()), t.numel() * autograd::dtype_size(t.dtype()));
}

inline bool bitwise_equal(const autograd::Tensor& a, const autograd::Tensor& b) { return bytes_of(a) == bytes_of(b); }

// Linear(5, 8), BatchNorm1d(8), ReLU, Linear(8, 3), initialized from Generator(seed).
inline std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  autograd::Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Linear>(5, 8, gen));
  m->add(std::make_shared<nn::BatchNorm1d>(8));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(8, 3, gen));
  return m;
}

// Steps from..to-1 of training: the batch of step s is drawn from Generator(1000 + s), so it is the
// same in every run; with a scheduler, sched->step() follows each opt.step(), as in the README.
inline void train_steps(nn::Sequential& m, optim::Optimizer& opt, int from, int to,
                        optim::LRScheduler* sched = nullptr) {
  for (int s = from; s < to; ++s) {
    autograd::Generator gen(1000 + s);
    const autograd::Tensor x = autograd::randn({6, 5}, gen);
    const std::vector<int64_t> y{0, 1, 2, 0, 1, 2};
    autograd::Tensor loss = autograd::cross_entropy(m(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (sched) sched->step();
  }
}

// Expects a bitwise match of two models' state_dicts, naming the first tensor that differs.
inline void expect_same_bits(const nn::Module& a, const nn::Module& b) {
  const auto x = a.state_dict(), y = b.state_dict();
  BOOST_REQUIRE_EQUAL(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i)
    BOOST_TEST_CONTEXT(x[i].first) {
      BOOST_TEST(x[i].first == y[i].first);
      BOOST_TEST(x[i].second.to_vector() == y[i].second.to_vector(), boost::test_tools::per_element());
      BOOST_TEST(bitwise_equal(x[i].second, y[i].second));
    }
}

}  // namespace normlab::test
