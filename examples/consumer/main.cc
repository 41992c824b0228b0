// A user's program against an installed normlab (built by examples/consumer/CMakeLists.txt with
// find_package(normlab), or with `c++ -std=c++20 main.cc $(pkg-config --cflags --libs normlab)`):
// trains an MLP with LayerNorm on two spirals with Adam, printing the loss as it drops, and
// gradchecks a custom op composed from autograd ops. Exits 1 when the loss does not drop or a
// gradcheck gives the wrong verdict.
#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/target.h"
#include "data/synthetic.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace normlab;
using autograd::Tensor;

// A custom op: RMS normalization with a gain, from autograd ops (its gradient comes from theirs).
// x (N, D), g (D):  y[n, d] = g[d] x[n, d] / sqrt(mean_d' x[n, d']^2 + eps).
Tensor rms_norm(const Tensor& x, const Tensor& g, double eps = 1e-5) {
  const Tensor ms = autograd::mean(autograd::square(x), {-1}, /*keepdim=*/true);  // (N, 1)
  return x / autograd::sqrt(ms + eps) * g;
}

// Trains 2-32-32-2 with LayerNorm on spirals, full batch, for 60 Adam steps; true when the last
// loss is below half the first.
bool train() {
  const data::Dataset spirals = data::make_spirals(/*n=*/256, /*noise=*/0.05, /*seed=*/0);
  autograd::Generator gen(0);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Linear>(2, 32, gen));
  model->add(std::make_shared<nn::LayerNorm>(autograd::Shape{32}));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(32, 32, gen));
  model->add(std::make_shared<nn::LayerNorm>(autograd::Shape{32}));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(32, 2, gen));
  optim::Adam opt(model->parameters(), {.lr = 1e-2});

  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    const Tensor loss = autograd::cross_entropy((*model)(spirals.x), spirals.labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
    last = loss.item();
    if (step == 0) first = last;
    if (step % 10 == 0 || step == 59) std::printf("step %2d  loss %.4f\n", step, last);
  }
  const bool dropped = last < 0.5 * first;
  std::printf("training: loss %.4f -> %.4f (%s)\n", first, last, dropped ? "dropped" : "did NOT drop");
  return dropped;
}

// gradchecks rms_norm in float64 (it must pass), and a function whose autograd gradient is wrong on
// purpose, x * detach(x) (d/dx is 2x, autograd gives x): gradcheck must catch that one.
bool check_gradients() {
  autograd::Generator gen(1);
  const Tensor x = autograd::randn({3, 5}, gen, 0, 1, autograd::DType::Float64);
  const Tensor g = autograd::randn({5}, gen, 1, 0.5, autograd::DType::Float64);
  x.requires_grad_();
  g.requires_grad_();
  bool ok = true;
  try {
    autograd::gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1]); }, {x, g});
    std::printf("gradcheck rms_norm: passed\n");
  } catch (const std::exception& e) {
    std::printf("gradcheck rms_norm: FAILED: %s\n", e.what());
    ok = false;
  }
  const bool wrong_passes = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return in[0] * in[0].detach(); }, {x}, {.raise_exception = false});
  std::printf("gradcheck x * detach(x): %s\n", wrong_passes ? "passed (WRONG: its gradient is wrong)" : "mismatch found, as it should");
  return ok && !wrong_passes;
}

int main() {
  std::printf("normlab kernels run on %s\n", autograd::kernels::active_target());
  const bool trained = train();
  const bool checked = check_gradients();
  return trained && checked ? 0 : 1;
}
