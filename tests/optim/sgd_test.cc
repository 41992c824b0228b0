// SGD: hand-computed updates for each flag, PyTorch values, skipped parameters, zero_grad,
// checkpoint state round trips, and every bad input.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "tests/optim/support.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::optim;
using normlab::test::bitwise_equal;
using normlab::test::check_error;
using normlab::test::check_steps;
using normlab::test::check_tensor;
using normlab::test::run;

namespace {

// theta0 = [1, -2], lr = 0.1, gradients [1, 0.5], [1, -1], [1, 2] in steps 1, 2, 3.
const std::vector<double> kTheta0 = {1, -2};
const std::vector<std::vector<double>> kGrads = {{1, 0.5}, {1, -1}, {1, 2}};

}  // namespace

BOOST_AUTO_TEST_SUITE(sgd)

// ---- Hand-computed updates, one flag at a time (float64; the arithmetic is in the comments) ------

BOOST_AUTO_TEST_CASE(plain_sgd_subtracts_lr_times_grad) {
  // theta -= 0.1 g: [0.9, -2.05], [0.8, -1.95], [0.7, -2.15]
  check_steps(run<SGD>({.lr = 0.1}, kTheta0, kGrads), {{0.9, -2.05}, {0.8, -1.95}, {0.7, -2.15}}, 1e-12, 1e-14);
}

BOOST_AUTO_TEST_CASE(momentum_first_buffer_is_the_gradient) {
  // m = 0.9. element 0: buf 1, 1.9, 2.71 -> theta 0.9, 0.71, 0.439
  // element 1: buf 0.5, 0.45 - 1 = -0.55, -0.495 + 2 = 1.505 -> theta -2.05, -1.995, -2.1455
  check_steps(run<SGD>({.lr = 0.1, .momentum = 0.9}, kTheta0, kGrads), {{0.9, -2.05}, {0.71, -1.995}, {0.439, -2.1455}},
              1e-12, 1e-14);
}

BOOST_AUTO_TEST_CASE(dampening_scales_the_gradient_after_the_first_step) {
  // m = 0.9, dampening 0.5: buf = g on step 1 (no dampening), then 0.9 buf + 0.5 g.
  // element 0: buf 1, 0.9 + 0.5 = 1.4, 1.26 + 0.5 = 1.76 -> theta 0.9, 0.76, 0.584
  // element 1: buf 0.5, 0.45 - 0.5 = -0.05, -0.045 + 1 = 0.955 -> theta -2.05, -2.045, -2.1405
  check_steps(run<SGD>({.lr = 0.1, .momentum = 0.9, .dampening = 0.5}, kTheta0, kGrads),
              {{0.9, -2.05}, {0.76, -2.045}, {0.584, -2.1405}}, 1e-12, 1e-14);
}

BOOST_AUTO_TEST_CASE(nesterov_steps_along_gradient_plus_momentum_times_buffer) {
  // m = 0.9, g' = g + 0.9 buf. element 0: buf 1, 1.9, 2.71; g' 1.9, 2.71, 3.439 -> 0.81, 0.539, 0.1951
  // element 1: buf 0.5, -0.55, 1.505; g' 0.95, -1.495, 3.3545 -> -2.095, -1.9455, -2.28095
  check_steps(run<SGD>({.lr = 0.1, .momentum = 0.9, .nesterov = true}, kTheta0, kGrads),
              {{0.81, -2.095}, {0.539, -1.9455}, {0.1951, -2.28095}}, 1e-12, 1e-14);
}

BOOST_AUTO_TEST_CASE(weight_decay_adds_decay_times_theta_to_the_gradient) {
  // g' = g + 0.1 theta. element 0: 1.1, 1.089, 1.07811 -> 0.89, 0.7811, 0.673289
  // element 1: 0.5 - 0.2 = 0.3, -1 - 0.203 = -1.203, 2 - 0.19097 = 1.80903 -> -2.03, -1.9097, -2.090603
  check_steps(run<SGD>({.lr = 0.1, .weight_decay = 0.1}, kTheta0, kGrads),
              {{0.89, -2.03}, {0.7811, -1.9097}, {0.673289, -2.090603}}, 1e-12, 1e-14);
}

BOOST_AUTO_TEST_CASE(maximize_ascends_the_gradient) {
  // theta += 0.1 g: [1.1, -1.95], [1.2, -2.05], [1.3, -1.85]
  check_steps(run<SGD>({.lr = 0.1, .maximize = true}, kTheta0, kGrads), {{1.1, -1.95}, {1.2, -2.05}, {1.3, -1.85}},
              1e-12, 1e-14);
}

BOOST_AUTO_TEST_CASE(lr_zero_leaves_parameters_unchanged_but_fills_buffers) {
  Tensor p = tensor({1, -2}, DType::Float64);
  SGD opt({p}, {.lr = 0, .momentum = 0.5});
  p.set_grad(tensor({3, 4}, DType::Float64));
  opt.step();
  check_tensor(p, {1, -2}, 0, 0);
  check_tensor(opt.momentum_buffer(0), {3, 4}, 0, 0);
}

// ---- PyTorch 1.13 values (float32) ----------------------------------------------------------------
// Produced with /usr/bin/python3 (torch 1.13):
//   p = torch.tensor([1.0, -0.5, 0.25], requires_grad=True); opt = torch.optim.SGD([p], **kw)
//   for k in range(5):
//       p.grad = torch.tensor([0.5 - 0.3*k, -1.0 + 0.25*k, 2.0*(-1)**k]); opt.step()
//       print(', '.join('%.9g' % v for v in p.tolist()))

namespace {
std::vector<std::vector<double>> torch_grads() {
  std::vector<std::vector<double>> g;
  for (int k = 0; k < 5; ++k) g.push_back({0.5 - 0.3 * k, -1.0 + 0.25 * k, 2.0 * (k % 2 ? -1 : 1)});
  return g;
}
const std::vector<double> kTorchTheta0 = {1.0, -0.5, 0.25};
}  // namespace

BOOST_AUTO_TEST_CASE(matches_pytorch_momentum_dampening_weight_decay) {
  // kw = dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)
  check_steps(run<SGD>({.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01}, kTorchTheta0,
                      torch_grads(), DType::Float32),
              {{0.949000001, -0.399500012, 0.0497499928},
               {0.884245872, -0.241190463, 0.0494802147},
               {0.834171355, -0.0534948036, -0.130807117},
               {0.824353576, 0.137979418, -0.112947993},
               {0.877775609, 0.310182035, -0.276773125}},
              1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(matches_pytorch_nesterov_weight_decay_maximize) {
  // kw = dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)
  check_steps(run<SGD>({.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true, .maximize = true},
                      kTorchTheta0, torch_grads(), DType::Float32),
              {{1.03600001, -0.585500002, 0.427749991},
               {1.05747604, -0.678130507, 0.307100236},
               {1.05228353, -0.763473749, 0.469527543},
               {1.01088893, -0.830089569, 0.336472034},
               {0.925884366, -0.868965328, 0.488877505}},
              1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(matches_pytorch_weight_decay_maximize_without_momentum) {
  // kw = dict(lr=0.2, weight_decay=0.5, maximize=True)
  check_steps(run<SGD>({.lr = 0.2, .weight_decay = 0.5, .maximize = true}, kTorchTheta0, torch_grads(), DType::Float32),
              {{1, -0.649999976, 0.625},
               {0.939999998, -0.734999955, 0.162499994},
               {0.825999975, -0.761499941, 0.546249986},
               {0.663399994, -0.735349953, 0.0916249901},
               {0.457059979, -0.661814928, 0.482462496}},
              1e-5, 1e-6);
}

// ---- Every flag combination against the rule written out in float64 ------------------------------

BOOST_AUTO_TEST_CASE(every_flag_combination_follows_the_rule_over_five_steps) {
  Generator gen(42);
  const int64_t n = 37;  // not a multiple of any vector width: the kernel's tail runs too
  std::vector<double> theta0(n);
  for (auto& v : theta0) v = gen.uniform(-1, 1);
  std::vector<std::vector<double>> grads(5, std::vector<double>(n));
  for (auto& g : grads)
    for (auto& v : g) v = gen.uniform(-2, 2);
  for (double momentum : {0.0, 0.9})
    for (double dampening : {0.0, 0.3})
      for (double wd : {0.0, 0.05})
        for (bool nesterov : {false, true})
          for (bool maximize : {false, true}) {
            if (nesterov && (momentum == 0 || dampening != 0)) continue;
            const SGDOptions o{.lr = 0.07, .momentum = momentum, .dampening = dampening, .weight_decay = wd,
                               .nesterov = nesterov, .maximize = maximize};
            // torch.optim.SGD's rule, element by element, in float64.
            std::vector<std::vector<double>> want;
            std::vector<double> theta = theta0, buf(n);
            for (size_t k = 0; k < grads.size(); ++k) {
              for (int64_t i = 0; i < n; ++i) {
                double g = maximize ? -grads[k][i] : grads[k][i];
                if (wd != 0) g += wd * theta[i];
                if (momentum != 0) {
                  buf[i] = k == 0 ? g : momentum * buf[i] + (1 - dampening) * g;
                  g = nesterov ? g + momentum * buf[i] : buf[i];
                }
                theta[i] -= 0.07 * g;
              }
              want.push_back(theta);
            }
            BOOST_TEST_CONTEXT("momentum=" << momentum << " dampening=" << dampening << " weight_decay=" << wd
                                           << " nesterov=" << nesterov << " maximize=" << maximize) {
              BOOST_TEST_CONTEXT("float64") { check_steps(run<SGD>(o, theta0, grads), want, 1e-12, 1e-13); }
              BOOST_TEST_CONTEXT("float32") {
                check_steps(run<SGD>(o, theta0, grads, DType::Float32), want, 1e-5, 1e-6);
              }
            }
          }
}

// ---- Parameters, gradients, zero_grad ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(parameters_without_grad_are_skipped_and_keep_their_buffers) {
  Tensor a = tensor({1, 2}, DType::Float64), b = tensor({3}, DType::Float64);
  a.requires_grad_();
  b.requires_grad_();
  SGD opt({a, b}, {.lr = 0.1, .momentum = 0.9});
  a.set_grad(tensor({1, 1}, DType::Float64));
  opt.step();  // b has no grad: unchanged, no buffer
  check_tensor(a, {0.9, 1.9}, 1e-12, 1e-14);
  check_tensor(b, {3}, 0, 0);
  BOOST_TEST(!opt.momentum_buffer(1).defined());
  b.set_grad(tensor({2}, DType::Float64));
  opt.zero_grad();
  BOOST_TEST(!a.grad().defined());
  BOOST_TEST(!b.grad().defined());
  b.set_grad(tensor({2}, DType::Float64));
  opt.step();  // a has no grad now: a and its buffer stay; b's first buffer = its gradient
  check_tensor(a, {0.9, 1.9}, 1e-12, 1e-14);
  check_tensor(opt.momentum_buffer(0), {1, 1}, 0, 0);
  check_tensor(opt.momentum_buffer(1), {2}, 0, 0);
  check_tensor(b, {2.8}, 1e-12, 1e-14);
  BOOST_TEST(opt.steps() == 2);
}

BOOST_AUTO_TEST_CASE(updates_the_model_parameters_in_place_after_backward) {
  // loss = sum(w * x) => dloss/dw = x; plain SGD: w -= 0.5 x, seen through the caller's handle.
  Tensor w = tensor({1, 2, 3});
  w.requires_grad_();
  SGD opt({w}, {.lr = 0.5});
  sum(mul(w, tensor({2, -2, 4}))).backward();
  opt.step();
  check_tensor(w, {0, 3, 1}, 0, 0);
  BOOST_TEST(w.requires_grad());
  BOOST_TEST(w.is_leaf());
}

namespace {
// A one-parameter model: y = w * x elementwise.
struct Scale : normlab::nn::Module {
  Tensor w = register_parameter("w", tensor({1, 2, 3}));
  Tensor forward(const Tensor& x) override { return mul(w, x); }
  std::string repr() const override { return "Scale()"; }
};
}  // namespace

BOOST_AUTO_TEST_CASE(steps_a_modules_parameters_through_shared_handles) {
  Scale m;
  SGD opt(m.parameters(), {.lr = 0.5, .momentum = 0.5});
  for (int k = 0; k < 2; ++k) {
    opt.zero_grad();
    sum(m(tensor({2, -2, 4}))).backward();  // dloss/dw = x
    opt.step();
  }
  // buf = x, then 0.5 x + x = 1.5 x: w = [1, 2, 3] - 0.5 (x + 1.5 x) = [1, 2, 3] - 1.25 [2, -2, 4]
  check_tensor(m.state_dict()[0].second, {-1.5, 4.5, -2}, 0, 0);
}

BOOST_AUTO_TEST_CASE(mixed_dtypes_in_one_optimizer) {
  Tensor a = tensor({1, 2}, DType::Float32), b = tensor({1, 2}, DType::Float64);
  SGD opt({a, b}, {.lr = 0.25, .momentum = 0.5});
  for (int k = 0; k < 2; ++k) {
    a.set_grad(tensor({1, -1}, DType::Float32));
    b.set_grad(tensor({1, -1}, DType::Float64));
    opt.step();
  }
  // buf 1, 1.5 (element 0) -> theta 1 - 0.25 - 0.375 = 0.375; element 1 mirrors: 2 + 0.625 = 2.625
  check_tensor(a, {0.375, 2.625}, 0, 0);
  check_tensor(b, {0.375, 2.625}, 0, 0);
  BOOST_TEST((opt.momentum_buffer(0).dtype() == DType::Float32));
  BOOST_TEST((opt.momentum_buffer(1).dtype() == DType::Float64));
}

BOOST_AUTO_TEST_CASE(set_lr_changes_the_next_step) {
  Tensor p = tensor({1}, DType::Float64);
  SGD opt({p}, {.lr = 0.1});
  opt.set_lr(0.5);
  BOOST_TEST(opt.lr() == 0.5);
  BOOST_TEST(opt.options().lr == 0.5);
  p.set_grad(tensor({1}, DType::Float64));
  opt.step();
  check_tensor(p, {0.5}, 0, 0);
}

// ---- Checkpoint state ------------------------------------------------------------------------------

namespace {

// Three parameters; parameter 2 gets a gradient only at step 5, so it has no buffer at step 3.
struct Model {
  std::vector<Tensor> params;
  explicit Model(uint64_t seed) {
    Generator gen(seed);
    params = {randn({2, 3}, gen), randn({3}, gen), randn({4}, gen)};
    for (auto& p : params) p.requires_grad_();
  }
};

// Fixed pseudo-random gradients for `step` (1, 2, ...), in each parameter's dtype.
void give_grads(const Model& m, int step) {
  Generator gen(1000 + step);
  const DType dt = m.params[0].dtype();
  m.params[0].set_grad(randn({2, 3}, gen, 0, 1, dt));
  m.params[1].set_grad(randn({3}, gen, 0, 1, dt));
  if (step == 5) m.params[2].set_grad(randn({4}, gen, 0, 1, dt));
  else m.params[2].set_grad(Tensor());
}

const SGDOptions kResumeOpts{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true};

}  // namespace

BOOST_AUTO_TEST_CASE(state_names_and_scalars) {
  Model m(1);
  SGD opt(m.params, {.lr = 0.05, .momentum = 0.8, .dampening = 0.25, .weight_decay = 0.01, .maximize = true});
  give_grads(m, 1);
  opt.step();
  const OptimizerState s = opt.state();
  BOOST_REQUIRE_EQUAL(s.tensors.size(), 2u);  // parameter 2 had no gradient: no buffer
  BOOST_TEST(s.tensors[0].first == "momentum_buffer.0");
  BOOST_TEST(s.tensors[1].first == "momentum_buffer.1");
  BOOST_TEST(bitwise_equal(s.tensors[0].second, opt.momentum_buffer(0)));
  BOOST_TEST(!s.tensors[0].second.is_same(opt.momentum_buffer(0)));  // a copy
  const std::map<std::string, double> want = {{"lr", 0.05},     {"momentum", 0.8}, {"dampening", 0.25},
                                              {"weight_decay", 0.01}, {"nesterov", 0}, {"maximize", 1},
                                              {"step", 1}};
  BOOST_TEST((s.scalars == want));
  // The saved copy does not move when training goes on.
  const std::vector<double> saved = s.tensors[0].second.to_vector();
  give_grads(m, 2);
  opt.step();
  BOOST_TEST(s.tensors[0].second.to_vector() == saved);
}

BOOST_AUTO_TEST_CASE(save_load_and_continue_is_bitwise_identical_to_training_straight_through) {
  for (DType dt : {DType::Float32, DType::Float64})
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      Model straight(7), first(7);
      for (auto* m : {&straight, &first})
        for (auto& p : m->params) p = p.to(dt).detach().requires_grad_();
      SGD opt_straight(straight.params, kResumeOpts);
      for (int k = 1; k <= 5; ++k) give_grads(straight, k), opt_straight.step();

      SGD opt_first(first.params, kResumeOpts);
      for (int k = 1; k <= 3; ++k) give_grads(first, k), opt_first.step();
      const OptimizerState saved = opt_first.state();
      BOOST_TEST(saved.tensors.size() == 2u);

      // A fresh model with the saved parameter values and a fresh optimizer with other settings.
      Model resumed(99);
      for (size_t i = 0; i < resumed.params.size(); ++i)
        resumed.params[i] = first.params[i].detach().clone().requires_grad_();
      SGD opt_resumed(resumed.params, {.lr = 1.0});
      opt_resumed.load_state(saved);
      BOOST_TEST(opt_resumed.steps() == 3);
      BOOST_TEST(opt_resumed.lr() == kResumeOpts.lr);
      BOOST_TEST(opt_resumed.options().nesterov);
      for (int k = 4; k <= 5; ++k) give_grads(resumed, k), opt_resumed.step();

      for (size_t i = 0; i < straight.params.size(); ++i)
        BOOST_TEST_CONTEXT("parameter " << i) {
          BOOST_TEST(bitwise_equal(resumed.params[i], straight.params[i]));
          BOOST_TEST(bitwise_equal(opt_resumed.momentum_buffer(i), opt_straight.momentum_buffer(i)));
        }
    }
}

BOOST_AUTO_TEST_CASE(base_optimizer_state_has_lr_and_step) {
  // The base class state, through a minimal optimizer that only counts steps.
  struct Counting : Optimizer {
    explicit Counting(std::vector<Tensor> p) : Optimizer("Counting", std::move(p), 0.5) {}
    void step() override { ++steps_; }
  };
  Counting a({tensor({1})}), b({tensor({1})});
  a.step();
  a.step();
  const OptimizerState s = a.state();
  BOOST_TEST((s.scalars == std::map<std::string, double>{{"lr", 0.5}, {"step", 2}}));
  b.set_lr(0.1);
  b.load_state(s);
  BOOST_TEST(b.lr() == 0.5);
  BOOST_TEST(b.steps() == 2);
  OptimizerState bad = s;
  bad.scalars["momentum"] = 0.9;
  check_error([&] { b.load_state(bad); }, "unexpected \"momentum\"");
}

// ---- Bad input ---------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(invalid_hyper_parameters_are_errors) {
  const std::vector<Tensor> ps = {tensor({1})};
  check_error([&] { SGD(ps, {.lr = -0.1}); }, "lr must be a finite number >= 0, got -0.1");
  check_error([&] { SGD(ps, {}); }, "lr must be a finite number >= 0, got nan");  // lr not given
  check_error([&] { SGD(ps, {.lr = INFINITY}); }, "got inf");
  check_error([&] { SGD(ps, {.lr = 0.1, .momentum = -0.5}); }, "momentum must be in [0, 1), got -0.5");
  check_error([&] { SGD(ps, {.lr = 0.1, .momentum = 1}); }, "momentum must be in [0, 1), got 1.0");
  check_error([&] { SGD(ps, {.lr = 0.1, .momentum = NAN}); }, "momentum must be in [0, 1), got nan");
  check_error([&] { SGD(ps, {.lr = 0.1, .weight_decay = -1e-4}); }, "weight_decay must be a finite number >= 0, got -0.0001");
  check_error([&] { SGD(ps, {.lr = 0.1, .dampening = NAN}); }, "dampening must be a finite number");
  check_error([&] { SGD(ps, {.lr = 0.1, .nesterov = true}); },
              "Nesterov momentum requires a momentum and zero dampening, got momentum=0.0, dampening=0.0");
  check_error([&] { SGD(ps, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
              "Nesterov momentum requires a momentum and zero dampening, got momentum=0.9, dampening=0.1");
  SGD ok(ps, {.lr = 0.1});
  check_error([&] { ok.set_lr(-1); }, "SGD.set_lr: lr must be a finite number >= 0, got -1");
  BOOST_TEST(ok.lr() == 0.1);
}

BOOST_AUTO_TEST_CASE(invalid_parameter_lists_are_errors) {
  check_error([] { SGD({}, {.lr = 0.1}); }, "expected a non-empty list of parameters");
  check_error([] { SGD({tensor({1}), Tensor()}, {.lr = 0.1}); }, "parameter 1 is an undefined tensor");
  Tensor leaf = tensor({1, 2});
  leaf.requires_grad_();
  Tensor computed = mul(leaf, 2.0);
  check_error([&] { SGD({leaf, computed}, {.lr = 0.1}); }, "parameter 1 is not a leaf tensor");
  check_error([&] { SGD({leaf, tensor({1}), leaf}, {.lr = 0.1}); }, "parameter 2 is the same tensor as parameter 0");
}

namespace {

// A trained optimizer and a state to break, with a check that a failed load changed nothing.
struct LoadFixture {
  Model m{3};
  SGD opt{m.params, {.lr = 0.05, .momentum = 0.9}};
  OptimizerState good;
  LoadFixture() {
    give_grads(m, 1);
    opt.step();
    good = opt.state();
    // Make the optimizer differ from `good`, to see that a failed load keeps it as it is.
    opt.set_lr(0.3);
    give_grads(m, 2);
    opt.step();
  }
  void expect_rejected(const OptimizerState& bad, const std::string& part) {
    const std::vector<double> b0 = opt.momentum_buffer(0).to_vector(), b1 = opt.momentum_buffer(1).to_vector();
    check_error([&] { opt.load_state(bad); }, part);
    BOOST_TEST(opt.lr() == 0.3);
    BOOST_TEST(opt.steps() == 2);
    BOOST_TEST(opt.options().momentum == 0.9);
    BOOST_TEST(opt.momentum_buffer(0).to_vector() == b0);
    BOOST_TEST(opt.momentum_buffer(1).to_vector() == b1);
    BOOST_TEST(!opt.momentum_buffer(2).defined());
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(load_state_rejects_bad_scalars_and_changes_nothing) {
  LoadFixture f;
  auto with = [&](const std::string& k, double v) { OptimizerState s = f.good; s.scalars[k] = v; return s; };
  auto without = [&](const std::string& k) { OptimizerState s = f.good; s.scalars.erase(k); return s; };
  f.expect_rejected(without("dampening"), "missing \"dampening\"");
  f.expect_rejected(with("betas", 0.9), "unexpected \"betas\"");
  f.expect_rejected(with("lr", -1), "SGD.load_state: lr must be a finite number >= 0, got -1");
  f.expect_rejected(with("momentum", 1.5), "SGD.load_state: momentum must be in [0, 1), got 1.5");
  f.expect_rejected(with("weight_decay", -1), "weight_decay must be a finite number >= 0, got -1");
  f.expect_rejected(with("nesterov", 2), "scalar \"nesterov\" must be 0 or 1, got 2");
  f.expect_rejected(with("maximize", 0.5), "scalar \"maximize\" must be 0 or 1, got 0.5");
  f.expect_rejected(with("step", 2.5), "scalar \"step\" must be a whole number >= 0, got 2.5");
  f.expect_rejected(with("step", -1), "scalar \"step\" must be a whole number >= 0, got -1");
  OptimizerState nest = with("nesterov", 1);
  nest.scalars["dampening"] = 0.5;
  f.expect_rejected(nest, "Nesterov momentum requires a momentum and zero dampening");
  // Buffers given while the state says momentum is 0.
  f.expect_rejected(with("momentum", 0), "got \"momentum_buffer.0\", but momentum is 0");
}

BOOST_AUTO_TEST_CASE(load_state_rejects_bad_tensors_and_changes_nothing) {
  LoadFixture f;
  BOOST_REQUIRE_EQUAL(f.good.tensors.size(), 2u);
  auto with_tensor = [&](const std::string& name, Tensor t) {
    OptimizerState s = f.good;
    s.tensors.emplace_back(name, t);
    return s;
  };
  f.expect_rejected(with_tensor("momentum_buffer.2", zeros({5})),
                    "\"momentum_buffer.2\" must be [4] float32 like parameter 2, got [5] float32");
  f.expect_rejected(with_tensor("momentum_buffer.2", zeros({4}, DType::Float64)),
                    "\"momentum_buffer.2\" must be [4] float32 like parameter 2, got [4] float64");
  f.expect_rejected(with_tensor("momentum_buffer.3", zeros({4})),
                    "\"momentum_buffer.3\" names parameter 3, but this optimizer has 3 parameters");
  f.expect_rejected(with_tensor("momentum_buffer.1", zeros({3})), "\"momentum_buffer.1\" appears more than once");
  f.expect_rejected(with_tensor("velocity.0", zeros({2, 3})), "expected tensors named \"momentum_buffer.<i>\"");
  f.expect_rejected(with_tensor("momentum_buffer.x", zeros({2, 3})), "got \"momentum_buffer.x\"");
  f.expect_rejected(with_tensor("momentum_buffer.02", zeros({4})), "got \"momentum_buffer.02\"");
  f.expect_rejected(with_tensor("momentum_buffer.", zeros({4})), "got \"momentum_buffer.\"");
  f.expect_rejected(with_tensor("momentum_buffer.2", Tensor()), "\"momentum_buffer.2\" is an undefined tensor");
  // The bad tensor listed first, before good ones: still nothing changes.
  OptimizerState s = f.good;
  s.tensors.insert(s.tensors.begin(), {"momentum_buffer.0", zeros({3, 2})});
  s.tensors.erase(s.tensors.begin() + 1);
  f.expect_rejected(s, "must be [2, 3] float32 like parameter 0, got [3, 2] float32");
  // And the good state loads.
  f.opt.load_state(f.good);
  BOOST_TEST(f.opt.lr() == 0.05);
  BOOST_TEST(f.opt.steps() == 1);
}

BOOST_AUTO_TEST_CASE(load_state_copies_the_given_buffers) {
  LoadFixture f;
  f.opt.load_state(f.good);
  const std::vector<double> before = f.good.tensors[0].second.to_vector();
  give_grads(f.m, 3);
  f.opt.step();  // updates the optimizer's own buffer, not the caller's tensor
  BOOST_TEST(f.good.tensors[0].second.to_vector() == before);
  BOOST_TEST(f.opt.momentum_buffer(0).to_vector() != before);
}

BOOST_AUTO_TEST_SUITE_END()
