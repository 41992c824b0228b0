// Training-step benchmarks: one SGD step (forward, cross-entropy, zero_grad, backward, momentum
// update) of the experiments' MLPs, with no norm, BatchNorm and LayerNorm in the hidden layers.
// bench/pytorch_bench.py times the same step in PyTorch eager under the same names.
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "bench/bench.h"
#include "experiments/models/model.h"
#include "optim/sgd.h"

namespace normlab::bench {

namespace {

using autograd::Tensor;

// One step of MLP `widths` (inputs, hidden..., classes) with `norm` at batch `batch`: random
// inputs and labels drawn once, SGD lr 0.01 momentum 0.9 (the parameters move, the work does not).
void train_step(benchmark::State& state, std::vector<int64_t> widths, int64_t batch, std::string norm) {
  experiments::ModelSpec spec;
  spec.inputs = widths.front();
  spec.hidden.assign(widths.begin() + 1, widths.end() - 1);
  spec.outputs = widths.back();
  spec.norm = norm;
  autograd::Generator gen(0);
  auto model = experiments::build_model(spec, gen).net;
  model->train();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = autograd::randn({batch, spec.inputs}, gen);
  std::vector<int64_t> y(static_cast<size_t>(batch));
  for (auto& v : y) v = static_cast<int64_t>(gen.next_u64() % static_cast<uint64_t>(spec.outputs));
  for (auto _ : state) {
    Tensor loss = autograd::cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.data<float>());
  }
}

}  // namespace

void register_train() {
  struct Case { std::vector<int64_t> widths; int64_t batch; };
  const std::vector<Case> cases = {{{2, 32, 32, 2}, 32}, {{784, 256, 256, 10}, 128}};
  for (const auto& c : cases)
    for (const std::string norm : {"none", "batch", "layer"}) {
      std::string name = "train step mlp " + experiments::describe({.inputs = c.widths.front(),
          .hidden = {c.widths.begin() + 1, c.widths.end() - 1}, .outputs = c.widths.back()}) +
          " b" + std::to_string(c.batch) + " " + norm;
      benchmark::RegisterBenchmark(name.c_str(), train_step, c.widths, c.batch, norm)
          ->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace normlab::bench
