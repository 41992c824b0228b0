// Adam and AdamW: hand-computed steps, every option combination against the rule written out in
// float64, maximize, AMSGrad, decoupled weight decay, per-parameter step counts, skipped
// parameters, bad options, checkpoint state round trips and refused loads, and training saved with
// save_optimizer, loaded with load_optimizer and continued, bitwise equal to training straight through.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "tests/optim/support.h"
#include "tests/support/compare.h"
#include "tests/support/files.h"
#include "tests/support/fixtures.h"

using namespace normlab::autograd;
using namespace normlab::optim;
using normlab::test::bitwise_equal;
using normlab::test::bytes_of;
using normlab::test::check_error;
using normlab::test::check_steps;
using normlab::test::check_tensor;
using normlab::test::expect_same_bits;
using normlab::test::make_model;
using normlab::test::run;
using normlab::test::Steps;
using normlab::test::train_steps;
using normlab::test::TempDir;

namespace {

// The rule as PyTorch's documentation writes it, in float64, with the bias corrections applied to
// the moments (m / bc1, v / bc2) rather than folded into the step size as the implementation does:
// an independent check of the order of operations up to rounding.
struct Rule {
  bool decoupled;
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize;
};
Rule rule_of(const AdamOptions& o) {
  return {false, o.lr, o.betas[0], o.betas[1], o.eps, o.weight_decay, o.amsgrad, o.maximize};
}
Rule rule_of(const AdamWOptions& o) {
  return {true, o.lr, o.betas[0], o.betas[1], o.eps, o.weight_decay, o.amsgrad, o.maximize};
}

Steps follow_rule(const Rule& r, const std::vector<double>& theta0, const Steps& grads) {
  const size_t n = theta0.size();
  std::vector<double> theta = theta0, m(n), v(n), vmax(n);
  Steps out;
  for (size_t k = 0; k < grads.size(); ++k) {
    const double t = static_cast<double>(k + 1);
    const double bc1 = 1 - std::pow(r.beta1, t), bc2 = 1 - std::pow(r.beta2, t);
    for (size_t i = 0; i < n; ++i) {
      if (r.decoupled) theta[i] *= 1 - r.lr * r.weight_decay;
      double g = r.maximize ? -grads[k][i] : grads[k][i];
      if (!r.decoupled) g += r.weight_decay * theta[i];
      m[i] = r.beta1 * m[i] + (1 - r.beta1) * g;
      v[i] = r.beta2 * v[i] + (1 - r.beta2) * g * g;
      vmax[i] = std::max(vmax[i], v[i]);
      const double mhat = m[i] / bc1, vhat = (r.amsgrad ? vmax[i] : v[i]) / bc2;
      theta[i] -= r.lr * mhat / (std::sqrt(vhat) + r.eps);
    }
    out.push_back(theta);
  }
  return out;
}

// theta0 = [1, -2], gradients [1, 0.5] then [1, -1] (the hand-computed cases).
const std::vector<double> kTheta0 = {1, -2};
const Steps kGrads = {{1, 0.5}, {1, -1}};

}  // namespace

BOOST_AUTO_TEST_SUITE(adam)

// ---- Hand-computed updates (float64; the arithmetic is in the comments) -----------------------------

BOOST_AUTO_TEST_CASE(first_step_moves_each_element_by_lr_times_grad_over_abs_grad) {
  // Step 1: exp_avg = 0.1 g, exp_avg_sq = 0.001 g^2, bias corrections 0.1 and 0.001, so
  // theta -= (lr / 0.1) * 0.1 g / (sqrt(0.001 g^2) / sqrt(0.001) + eps) = lr g / (|g| + 1e-8):
  // 1 - 0.1 / (1 + 1e-8) = 0.900000001, -2 - 0.05 / (0.5 + 1e-8) = -2.099999998.
  check_steps(run<Adam>(AdamOptions{.lr = 0.1}, kTheta0, {kGrads[0]}), {{0.900000001, -2.099999998}}, 1e-13, 0);
  check_steps(run<AdamW>(AdamWOptions{.lr = 0.1, .weight_decay = 0}, kTheta0, {kGrads[0]}),
              {{0.900000001, -2.099999998}}, 1e-13, 0);
  // float32: the same to float32 rounding (1e-8 is below half an ulp of 1).
  check_steps(run<Adam>(AdamOptions{.lr = 0.1}, kTheta0, {kGrads[0]}, DType::Float32), {{0.9, -2.1}}, 1e-7, 0);
}

BOOST_AUTO_TEST_CASE(second_step_worked_by_hand) {
  // Element 0 (g = 1, 1): exp_avg 0.19 = bias_correction1, exp_avg_sq 0.001999 = bias_correction2:
  // again lr / (1 + eps) down: 0.800000002.
  // Element 1 (g = 0.5, -1): exp_avg = 0.9 * 0.05 - 0.1 = -0.055; exp_avg_sq = 0.999 * 0.00025 +
  // 0.001 = 0.00124975; denom = sqrt(0.00124975 / 0.001999) + 1e-8 = 0.790688060...;
  // theta = -2.099999998 + (0.1 / 0.19) * 0.055 / denom = -2.099999998 + 0.036610352... = -2.063389646
  const Steps got = run<Adam>(AdamOptions{.lr = 0.1}, kTheta0, kGrads);
  check_steps(got, {{0.900000001, -2.099999998}, {0.800000002, -2.0633896457594343}}, 1e-13, 0);
}

BOOST_AUTO_TEST_CASE(amsgrad_divides_by_the_largest_exp_avg_sq_so_far) {
  // One element, lr 0.1, betas (0.9, 0.5), gradients 2 then 0.1.
  // Step 1: exp_avg 0.2, exp_avg_sq 2 (= max), bias corrections 0.1 and 0.5:
  //   theta = 1 - (0.1 / 0.1) * 0.2 / (sqrt(2) / sqrt(0.5) + 1e-8) = 0.9000000005.
  // Step 2: exp_avg 0.19, exp_avg_sq 0.5 * 2 + 0.5 * 0.01 = 1.005, max stays 2; bias corrections
  //   0.19 and 0.75: theta -= 0.1 / (sqrt(2 / 0.75) + 1e-8) = 0.1 / 1.632993172 -> 0.838762757;
  //   without AMSGrad the denominator is sqrt(1.005 / 0.75) = 1.157583690 -> 0.813613159.
  for (bool amsgrad : {true, false})
    BOOST_TEST_CONTEXT("amsgrad=" << amsgrad) {
      Tensor p = tensor({1.0}, DType::Float64);
      Adam opt({p}, {.lr = 0.1, .betas = {0.9, 0.5}, .amsgrad = amsgrad});
      p.set_grad(tensor({2.0}, DType::Float64));
      opt.step();
      check_tensor(p, {0.9000000005}, 1e-14, 0);
      p.set_grad(tensor({0.1}, DType::Float64));
      opt.step();
      check_tensor(opt.exp_avg(0), {0.19}, 1e-14, 0);
      check_tensor(opt.exp_avg_sq(0), {1.005}, 1e-14, 0);
      if (amsgrad) {
        check_tensor(opt.max_exp_avg_sq(0), {2}, 0, 0);
        check_tensor(p, {0.8387627573054205}, 1e-14, 0);
      } else {
        BOOST_TEST(!opt.max_exp_avg_sq(0).defined());
        check_tensor(p, {0.8136131586881326}, 1e-14, 0);
      }
    }
}

BOOST_AUTO_TEST_CASE(adamw_decays_the_parameter_and_adam_adds_the_decay_to_the_gradient) {
  // Zero gradients, lr 0.1, weight decay 0.5.
  // AdamW: the moments stay 0, the update is 0 / eps = 0, theta *= 1 - 0.05 each step:
  //   [0.95, -1.9], [0.9025, -1.805].
  const Steps zero = {{0, 0}, {0, 0}};
  check_steps(run<AdamW>(AdamWOptions{.lr = 0.1, .weight_decay = 0.5}, kTheta0, zero), {{0.95, -1.9}, {0.9025, -1.805}},
              1e-15, 0);
  // Adam: g = 0.5 theta = [0.5, -1], a first step of lr g / (|g| + eps) against it:
  //   1 - 0.05 / (0.5 + 1e-8) = 0.900000002, -2 + 0.1 / (1 + 1e-8) = -1.900000001.
  check_steps(run<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.5}, kTheta0, {zero[0]}),
              {{0.900000002, -1.900000001}}, 1e-14, 0);
}

BOOST_AUTO_TEST_CASE(lr_zero_leaves_parameters_unchanged_but_updates_the_moments) {
  Tensor p = tensor({1, -2}, DType::Float64);
  Adam opt({p}, {.lr = 0, .amsgrad = true});
  p.set_grad(tensor({3, 4}, DType::Float64));
  opt.step();
  check_tensor(p, {1, -2}, 0, 0);
  check_tensor(opt.exp_avg(0), {0.3, 0.4}, 1e-15, 0);
  check_tensor(opt.exp_avg_sq(0), {0.009, 0.016}, 1e-14, 0);
  check_tensor(opt.max_exp_avg_sq(0), {0.009, 0.016}, 1e-14, 0);
  BOOST_TEST(opt.param_step(0) == 1);
}

// ---- Every option combination against the rule written out in float64 ------------------------------

namespace {
template <class Opt, class Options>
void check_every_combination() {
  normlab::autograd::Generator gen(42);
  const int64_t n = 37;  // not a multiple of any vector width: the kernel's tail runs too
  std::vector<double> theta0(n);
  for (auto& v : theta0) v = gen.uniform(-1, 1);
  // Six steps of gradients that shrink (scale 2, 1.2, 0.72, ...): exp_avg_sq falls, so AMSGrad's
  // maximum is not exp_avg_sq.
  Steps grads(6, std::vector<double>(n));
  for (size_t k = 0; k < grads.size(); ++k)
    for (auto& v : grads[k]) v = gen.uniform(-2, 2) * std::pow(0.6, k);
  for (double wd : {0.0, 0.05})
    for (bool amsgrad : {false, true})
      for (bool maximize : {false, true})
        for (std::array<double, 2> betas : {std::array<double, 2>{0.9, 0.999}, std::array<double, 2>{0.5, 0.8}}) {
          Options o;
          o.lr = 0.03;
          o.betas = betas;
          o.eps = 1e-6;
          o.weight_decay = wd;
          o.amsgrad = amsgrad;
          o.maximize = maximize;
          const Steps want = follow_rule(rule_of(o), theta0, grads);
          BOOST_TEST_CONTEXT("weight_decay=" << wd << " amsgrad=" << amsgrad << " maximize=" << maximize
                                             << " betas=" << betas[0] << "," << betas[1]) {
            BOOST_TEST_CONTEXT("float64") { check_steps(run<Opt>(o, theta0, grads), want, 1e-12, 1e-14); }
            BOOST_TEST_CONTEXT("float32") { check_steps(run<Opt>(o, theta0, grads, DType::Float32), want, 1e-5, 1e-6); }
          }
        }
}
}  // namespace

BOOST_AUTO_TEST_CASE(adam_every_option_combination_follows_the_rule_over_six_steps) {
  check_every_combination<Adam, AdamOptions>();
}

BOOST_AUTO_TEST_CASE(adamw_every_option_combination_follows_the_rule_over_six_steps) {
  check_every_combination<AdamW, AdamWOptions>();
}

BOOST_AUTO_TEST_CASE(maximize_is_minimizing_the_negated_gradient_bit_for_bit) {
  const Steps neg = {{-1, -0.5}, {-1, 1}};
  for (DType dt : {DType::Float32, DType::Float64})
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      BOOST_TEST((run<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.1, .amsgrad = true, .maximize = true}, kTheta0,
                            kGrads, dt) ==
                  run<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.1, .amsgrad = true}, kTheta0, neg, dt)));
      BOOST_TEST((run<AdamW>(AdamWOptions{.lr = 0.1, .weight_decay = 0.1, .maximize = true}, kTheta0, kGrads, dt) ==
                  run<AdamW>(AdamWOptions{.lr = 0.1, .weight_decay = 0.1}, kTheta0, neg, dt)));
      // And it ascends: the first step moves each element by about +lr sign(grad).
      check_steps(run<Adam>(AdamOptions{.lr = 0.1, .maximize = true}, kTheta0, {kGrads[0]}, dt), {{1.1, -1.9}}, 1e-7,
                  0);
    }
}

// ---- Options ------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(defaults_are_pytorchs) {
  const AdamOptions a;
  BOOST_TEST(a.lr == 1e-3);
  BOOST_TEST(a.betas[0] == 0.9);
  BOOST_TEST(a.betas[1] == 0.999);
  BOOST_TEST(a.eps == 1e-8);
  BOOST_TEST(a.weight_decay == 0);
  BOOST_TEST(!a.amsgrad);
  BOOST_TEST(!a.maximize);
  const AdamWOptions w;
  BOOST_TEST(w.lr == 1e-3);
  BOOST_TEST(w.betas[0] == 0.9);
  BOOST_TEST(w.betas[1] == 0.999);
  BOOST_TEST(w.eps == 1e-8);
  BOOST_TEST(w.weight_decay == 1e-2);
  BOOST_TEST(!w.amsgrad);
  BOOST_TEST(!w.maximize);
  Adam adam({tensor({1})});
  BOOST_TEST(adam.lr() == 1e-3);
  AdamW adamw({tensor({1})}, {.betas = {0.8, 0.99}, .amsgrad = true});
  adamw.set_lr(0.5);
  const AdamWOptions o = adamw.options();
  BOOST_TEST(o.lr == 0.5);  // as set_lr left it
  BOOST_TEST(o.betas[0] == 0.8);
  BOOST_TEST(o.betas[1] == 0.99);
  BOOST_TEST(o.weight_decay == 1e-2);
  BOOST_TEST(o.amsgrad);
}

BOOST_AUTO_TEST_CASE(invalid_hyper_parameters_are_errors) {
  const std::vector<Tensor> ps = {tensor({1})};
  check_error([&] { Adam(ps, {.lr = -0.1}); }, "Adam: lr must be a finite number >= 0, got -0.1");
  check_error([&] { Adam(ps, {.lr = NAN}); }, "lr must be a finite number >= 0, got nan");
  check_error([&] { Adam(ps, {.lr = INFINITY}); }, "got inf");
  check_error([&] { Adam(ps, {.betas = {1.0, 0.999}}); }, "Adam: betas[0] must be in [0, 1), got 1.0");
  check_error([&] { Adam(ps, {.betas = {-0.1, 0.999}}); }, "betas[0] must be in [0, 1), got -0.1");
  check_error([&] { Adam(ps, {.betas = {0.9, 1.0}}); }, "betas[1] must be in [0, 1), got 1.0");
  check_error([&] { Adam(ps, {.betas = {0.9, NAN}}); }, "betas[1] must be in [0, 1), got nan");
  check_error([&] { Adam(ps, {.eps = -1e-8}); }, "eps must be a finite number >= 0, got -1e-08");
  check_error([&] { Adam(ps, {.eps = INFINITY}); }, "eps must be a finite number >= 0, got inf");
  check_error([&] { Adam(ps, {.weight_decay = -1e-4}); }, "weight_decay must be a finite number >= 0, got -0.0001");
  check_error([&] { Adam(ps, {.weight_decay = NAN}); }, "weight_decay must be a finite number >= 0, got nan");
  check_error([&] { AdamW(ps, {.lr = -1}); }, "AdamW: lr must be a finite number >= 0, got -1");
  check_error([&] { AdamW(ps, {.betas = {0.9, -0.5}}); }, "AdamW: betas[1] must be in [0, 1), got -0.5");
  check_error([&] { AdamW(ps, {.weight_decay = -0.01}); }, "AdamW: weight_decay must be a finite number >= 0");
  // The edges PyTorch accepts: zeros.
  Adam edges(ps, {.lr = 0, .betas = {0, 0}, .eps = 0, .weight_decay = 0});
  // The static checks, for callers that validate first.
  check_error([] { Adam::check_options({.eps = -1}, "--eps"); }, "--eps: eps must be a finite number >= 0, got -1");
  check_error([] { AdamW::check_options({.betas = {2, 0.9}}, "cfg"); }, "cfg: betas[0] must be in [0, 1), got 2");
  Adam ok(ps, {.lr = 0.1});
  check_error([&] { ok.set_lr(-1); }, "Adam.set_lr: lr must be a finite number >= 0, got -1");
  BOOST_TEST(ok.lr() == 0.1);
  check_error([] { Adam({}, {}); }, "Adam: expected a non-empty list of parameters");
  check_error([] { AdamW({tensor({1}), Tensor()}, {}); }, "AdamW: parameter 1 is an undefined tensor");
}

// ---- Parameters, gradients ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(parameters_without_grad_are_skipped_and_keep_their_state) {
  Tensor a = tensor({1, 2}, DType::Float64), b = tensor({3}, DType::Float64);
  Adam opt({a, b}, {.lr = 0.1});
  a.set_grad(tensor({1, 1}, DType::Float64));
  opt.step();  // b has no grad: unchanged, no state
  check_tensor(a, {0.900000001, 1.900000001}, 1e-14, 0);
  check_tensor(b, {3}, 0, 0);
  BOOST_TEST(opt.param_step(0) == 1);
  BOOST_TEST(opt.param_step(1) == 0);
  BOOST_TEST(!opt.exp_avg(1).defined());
  BOOST_TEST(!opt.exp_avg_sq(1).defined());
  const std::string a_bytes = bytes_of(a), m_bytes = bytes_of(opt.exp_avg(0)), v_bytes = bytes_of(opt.exp_avg_sq(0));
  opt.zero_grad();
  b.set_grad(tensor({-2}, DType::Float64));
  opt.step();  // a has no grad now: a and its state stay; b takes its own first step
  BOOST_TEST(bytes_of(a) == a_bytes);
  BOOST_TEST(bytes_of(opt.exp_avg(0)) == m_bytes);
  BOOST_TEST(bytes_of(opt.exp_avg_sq(0)) == v_bytes);
  BOOST_TEST(opt.param_step(0) == 1);
  BOOST_TEST(opt.param_step(1) == 1);
  // b's bias corrections are those of its step 1, not of the optimizer's step 2: +lr |g| / (|g| + eps).
  check_tensor(b, {3 + 0.2 / (2 + 1e-8)}, 1e-15, 0);
  BOOST_TEST(opt.steps() == 2);
}

BOOST_AUTO_TEST_CASE(mixed_dtypes_in_one_optimizer) {
  Tensor a = tensor({1, 2}, DType::Float32), b = tensor({1, 2}, DType::Float64);
  AdamW opt({a, b}, {.lr = 0.25, .weight_decay = 0, .amsgrad = true});
  a.set_grad(tensor({1, -1}, DType::Float32));
  b.set_grad(tensor({1, -1}, DType::Float64));
  opt.step();
  check_tensor(a, {0.75, 2.25}, 1e-7, 0);
  check_tensor(b, {0.75, 2.25}, 1e-8, 0);  // 0.25 / (1 + 1e-8)
  for (const Tensor* t : {&opt.exp_avg(0), &opt.exp_avg_sq(0), &opt.max_exp_avg_sq(0)})
    BOOST_TEST((t->dtype() == DType::Float32));
  for (const Tensor* t : {&opt.exp_avg(1), &opt.exp_avg_sq(1), &opt.max_exp_avg_sq(1)})
    BOOST_TEST((t->dtype() == DType::Float64));
}

BOOST_AUTO_TEST_CASE(steps_a_modules_parameters_after_backward) {
  // loss = sum(w * x) => dloss/dw = x; the first step moves w by -lr sign(x), seen through the handle.
  Tensor w = tensor({1, 2, 3});
  w.requires_grad_();
  Adam opt({w}, {.lr = 0.5});
  sum(mul(w, tensor({2, -2, 4}))).backward();
  opt.step();
  check_tensor(w, {0.5, 2.5, 2.5}, 1e-6, 0);
  BOOST_TEST(w.requires_grad());
  BOOST_TEST(w.is_leaf());
}

// ---- Checkpoint state ------------------------------------------------------------------------------------

namespace {

// Three parameters; parameter 2 gets a gradient only from step 3 on, so at step 2 it has no state
// and later its step count trails the optimizer's.
struct Model {
  std::vector<Tensor> params;
  explicit Model(uint64_t seed, DType dt = DType::Float32) {
    Generator gen(seed);
    params = {randn({2, 3}, gen, 0, 1, dt), randn({17}, gen, 0, 1, dt), randn({4}, gen, 0, 1, dt)};
    for (auto& p : params) p.requires_grad_();
  }
};

// Fixed pseudo-random gradients for `step` (1, 2, ...), in each parameter's dtype.
void give_grads(const Model& m, int step) {
  Generator gen(2000 + step);
  const DType dt = m.params[0].dtype();
  const double scale = std::pow(0.7, step);  // shrinking: exp_avg_sq falls behind its maximum
  m.params[0].set_grad(mul(randn({2, 3}, gen, 0, 1, dt), scale));
  m.params[1].set_grad(mul(randn({17}, gen, 0, 1, dt), scale));
  m.params[2].set_grad(step >= 3 ? mul(randn({4}, gen, 0, 1, dt), scale) : Tensor());
}

template <class Opt>
void expect_same_state(const Opt& a, const Opt& b) {
  BOOST_TEST(a.steps() == b.steps());
  BOOST_TEST(a.lr() == b.lr());
  for (size_t i = 0; i < a.parameters().size(); ++i)
    BOOST_TEST_CONTEXT("parameter " << i) {
      BOOST_TEST(bitwise_equal(a.parameters()[i], b.parameters()[i]));
      BOOST_TEST(a.param_step(i) == b.param_step(i));
      BOOST_TEST(bitwise_equal(a.exp_avg(i), b.exp_avg(i)));
      BOOST_TEST(bitwise_equal(a.exp_avg_sq(i), b.exp_avg_sq(i)));
      BOOST_TEST(bitwise_equal(a.max_exp_avg_sq(i), b.max_exp_avg_sq(i)));
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(state_names_and_scalars) {
  Model m(1);
  AdamW opt(m.params, {.lr = 0.01, .betas = {0.8, 0.99}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true});
  give_grads(m, 1);
  opt.step();
  const OptimizerState s = opt.state();
  std::vector<std::string> names;
  for (const auto& [n, t] : s.tensors) names.push_back(n);
  // Parameter 2 had no gradient: no state.
  BOOST_TEST((names == std::vector<std::string>{"exp_avg.0", "exp_avg_sq.0", "max_exp_avg_sq.0", "exp_avg.1",
                                                "exp_avg_sq.1", "max_exp_avg_sq.1"}));
  BOOST_TEST(bitwise_equal(s.tensors[0].second, opt.exp_avg(0)));
  BOOST_TEST(!s.tensors[0].second.is_same(opt.exp_avg(0)));  // a copy
  const std::map<std::string, double> want = {
      {"lr", 0.01},      {"beta1", 0.8},    {"beta2", 0.99},
      {"eps", 1e-6},     {"weight_decay", 0.1}, {"amsgrad", 1},
      {"maximize", 0},   {"decoupled_weight_decay", 1}, {"step", 1},
      {"step.0", 1},     {"step.1", 1}};
  BOOST_TEST((s.scalars == want));
  // The saved copy does not move when training goes on.
  const std::string saved = bytes_of(s.tensors[0].second);
  give_grads(m, 2);
  opt.step();
  BOOST_TEST(bytes_of(s.tensors[0].second) == saved);
  BOOST_TEST(opt.state().scalars.at("step.0") == 2);
  // Adam's state says decoupled_weight_decay 0 and keeps no max_exp_avg_sq without amsgrad.
  Model m2(1);
  Adam adam(m2.params, {.lr = 0.01});
  give_grads(m2, 1);
  adam.step();
  BOOST_TEST(adam.state().scalars.at("decoupled_weight_decay") == 0);
  BOOST_TEST(adam.state().tensors.size() == 4u);
}

namespace {
// Trains 6 steps straight, and 3 steps + state() + load_state() into a fresh optimizer (other
// options, other parameter values overwritten) + 3 steps; expects the same bits.
template <class Opt, class Options>
void check_state_round_trip(const Options& o) {
  for (DType dt : {DType::Float32, DType::Float64})
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Model straight(7, dt), first(7, dt);
      Opt opt_straight(straight.params, o);
      for (int k = 1; k <= 6; ++k) give_grads(straight, k), opt_straight.step();

      Opt opt_first(first.params, o);
      for (int k = 1; k <= 3; ++k) give_grads(first, k), opt_first.step();
      const OptimizerState saved = opt_first.state();
      BOOST_TEST(saved.scalars.at("step.2") == 1);  // parameter 2 has taken one step of 3

      Model resumed(99, dt);
      for (size_t i = 0; i < resumed.params.size(); ++i)
        resumed.params[i] = first.params[i].detach().clone().requires_grad_();
      Opt opt_resumed(resumed.params, Options{.lr = 0.5, .betas = {0.1, 0.2}});
      opt_resumed.load_state(saved);
      BOOST_TEST(opt_resumed.steps() == 3);
      BOOST_TEST(opt_resumed.param_step(2) == 1);
      BOOST_TEST(opt_resumed.options().betas[0] == o.betas[0]);
      for (int k = 4; k <= 6; ++k) give_grads(resumed, k), opt_resumed.step();
      expect_same_state(opt_resumed, opt_straight);
    }
}
}  // namespace

BOOST_AUTO_TEST_CASE(state_round_trip_continues_bitwise_adam) {
  check_state_round_trip<Adam>(AdamOptions{.lr = 0.02, .betas = {0.8, 0.95}, .weight_decay = 0.01, .amsgrad = true});
}

BOOST_AUTO_TEST_CASE(state_round_trip_continues_bitwise_adamw) {
  check_state_round_trip<AdamW>(AdamWOptions{.lr = 0.02, .maximize = true});
}

namespace {

// A trained optimizer and a state to break, with a check that a failed load changed nothing.
struct LoadFixture {
  Model m{3};
  Adam opt{m.params, {.lr = 0.05, .amsgrad = true}};
  OptimizerState good;
  LoadFixture() {
    for (int k = 1; k <= 3; ++k) give_grads(m, k), opt.step();
    good = opt.state();  // parameters 0 and 1 at step 3, parameter 2 at step 1
    // Make the optimizer differ from `good`, to see that a failed load keeps it as it is.
    opt.set_lr(0.3);
    give_grads(m, 4);
    opt.step();
  }
  OptimizerState with(const std::string& k, double v) const {
    OptimizerState s = good;
    s.scalars[k] = v;
    return s;
  }
  OptimizerState without(const std::string& k) const {
    OptimizerState s = good;
    s.scalars.erase(k);
    return s;
  }
  OptimizerState with_tensor(const std::string& name, Tensor t) const {
    OptimizerState s = good;
    s.tensors.emplace_back(name, t);
    return s;
  }
  OptimizerState without_tensor(const std::string& name) const {
    OptimizerState s = good;
    s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(), [&](auto& nt) { return nt.first == name; }),
                    s.tensors.end());
    BOOST_REQUIRE(s.tensors.size() + 1 == good.tensors.size());
    return s;
  }
  // Every bit of the optimizer's moments.
  std::vector<std::string> moments() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < 3; ++i)
      for (const Tensor* t : {&opt.exp_avg(i), &opt.exp_avg_sq(i), &opt.max_exp_avg_sq(i)}) out.push_back(bytes_of(*t));
    return out;
  }
  void expect_rejected(const OptimizerState& bad, const std::string& part) {
    const std::vector<std::string> before = moments();
    check_error([&] { opt.load_state(bad); }, part);
    BOOST_TEST(opt.lr() == 0.3);
    BOOST_TEST(opt.steps() == 4);
    BOOST_TEST(opt.options().amsgrad);
    BOOST_TEST(opt.param_step(0) == 4);
    BOOST_TEST(opt.param_step(2) == 2);
    BOOST_TEST((moments() == before));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(load_state_rejects_bad_scalars_and_changes_nothing) {
  LoadFixture f;
  f.expect_rejected(f.without("beta2"), "Adam.load_state: expected the scalars");
  f.expect_rejected(f.without("beta2"), "missing \"beta2\"");
  f.expect_rejected(f.with("momentum", 0.9), "unexpected \"momentum\"");
  f.expect_rejected(f.with("lr", -1), "Adam.load_state: lr must be a finite number >= 0, got -1");
  f.expect_rejected(f.with("beta1", 1), "Adam.load_state: betas[0] must be in [0, 1), got 1.0");
  f.expect_rejected(f.with("beta2", NAN), "betas[1] must be in [0, 1), got nan");
  f.expect_rejected(f.with("eps", -1), "eps must be a finite number >= 0, got -1");
  f.expect_rejected(f.with("weight_decay", -1), "weight_decay must be a finite number >= 0, got -1");
  f.expect_rejected(f.with("amsgrad", 2), "scalar \"amsgrad\" must be 0 or 1, got 2");
  f.expect_rejected(f.with("maximize", 0.5), "scalar \"maximize\" must be 0 or 1, got 0.5");
  f.expect_rejected(f.with("step", 2.5), "scalar \"step\" must be a whole number >= 0, got 2.5");
  // Per-parameter step counts: from 1 to the optimizer's step count, for parameters that exist.
  f.expect_rejected(f.with("step.0", 4), "scalar \"step.0\" must be a whole number from 1 to \"step\" (3), got 4");
  f.expect_rejected(f.with("step.0", 0), "scalar \"step.0\" must be a whole number from 1 to \"step\" (3), got 0");
  f.expect_rejected(f.with("step.1", 1.5), "\"step.1\" must be a whole number from 1 to \"step\" (3), got 1.5");
  f.expect_rejected(f.with("step.3", 1), "\"step.3\" names parameter 3, but this optimizer has 3 parameters");
  f.expect_rejected(f.with("step.x", 1), "unexpected \"step.x\"");
  f.expect_rejected(f.with("step.01", 1), "unexpected \"step.01\"");
  // A step count without moments, and moments without a step count.
  f.expect_rejected(f.without("step.2"),
                    "the state of parameter 2 is incomplete: it has \"exp_avg.2\", \"exp_avg_sq.2\", "
                    "\"max_exp_avg_sq.2\" but not \"step.2\"");
  // Turning amsgrad off while the state holds max_exp_avg_sq.
  f.expect_rejected(f.with("amsgrad", 0), "got \"max_exp_avg_sq.0\", but amsgrad is 0");
  // The good state loads.
  f.opt.load_state(f.good);
  BOOST_TEST(f.opt.lr() == 0.05);
  BOOST_TEST(f.opt.steps() == 3);
  BOOST_TEST(f.opt.param_step(2) == 1);
}

BOOST_AUTO_TEST_CASE(load_state_rejects_bad_tensors_and_changes_nothing) {
  LoadFixture f;
  BOOST_REQUIRE_EQUAL(f.good.tensors.size(), 9u);
  f.expect_rejected(f.without_tensor("exp_avg_sq.1"),
                    "the state of parameter 1 is incomplete: it has \"step.1\", \"exp_avg.1\", "
                    "\"max_exp_avg_sq.1\" but not \"exp_avg_sq.1\"");
  f.expect_rejected(f.without_tensor("max_exp_avg_sq.0"), "but not \"max_exp_avg_sq.0\"");
  f.expect_rejected(f.with_tensor("exp_avg.1", zeros({17})), "\"exp_avg.1\" appears more than once");
  f.expect_rejected(f.with_tensor("exp_avg.3", zeros({4})),
                    "\"exp_avg.3\" names parameter 3, but this optimizer has 3 parameters");
  f.expect_rejected(f.with_tensor("momentum_buffer.0", zeros({2, 3})),
                    "expected tensors named \"exp_avg.<i>\", \"exp_avg_sq.<i>\" or \"max_exp_avg_sq.<i>\"");
  f.expect_rejected(f.with_tensor("exp_avg.x", zeros({2, 3})), "got \"exp_avg.x\"");
  f.expect_rejected(f.with_tensor("exp_avg.01", zeros({2, 3})), "got \"exp_avg.01\"");
  f.expect_rejected(f.with_tensor("exp_avg", zeros({2, 3})), "got \"exp_avg\"");
  f.expect_rejected(f.with_tensor("exp_avg.", zeros({2, 3})), "got \"exp_avg.\"");
  OptimizerState bad_shape = f.without_tensor("exp_avg_sq.2");
  bad_shape.tensors.emplace_back("exp_avg_sq.2", zeros({5}));
  f.expect_rejected(bad_shape, "\"exp_avg_sq.2\" must be [4] float32 like parameter 2, got [5] float32");
  OptimizerState bad_dtype = f.without_tensor("max_exp_avg_sq.2");
  bad_dtype.tensors.emplace_back("max_exp_avg_sq.2", zeros({4}, DType::Float64));
  f.expect_rejected(bad_dtype, "\"max_exp_avg_sq.2\" must be [4] float32 like parameter 2, got [4] float64");
  OptimizerState undefined = f.without_tensor("exp_avg.0");
  undefined.tensors.emplace_back("exp_avg.0", Tensor());
  f.expect_rejected(undefined, "\"exp_avg.0\" is an undefined tensor");
  // The bad tensor listed first, before good ones: still nothing changes.
  OptimizerState first = f.without_tensor("exp_avg.0");
  first.tensors.insert(first.tensors.begin(), {"exp_avg.0", zeros({3, 2})});
  f.expect_rejected(first, "must be [2, 3] float32 like parameter 0, got [3, 2] float32");
}

BOOST_AUTO_TEST_CASE(adam_and_adamw_states_do_not_load_into_each_other) {
  Model m(5);
  Adam adam(m.params, {.lr = 0.01});
  AdamW adamw(m.params, {.lr = 0.02});
  give_grads(m, 1);
  adam.step();
  check_error([&] { adamw.load_state(adam.state()); },
              "AdamW.load_state: this is an Adam state (scalar \"decoupled_weight_decay\" is 0); AdamW needs 1");
  BOOST_TEST(adamw.steps() == 0);
  BOOST_TEST(adamw.lr() == 0.02);
  adamw.step();
  check_error([&] { adam.load_state(adamw.state()); },
              "Adam.load_state: this is an AdamW state (scalar \"decoupled_weight_decay\" is 1); Adam needs 0");
  BOOST_TEST(adam.lr() == 0.01);
  // Nor does SGD's (other scalars), nor Adam's into SGD.
  SGD sgd(m.params, {.lr = 0.1, .momentum = 0.9});
  sgd.step();
  check_error([&] { adam.load_state(sgd.state()); }, "missing \"beta1\"");
  check_error([&] { sgd.load_state(adam.state()); }, "unexpected \"amsgrad\", \"beta1\"");
}

BOOST_AUTO_TEST_CASE(load_state_copies_the_given_tensors) {
  LoadFixture f;
  f.opt.load_state(f.good);
  const std::string before = bytes_of(f.good.tensors[0].second);
  give_grads(f.m, 4);
  f.opt.step();  // updates the optimizer's own moments, not the caller's tensors
  BOOST_TEST(bytes_of(f.good.tensors[0].second) == before);
  BOOST_TEST(bytes_of(f.opt.exp_avg(0)) != before);
}

// ---- Optimizer checkpoint files: save, load, resume ------------------------------------------------------

namespace {

// 6 steps straight vs 3 steps, save_module + save_optimizer, load both into fresh objects, 3 steps.
template <class Opt, class Options>
void check_resume(const Options& o) {
  TempDir dir;
  const std::string model_path = dir.file("model.safetensors"), opt_path = dir.file("optim.safetensors");
  auto straight = make_model(0);
  Opt opt_straight(straight->parameters(), o);
  train_steps(*straight, opt_straight, 0, 6);

  auto first = make_model(0);
  Opt opt_first(first->parameters(), o);
  train_steps(*first, opt_first, 0, 3);
  normlab::nn::save_module(model_path, *first);
  save_optimizer(opt_path, opt_first, 3);

  auto resumed = make_model(42);                           // other initial weights, overwritten by the load
  Opt opt_resumed(resumed->parameters(), Options{.lr = 0.5});  // hyper-parameters come from the file
  normlab::nn::load_module(model_path, *resumed);
  BOOST_TEST(load_optimizer(opt_path, opt_resumed) == 3);
  BOOST_TEST(opt_resumed.lr() == o.lr);
  train_steps(*resumed, opt_resumed, 3, 6);
  expect_same_bits(*straight, *resumed);
  expect_same_state(opt_resumed, opt_straight);
}

}  // namespace

BOOST_AUTO_TEST_CASE(save_load_and_train_on_equals_training_straight_through_adam) {
  check_resume<Adam>(AdamOptions{.lr = 0.01, .weight_decay = 1e-3, .amsgrad = true});
}

BOOST_AUTO_TEST_CASE(save_load_and_train_on_equals_training_straight_through_adamw) {
  check_resume<AdamW>(AdamWOptions{.lr = 0.01, .betas = {0.85, 0.995}});
}

BOOST_AUTO_TEST_CASE(a_refused_optimizer_file_leaves_the_optimizer_unchanged) {
  TempDir dir;
  auto m = make_model(0);
  AdamW opt(m->parameters(), {.lr = 0.01});
  train_steps(*m, opt, 0, 2);
  const OptimizerState before = opt.state();
  auto same_as_before = [&] {
    const OptimizerState now = opt.state();
    BOOST_TEST((now.scalars == before.scalars));
    BOOST_REQUIRE_EQUAL(now.tensors.size(), before.tensors.size());
    for (size_t i = 0; i < now.tensors.size(); ++i)
      BOOST_TEST(bitwise_equal(now.tensors[i].second, before.tensors[i].second));
  };
  // An SGD checkpoint of the same model.
  auto other = make_model(1);
  SGD sgd(other->parameters(), {.lr = 0.05, .momentum = 0.5});
  train_steps(*other, sgd, 0, 1);
  save_optimizer(dir.file("sgd.safetensors"), sgd, 1);
  check_error([&] { load_optimizer(dir.file("sgd.safetensors"), opt); }, "AdamW.load_state: expected the scalars");
  same_as_before();
  // An Adam checkpoint of the same model: the wrong kind of Adam.
  Adam adam(other->parameters(), {.lr = 0.05});
  train_steps(*other, adam, 0, 1);
  save_optimizer(dir.file("adam.safetensors"), adam, 1);
  check_error([&] { load_optimizer(dir.file("adam.safetensors"), opt); }, "this is an Adam state");
  same_as_before();
  // An AdamW checkpoint of a smaller model: shapes differ.
  Generator gen(0);
  normlab::nn::Linear small(5, 2, gen);
  AdamW adamw_small(small.parameters(), {.lr = 0.05});
  small.parameters()[0].set_grad(zeros({2, 5}));
  small.parameters()[1].set_grad(zeros({2}));
  adamw_small.step();
  save_optimizer(dir.file("small.safetensors"), adamw_small, 1);
  check_error([&] { load_optimizer(dir.file("small.safetensors"), opt); }, "must be [8, 5] float32 like parameter 0");
  same_as_before();
}

BOOST_AUTO_TEST_SUITE_END()
