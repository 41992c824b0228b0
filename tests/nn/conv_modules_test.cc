// The layers of convolutional networks: Conv2d (PyTorch's init, repr, errors that name the layer),
// the pooling and Flatten modules, InstanceNorm2d, and every norm on (N, C, H, W) against PyTorch
// (tests/fixtures/norms2d: training steps with running statistics, then eval).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <string>

#include "nn/nn.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"
#include "tests/support/tensors.h"

using namespace normlab;
using namespace normlab::nn;
using normlab::test::expect_error;

BOOST_AUTO_TEST_SUITE(conv_modules)

BOOST_AUTO_TEST_CASE(reprs_are_pytorchs) {
  // Each string printed by PyTorch 1.13 for the same constructor call.
  Generator gen(0);
  BOOST_TEST(Conv2d(1, 32, 3, gen, {.padding = 1}).repr() ==
             "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
  BOOST_TEST(Conv2d(4, 8, Size2d(3, 2), gen, {.stride = 2, .dilation = 2, .groups = 2, .bias = false}).repr() ==
             "Conv2d(4, 8, kernel_size=(3, 2), stride=(2, 2), dilation=(2, 2), groups=2, bias=False)");
  BOOST_TEST(MaxPool2d(2).repr() == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  BOOST_TEST(AvgPool2d(2).repr() == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
  BOOST_TEST(AdaptiveAvgPool2d(1).repr() == "AdaptiveAvgPool2d(output_size=1)");
  BOOST_TEST(Flatten().repr() == "Flatten(start_dim=1, end_dim=-1)");
  BOOST_TEST(InstanceNorm2d(3).repr() ==
             "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
}

BOOST_AUTO_TEST_CASE(conv2d_default_init_is_pytorchs) {
  // weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kH * kW = 288.
  Generator gen(3);
  Conv2d conv(32, 64, 3, gen, {.padding = 1});
  const double bound = 1 / std::sqrt(288.0);
  BOOST_TEST((conv.weight().shape() == Shape{64, 32, 3, 3}));
  BOOST_TEST((conv.bias().shape() == Shape{64}));
  for (const Tensor& t : {conv.weight(), conv.bias()}) {
    double lo = 1, hi = -1, sum = 0;
    for (double v : t.to_vector()) lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
    BOOST_TEST(lo >= -bound);
    BOOST_TEST(hi <= bound);
    if (t.numel() > 1000) {  // the weight: fills its range, mean near 0
      BOOST_TEST(hi > 0.99 * bound);
      BOOST_TEST(lo < -0.99 * bound);
      BOOST_TEST(std::fabs(sum / t.numel()) < 0.05 * bound);
    }
  }
  const auto names = conv.state_dict();
  BOOST_REQUIRE_EQUAL(names.size(), 2u);
  BOOST_TEST(names[0].first == "weight");
  BOOST_TEST(names[1].first == "bias");
}

BOOST_AUTO_TEST_CASE(the_study_cnn_runs_forward_and_backward) {
  // conv3x3(1->32, pad 1) - BN - ReLU - maxpool2 - conv3x3(32->64, pad 1) - BN - ReLU - maxpool2 -
  // flatten - linear(3136 -> 10).
  Generator gen(1);
  Sequential net;
  net.add(std::make_shared<Conv2d>(1, 32, 3, gen, Conv2dOptions{.padding = 1}));
  net.add(std::make_shared<BatchNorm2d>(32));
  net.add(std::make_shared<ReLU>());
  net.add(std::make_shared<MaxPool2d>(2));
  net.add(std::make_shared<Conv2d>(32, 64, 3, gen, Conv2dOptions{.padding = 1}));
  net.add(std::make_shared<BatchNorm2d>(64));
  net.add(std::make_shared<ReLU>());
  net.add(std::make_shared<MaxPool2d>(2));
  net.add(std::make_shared<Flatten>());
  net.add(std::make_shared<Linear>(3136, 10, gen));
  const Tensor x = autograd::randn({4, 1, 28, 28}, gen);
  const Tensor logits = net(x);
  BOOST_TEST((logits.shape() == Shape{4, 10}));
  autograd::cross_entropy(logits, {0, 1, 2, 3}).backward();
  for (const auto& [name, p] : net.named_parameters()) BOOST_TEST(p.grad().defined(), name << " has no gradient");
  BOOST_TEST(net.num_parameters() == 320 + 64 + 18496 + 128 + 31370);
}

BOOST_AUTO_TEST_CASE(bad_inputs_name_the_layer_and_both_shapes) {
  Generator gen(0);
  Conv2d conv(3, 8, 3, gen);
  expect_error([&] { conv(autograd::zeros({2, 1, 28, 28})); },
               {"Conv2d(3, 8, kernel_size=(3, 3)", "(N, 3, H, W)", "[2, 1, 28, 28]"});
  expect_error([&] { conv(autograd::zeros({2, 3, 2, 2})); }, {"Conv2d(3, 8", "2x2", "larger than the padded input"});
  expect_error([&] { Conv2d(3, 8, 0, gen); }, {"kernel_size", "at least 1", "(0, 0)"});
  expect_error([&] { Conv2d(3, 8, 3, gen, {.stride = Size2d(1, 0)}); }, {"stride=(1, 0)"});
  expect_error([&] { Conv2d(3, 8, 3, gen, {.padding = -1}); }, {"padding=(-1, -1)"});
  expect_error([&] { Conv2d(3, 8, 3, gen, {.groups = 2}); }, {"groups=2", "divide"});
  expect_error([&] { MaxPool2d(2, std::nullopt, 2); }, {"MaxPool2d", "half the kernel"});
  expect_error([&] { MaxPool2d(2)(autograd::zeros({1, 4, 4})); }, {"MaxPool2d(kernel_size=2", "[1, 4, 4]"});
  expect_error([&] { AdaptiveAvgPool2d(0); }, {"output_size", "0"});
  expect_error([&] { InstanceNorm2d(3)(autograd::zeros({2, 4, 5, 5})); }, {"InstanceNorm2d(3", "(N, 3, H, W)", "[2, 4, 5, 5]"});
  expect_error([&] { InstanceNorm2d(3)(autograd::zeros({2, 3, 1, 1})); }, {"more than 1 spatial element"});
  expect_error([&] { InstanceNorm2d(3, 1e-5, 1.5); }, {"InstanceNorm2d", "momentum"});
}

BOOST_AUTO_TEST_CASE(norms_on_images_match_pytorch) {
  normlab::test::Fixture fx("norms2d");
  const auto make = [](const std::string& c, DType dt) -> std::shared_ptr<Module> {
    if (c == "bn2d") return std::make_shared<BatchNorm2d>(3, 1e-5, 0.1, true, true, dt);
    if (c == "in2d_default") return std::make_shared<InstanceNorm2d>(3, 1e-5, 0.1, false, false, dt);
    if (c == "in2d_affine") return std::make_shared<InstanceNorm2d>(3, 1e-5, 0.1, true, false, dt);
    if (c == "in2d_tracked") return std::make_shared<InstanceNorm2d>(3, 1e-5, 0.2, true, true, dt);
    if (c == "ln_chw") return std::make_shared<LayerNorm>(Shape{3, 5, 4}, 1e-5, true, true, dt);
    if (c == "gn2_chw") return std::make_shared<GroupNorm>(1, 3, 1e-5, true, dt);
    throw Error("no module for fixture case " + c);
  };
  int cases = 0;
  for (const auto& [key, value] : fx.metadata()) {
    if (key.size() < 7 || key.compare(key.size() - 7, 7, ".module") != 0) continue;
    const std::string c = key.substr(0, key.size() - 7);
    const int steps = std::stoi(fx.meta(c + ".steps"));
    for (const std::string dn : {"f32", "f64"}) {
      BOOST_TEST_CONTEXT(dn << "." << c) {
        const DType dt = dn == "f32" ? DType::Float32 : DType::Float64;
        const double rtol = dn == "f32" ? 1e-5 : 1e-10, atol = dn == "f32" ? 1e-6 : 1e-13;
        auto m = make(c, dt);
        BOOST_TEST(m->repr() == value);  // the same module as PyTorch's, by its repr
        const std::string base = dn + "." + c + ".";
        const auto params = m->named_parameters();
        if (fx.has(base + "weight")) {
          autograd::NoGradGuard no_grad;
          autograd::copy_(m->named_parameters().at(0).second, fx.get(base + "weight"));
          autograd::copy_(m->named_parameters().at(1).second, fx.get(base + "bias"));
        }
        const auto close = [&](const std::string& name, const Tensor& got) {
          BOOST_REQUIRE_MESSAGE(got.defined(), name << " is undefined");
          normlab::test::expect_elements_close(name, got.to_vector(), fx.get(name).to_vector(), rtol, atol);
        };
        for (int k = 0; k <= steps; ++k) {
          m->train(k < steps);
          const std::string p = base + (k < steps ? "step" + std::to_string(k) : std::string("eval")) + ".";
          m->zero_grad();
          Tensor x = fx.get(p + "input").detach().clone();
          x.requires_grad_();
          Tensor y = (*m)(x);
          y.backward(fx.get(p + "grad_output"));
          close(p + "output", y);
          close(p + "grad_input", x.grad());
          if (!params.empty()) {
            close(p + "grad_weight", params.at(0).second.grad());
            close(p + "grad_bias", params.at(1).second.grad());
          }
          for (const auto& [name, b] : m->named_buffers())
            if (name != "num_batches_tracked") close(p + name, b);
        }
      }
    }
    ++cases;
  }
  BOOST_TEST(cases == 6);
}

BOOST_AUTO_TEST_CASE(instance_norm_gradcheck) {
  for (bool affine : {false, true}) {
    InstanceNorm2d in(2, 1e-5, 0.1, affine, false, DType::Float64);
    normlab::test::expect_gradcheck(
        std::string("InstanceNorm2d affine=") + (affine ? "True" : "False"),
        [&](const std::vector<Tensor>& v) { return in(v[0]); }, {normlab::test::random_input({3, 2, 3, 2}, 7)});
  }
}

BOOST_AUTO_TEST_SUITE_END()
