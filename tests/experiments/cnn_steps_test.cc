// End to end against PyTorch, in the style of llm.c's test: the study's CNN under each norm, given
// PyTorch's initial weights, trained 5 SGD steps (lr 0.002, momentum 0.9) on one fixed batch of 8
// images. Reference: PyTorch's float64 run (tests/fixtures/cnn_steps, made by
// scripts/make_fixtures.py). normlab's float64 run must match it to 1e-9; its float32 run must be
// within 3x the distance of PyTorch's own float32 run from it (per tensor), plus 1e-6: LayerNorm
// over [C, H, W] sums 25,088 float32 terms per sample, and after 5 steps PyTorch's float32 weights
// are 8e-5 from its float64 ones.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "experiments/models/model.h"
#include "optim/sgd.h"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"

using namespace normlab;
using autograd::DType;
using autograd::Tensor;

namespace {

// Builds the study's CNN with `norm` in dtype, loads PyTorch's initial weights, trains 5 steps and
// compares every loss and every final parameter and buffer with the fixture.
void check_run(const test::Fixture& fx, const std::string& norm, DType dt) {
  experiments::ModelSpec spec;
  spec.arch = "cnn", spec.inputs = 784, spec.image = {1, 28, 28}, spec.outputs = 10, spec.norm = norm;
  autograd::Generator gen(0);
  const experiments::Model m = experiments::build_model(spec, gen);
  BOOST_TEST(m.net->str() == fx.meta(norm + ".module"));  // the same network as PyTorch's
  // PyTorch's initial weights into the two convolutions and the Linear (m.weights, in order).
  BOOST_REQUIRE_EQUAL(m.weights.size(), 3u);
  const char* roles[] = {"conv1", "conv2", "fc"};
  {
    autograd::NoGradGuard no_grad;
    const auto state = m.net->state_dict();
    for (size_t i = 0; i < 3; ++i) {
      const std::string w = m.weights[i].first, b = w.substr(0, w.size() - 6) + "bias";
      for (const auto& [name, t] : state) {
        if (name == w) autograd::copy_(t, fx.get(std::string("init.") + roles[i] + ".weight"));
        if (name == b) autograd::copy_(t, fx.get(std::string("init.") + roles[i] + ".bias"));
      }
    }
  }
  m.net->to(dt);
  m.net->train();
  const Tensor x = fx.get("input").to(dt);
  std::vector<int64_t> y;
  for (double v : fx.get("target").to_vector()) y.push_back(static_cast<int64_t>(v));
  optim::SGD opt(m.net->parameters(), {.lr = std::stod(fx.meta("lr")), .momentum = std::stod(fx.meta("momentum"))});
  std::vector<double> losses;
  for (int step = 0; step < 5; ++step) {
    Tensor loss = autograd::cross_entropy((*m.net)(x), y);
    losses.push_back(loss.item());
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  const bool f64 = dt == DType::Float64;
  const auto atol = [&](const std::string& key) {
    return f64 ? 1e-11 : 3 * std::stod(fx.meta(key + ".float32_deviation")) + 1e-6;
  };
  const double rtol = f64 ? 1e-9 : 0;
  test::expect_elements_close("losses", losses, fx.get(norm + ".losses").to_vector(), rtol, atol(norm + ".losses"));
  int compared = 0, expected = 0;
  for (const auto& [name, t] : m.net->state_dict()) {
    const std::string key = norm + ".final." + name;
    if (name.size() >= 19 && name.compare(name.size() - 19, 19, "num_batches_tracked") == 0) continue;  // int64 there
    ++expected;
    if (!fx.has(key)) continue;
    test::expect_elements_close(key, t.to_vector(), fx.get(key).to_vector(), rtol, atol(key));
    ++compared;
  }
  BOOST_TEST(compared == expected);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cnn_steps)

BOOST_AUTO_TEST_CASE(five_sgd_steps_match_pytorch_under_every_norm) {
  test::Fixture fx("cnn_steps");
  for (const std::string norm : {"none", "batch", "layer", "group", "instance"})
    for (DType dt : {DType::Float64, DType::Float32})
      BOOST_TEST_CONTEXT("norm " << norm << ", " << autograd::dtype_name(dt)) { check_run(fx, norm, dt); }
}

BOOST_AUTO_TEST_SUITE_END()
