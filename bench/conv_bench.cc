// Convolution and CNN benchmarks: the study CNN's second convolution (128x32x14x14 -> 64 channels,
// 3x3, padding 1) forward alone, forward + backward, and forward + one gradient (the input's, or the
// weight's and bias's), in GFLOP/s; and one SGD step of the study's
// CNN (conv32-norm-relu-pool-conv64-norm-relu-pool-linear) at batch 128 and 8 under each norm.
// bench/pytorch_bench.py times the same work in PyTorch under the same names.
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "bench/bench.h"
#include "experiments/models/model.h"
#include "optim/sgd.h"

namespace normlab::bench {

namespace {

using autograd::Tensor;

// Which gradients the backward pass computes.
enum class ConvGrads { kNone, kAll, kInput, kWeight };

// Forward (and backward: the input gradient, the weight and bias gradients, or all) of one conv2d.
void conv(benchmark::State& state, ConvGrads grads) {
  autograd::Generator gen(0);
  Tensor x = autograd::randn({128, 32, 14, 14}, gen), w = autograd::randn({64, 32, 3, 3}, gen, 0, 0.06);
  Tensor b = autograd::randn({64}, gen), dy = autograd::randn({128, 64, 14, 14}, gen);
  const bool backward = grads != ConvGrads::kNone;
  if (grads == ConvGrads::kAll || grads == ConvGrads::kInput) x.requires_grad_();
  if (grads == ConvGrads::kAll || grads == ConvGrads::kWeight) w.requires_grad_(), b.requires_grad_();
  autograd::Conv2dOptions o;
  o.padding = {1, 1};
  for (auto _ : state) {
    if (backward) x.set_grad(Tensor()), w.set_grad(Tensor()), b.set_grad(Tensor());
    Tensor y = autograd::conv2d(x, w, b, o);
    if (backward) y.backward(dy);
    benchmark::DoNotOptimize(y.data<float>());
  }
  const double fwd = 2.0 * 128 * 64 * 14 * 14 * 32 * 9;  // 2 N O OH OW C kH kW
  const double passes = grads == ConvGrads::kAll ? 3 : backward ? 2 : 1;
  state.counters["GFLOP/s"] = benchmark::Counter(passes * fwd * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// FLOPs of one training step of the study CNN on 1x28x28 images: forward, input gradient (not for
// the first convolution) and weight gradient of each conv and the Linear.
double cnn_step_flops(int64_t batch) {
  const double c1 = 2.0 * 32 * 28 * 28 * 1 * 9, c2 = 2.0 * 64 * 14 * 14 * 32 * 9, fc = 2.0 * 3136 * 10;
  return static_cast<double>(batch) * (2 * c1 + 3 * c2 + 3 * fc);
}

void cnn_step(benchmark::State& state, int64_t batch, std::string norm) {
  experiments::ModelSpec spec;
  spec.arch = "cnn", spec.inputs = 784, spec.image = {1, 28, 28}, spec.outputs = 10, spec.norm = norm;
  autograd::Generator gen(0);
  auto model = experiments::build_model(spec, gen).net;
  model->train();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = autograd::randn({batch, 784}, gen);
  std::vector<int64_t> y(static_cast<size_t>(batch));
  for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % 10);
  for (auto _ : state) {
    Tensor loss = autograd::cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data<float>());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(cnn_step_flops(batch) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

void register_conv() {
  const std::pair<const char*, ConvGrads> convs[] = {
      {"conv2d forward 128x32x14x14 64 3x3", ConvGrads::kNone},
      {"conv2d forward+backward 128x32x14x14 64 3x3", ConvGrads::kAll},
      {"conv2d forward+input grad 128x32x14x14 64 3x3", ConvGrads::kInput},
      {"conv2d forward+weight grad 128x32x14x14 64 3x3", ConvGrads::kWeight}};
  for (const auto& [name, grads] : convs)
    benchmark::RegisterBenchmark(name, conv, grads)->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (int64_t batch : {128, 8})
    for (const std::string norm : {"none", "batch", "layer", "group", "instance"}) {
      const std::string name = "train step cnn b" + std::to_string(batch) + " " + norm;
      benchmark::RegisterBenchmark(name.c_str(), cnn_step, batch, norm)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace normlab::bench
