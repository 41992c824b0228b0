// Activations, Dropout, the losses and Sequential: values against std:: math and hand-worked
// numbers, bad input, and gradcheck of each (including a Linear-Tanh-Linear stack).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>

#include "nn/activation.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/sequential.h"
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

// f applied to every element of x, in double.
template <typename F>
std::vector<double> map(const Tensor& x, F f) {
  std::vector<double> v = x.to_vector();
  for (double& e : v) e = f(e);
  return v;
}

// A float64 input away from 0 (ReLU's kink), requiring grad.
Tensor gradcheck_input(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  Tensor x = randn(shape, gen, 0, 1, DType::Float64);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::fabs(x.flat(i)) < 0.05) x.set_flat(i, 0.5);
  x.requires_grad_();
  return x;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(activations)

BOOST_AUTO_TEST_CASE(values_match_std_math) {
  Generator gen(1);
  Tensor x = randn({3, 7}, gen, 0, 2);
  check_tensor(ReLU()(x), map(x, [](double v) { return v > 0 ? v : 0; }));
  check_tensor(Tanh()(x), map(x, [](double v) { return std::tanh(v); }), 1e-5, 1e-6);
  check_tensor(Sigmoid()(x), map(x, [](double v) { return 1 / (1 + std::exp(-v)); }), 1e-5, 1e-6);
  const double c = std::sqrt(2 / M_PI);
  check_tensor(GELU()(x), map(x, [c](double v) { return 0.5 * v * (1 + std::tanh(c * (v + 0.044715 * v * v * v))); }),
               1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(gelu_tanh_matches_pytorch) {
  // torch.nn.functional.gelu(torch.tensor([-3., -1., -0.5, 0., 0.5, 1., 3.]), approximate='tanh'), PyTorch 1.13.
  check_tensor(GELU()(tensor({-3, -1, -0.5, 0, 0.5, 1, 3})),
               {-0.0036374, -0.1588080, -0.1542860, 0.0, 0.3457140, 0.8411920, 2.9963627}, 1e-5, 1e-6);
}

BOOST_AUTO_TEST_CASE(identity_returns_its_input) {
  Tensor x = tensor({1, 2, 3});
  BOOST_TEST(Identity()(x).is_same(x));
}

BOOST_AUTO_TEST_CASE(reprs_are_pytorchs) {
  BOOST_TEST(ReLU().repr() == "ReLU()");
  BOOST_TEST(Tanh().repr() == "Tanh()");
  BOOST_TEST(Sigmoid().repr() == "Sigmoid()");
  BOOST_TEST(GELU().repr() == "GELU(approximate='tanh')");
  BOOST_TEST(Identity().repr() == "Identity()");
}

BOOST_AUTO_TEST_CASE(gradcheck_each_activation) {
  std::vector<std::shared_ptr<Module>> acts = {std::make_shared<ReLU>(), std::make_shared<Tanh>(),
                                               std::make_shared<Sigmoid>(), std::make_shared<GELU>(),
                                               std::make_shared<Identity>()};
  uint64_t seed = 10;
  for (auto& act : acts) {
    Tensor x = gradcheck_input({3, 4}, seed++);
    // Identity returns x itself; the * 1 makes the output a new node so gradcheck sees a function.
    BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) { return mul((*act)(in[0]), 1.0); }, {x}), act->repr());
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dropout)

BOOST_AUTO_TEST_CASE(eval_passes_the_input_through) {
  Dropout d(0.5);
  d.eval();
  Tensor x = tensor({1, 2, 3});
  BOOST_TEST(d(x).is_same(x));
}

BOOST_AUTO_TEST_CASE(training_zeroes_about_p_and_scales_the_rest) {
  const double p = 0.3;
  Dropout d(p, 42);
  Generator gen(1);
  Tensor x = rand({100000}, gen, 1, 2);  // no zeros in x, so a zero in y is a dropped element
  Tensor y = d(x);
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (y.flat(i) == 0) {
      ++dropped;
    } else if (std::fabs(y.flat(i) - x.flat(i) / (1 - p)) > 1e-6 * std::fabs(y.flat(i))) {
      BOOST_ERROR("kept element " << i << ": got " << y.flat(i) << ", want " << x.flat(i) / (1 - p));
      break;
    }
  }
  // Binomial(1e5, 0.3): standard deviation 145, so +-1000 is about 7 standard deviations.
  BOOST_TEST(std::abs(dropped - 30000) < 1000);
}

BOOST_AUTO_TEST_CASE(masks_repeat_with_the_seed_and_change_between_calls) {
  Tensor x = ones({1000});
  Dropout a(0.5, 7), b(0.5, 7), c(0.5, 8);
  const std::vector<double> a1 = a(x).to_vector(), a2 = a(x).to_vector();
  BOOST_TEST(a1 == b(x).to_vector(), boost::test_tools::per_element());
  BOOST_TEST((a2 == b(x).to_vector()));
  BOOST_TEST((a1 != a2));
  BOOST_TEST((a1 != c(x).to_vector()));
  // Re-seeding replays the masks.
  a.generator().seed(7);
  BOOST_TEST((a(x).to_vector() == a1));
}

BOOST_AUTO_TEST_CASE(p_one_gives_zeros_and_p_zero_the_input) {
  Dropout all(1.0), none(0.0);
  Tensor x = tensor({1, -2, 3, 4});
  x.requires_grad_();
  Tensor y = all(x);
  check_tensor(y, {0, 0, 0, 0});
  sum(y).backward();
  check_tensor(x.grad(), {0, 0, 0, 0});
  BOOST_TEST(none(x).is_same(x));
}

BOOST_AUTO_TEST_CASE(p_outside_zero_one_is_an_error) {
  for (double p : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()})
    BOOST_CHECK_EXCEPTION(Dropout{p}, Error,
                          [](const Error& e) { return message_has(e, {"between 0 and 1", "got"}); });
  Generator gen(0);
  BOOST_CHECK_EXCEPTION(normlab::autograd::dropout(ones({2}), 2.0, gen), Error, [](const Error& e) { return message_has(e, {"got 2"}); });
}

BOOST_AUTO_TEST_CASE(gradient_is_the_mask) {
  Dropout d(0.4, 3);
  Tensor x = tensor({1, 2, 3, 4, 5, 6, 7, 8});
  x.requires_grad_();
  Tensor y = d(x);
  sum(y).backward();
  // dy/dx is the mask: 0 where y dropped x, 1/(1-p) where it kept it.
  for (int64_t i = 0; i < x.numel(); ++i)
    BOOST_TEST(x.grad().flat(i) == (y.flat(i) == 0 ? 0 : 1 / 0.6), "element " << i << boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(gradcheck_with_a_fixed_mask) {
  Tensor x = gradcheck_input({4, 5}, 21);
  // A fresh layer with the same seed on each call draws the same mask.
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return Dropout(0.5, 9)(in[0]); }, {x}));
}

BOOST_AUTO_TEST_CASE(repr_is_pytorchs) {
  BOOST_TEST(Dropout().repr() == "Dropout(p=0.5, inplace=False)");
  BOOST_TEST(Dropout(1.0).repr() == "Dropout(p=1.0, inplace=False)");
  BOOST_TEST(Dropout(1e-5).repr() == "Dropout(p=1e-05, inplace=False)");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(losses)

BOOST_AUTO_TEST_CASE(cross_entropy_matches_log_softmax_by_hand) {
  Tensor logits = tensor({1, 2, 3, 0.5, -1, 2}, {2, 3});
  const std::vector<int64_t> target = {2, 0};
  // -mean_i (z[i, t_i] - log sum_j exp z[i, j])
  const double l0 = -(3 - std::log(std::exp(1) + std::exp(2) + std::exp(3)));
  const double l1 = -(0.5 - std::log(std::exp(0.5) + std::exp(-1) + std::exp(2)));
  Tensor loss = CrossEntropyLoss()(logits, target);
  BOOST_TEST(loss.numel() == 1);
  BOOST_TEST(loss.item() == (l0 + l1) / 2, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(mse_matches_hand_numbers) {
  // ((1-0)^2 + (2-4)^2 + (-1-1)^2 + (0.5-0.5)^2) / 4 = 9 / 4
  Tensor loss = MSELoss()(tensor({1, 2, -1, 0.5}, {2, 2}), tensor({0, 4, 1, 0.5}, {2, 2}));
  BOOST_TEST(loss.item() == 2.25, boost::test_tools::tolerance(1e-7));
}

BOOST_AUTO_TEST_CASE(bad_input_is_an_error) {
  BOOST_CHECK_EXCEPTION(CrossEntropyLoss()(zeros({2, 3}), {0, 3}), Error,
                        [](const Error& e) { return message_has(e, {"target 3"}); });
  BOOST_CHECK_EXCEPTION(CrossEntropyLoss()(zeros({2, 3}), {0}), Error,
                        [](const Error& e) { return message_has(e, {"2"}); });
  BOOST_CHECK_EXCEPTION(MSELoss()(zeros({2, 3}), zeros({3, 2})), Error,
                        [](const Error& e) { return message_has(e, {"[2, 3]", "[3, 2]"}); });
}

BOOST_AUTO_TEST_CASE(reprs_are_pytorchs) {
  BOOST_TEST(CrossEntropyLoss().repr() == "CrossEntropyLoss()");
  BOOST_TEST(MSELoss().repr() == "MSELoss()");
}

BOOST_AUTO_TEST_CASE(gradcheck_cross_entropy) {
  Tensor x = gradcheck_input({4, 5}, 31);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return CrossEntropyLoss()(in[0], {4, 0, 2, 2}); }, {x}));
}

BOOST_AUTO_TEST_CASE(gradcheck_mse_both_arguments) {
  Tensor x = gradcheck_input({3, 4}, 32), t = gradcheck_input({3, 4}, 33);
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) { return MSELoss()(in[0], in[1]); }, {x, t}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sequential)

BOOST_AUTO_TEST_CASE(forward_chains_in_order) {
  Generator gen(1);
  auto fc1 = std::make_shared<Linear>(3, 4, gen);
  auto fc2 = std::make_shared<Linear>(4, 2, gen);
  Sequential seq({fc1, std::make_shared<Tanh>(), fc2});
  Tensor x = randn({5, 3}, gen);
  BOOST_TEST(seq(x).to_vector() == (*fc2)(tanh((*fc1)(x))).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(empty_returns_its_input) {
  Tensor x = tensor({1, 2});
  BOOST_TEST(Sequential()(x).is_same(x));
  BOOST_TEST(Sequential().size() == 0);
}

BOOST_AUTO_TEST_CASE(add_names_children_by_position_and_indexing_finds_them) {
  Generator gen(0);
  Sequential seq;
  auto fc = seq.add(std::make_shared<Linear>(2, 3, gen));  // typed: fc is a shared_ptr<Linear>
  auto act = seq.add(std::make_shared<ReLU>());
  BOOST_TEST(fc->out_features() == 3);
  BOOST_TEST(seq.size() == 2);
  BOOST_TEST(seq.children()[0].first == "0");
  BOOST_TEST(seq.children()[1].first == "1");
  BOOST_TEST(seq[0] == fc);
  BOOST_TEST(seq.at(1) == act);
  BOOST_TEST(seq[-1] == act);
  BOOST_TEST(seq.at(-2) == fc);
  BOOST_TEST(seq.at<Linear>(0) == fc);
}

BOOST_AUTO_TEST_CASE(bad_index_or_type_or_null_is_an_error) {
  Generator gen(0);
  Sequential seq({std::make_shared<Linear>(2, 3, gen), std::make_shared<ReLU>()});
  BOOST_CHECK_EXCEPTION(seq.at(2), Error, [](const Error& e) { return message_has(e, {"index 2", "2 modules"}); });
  BOOST_CHECK_EXCEPTION(seq[-3], Error, [](const Error& e) { return message_has(e, {"index -3"}); });
  BOOST_CHECK_EXCEPTION(seq.at<Linear>(1), Error, [](const Error& e) { return message_has(e, {"ReLU()"}); });
  BOOST_CHECK_EXCEPTION(seq.add(std::shared_ptr<Module>()), Error, [](const Error& e) { return message_has(e, {"null"}); });
}

BOOST_AUTO_TEST_CASE(gradcheck_linear_tanh_linear) {
  Generator gen(2);
  Sequential seq({std::make_shared<Linear>(3, 4, gen), std::make_shared<Tanh>(), std::make_shared<Linear>(4, 2, gen)});
  seq.to(DType::Float64);
  Tensor x = gradcheck_input({5, 3}, 41);
  std::vector<Tensor> inputs = {x};
  for (const Tensor& p : seq.parameters()) inputs.push_back(p);  // perturbed in place by gradcheck
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) { return seq(in[0]); }, inputs));
}

BOOST_AUTO_TEST_CASE(gradcheck_stack_into_cross_entropy) {
  Generator gen(3);
  Sequential seq({std::make_shared<Linear>(3, 5, gen), std::make_shared<GELU>(), std::make_shared<Linear>(5, 4, gen),
                  std::make_shared<Sigmoid>(), std::make_shared<Linear>(4, 3, gen)});
  seq.to(DType::Float64);
  Tensor x = gradcheck_input({4, 3}, 42);
  std::vector<Tensor> inputs = {x};
  for (const Tensor& p : seq.parameters()) inputs.push_back(p);
  BOOST_TEST(gradcheck([&](const std::vector<Tensor>& in) { return CrossEntropyLoss()(seq(in[0]), {0, 2, 1, 2}); },
                       inputs));
}

BOOST_AUTO_TEST_SUITE_END()
